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
