package io.ringmq.pipeline;

import io.ringmq.pipeline.OwnershipReviewTest.MultiAgentHarness;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A second adversarial review of --max-message-memory (6e9abe1), each test failing on that commit: two I/O agents,
 * two delivery shards, each with half of a 64 KiB budget.
 */
class MessageMemoryThirdReviewTest
{
    private static final int BUDGET = MessageMemoryReviewTest.BUDGET;
    private static final int COST = MessageMemoryReviewTest.COST;

    @Test
    @DisplayName("40 sessions that shared 3 unacknowledged copies in shard 0 move to shard 1: they share 3 copies "
        + "there too, nothing dropped, each resent its 3 (each brought a private copy, adopted whatever it cost: 18x "
        + "--max-message-memory with 7) [MQTT-4.4.0-1]")
    void movingInflightCopiesStayWithinTheBudget()
    {
        final MultiAgentHarness harness = MessageMemoryReviewTest.twoShards();
        final int sessions = 40;
        for (int s = 0; s < sessions; s++)
        {
            harness.packet(0, 10 + s, connect("sub-" + s, false)); // online through agent 0: window of 32
            harness.packet(0, 10 + s, subscribe("t", 1));
        }
        harness.packet(0, 1, connect("pub", true));
        // 3 x (4,225 + 40 x 32) bytes in shard 0, one copy each for all 40 windows: as much as a session that
        // never acknowledges may hold of shard 0's half
        final int copies = 3;
        final long cost = COST + sessions * (long)MessageMemoryReviewTest.ENTRY;
        for (int i = 0; i < copies; i++)
        {
            harness.packet(0, 1, MessageMemoryTest.publish(i + 1, i));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isEqualTo(copies * cost);
        for (int s = 0; s < sessions; s++) // never acknowledged; each client comes back through agent 1
        {
            harness.end(0, 10 + s, IngressEvent.CONNECTION_LOST);
            harness.packet(1, 100 + s, connect("sub-" + s, false));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("shared, not dropped").isZero();
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("3 copies, now in shard 1")
            .isEqualTo(copies * cost);
        for (int s = 0; s < sessions; s++)
        {
            assertThat(MessageMemoryReviewTest.publishes(harness, 100 + s)).as("resent to session %d", s)
                .hasSize(copies);
        }
        harness.packet(0, 1, MessageMemoryTest.publish(8, 8)); // each holds what it may of shard 1: not kept
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY))
            .as("bytes held in copies, with --max-message-memory %d", BUDGET).isLessThanOrEqualTo(BUDGET);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isEqualTo(sessions);
    }

    @Test
    @DisplayName("sessions moving in with in-flight messages no other brought: the new shard keeps them while its "
        + "share has room, and drops and counts the rest (they are not resent)")
    void distinctInflightCopiesPastTheShareAreDropped()
    {
        final MultiAgentHarness harness = MessageMemoryReviewTest.twoShards();
        harness.packet(0, 1, connect("pub", true));
        int packetId = 0;
        for (int s = 0; s < 3; s++)
        {
            harness.packet(0, 10 + s, connect("own-" + s, false));
            harness.packet(0, 10 + s, subscribe("own/" + s, 1)); // messages no other session gets
            for (int i = 0; i < 4; i++) // 4 x (4,229 + 32) bytes: what one session may hold of shard 0's half
            {
                harness.packet(0, 1, MessageMemoryTest.publish("own/" + s, ++packetId, 100 * s + i));
            }
            harness.end(0, 10 + s, IngressEvent.CONNECTION_LOST);
            harness.packet(1, 100 + s, connect("own-" + s, false)); // moves to shard 1 with 7 in flight
        }
        harness.packet(0, 1, MessageMemoryTest.publish(++packetId, 999)); // one more batch: the gauge is current
        assertThat(MessageMemoryReviewTest.publishes(harness, 100)).as("the first fits in shard 1's half").hasSize(4);
        assertThat(MessageMemoryReviewTest.publishes(harness, 101)).as("three of the second").hasSize(3);
        assertThat(MessageMemoryReviewTest.publishes(harness, 102)).as("none of the third").isEmpty();
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isEqualTo(5);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isLessThanOrEqualTo(BUDGET / 2);
    }

    @Test
    @DisplayName("a shared subscriber whose move fails (out of heap): the message its group gave it, never sent, goes "
        + "back to the group (it was released, neither handed back nor counted)")
    void anAbandonedSharedMessageGoesBackToItsGroup() throws Exception
    {
        final MultiAgentHarness harness = MessageMemoryReviewTest.twoShards();
        harness.packet(0, 10, connect("m1", false));
        harness.packet(0, 10, subscribe("$share/g/t", 1));
        harness.end(0, 10, IngressEvent.CONNECTION_LOST);
        harness.packet(0, 1, connect("pub", true));
        harness.packet(0, 1, MessageMemoryTest.publish(1, 0)); // the group's only member, offline: queued for m1
        harness.packet(0, 20, connect("m2", true));
        harness.packet(0, 20, subscribe("$share/g/t", 1)); // a second member, online
        harness.outbound.takePackets(20);
        final long droppedBefore = dropped(harness);
        MessageMemoryReviewTest.failNextCopy(harness, 0); // m1's message is the only one queued there
        harness.packet(1, 11, connect("m1", false)); // moves 0 -> 1; the copy throws in shard 0: abandon
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isPositive();
        harness.packet(0, 1, MessageMemoryTest.publish(2, 1)); // a later batch (the group goes on)
        final List<String> got = new ArrayList<>();
        for (final long connection : new long[]{11, 20})
        {
            for (final byte[] publish : MessageMemoryReviewTest.publishes(harness, connection))
            {
                got.add(connection + ":" + numberOf(publish));
            }
        }
        assertThat(got.stream().filter(g -> g.endsWith(":0")).count() + (dropped(harness) - droppedBefore))
            .as("message 0, which m1 never got: delivered to a member or counted dropped (delivered: %s)", got)
            .isPositive();
    }

    /**
     * @return the number MessageMemoryTest.publish put at the start of the payload (a 3.1.1 QoS 1 PUBLISH).
     */
    private static int numberOf(final byte[] publish)
    {
        final String text = new String(publish, java.nio.charset.StandardCharsets.US_ASCII);
        final int at = text.indexOf('t') + 1 + 2; // topic "t", then the packet id
        return Integer.parseInt(text.substring(at, at + 8));
    }

    private static long dropped(final MultiAgentHarness harness)
    {
        return harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED) +
            harness.counters.get(BrokerCounters.QUEUE_FULL_DROPPED) +
            harness.counters.get(BrokerCounters.SHARED_REDISPATCH_DROPPED);
    }

}
