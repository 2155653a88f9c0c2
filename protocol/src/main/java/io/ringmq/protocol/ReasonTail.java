package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * The optional "reason code, then properties" tail shared by PUBACK, PUBREC, PUBREL, PUBCOMP, DISCONNECT and
 * AUTH on MQTT 5.0: a packet that ends before the reason code means 0x00 (Success), one that ends before the
 * property length means no properties. Encoding always picks the shortest form.
 */
final class ReasonTail
{
    private ReasonTail()
    {
    }

    /**
     * @return the reason code (0..255), or a negative error.
     */
    static int decode(
        final DirectBuffer buffer, final int pos, final int end, final int packetType, final MqttProperties properties)
    {
        properties.clear();
        if (pos == end)
        {
            return ReasonCode.SUCCESS;
        }
        final int reasonCode = buffer.getByte(pos) & 0xFF;
        if (!ReasonCode.isAllowed(packetType, MqttVersion.V5, reasonCode))
        {
            return DecodeError.INVALID_REASON_CODE;
        }
        if (pos + 1 < end)
        {
            final int consumed = properties.decode(buffer, pos + 1, end, packetType);
            if (consumed < 0)
            {
                return consumed;
            }
            if (pos + 1 + consumed != end)
            {
                return DecodeError.TRAILING_BYTES;
            }
        }
        return reasonCode;
    }

    /**
     * @return the bytes of the tail on MQTT 5.0 in its shortest form.
     */
    static int length(final int reasonCode, final MqttProperties properties)
    {
        if (null == properties || properties.isEmpty())
        {
            return reasonCode == ReasonCode.SUCCESS ? 0 : 1;
        }
        return 1 + properties.sectionLength();
    }

    /**
     * @return the offset past the tail.
     */
    static int encode(
        final MutableDirectBuffer buffer, final int pos, final int reasonCode, final MqttProperties properties)
    {
        if (null == properties || properties.isEmpty())
        {
            if (reasonCode == ReasonCode.SUCCESS)
            {
                return pos;
            }
            buffer.putByte(pos, (byte)reasonCode);
            return pos + 1;
        }
        buffer.putByte(pos, (byte)reasonCode);
        return pos + 1 + properties.encode(buffer, pos + 1);
    }
}
