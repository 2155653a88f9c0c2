package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes DISCONNECT: empty on MQTT 3.1.1; on 5.0 an optional reason code and optional properties.
 */
public final class DisconnectFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private int reasonCode;

    /**
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        final int pos = Fields.checkFixedHeader(buffer, offset, length, PacketType.DISCONNECT);
        if (pos < 0)
        {
            return pos;
        }
        if (version != MqttVersion.V5)
        {
            properties.clear();
            reasonCode = ReasonCode.NORMAL_DISCONNECTION;
            return pos == offset + length ? length : DecodeError.REMAINING_LENGTH_INVALID;
        }
        reasonCode = ReasonTail.decode(buffer, pos, offset + length, PacketType.DISCONNECT, properties);
        return reasonCode < 0 ? reasonCode : length;
    }

    /**
     * @return the reason code; 0x00 (Normal disconnection) on 3.1.1 and when omitted.
     */
    public int reasonCode()
    {
        return reasonCode;
    }

    public MqttProperties properties()
    {
        return properties;
    }
}
