package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes SUBACK and UNSUBACK: a packet identifier, properties on 5.0, then one reason code per filter. A 3.1.1
 * UNSUBACK carries no reason codes (remaining length 2).
 */
public final class SubackFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private DirectBuffer buffer;
    private int packetType;
    private int packetId;
    private int codesOffset;
    private int codeCount;

    /**
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        this.buffer = buffer;
        codeCount = 0;
        properties.clear();
        packetType = length > 0 ? (buffer.getByte(offset) & 0xFF) >>> 4 : 0;
        if (packetType != PacketType.SUBACK && packetType != PacketType.UNSUBACK)
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        int pos = Fields.checkFixedHeader(buffer, offset, length, packetType);
        if (pos < 0)
        {
            return pos;
        }
        final int end = offset + length;
        packetId = Fields.readPacketId(buffer, pos, end);
        if (packetId < 0)
        {
            return packetId;
        }
        pos += 2;
        if (packetType == PacketType.UNSUBACK && version != MqttVersion.V5)
        {
            return pos == end ? length : DecodeError.REMAINING_LENGTH_INVALID;
        }
        if (version == MqttVersion.V5)
        {
            final int consumed = properties.decode(buffer, pos, end, packetType);
            if (consumed < 0)
            {
                return consumed;
            }
            pos += consumed;
        }
        if (pos == end)
        {
            return DecodeError.REASON_CODES_EMPTY;
        }
        for (int i = pos; i < end; i++)
        {
            if (!ReasonCode.isAllowed(packetType, version, buffer.getByte(i) & 0xFF))
            {
                return DecodeError.INVALID_REASON_CODE;
            }
        }
        codesOffset = pos;
        codeCount = end - pos;
        return length;
    }

    /**
     * @return SUBACK or UNSUBACK.
     */
    public int packetType()
    {
        return packetType;
    }

    public int packetId()
    {
        return packetId;
    }

    public MqttProperties properties()
    {
        return properties;
    }

    /**
     * @return how many reason codes, one per filter of the acknowledged request (0 for a 3.1.1 UNSUBACK).
     */
    public int reasonCodeCount()
    {
        return codeCount;
    }

    public int reasonCode(final int index)
    {
        if (index < 0 || index >= codeCount)
        {
            throw new IndexOutOfBoundsException("index " + index + " of " + codeCount);
        }
        return buffer.getByte(codesOffset + index) & 0xFF;
    }
}
