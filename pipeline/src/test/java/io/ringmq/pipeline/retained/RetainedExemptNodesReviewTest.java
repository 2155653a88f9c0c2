package io.ringmq.pipeline.retained;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 72102c2: the broker's own retained messages ($SYS, exempt) are "neither refused by the limits nor counted
 * against what clients may retain", but the trie nodes they hold are added to nodeBytes, which the byte bound of
 * clients' messages counts in full.
 */
class RetainedExemptNodesReviewTest
{
    private static int put(final RetainedStore store, final String topic, final boolean exempt)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = "1".getBytes(StandardCharsets.UTF_8);
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 0, exempt);
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, review: the $SYS tree's nodes do not take the room of clients' retained messages")
    void exemptNodesAreNotCountedAgainstClients()
    {
        final RetainedStore store = new RetainedStore(100, 4 * 1024, true);
        for (final String window : new String[]{"1min", "5min", "15min"})
        {
            for (final String what : new String[]{"messages", "publish", "bytes"})
            {
                for (final String direction : new String[]{"received", "sent"})
                {
                    assertThat(put(store, "$SYS/broker/load/" + what + "/" + direction + "/" + window, true))
                        .isEqualTo(RetainedStore.STORED);
                }
            }
        }
        // 18 exempt messages: 3 KiB of their own nodes
        assertThat(put(store, "a/b", false)).as("a client's first retained message, 2 nodes and 4 bytes")
            .isEqualTo(RetainedStore.STORED);
    }

    @Test
    @DisplayName("review: clearing the $SYS messages gives every node back, and a client's nodes under no $SYS prefix "
        + "are counted as before")
    void nodeBytesBalance()
    {
        final RetainedStore store = new RetainedStore(100, 1 << 20, true);
        put(store, "$SYS/broker/x", true);
        put(store, "c/d", false);
        final long client = 2L * RetainedStore.NODE_BYTES + 2;
        assertThat(store.nodeBytes()).isGreaterThanOrEqualTo(client);
        final byte[] sys = "$SYS/broker/x".getBytes(StandardCharsets.UTF_8);
        store.put(new UnsafeBuffer(sys), 0, sys.length, new UnsafeBuffer(new byte[0]), 0, 0, 0, true);
        final byte[] c = "c/d".getBytes(StandardCharsets.UTF_8);
        store.put(new UnsafeBuffer(c), 0, c.length, new UnsafeBuffer(new byte[0]), 0, 0, 0, false);
        assertThat(store.nodeBytes()).isZero();
    }
}
