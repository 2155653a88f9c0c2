package io.ringmq.pipeline.retained;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 72102c2: at a bound, a put may start sweepExpired on the routing thread, once a second; it must look at
 * the messages that can expire (kept in expiry order), never walk the whole trie (a million nodes took 32 ms).
 */
class RetainedSweepCostReviewTest
{
    private static int put(final RetainedStore store, final byte[] t)
    {
        final byte[] p = {1};
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0);
    }

    @Test
    @DisplayName("MQTT-3.3.2-5, review: a sweep's work is the messages that have an expiry, not the trie: a store at "
        + "its count bound of 128-level topics, one of them expiring, tracks one; the sweep clears it and nothing "
        + "else, and the put that waited for room is then kept")
    void sweepLooksOnlyAtMessagesThatExpire()
    {
        final RetainedStore store = new RetainedStore(2_000, 256L << 20, true);
        final String tail = "/x".repeat(127); // 128 levels a topic
        final long now = System.currentTimeMillis();
        assertThat(put(store, "soon", now + 1_000)).isEqualTo(RetainedStore.STORED);
        int i = 0;
        while (put(store, ("d" + i + tail).getBytes(StandardCharsets.UTF_8)) == RetainedStore.STORED)
        {
            i++;
        }
        assertThat(i).isEqualTo(1_999); // the count bound
        assertThat(store.expiringCount()).as("what a sweep looks at").isEqualTo(1);
        assertThat(store.sweepExpired(now + 2 * RetainedStore.SWEEP_INTERVAL_MS)).isEqualTo(1);
        assertThat(store.expiringCount()).isZero();
        assertThat(put(store, ("z" + tail).getBytes(StandardCharsets.UTF_8))).isEqualTo(RetainedStore.STORED);
        assertThat(store.size()).isEqualTo(2_000);
    }

    private static int put(final RetainedStore store, final String topic, final long expiresAtMs)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = {1};
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, 1, 0, false, null, 0, 0,
            expiresAtMs);
    }

    @Test
    @DisplayName("MQTT-3.3.2-5, review: a sweep clears what expired, not a replacement without expiry, not one "
        + "cleared already, and the store balances after")
    void sweepClearsOnlyWhatExpired()
    {
        final RetainedStore store = new RetainedStore(100, 1 << 20, true);
        final long now = System.currentTimeMillis();
        assertThat(put(store, "a/1", now - 1)).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "a/2", now - 1)).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "a/3", now - 1)).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "a/4", now + 3_600_000)).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "a/1", io.ringmq.pipeline.Message.NEVER)).isEqualTo(RetainedStore.REPLACED); // no expiry
        final byte[] t = "a/2".getBytes(StandardCharsets.UTF_8);
        store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(new byte[0]), 0, 0, 0); // cleared
        assertThat(store.sweepExpired(now + 10 * RetainedStore.SWEEP_INTERVAL_MS)).isEqualTo(1); // a/3
        assertThat(store.size()).isEqualTo(2);
        for (final String topic : new String[]{"a/1", "a/4"})
        {
            final byte[] b = topic.getBytes(StandardCharsets.UTF_8);
            store.put(new UnsafeBuffer(b), 0, b.length, new UnsafeBuffer(new byte[0]), 0, 0, 0);
        }
        assertThat(store.size()).isZero();
        assertThat(store.nodeBytes()).isZero();
        assertThat(store.sweepExpired(now + 100 * RetainedStore.SWEEP_INTERVAL_MS)).isZero();
    }
}
