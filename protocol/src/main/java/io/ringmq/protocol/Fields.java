package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * Bounds-checked readers and plain writers for the MQTT data representations of section 1.5: two-byte lengths,
 * UTF-8 strings and binary data. Readers return the offset just past the field, or a negative
 * {@link DecodeError}; they never read beyond {@code limit}.
 */
final class Fields
{
    private Fields()
    {
    }

    /**
     * @return the offset past a two-byte-length-prefixed binary field, or {@link DecodeError#FIELD_OVERRUNS_PACKET}.
     */
    static int skipBinary(final DirectBuffer buffer, final int offset, final int limit)
    {
        if (offset + 2 > limit)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final int end = offset + 2 + readUnsignedShort(buffer, offset);
        return end > limit ? DecodeError.FIELD_OVERRUNS_PACKET : end;
    }

    /**
     * @return the offset past a UTF-8 string field whose bytes are valid [MQTT-1.5.4-1] [MQTT-1.5.4-2], or an error.
     */
    static int skipUtf8(final DirectBuffer buffer, final int offset, final int limit)
    {
        final int end = skipBinary(buffer, offset, limit);
        if (end < 0)
        {
            return end;
        }
        final int valid = Utf8.validate(buffer, offset + 2, end - offset - 2);
        return valid < 0 ? valid : end;
    }

    static int readUnsignedShort(final DirectBuffer buffer, final int offset)
    {
        return ((buffer.getByte(offset) & 0xFF) << 8) | (buffer.getByte(offset + 1) & 0xFF);
    }

    static int readInt(final DirectBuffer buffer, final int offset)
    {
        return ((buffer.getByte(offset) & 0xFF) << 24) | ((buffer.getByte(offset + 1) & 0xFF) << 16) |
            ((buffer.getByte(offset + 2) & 0xFF) << 8) | (buffer.getByte(offset + 3) & 0xFF);
    }

    static int putUnsignedShort(final MutableDirectBuffer buffer, final int offset, final int value)
    {
        buffer.putByte(offset, (byte)(value >>> 8));
        buffer.putByte(offset + 1, (byte)value);
        return offset + 2;
    }

    static int putInt(final MutableDirectBuffer buffer, final int offset, final int value)
    {
        buffer.putByte(offset, (byte)(value >>> 24));
        buffer.putByte(offset + 1, (byte)(value >>> 16));
        buffer.putByte(offset + 2, (byte)(value >>> 8));
        buffer.putByte(offset + 3, (byte)value);
        return offset + 4;
    }

    /**
     * Writes a two-byte length and the slice's bytes.
     *
     * @return the offset past the field.
     */
    static int putSlice(final MutableDirectBuffer buffer, final int offset, final Slice slice)
    {
        final int length = slice.length();
        if (length > 65_535)
        {
            throw new IllegalArgumentException("string or binary field longer than 65535 bytes: " + length);
        }
        putUnsignedShort(buffer, offset, length);
        if (length > 0)
        {
            SmallCopy.copy(buffer, offset + 2, slice.buffer(), slice.offset(), length);
        }
        return offset + 2 + length;
    }

    /**
     * Writes the fixed header: first byte and remaining length.
     *
     * @return the offset past the header.
     */
    static int putFixedHeader(
        final MutableDirectBuffer buffer, final int offset, final int type, final int flags, final int remainingLength)
    {
        buffer.putByte(offset, (byte)((type << 4) | flags));
        return offset + 1 + VariableByteInteger.encode(buffer, offset + 1, remainingLength);
    }

    /**
     * @return the total packet length for a body of {@code remainingLength} bytes.
     */
    static int packetLength(final int remainingLength)
    {
        return 1 + VariableByteInteger.encodedLength(remainingLength) + remainingLength;
    }

    /**
     * Checks the fixed header of a complete frame of {@code length} bytes: its type, its reserved flag bits
     * [MQTT-2.2.2-1] and that the remaining length spans exactly the frame.
     *
     * @return the offset of the variable header, or a negative error.
     */
    static int checkFixedHeader(
        final DirectBuffer buffer, final int offset, final int length, final int expectedType)
    {
        if (length < 2)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final int first = buffer.getByte(offset) & 0xFF;
        if ((first >>> 4) != expectedType)
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        if (expectedType != PacketType.PUBLISH && (first & 0x0F) != PacketType.requiredFlags(expectedType))
        {
            return DecodeError.INVALID_FIXED_HEADER_FLAGS;
        }
        final int packed = VariableByteInteger.decode(buffer, offset + 1, offset + length);
        if (packed <= 0)
        {
            return packed == 0 ? DecodeError.FIELD_OVERRUNS_PACKET : packed;
        }
        final int bodyOffset = offset + 1 + VariableByteInteger.byteCount(packed);
        final int end = bodyOffset + VariableByteInteger.value(packed);
        if (end != offset + length)
        {
            return end > offset + length ? DecodeError.FIELD_OVERRUNS_PACKET : DecodeError.TRAILING_BYTES;
        }
        return bodyOffset;
    }

    /**
     * Reads a non-zero packet identifier [MQTT-2.3.1-1].
     *
     * @return the identifier (1..65535) or a negative error.
     */
    static int readPacketId(final DirectBuffer buffer, final int offset, final int limit)
    {
        if (offset + 2 > limit)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final int packetId = readUnsignedShort(buffer, offset);
        return packetId == 0 ? DecodeError.PACKET_ID_ZERO : packetId;
    }

    /**
     * @param properties the section to write, or null for none.
     * @return the bytes the section takes on the wire for this version (0 before MQTT 5.0).
     */
    static int sectionLength(final int version, final MqttProperties properties)
    {
        if (version != MqttVersion.V5)
        {
            return 0;
        }
        return null == properties ? 1 : properties.sectionLength();
    }

    /**
     * Writes a property section on MQTT 5.0 (an empty one when {@code properties} is null); nothing before 5.0.
     *
     * @return the offset past the section.
     */
    static int putProperties(
        final MutableDirectBuffer buffer, final int offset, final int version, final MqttProperties properties)
    {
        if (version != MqttVersion.V5)
        {
            return offset;
        }
        if (null == properties)
        {
            buffer.putByte(offset, (byte)0);
            return offset + 1;
        }
        return offset + properties.encode(buffer, offset);
    }

    static void checkPacketId(final int packetId)
    {
        if (packetId < 1 || packetId > 65_535)
        {
            throw new IllegalArgumentException("packet identifier out of range: " + packetId);
        }
    }
}
