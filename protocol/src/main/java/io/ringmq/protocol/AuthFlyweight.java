package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes AUTH (MQTT 5.0 only; packet type 15 is reserved in 3.1.1): an optional reason code (0x00, 0x18 or
 * 0x19) and optional properties.
 */
public final class AuthFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private int reasonCode;

    /**
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        if (version != MqttVersion.V5)
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        final int pos = Fields.checkFixedHeader(buffer, offset, length, PacketType.AUTH);
        if (pos < 0)
        {
            return pos;
        }
        reasonCode = ReasonTail.decode(buffer, pos, offset + length, PacketType.AUTH, properties);
        return reasonCode < 0 ? reasonCode : length;
    }

    public int reasonCode()
    {
        return reasonCode;
    }

    public MqttProperties properties()
    {
        return properties;
    }
}
