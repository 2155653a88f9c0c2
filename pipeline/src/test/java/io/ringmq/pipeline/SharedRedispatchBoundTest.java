package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The bound on messages waiting for re-dispatch to another member of a shared subscription group: by bytes as well
 * as by count, released as routing takes them, and read again at each hand-back (a reload moves it).
 */
class SharedRedispatchBoundTest
{
    private static final int GROUP = 7;

    private static Message message(final int payloadLength)
    {
        return new Message(new byte[] {'t'}, new byte[payloadLength], 1, false);
    }

    private static long cost(final int payloadLength)
    {
        return 1 + payloadLength + SharedRedispatch.OVERHEAD_LENGTH;
    }

    @Test
    @DisplayName("4.8.2 hand-back: past the byte bound a message is dropped and counted, the others wait in order")
    void dropsPastTheByteBound()
    {
        final BrokerCounters counters = new BrokerCounters();
        final SharedRedispatch redispatch = new SharedRedispatch(counters, () -> 3 * cost(1_000));
        for (int i = 0; i < 5; i++)
        {
            redispatch.offer(GROUP, message(1_000));
        }
        assertThat(counters.get(BrokerCounters.SHARED_REDISPATCH_DROPPED)).isEqualTo(2);
        assertThat(redispatch.waitingBytes()).isEqualTo(3 * cost(1_000));
        redispatch.offer(GROUP, message(0));
        assertThat(counters.get(BrokerCounters.SHARED_REDISPATCH_DROPPED)).as("a small one past it too").isEqualTo(3);
    }

    @Test
    @DisplayName("4.8.2 hand-back: what routing is done with frees its bytes, so later hand-backs wait again")
    void routingReleasesTheBytes()
    {
        final BrokerCounters counters = new BrokerCounters();
        final SharedRedispatch redispatch = new SharedRedispatch(counters, () -> 2 * cost(1_000));
        for (int round = 0; round < 1_000; round++)
        {
            redispatch.offer(GROUP, message(1_000));
            redispatch.offer(GROUP, message(1_000));
            SharedRedispatch.Entry entry;
            while (null != (entry = redispatch.poll()))
            {
                assertThat(entry.groupId()).isEqualTo(GROUP);
                redispatch.done(entry);
            }
        }
        assertThat(counters.get(BrokerCounters.SHARED_REDISPATCH_DROPPED)).isZero();
        assertThat(redispatch.waitingBytes()).isZero();
        assertThat(redispatch.isEmpty()).isTrue();
    }

    @Test
    @DisplayName("4.8.2 hand-back: the bound is read at each offer; what waits past a lowered one stays")
    void boundFollowsAReload()
    {
        final BrokerCounters counters = new BrokerCounters();
        final AtomicLong bound = new AtomicLong(10 * cost(100));
        final SharedRedispatch redispatch = new SharedRedispatch(counters, bound::get);
        for (int i = 0; i < 4; i++)
        {
            redispatch.offer(GROUP, message(100));
        }
        bound.set(2 * cost(100));
        redispatch.offer(GROUP, message(100));
        assertThat(counters.get(BrokerCounters.SHARED_REDISPATCH_DROPPED)).isEqualTo(1);
        int waiting = 0;
        SharedRedispatch.Entry entry;
        while (null != (entry = redispatch.poll()))
        {
            redispatch.done(entry);
            waiting++;
        }
        assertThat(waiting).isEqualTo(4);
        redispatch.offer(GROUP, message(100));
        assertThat(redispatch.waitingBytes()).isEqualTo(cost(100));
    }

    @Test
    @DisplayName("4.8.2 hand-back: a broker's bound is a quarter of its message memory")
    void boundOfABroker()
    {
        assertThat(SharedRedispatch.maxBytesFor(new BrokerContext().memory(m -> m.maxMessageMemory(64L << 20))))
            .isEqualTo(16L << 20);
    }
}
