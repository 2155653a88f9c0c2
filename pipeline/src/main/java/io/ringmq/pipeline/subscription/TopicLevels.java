package io.ringmq.pipeline.subscription;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Splits topic names and filters into their levels (allocates: for subscribe, unsubscribe and retain, never
 * for matching a published topic).
 */
public final class TopicLevels
{
    private TopicLevels()
    {
    }

    public static byte[][] split(final String topic)
    {
        return split(topic.getBytes(StandardCharsets.UTF_8));
    }

    public static byte[][] split(final byte[] bytes)
    {
        int count = 1;
        for (final byte b : bytes)
        {
            if (b == '/')
            {
                count++;
            }
        }
        final byte[][] levels = new byte[count][];
        int from = 0;
        int index = 0;
        for (int i = 0; i <= bytes.length; i++)
        {
            if (i == bytes.length || bytes[i] == '/')
            {
                levels[index++] = Arrays.copyOfRange(bytes, from, i);
                from = i + 1;
            }
        }
        return levels;
    }
}
