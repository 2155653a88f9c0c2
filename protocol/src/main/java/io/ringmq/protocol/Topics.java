package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Validation of topic names and topic filters, over (buffer, offset, length) views. The bytes are assumed to be
 * valid UTF-8 already; '/', '+', '#' and '$' are single bytes in UTF-8 and never occur inside a multi-byte
 * sequence, so a byte scan is exact.
 */
public final class Topics
{
    /** The prefix of an MQTT 5.0 shared subscription, {@code $share/{ShareName}/{filter}}. */
    public static final String SHARE_PREFIX = "$share/";
    private static final int SHARE_PREFIX_LENGTH = SHARE_PREFIX.length();
    private static final long LOW_BITS = 0x0101_0101_0101_0101L;
    private static final long HIGH_BITS = 0x8080_8080_8080_8080L;
    private static final long PLUS_BYTES = '+' * LOW_BITS;
    private static final long HASH_BYTES = '#' * LOW_BITS;

    private Topics()
    {
    }

    /**
     * A topic name is at least one character [MQTT-4.7.3-1] and has no wildcard [MQTT-3.3.2-2].
     *
     * @return 0 when valid, else a negative {@link DecodeError}.
     */
    public static int validateName(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length == 0)
        {
            return DecodeError.TOPIC_NAME_EMPTY;
        }
        for (int i = offset, end = offset + length; i < end; i++)
        {
            final byte b = buffer.getByte(i);
            if (b == '+' || b == '#')
            {
                return DecodeError.TOPIC_NAME_WILDCARD;
            }
        }
        return 0;
    }

    /**
     * A topic filter is at least one character [MQTT-4.7.3-1]; '#' stands alone as the last level
     * [MQTT-4.7.1-2]; '+' stands alone in its level [MQTT-4.7.1-3]. On MQTT 5.0 a filter that starts with
     * {@code $share/} must be {@code $share/{ShareName}/{filter}} with a non-empty ShareName free of '/', '+' and
     * '#', followed by a valid filter.
     *
     * @return 0 when valid, else a negative {@link DecodeError}.
     */
    public static int validateFilter(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        if (length == 0)
        {
            return DecodeError.TOPIC_FILTER_EMPTY;
        }
        if (version == MqttVersion.V5 && isShared(buffer, offset, length))
        {
            final int nameStart = offset + SHARE_PREFIX_LENGTH;
            final int end = offset + length;
            int i = nameStart;
            while (i < end && buffer.getByte(i) != '/')
            {
                final byte b = buffer.getByte(i);
                if (b == '+' || b == '#')
                {
                    return DecodeError.SHARED_FILTER_INVALID;
                }
                i++;
            }
            if (i == nameStart || i >= end - 1)
            {
                return DecodeError.SHARED_FILTER_INVALID;
            }
            return validatePlainFilter(buffer, i + 1, end - i - 1);
        }
        return validatePlainFilter(buffer, offset, length);
    }

    /**
     * The one split of a {@code $share/{name}/{filter}} that subscribing, access control and routing all use.
     *
     * @return the index of the '/' that ends the share name of {@code filter}, when it has a name and a filter
     * after it; -1 otherwise (a plain filter: {@code $share//x} or {@code $share/name/} to a 3.1.1 client, whose
     * filters are not validated as shared).
     */
    public static int shareNameEnd(final String filter)
    {
        if (!filter.startsWith(SHARE_PREFIX))
        {
            return -1;
        }
        final int nameEnd = filter.indexOf('/', SHARE_PREFIX_LENGTH);
        return nameEnd > SHARE_PREFIX_LENGTH && nameEnd < filter.length() - 1 ? nameEnd : -1;
    }

    /**
     * @return true when the filter starts with {@code $share/}.
     */
    public static boolean isShared(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length < SHARE_PREFIX_LENGTH)
        {
            return false;
        }
        for (int i = 0; i < SHARE_PREFIX_LENGTH; i++)
        {
            if (buffer.getByte(offset + i) != SHARE_PREFIX.charAt(i))
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @return true when the name or filter contains '+' or '#'.
     */
    public static boolean hasWildcard(final DirectBuffer buffer, final int offset, final int length)
    {
        for (int i = offset, end = offset + length; i < end; i++)
        {
            final byte b = buffer.getByte(i);
            if (b == '+' || b == '#')
            {
                return true;
            }
        }
        return false;
    }

    /**
     * Validates a topic name's bytes in one pass: well-formed UTF-8 without U+0000 [MQTT-1.5.4-1]
     * [MQTT-1.5.4-2], at least one character [MQTT-4.7.3-1], no wildcard [MQTT-3.3.2-2]. The PUBLISH hot path:
     * plain ASCII is checked eight bytes at a time, a name of eight bytes or more ending in one last word that
     * overlaps the one before, so only a name with other bytes is read byte by byte.
     *
     * @return 0 when valid, else a negative {@link DecodeError}.
     */
    public static int validateNameUtf8(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length == 0)
        {
            return DecodeError.TOPIC_NAME_EMPTY;
        }
        int i = 0;
        while (i + Long.BYTES <= length && isPlainAsciiWord(buffer.getLong(offset + i)))
        {
            i += Long.BYTES;
        }
        if (i == length ||
            (i > 0 && length - i < Long.BYTES && isPlainAsciiWord(buffer.getLong(offset + length - Long.BYTES))))
        {
            return 0; // every byte plain ASCII: fewer than eight were left, and the last word overlaps checked ones
        }
        // from a word boundary after plain ASCII, so i is on a character boundary
        final int valid = Utf8.validate(buffer, offset + i, length - i);
        if (valid < 0)
        {
            return valid;
        }
        return hasWildcard(buffer, offset + i, length - i) ? DecodeError.TOPIC_NAME_WILDCARD : 0;
    }

    /**
     * @return true when none of the eight bytes is non-ASCII, 0x00, '+' or '#' (SWAR: a zero byte in
     * {@code w ^ pattern} flags a match, found by the borrow of subtracting 0x01 from every byte).
     */
    private static boolean isPlainAsciiWord(final long w)
    {
        if ((w & HIGH_BITS) != 0)
        {
            return false;
        }
        final long plus = w ^ PLUS_BYTES;
        final long hash = w ^ HASH_BYTES;
        final long zeroByte = (w - LOW_BITS) & ~w;
        final long plusByte = (plus - LOW_BITS) & ~plus;
        final long hashByte = (hash - LOW_BITS) & ~hash;
        return ((zeroByte | plusByte | hashByte) & HIGH_BITS) == 0;
    }

    private static int validatePlainFilter(final DirectBuffer buffer, final int offset, final int length)
    {
        if (length == 0)
        {
            return DecodeError.TOPIC_FILTER_EMPTY;
        }
        final int end = offset + length;
        boolean levelStart = true;
        for (int i = offset; i < end; i++)
        {
            final byte b = buffer.getByte(i);
            if (b == '#')
            {
                if (!levelStart || i != end - 1)
                {
                    return DecodeError.TOPIC_FILTER_HASH_MISPLACED;
                }
            }
            else if (b == '+')
            {
                if (!levelStart || (i + 1 < end && buffer.getByte(i + 1) != '/'))
                {
                    return DecodeError.TOPIC_FILTER_PLUS_MISPLACED;
                }
            }
            levelStart = b == '/';
        }
        return 0;
    }
}
