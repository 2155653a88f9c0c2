package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * UTF-8 validation and allocation-free encoding for MQTT strings. MQTT strings must be well-formed UTF-8 with no
 * surrogate code points [MQTT-1.5.4-1] and no U+0000 [MQTT-1.5.4-2]; a byte order mark is data and is kept
 * [MQTT-1.5.4-3].
 */
public final class Utf8
{
    private Utf8()
    {
    }

    /**
     * @param buffer holding the string bytes (no length prefix).
     * @param offset of the first byte.
     * @param length number of bytes.
     * @return 0 when valid, else {@link DecodeError#INVALID_UTF8} or {@link DecodeError#UTF8_NULL_CHARACTER}.
     */
    public static int validate(final DirectBuffer buffer, final int offset, final int length)
    {
        final int end = offset + length;
        int i = offset;
        while (i < end)
        {
            final int b0 = buffer.getByte(i);
            if (b0 > 0)
            {
                i++;
                continue;
            }
            if (b0 == 0)
            {
                return DecodeError.UTF8_NULL_CHARACTER;
            }
            final int lead = b0 & 0xFF;
            final int extra;
            int codePoint;
            if (lead >= 0xC2 && lead <= 0xDF)
            {
                extra = 1;
                codePoint = lead & 0x1F;
            }
            else if ((lead & 0xF0) == 0xE0)
            {
                extra = 2;
                codePoint = lead & 0x0F;
            }
            else if (lead >= 0xF0 && lead <= 0xF4)
            {
                extra = 3;
                codePoint = lead & 0x07;
            }
            else
            {
                return DecodeError.INVALID_UTF8; // continuation byte as lead, overlong C0/C1, or F5..FF
            }
            if (i + extra >= end)
            {
                return DecodeError.INVALID_UTF8;
            }
            for (int k = 1; k <= extra; k++)
            {
                final int b = buffer.getByte(i + k) & 0xFF;
                if ((b & 0xC0) != 0x80)
                {
                    return DecodeError.INVALID_UTF8;
                }
                codePoint = (codePoint << 6) | (b & 0x3F);
            }
            if ((extra == 2 && (codePoint < 0x800 || (codePoint >= 0xD800 && codePoint <= 0xDFFF))) ||
                (extra == 3 && (codePoint < 0x10000 || codePoint > 0x10FFFF)))
            {
                return DecodeError.INVALID_UTF8;
            }
            i += extra + 1;
        }
        return 0;
    }

    /**
     * @param text a Java string; an unpaired surrogate is counted as the one byte '?' that {@link #encode} writes.
     * @return the number of UTF-8 bytes it encodes to.
     */
    public static int encodedLength(final CharSequence text)
    {
        int length = 0;
        final int size = text.length();
        for (int i = 0; i < size; i++)
        {
            final char c = text.charAt(i);
            if (c < 0x80)
            {
                length += 1;
            }
            else if (c < 0x800)
            {
                length += 2;
            }
            else if (Character.isHighSurrogate(c) && i + 1 < size && Character.isLowSurrogate(text.charAt(i + 1)))
            {
                length += 4;
                i++;
            }
            else if (Character.isSurrogate(c))
            {
                length += 1;
            }
            else
            {
                length += 3;
            }
        }
        return length;
    }

    /**
     * Writes the UTF-8 bytes of a string without allocating.
     *
     * @param buffer to write.
     * @param offset of the first byte.
     * @param text   to encode; an unpaired surrogate becomes '?'.
     * @return bytes written, equal to {@link #encodedLength(CharSequence)}.
     */
    public static int encode(final MutableDirectBuffer buffer, final int offset, final CharSequence text)
    {
        int p = offset;
        final int size = text.length();
        for (int i = 0; i < size; i++)
        {
            final char c = text.charAt(i);
            if (c < 0x80)
            {
                buffer.putByte(p++, (byte)c);
            }
            else if (c < 0x800)
            {
                buffer.putByte(p++, (byte)(0xC0 | (c >> 6)));
                buffer.putByte(p++, (byte)(0x80 | (c & 0x3F)));
            }
            else if (Character.isHighSurrogate(c) && i + 1 < size && Character.isLowSurrogate(text.charAt(i + 1)))
            {
                final int cp = Character.toCodePoint(c, text.charAt(++i));
                buffer.putByte(p++, (byte)(0xF0 | (cp >> 18)));
                buffer.putByte(p++, (byte)(0x80 | ((cp >> 12) & 0x3F)));
                buffer.putByte(p++, (byte)(0x80 | ((cp >> 6) & 0x3F)));
                buffer.putByte(p++, (byte)(0x80 | (cp & 0x3F)));
            }
            else if (Character.isSurrogate(c))
            {
                buffer.putByte(p++, (byte)'?');
            }
            else
            {
                buffer.putByte(p++, (byte)(0xE0 | (c >> 12)));
                buffer.putByte(p++, (byte)(0x80 | ((c >> 6) & 0x3F)));
                buffer.putByte(p++, (byte)(0x80 | (c & 0x3F)));
            }
        }
        return p - offset;
    }
}
