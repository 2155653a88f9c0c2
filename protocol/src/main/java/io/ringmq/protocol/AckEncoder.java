package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes PUBACK, PUBREC, PUBREL and PUBCOMP, in the shortest form MQTT 5.0 allows. Allocation-free.
 */
public final class AckEncoder
{
    private AckEncoder()
    {
    }

    /**
     * @return the packet length of an acknowledgement.
     */
    public static int encodedLength(final int version, final int reasonCode, final MqttProperties properties)
    {
        return Fields.packetLength(remainingLength(version, reasonCode, properties));
    }

    /**
     * Writes a 3.1.1 acknowledgement, or a 5.0 one with reason 0x00 and no properties: always 4 bytes.
     *
     * @return bytes written.
     */
    public static int encode(
        final MutableDirectBuffer buffer, final int offset, final int packetType, final int packetId)
    {
        return encode(buffer, offset, packetType, packetId, MqttVersion.V3_1_1, ReasonCode.SUCCESS, null);
    }

    /**
     * @param packetType PUBACK, PUBREC, PUBREL or PUBCOMP.
     * @param properties MQTT 5.0 properties or null.
     * @return bytes written.
     */
    public static int encode(
        final MutableDirectBuffer buffer,
        final int offset,
        final int packetType,
        final int packetId,
        final int version,
        final int reasonCode,
        final MqttProperties properties)
    {
        if (packetType < PacketType.PUBACK || packetType > PacketType.PUBCOMP)
        {
            throw new IllegalArgumentException("not an acknowledgement: " + PacketType.name(packetType));
        }
        Fields.checkPacketId(packetId);
        int pos = Fields.putFixedHeader(buffer, offset, packetType, PacketType.requiredFlags(packetType),
            remainingLength(version, reasonCode, properties));
        pos = Fields.putUnsignedShort(buffer, pos, packetId);
        if (version == MqttVersion.V5)
        {
            pos = ReasonTail.encode(buffer, pos, reasonCode, properties);
        }
        return pos - offset;
    }

    private static int remainingLength(final int version, final int reasonCode, final MqttProperties properties)
    {
        return 2 + (version == MqttVersion.V5 ? ReasonTail.length(reasonCode, properties) : 0);
    }
}
