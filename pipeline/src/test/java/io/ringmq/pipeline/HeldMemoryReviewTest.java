package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of d2d8785 (helper-139): what the sessions' windows and queues hold within {@code --max-message-memory}.
 * A copy was counted once however many entries named it, and one session could take the whole share.
 */
class HeldMemoryReviewTest
{
    private static final int BUDGET = 256 * 1024;
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    @Test
    @DisplayName("2,000 persistent sessions away, each queueing the same 20 QoS 1 messages: their queue entries count " +
        "against the share, so what they hold stays within it (before: 40,000 entries, none counted, each copy once; " +
        "8,000 sessions and 1,000 messages ran a 64 MiB heap out)")
    void queueEntriesCountAgainstTheShare()
    {
        final int sessions = 2_000;
        final int messages = 20;
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(BUDGET)), ANONYMOUS);
        for (int s = 1; s <= sessions; s++)
        {
            harness.packet(s, connect("away-" + s, false));
            harness.packet(s, subscribe("t", 1));
            harness.offer(s, true, new byte[0], IngressEvent.CONNECTION_LOST); // away: its session stays
        }
        harness.packet(100_000, connect("pub", true));
        for (int i = 0; i < messages; i++)
        {
            harness.packet(100_000, PipelineTest.publish("t", 1, i + 1, false));
        }
        final long dropped = harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        final long entries = (long)sessions * messages - dropped;
        assertThat(dropped).as("copies not kept for lack of room").isPositive();
        assertThat(entries * 32) // SharedMessage.Pool.ENTRY_ALLOWANCE, what each entry is charged
            .as("what the entries held take of the heap").isLessThanOrEqualTo(BUDGET);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("the gauge, entries included")
            .isLessThanOrEqualTo(BUDGET);
    }

    @Test
    @DisplayName("a connected subscriber that never acknowledges fills the share with its queue, and a subscriber that " +
        "acknowledges still gets every one of its 20 messages: room is taken back from the largest queue's newest " +
        "(before: none, for as long as the other stayed)")
    void aSubscriberThatNeverAcknowledgesLeavesRoom()
    {
        final int budget = 64 * 1024;
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(budget)).limits(l -> l.maxInflight(2)), ANONYMOUS);
        harness.packet(1, connect("hog", true));
        harness.packet(1, subscribe("h", 1));
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 40; i++)
        {
            harness.packet(100, MessageMemoryTest.publish("h", i + 1, i)); // 4 KB each, never acknowledged
        }
        final long dropped = harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        assertThat(dropped).as("past the share").isPositive();
        harness.packet(2, connect("live", true));
        harness.packet(2, subscribe("t", 1));
        harness.outbound.takeTypes(2);
        assertThat(AwayCopiesReviewTest.liveDeliveries(harness, 40, 60)).as("its messages").hasSize(20);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("the hog's newest, taken back")
            .isGreaterThan(dropped);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isLessThanOrEqualTo(budget);
    }

    @Test
    @DisplayName("one slow subscriber alone may fill the share with its queue: 15 messages of 4 KiB in 64 KiB, none " +
        "dropped, all delivered in order as it acknowledges (review of 09ed1b1: a rule that held it to half the share " +
        "dropped a burst a slow subscriber would have read)")
    void aLoneSlowSubscriberMayFillTheShare()
    {
        final int budget = 64 * 1024;
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(budget)).limits(l -> l.maxInflight(2)), ANONYMOUS);
        harness.packet(1, connect("slow", true));
        harness.packet(1, subscribe("t", 1));
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 15; i++)
        {
            harness.packet(100, MessageMemoryTest.publish(i + 1, i)); // 15 x (4,225 + 32), 2 in flight, 13 queued
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        final java.util.List<String> got = new java.util.ArrayList<>();
        for (int round = 0; round < 20 && got.size() < 15; round++)
        {
            for (final byte[] packet : harness.outbound.takePackets(1))
            {
                if ((packet[0] & 0xF0) >> 4 == io.ringmq.protocol.PacketType.PUBLISH)
                {
                    got.add(PipelineTest.payloadsOf(java.util.List.of(packet)).get(0));
                    harness.packet(1, PipelineTest.ack(io.ringmq.protocol.PacketType.PUBACK,
                        PipelineTest.packetId(packet)));
                }
            }
        }
        assertThat(got).hasSize(15).isSorted();
    }
}
