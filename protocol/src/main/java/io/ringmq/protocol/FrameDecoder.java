package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Incremental framing: finds where the next packet ends in bytes that arrive in arbitrary pieces, one byte at a
 * time included. It keeps no state between calls; the caller re-offers the unconsumed bytes with more appended.
 * <p>
 * The fixed header is judged as early as possible: the packet type and its reserved flag bits [MQTT-2.2.2-1]
 * from the first byte, and the maximum packet size as soon as the remaining length is known, before the body is
 * buffered. So a connection never needs to buffer more than one maximum-size packet.
 */
public final class FrameDecoder
{
    private int packetType;
    private int flags;
    private int headerLength;
    private int frameLength;

    /**
     * @param buffer           holding received bytes.
     * @param offset           of the first unconsumed byte, the start of a packet.
     * @param available        bytes received from {@code offset}.
     * @param version          the connection's protocol level (use {@link MqttVersion#V5} before CONNECT).
     * @param maxPacketLength  the largest whole packet accepted, fixed header included.
     * @return the length of the complete packet at {@code offset}, {@link DecodeError#NEED_MORE}, or a negative
     * {@link DecodeError}.
     */
    public int decode(
        final DirectBuffer buffer, final int offset, final int available, final int version, final int maxPacketLength)
    {
        frameLength = 0;
        if (available < 1)
        {
            return DecodeError.NEED_MORE;
        }
        final int first = buffer.getByte(offset) & 0xFF;
        packetType = first >>> 4;
        flags = first & 0x0F;
        if (!PacketType.isDefined(packetType, version))
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        if (packetType == PacketType.PUBLISH)
        {
            if ((flags & 0x06) == 0x06)
            {
                return DecodeError.INVALID_QOS; // [MQTT-3.3.1-4]
            }
        }
        else if (flags != PacketType.requiredFlags(packetType))
        {
            return DecodeError.INVALID_FIXED_HEADER_FLAGS; // [MQTT-2.2.2-1]
        }
        final int packed = VariableByteInteger.decode(buffer, offset + 1, offset + available);
        if (packed <= 0)
        {
            return packed;
        }
        headerLength = 1 + VariableByteInteger.byteCount(packed);
        final long total = (long)headerLength + VariableByteInteger.value(packed);
        if (total > maxPacketLength)
        {
            return DecodeError.PACKET_TOO_LARGE;
        }
        frameLength = (int)total;
        return available >= frameLength ? frameLength : DecodeError.NEED_MORE;
    }

    /**
     * @return the type of the last packet header seen.
     */
    public int packetType()
    {
        return packetType;
    }

    /**
     * @return the four flag bits of the last packet header seen.
     */
    public int flags()
    {
        return flags;
    }

    /**
     * @return the fixed header's length (2..5) once the remaining length was decoded.
     */
    public int headerLength()
    {
        return headerLength;
    }

    /**
     * @return the whole packet's length once its remaining length was decoded, even when the body has not all
     * arrived (so a caller can size its buffer); 0 before that.
     */
    public int frameLength()
    {
        return frameLength;
    }
}
