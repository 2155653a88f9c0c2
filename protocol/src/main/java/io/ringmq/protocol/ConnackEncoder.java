package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes CONNACK for either protocol level.
 */
public final class ConnackEncoder
{
    private ConnackEncoder()
    {
    }

    public static int encodedLength(final int version, final MqttProperties properties)
    {
        return Fields.packetLength(2 + Fields.sectionLength(version, properties));
    }

    /**
     * @param reasonCode the 3.1.1 return code or the 5.0 reason code.
     * @param properties MQTT 5.0 properties or null.
     * @return bytes written.
     */
    public static int encode(
        final MutableDirectBuffer buffer,
        final int offset,
        final int version,
        final boolean sessionPresent,
        final int reasonCode,
        final MqttProperties properties)
    {
        int pos = Fields.putFixedHeader(
            buffer, offset, PacketType.CONNACK, 0, 2 + Fields.sectionLength(version, properties));
        buffer.putByte(pos++, (byte)(sessionPresent ? 1 : 0));
        buffer.putByte(pos++, (byte)reasonCode);
        pos = Fields.putProperties(buffer, pos, version, properties);
        return pos - offset;
    }
}
