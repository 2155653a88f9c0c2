package io.ringmq.pipeline.retained;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: the retained trie's nodes are heap too, and the broker's store counts them toward its byte bound.
 */
class RetainedNodeBytesReviewTest
{
    private static int put(final RetainedStore store, final String topic, final String payload)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0);
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, review: 128-level topics of 255 bytes each hold 128 nodes: the byte bound refuses "
        + "them by what they hold of the heap, and clearing gives it back")
    void deepTopicsCountTheirNodes()
    {
        final long bound = 1024 * 1024;
        final RetainedStore store = new RetainedStore(100_000, bound, true);
        final String tail = "/x".repeat(127);
        int stored = 0;
        for (int i = 0; i < 10_000; i++)
        {
            if (put(store, "d" + i + tail, "1") == RetainedStore.STORED)
            {
                stored++;
            }
        }
        // as topic and payload bytes alone 1 MiB takes about 4,000 of them: 72 MiB of nodes
        assertThat(stored).as("stored within 1 MiB counting the nodes").isLessThan(60);
        assertThat(store.bytes() + store.nodeBytes()).isLessThanOrEqualTo(bound);
        for (int i = 0; i < stored; i++)
        {
            assertThat(put(store, "d" + i + tail, "")).isEqualTo(RetainedStore.CLEARED);
        }
        assertThat(store.nodeBytes()).as("every node pruned, every byte given back").isZero();
        assertThat(store.bytes()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.2-5, review: at its count bound the store lets go of messages whose expiry has passed, "
        + "so a new one is kept")
    void expiredMessagesGiveWayAtTheBound()
    {
        final RetainedStore store = new RetainedStore(2, 1024, true);
        final byte[] p = "1".getBytes(StandardCharsets.UTF_8);
        for (final String topic : new String[]{"e/1", "e/2"})
        {
            final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
            assertThat(store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0, false, null,
                0, 0, System.currentTimeMillis() - 1)).isEqualTo(RetainedStore.STORED); // expired already
        }
        assertThat(put(store, "kept", "v")).isEqualTo(RetainedStore.STORED);
        assertThat(store.size()).isEqualTo(1);
        assertThat(store.nodeBytes()).isEqualTo(RetainedStore.NODE_BYTES + 4);
    }
}
