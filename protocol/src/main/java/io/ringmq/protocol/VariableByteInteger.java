package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * The MQTT variable byte integer: 7 bits a byte, least significant group first, at most 4 bytes
 * (0..268,435,455) [MQTT-1.5.5-1].
 * <p>
 * {@link #decode(DirectBuffer, int, int)} returns a packed, allocation-free result: {@code (value << 3) | byteCount}
 * when complete, {@link DecodeError#NEED_MORE} (0) when the buffer ends inside the integer, or a negative
 * {@link DecodeError}. Unpack with {@link #value(int)} and {@link #byteCount(int)}.
 */
public final class VariableByteInteger
{
    /** The largest value four bytes can carry. */
    public static final int MAX_VALUE = 268_435_455;
    /** The most bytes one integer may take. */
    public static final int MAX_LENGTH = 4;

    private VariableByteInteger()
    {
    }

    /**
     * Decodes one integer, rejecting a fifth byte and non-minimal encodings (a trailing 0x00 group after a
     * continuation, e.g. {@code 0x80 0x00} for zero).
     *
     * @param buffer to read.
     * @param offset of the first byte.
     * @param limit  one past the last readable byte.
     * @return packed value and byte count, {@link DecodeError#NEED_MORE}, or a negative error.
     */
    public static int decode(final DirectBuffer buffer, final int offset, final int limit)
    {
        int value = 0;
        int shift = 0;
        for (int i = 0; i < MAX_LENGTH; i++)
        {
            if (offset + i >= limit)
            {
                return DecodeError.NEED_MORE;
            }
            final int b = buffer.getByte(offset + i) & 0xFF;
            value |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0)
            {
                if (b == 0 && i > 0)
                {
                    return DecodeError.NON_MINIMAL_VARIABLE_BYTE_INTEGER;
                }
                return (value << 3) | (i + 1);
            }
            shift += 7;
        }
        return DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER;
    }

    /**
     * @param packed a non-negative result of {@link #decode(DirectBuffer, int, int)}.
     * @return the decoded value.
     */
    public static int value(final int packed)
    {
        return packed >>> 3;
    }

    /**
     * @param packed a positive result of {@link #decode(DirectBuffer, int, int)}.
     * @return how many bytes the integer took.
     */
    public static int byteCount(final int packed)
    {
        return packed & 7;
    }

    /**
     * @param value 0..{@link #MAX_VALUE}.
     * @return bytes needed to encode it.
     */
    public static int encodedLength(final int value)
    {
        if (value < 128)
        {
            return 1;
        }
        if (value < 16_384)
        {
            return 2;
        }
        if (value < 2_097_152)
        {
            return 3;
        }
        return 4;
    }

    /**
     * @param buffer to write.
     * @param offset of the first byte.
     * @param value  0..{@link #MAX_VALUE}.
     * @return bytes written.
     */
    public static int encode(final MutableDirectBuffer buffer, final int offset, final int value)
    {
        if (value < 0 || value > MAX_VALUE)
        {
            throw new IllegalArgumentException("variable byte integer out of range: " + value);
        }
        int remaining = value;
        int i = 0;
        do
        {
            int b = remaining & 0x7F;
            remaining >>>= 7;
            if (remaining > 0)
            {
                b |= 0x80;
            }
            buffer.putByte(offset + i++, (byte)b);
        }
        while (remaining > 0);
        return i;
    }
}
