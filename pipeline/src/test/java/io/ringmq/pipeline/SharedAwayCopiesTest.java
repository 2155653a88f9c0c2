package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Copies that sessions away share (a topic many devices subscribe to) are taken back for a connected client from all
 * of their queues at once, and only when those queues are all that hold them: a message another client holds too is
 * stepped over, and a copy whose holders one plan cannot all see is taken back from none of them.
 */
class SharedAwayCopiesTest
{
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;

    @Test
    @DisplayName("300 sessions of one host away on one topic, then its connections that never acknowledge: a " +
        "subscriber on another address gets its 20 messages, each copy taken back from all 300, so every session " +
        "away keeps the same messages, oldest first")
    void hundredsOfSessionsAwayShareTheirCopies()
    {
        final PipelineHarness harness = fleetAway(300);
        for (int m = 0; m < 16; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("fleet", 1, m + 1, m)); // as many as the three quarters keep
        }
        AwayReclaimTest.hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        assertThat(taken).as("taken back").isPositive();

        harness.addressKey(HOST_A);
        final List<Integer> first = AwayReclaimTest.received(harness, reconnect(harness, 0));
        assertThat(first).as("dev0's messages").isNotEmpty().startsWith(0).isSorted();
        for (final int i : new int[] {1, 150, 299})
        {
            // the three quarters filled part way through the last copy's targets: the first of them may hold one more
            final List<Integer> got = AwayReclaimTest.received(harness, reconnect(harness, i));
            assertThat(got).as("dev" + i + "'s messages against dev0's " + first).startsWith(0).isSorted();
            assertThat(Math.abs(got.size() - first.size())).as("dev" + i + " against dev0").isLessThanOrEqualTo(1);
        }
    }

    @Test
    @DisplayName("a copy more sessions away share than one plan looks at (1,100 on one topic) is taken back from none " +
        "of them: each keeps it")
    void moreHoldersThanOneLookSees()
    {
        final PipelineHarness harness = fleetAway(1_100);
        harness.packet(100, MessageMemoryTest.publish("fleet", 1, 1, 7));
        AwayReclaimTest.hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        HeldMemoryReviewTest.liveGetsItsTwenty(harness); // as many as the rest of the share holds: not asserted
        assertThat(harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK)).as("taken back").isZero();
        harness.addressKey(HOST_A);
        for (final int i : new int[] {0, 600, 1_099})
        {
            assertThat(AwayReclaimTest.received(harness, reconnect(harness, i))).as("dev" + i + "'s message")
                .containsExactly(7);
        }
    }

    @Test
    @DisplayName("sessions away share a topic's copies, and one of them has a message queued after them that a " +
        "connected client holds too: that message stays, and the copies under it are taken back from both alike")
    void aMessageThatStaysIsSteppedOver() throws Exception
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(AddressKeys.NONE); // not limited: what it holds counts with no address
        harness.packet(2, connect("reader", true));
        harness.packet(2, subscribe("x", 1)); // never acknowledges: what it is sent stays in flight
        harness.addressKey(HOST_C);
        AwayReclaimTest.away(harness, 10, "both", "c");
        harness.packet(10, connect("both", false));
        harness.packet(10, subscribe("x", 1));
        harness.offer(10, true, new byte[0], IngressEvent.CONNECTION_LOST);
        AwayReclaimTest.away(harness, 11, "one", "c");
        for (int m = 0; m < 10; m++) // 10 copies of 4 KiB and x's: within the three quarters sessions away keep
        {
            harness.packet(100, MessageMemoryTest.publish("c", 1, m + 1, m));
        }
        harness.packet(100, MessageMemoryTest.publish("x", 1, 50, 99)); // "both"'s newest, also in flight to "reader"
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("all kept").isZero();
        AwayReclaimTest.hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        assertThat(taken).as("taken back").isPositive();
        assertThat(taken % 2).as("from both alike").isZero();
        harness.addressKey(HOST_C);
        harness.packet(21, connect("one", false));
        final List<Integer> one = AwayReclaimTest.received(harness, 21);
        assertThat(one).as("one's messages").hasSize(10 - (int)taken / 2).startsWith(0).isSorted();
        harness.packet(20, connect("both", false));
        final List<Integer> both = new java.util.ArrayList<>(one);
        both.add(99);
        assertThat(AwayReclaimTest.received(harness, 20)).as("both's messages").isEqualTo(both);
    }

    @Test
    @DisplayName("copies taken back from 4 sessions away that share them end each session's record: after a restart " +
        "each gets the same messages, none of those taken back")
    void sharedCopiesTakenBackStayGone()
    {
        final MemoryStore store = MemoryStore.retaining();
        final PipelineHarness harness = AwayReclaimTest.smallShare(store);
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        harness.addressKey(HOST_C);
        for (int i = 0; i < 4; i++)
        {
            AwayReclaimTest.away(harness, 10 + i, "dev" + i, "fleet");
        }
        for (int m = 0; m < 16; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("fleet", 1, m + 1, m));
        }
        final long keptBefore = 16 - harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED) / 4;
        AwayReclaimTest.hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        assertThat(taken).as("taken back").isPositive();
        assertThat(taken % 4).as("from each of the 4").isZero();
        harness.settle(); // the ends a running broker writes within its fsync interval

        final PipelineHarness after = AwayReclaimTest.smallShare(store);
        after.addressKey(HOST_C);
        for (int i = 0; i < 4; i++)
        {
            after.packet(50 + i, connect("dev" + i, false));
            assertThat(AwayReclaimTest.received(after, 50 + i)).as("dev" + i + "'s messages after the restart")
                .hasSize((int)(keptBefore - taken / 4)).startsWith(0).isSorted();
        }
    }

    /**
     * @return a 64 KiB share with a publisher on HOST_B (connection 100) and {@code count} persistent sessions of HOST_A
     * ("dev0" and up) subscribed to "fleet" and away.
     */
    private static PipelineHarness fleetAway(final int count)
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_A);
        for (int i = 0; i < count; i++)
        {
            AwayReclaimTest.away(harness, 10_000 + i, "dev" + i, "fleet");
        }
        return harness;
    }

    /**
     * @return the connection that resumed session "dev{@code i}".
     */
    private static long reconnect(final PipelineHarness harness, final int i)
    {
        final long connection = 50_000 + i;
        harness.packet(connection, connect("dev" + i, false));
        return connection;
    }
}
