package io.ringmq.pipeline.retained;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: the broker's exempt ($SYS) messages and clients' messages on the same topics, in any order, never make
 * the clients' share of the limits drift (a seeded random walk against a model).
 */
class RetainedExemptAccountingReviewTest
{
    private static final int MAX_COUNT = 8;
    private static final long MAX_BYTES = 400;

    @Test
    @DisplayName("exempt and client puts, replacements and clears on shared topics: the store refuses exactly "
        + "what the model says and ends empty")
    void exemptAccountingNeverDrifts()
    {
        for (long seed = 1; seed <= 200; seed++)
        {
            final Random random = new Random(seed);
            final RetainedStore store = new RetainedStore(MAX_COUNT, MAX_BYTES);
            final Map<String, long[]> model = new HashMap<>(); // topic -> {bytes, exempt}
            for (int step = 0; step < 500; step++)
            {
                final String topic = "$SYS/broker/t" + random.nextInt(12);
                final boolean exempt = random.nextInt(3) == 0;
                final int payloadLength = random.nextInt(4) == 0 ? 0 : 1 + random.nextInt(60);
                final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
                final UnsafeBuffer topicBuffer = new UnsafeBuffer(t);
                final UnsafeBuffer payload = new UnsafeBuffer(new byte[Math.max(1, payloadLength)]);
                final int result = store.put(topicBuffer, 0, t.length, payload, 0, payloadLength, 0, exempt);

                final long[] old = model.get(topic);
                final int expected;
                if (payloadLength == 0)
                {
                    expected = RetainedStore.CLEARED;
                    model.remove(topic);
                }
                else
                {
                    final long bytes = (long)t.length + payloadLength;
                    long clientCount = 0;
                    long clientBytes = 0;
                    for (final long[] m : model.values())
                    {
                        if (m[1] == 0)
                        {
                            clientCount++;
                            clientBytes += m[0];
                        }
                    }
                    final boolean oldCounted = null != old && old[1] == 0;
                    if (!exempt && !oldCounted && clientCount >= MAX_COUNT)
                    {
                        expected = RetainedStore.REFUSED_COUNT;
                    }
                    else if (!exempt && clientBytes - (oldCounted ? old[0] : 0) + bytes > MAX_BYTES)
                    {
                        expected = RetainedStore.REFUSED_BYTES;
                    }
                    else
                    {
                        expected = null == old ? RetainedStore.STORED : RetainedStore.REPLACED;
                        model.put(topic, new long[]{bytes, exempt ? 1 : 0});
                    }
                }
                assertThat(result).as("seed %d step %d %s exempt=%s length=%d", seed, step, topic, exempt,
                    payloadLength).isEqualTo(expected);
                assertThat(store.size()).isEqualTo(model.size());
                assertThat(store.bytes()).isEqualTo(model.values().stream().mapToLong(m -> m[0]).sum());
            }
        }
    }
}
