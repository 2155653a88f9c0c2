package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A delivery shard's way to its agent's outbound ring when the ring stays full: the backlog holds what waits up to its
 * share, the shard waits for the agent past it, and once the agent is judged stuck a connection whose packet would
 * pass the share is closed, once.
 */
class ShardOutputTest
{
    /** An agent's ring that takes nothing until opened, and then notes the closes it is given. */
    private static final class Ring implements Outbound
    {
        final List<Long> closed = new ArrayList<>();
        final List<Long> sent = new ArrayList<>();
        boolean open;
        int wakes;

        public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer, final int offset,
            final int length)
        {
            if (open)
            {
                sent.add(connectionId);
            }
            return open;
        }

        public boolean close(final int agentIndex, final long connectionId)
        {
            if (open)
            {
                closed.add(connectionId);
            }
            return open;
        }

        public void endOfBatch()
        {
            wakes++;
        }
    }

    @Test
    @DisplayName("an agent that takes nothing: past the share the shard waits for it, then closes each connection "
        + "whose packet would pass the share once, its later packets dropped, the backlog held to its share and a "
        + "close per connection; once the agent drains, packets for them go on")
    void stuckAgentClosesEachConnectionOnce()
    {
        final Ring ring = new Ring();
        final BrokerCounters counters = new BrokerCounters();
        final int cap = 1 << 20;
        final ShardOutput output = new ShardOutput(0, ring, counters, cap);
        final UnsafeBuffer large = new UnsafeBuffer(new byte[64 * 1024]);
        final UnsafeBuffer small = new UnsafeBuffer(new byte[16]);
        while (output.backlogBytes() + 64 * 1024 <= cap)
        {
            output.send(1, large, large.capacity(), false);
        }
        while (output.backlogBytes() + OutboundBacklog.entryLength(small.capacity()) <= cap)
        {
            output.send(1, small, small.capacity(), false); // to the brim: no packet of any length fits now
        }
        final long full = output.backlogBytes();
        final int wakesBefore = ring.wakes;
        output.send(2, large, large.capacity(), false); // waits for the agent, which takes nothing
        assertThat(ring.wakes).as("the agent woken while the shard waits").isGreaterThan(wakesBefore);
        assertThat(counters.get(BrokerCounters.BUFFER_MEMORY_CLOSED)).isEqualTo(1);
        final int connections = 1_000;
        for (int round = 0; round < 10; round++)
        {
            for (int c = 0; c < connections; c++)
            {
                output.send(1_000 + c, small, small.capacity(), false);
            }
            output.send(2, small, small.capacity(), false);
            output.close(2);
        }
        assertThat(counters.get(BrokerCounters.BUFFER_MEMORY_CLOSED)).as("each connection closed once")
            .isEqualTo(1 + connections);
        assertThat(output.backlogBytes()).as("the share, and a close per connection")
            .isLessThanOrEqualTo(full + 16L * (1 + connections));

        ring.open = true;
        output.drain();
        assertThat(ring.closed).as("each close once, in order").hasSize(1 + connections).startsWith(2L, 1_000L);
        assertThat(output.backlogged()).isFalse();
        output.send(2, small, small.capacity(), false);
        assertThat(ring.sent).as("after the drain, what comes for it goes on to the agent (which closed it)")
            .endsWith(2L);
    }
}
