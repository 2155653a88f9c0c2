package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * PINGREQ and PINGRESP: a fixed header with flags 0000 and a remaining length of 0, nothing else.
 */
public final class PingCodec
{
    /** The length of either packet. */
    public static final int LENGTH = 2;

    private PingCodec()
    {
    }

    /**
     * @param packetType PINGREQ or PINGRESP, as framed.
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public static int decode(final DirectBuffer buffer, final int offset, final int length, final int packetType)
    {
        final int pos = Fields.checkFixedHeader(buffer, offset, length, packetType);
        if (pos < 0)
        {
            return pos;
        }
        return pos == offset + length ? length : DecodeError.REMAINING_LENGTH_INVALID;
    }

    /**
     * @param packetType PINGREQ or PINGRESP.
     * @return bytes written: {@link #LENGTH}.
     */
    public static int encode(final MutableDirectBuffer buffer, final int offset, final int packetType)
    {
        if (packetType != PacketType.PINGREQ && packetType != PacketType.PINGRESP)
        {
            throw new IllegalArgumentException("not a ping: " + PacketType.name(packetType));
        }
        buffer.putByte(offset, (byte)(packetType << 4));
        buffer.putByte(offset + 1, (byte)0);
        return LENGTH;
    }
}
