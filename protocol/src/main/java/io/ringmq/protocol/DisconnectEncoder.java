package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes DISCONNECT and AUTH, which share the optional "reason code, properties" layout on MQTT 5.0. A 3.1.1
 * DISCONNECT is always the two bytes {@code E0 00}.
 */
public final class DisconnectEncoder
{
    private DisconnectEncoder()
    {
    }

    /**
     * @param packetType DISCONNECT or AUTH.
     * @return the packet length.
     */
    public static int encodedLength(
        final int packetType, final int version, final int reasonCode, final MqttProperties properties)
    {
        return Fields.packetLength(remainingLength(packetType, version, reasonCode, properties));
    }

    /**
     * @param packetType DISCONNECT, or AUTH (5.0 only).
     * @param properties MQTT 5.0 properties or null.
     * @return bytes written.
     */
    public static int encode(
        final MutableDirectBuffer buffer,
        final int offset,
        final int packetType,
        final int version,
        final int reasonCode,
        final MqttProperties properties)
    {
        if (packetType != PacketType.DISCONNECT && !(packetType == PacketType.AUTH && version == MqttVersion.V5))
        {
            throw new IllegalArgumentException(PacketType.name(packetType) + " is not DISCONNECT or a 5.0 AUTH");
        }
        int pos = Fields.putFixedHeader(
            buffer, offset, packetType, 0, remainingLength(packetType, version, reasonCode, properties));
        if (version == MqttVersion.V5)
        {
            pos = ReasonTail.encode(buffer, pos, reasonCode, properties);
        }
        return pos - offset;
    }

    private static int remainingLength(
        final int packetType, final int version, final int reasonCode, final MqttProperties properties)
    {
        return version == MqttVersion.V5 ? ReasonTail.length(reasonCode, properties) : 0;
    }
}
