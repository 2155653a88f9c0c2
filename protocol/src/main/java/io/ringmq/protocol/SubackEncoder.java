package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes SUBACK and UNSUBACK from an array of reason codes (a 3.1.1 UNSUBACK writes none).
 */
public final class SubackEncoder
{
    private SubackEncoder()
    {
    }

    public static int encodedLength(
        final int packetType, final int version, final MqttProperties properties, final int codeCount)
    {
        return Fields.packetLength(remainingLength(packetType, version, properties, codeCount));
    }

    /**
     * @param packetType SUBACK or UNSUBACK.
     * @param codes      reason codes; the first {@code codeCount} are written.
     * @return bytes written.
     */
    public static int encode(
        final MutableDirectBuffer buffer,
        final int offset,
        final int packetType,
        final int version,
        final int packetId,
        final MqttProperties properties,
        final int[] codes,
        final int codeCount)
    {
        if (packetType != PacketType.SUBACK && packetType != PacketType.UNSUBACK)
        {
            throw new IllegalArgumentException("not SUBACK or UNSUBACK: " + PacketType.name(packetType));
        }
        Fields.checkPacketId(packetId);
        int pos = Fields.putFixedHeader(
            buffer, offset, packetType, 0, remainingLength(packetType, version, properties, codeCount));
        pos = Fields.putUnsignedShort(buffer, pos, packetId);
        if (hasCodes(packetType, version))
        {
            pos = Fields.putProperties(buffer, pos, version, properties);
            for (int i = 0; i < codeCount; i++)
            {
                buffer.putByte(pos++, (byte)codes[i]);
            }
        }
        return pos - offset;
    }

    private static boolean hasCodes(final int packetType, final int version)
    {
        return packetType == PacketType.SUBACK || version == MqttVersion.V5;
    }

    private static int remainingLength(
        final int packetType, final int version, final MqttProperties properties, final int codeCount)
    {
        return hasCodes(packetType, version) ? 2 + Fields.sectionLength(version, properties) + codeCount : 2;
    }
}
