package io.ringmq.pipeline.retained;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.MessageSource;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 7593b7a (check_retain_source): a retained message's source counts against the byte bound, and every
 * way a message leaves the store (clear, replacement by another source or none, expiry sweep, the broker's exempt
 * message in its place and back) gives exactly its bytes back.
 */
class RetainedStoreSourceReviewTest
{
    private static int put(final RetainedStore store, final String topic, final String payload, final boolean exempt,
        final long expiresAtMs, final MessageSource source)
    {
        final byte[] t = topic.getBytes(StandardCharsets.UTF_8);
        final byte[] p = payload.getBytes(StandardCharsets.UTF_8);
        return store.put(new UnsafeBuffer(t), 0, t.length, new UnsafeBuffer(p), 0, p.length, 1, exempt, null, 0, 0,
            expiresAtMs, source);
    }

    @Test
    @DisplayName("review: replacing a message by one of another source, or of none, counts the difference of the "
        + "sources' names; clearing gives everything back")
    void replacementBySourcesCountsTheDifference()
    {
        final RetainedStore store = new RetainedStore(10, 1_000);
        assertThat(put(store, "t", "p", false, Message.NEVER, new MessageSource("al", "c1"))).isEqualTo(
            RetainedStore.STORED);
        assertThat(store.bytes()).isEqualTo(1 + 1 + 2 + 2);
        assertThat(put(store, "t", "p", false, Message.NEVER, new MessageSource("bobby", "c2"))).isEqualTo(
            RetainedStore.REPLACED);
        assertThat(store.bytes()).isEqualTo(1 + 1 + 5 + 2);
        assertThat(put(store, "t", "p", false, Message.NEVER, new MessageSource(null, ""))).isEqualTo(
            RetainedStore.REPLACED);
        assertThat(store.bytes()).isEqualTo(2);
        assertThat(put(store, "t", "", false, Message.NEVER, null)).isEqualTo(RetainedStore.CLEARED);
        assertThat(store.bytes()).isZero();
        assertThat(store.size()).isZero();
    }

    @Test
    @DisplayName("review: the expiry sweep gives a message's source bytes back with it")
    void sweepGivesSourceBytesBack()
    {
        final RetainedStore store = new RetainedStore(10, 1_000);
        final long now = System.currentTimeMillis();
        put(store, "a", "1", false, now + 10, new MessageSource("u".repeat(100), "c"));
        put(store, "b", "1", false, Message.NEVER, new MessageSource("x", "y"));
        assertThat(store.bytes()).isEqualTo(2 + 101 + 2 + 2);
        assertThat(store.sweepExpired(now + 60_000)).isEqualTo(1);
        assertThat(store.bytes()).isEqualTo(2 + 2);
        assertThat(store.expiringCount()).isZero();
    }

    @Test
    @DisplayName("review: an exempt ($SYS) message in place of a client's message with a source, and a client's "
        + "with a source in place of an exempt one: the clients' share of the bound stays exact")
    void exemptAndSourcedReplaceEachOther()
    {
        final RetainedStore store = new RetainedStore(10, 20);
        final MessageSource source = new MessageSource("user", "cid"); // 7 bytes
        assertThat(put(store, "$SYS/x", "p", false, Message.NEVER, source)).isEqualTo(RetainedStore.STORED);
        assertThat(put(store, "$SYS/x", "broker", true, Message.NEVER, null)).isEqualTo(RetainedStore.REPLACED);
        // the clients now hold nothing: 20 bytes of client messages fit
        assertThat(put(store, "c", "012345678901", false, Message.NEVER, source)).as("1 + 12 + 7 = 20")
            .isNotEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(store, "c", "", false, Message.NEVER, null)).isEqualTo(RetainedStore.CLEARED);
        // a client's message with a source takes the exempt one's place: it counts as a client's again
        assertThat(put(store, "$SYS/x", "p", false, Message.NEVER, source)).isEqualTo(RetainedStore.REPLACED);
        assertThat(put(store, "d", "0123456", false, Message.NEVER, null)).as("6 + 1 + 7 = 14 held; 14 + 8 > 20")
            .isEqualTo(RetainedStore.REFUSED_BYTES);
        assertThat(put(store, "$SYS/x", "", false, Message.NEVER, null)).isEqualTo(RetainedStore.CLEARED);
        assertThat(store.bytes()).isZero();
        assertThat(put(store, "d", "012345678901", false, Message.NEVER, source)).as("20 fit again")
            .isEqualTo(RetainedStore.STORED);
    }
}
