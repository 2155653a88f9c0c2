package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes CONNACK: acknowledge flags (Session Present in bit 0, the rest reserved [MQTT-3.2.2-1]), the return
 * code (3.1.1) or reason code (5.0), then on 5.0 the properties.
 */
public final class ConnackFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private boolean sessionPresent;
    private int reasonCode;

    /**
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        final int pos = Fields.checkFixedHeader(buffer, offset, length, PacketType.CONNACK);
        if (pos < 0)
        {
            return pos;
        }
        final int end = offset + length;
        properties.clear();
        if (pos + 2 > end)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final int ackFlags = buffer.getByte(pos) & 0xFF;
        if ((ackFlags & 0xFE) != 0)
        {
            return DecodeError.RESERVED_ACK_FLAGS;
        }
        sessionPresent = ackFlags == 1;
        reasonCode = buffer.getByte(pos + 1) & 0xFF;
        if (!ReasonCode.isAllowed(PacketType.CONNACK, version, reasonCode))
        {
            return DecodeError.INVALID_REASON_CODE;
        }
        if (version != MqttVersion.V5)
        {
            return pos + 2 == end ? length : DecodeError.REMAINING_LENGTH_INVALID;
        }
        final int consumed = properties.decode(buffer, pos + 2, end, PacketType.CONNACK);
        if (consumed < 0)
        {
            return consumed;
        }
        return pos + 2 + consumed == end ? length : DecodeError.TRAILING_BYTES;
    }

    public boolean isSessionPresent()
    {
        return sessionPresent;
    }

    /**
     * @return the 3.1.1 return code or the 5.0 reason code.
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
