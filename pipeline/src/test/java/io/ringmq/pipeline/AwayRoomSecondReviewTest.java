package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Second review of f7fdee10/63dfdbbf (AwayRoom step-over, helper-152): what the step-over's bounds at 63dfdbbf (64
 * entries stepped over a queue, 32 blocked copies a plan) let one host do; both attacks failed there and pass now that
 * a plan takes ready copies in rounds within one bound of work. HOST_A fills the three quarters with sessions away,
 * then its connections that never acknowledge take the rest; the subscriber on HOST_B should get its 20.
 */
class AwayRoomSecondReviewTest
{
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;

    /**
     * 8 sessions away of HOST_A on "a" and "x" (5 copies of 4 KiB on "a"), and a 9th, "nine", on "x" (and "y"); then
     * {@code tiny} one-byte copies on "x" that all 9 share, on top of every queue.
     */
    private static PipelineHarness sharedOnTop(final int tiny, final boolean privateOnTopOfNine)
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_A);
        AwayRoomReviewTest.sessionsAway(harness, 8, "a", "x");
        harness.packet(20, connect("nine", false));
        harness.packet(20, subscribe("x", 1));
        harness.packet(20, subscribe("y", 1));
        harness.offer(20, true, new byte[0], IngressEvent.CONNECTION_LOST);
        for (int m = 0; m < 5; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("a", 1, m + 1, m));
        }
        for (int m = 0; m < tiny; m++)
        {
            harness.packet(100, PipelineTest.publish("x", 1, 100 + m, false));
        }
        if (privateOnTopOfNine)
        {
            harness.packet(100, PipelineTest.publish("y", 1, 999, false)); // nine's alone, on top of its x copies
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("all kept").isZero();
        return harness;
    }

    private static List<String> hogsThenLive(final PipelineHarness harness)
    {
        AwayReclaimTest.hogs(harness, HOST_A, 8, 2_000);
        harness.addressKey(HOST_B);
        final List<String> got = HeldMemoryReviewTest.liveGetsItsTwenty(harness);
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        return got;
    }

    @Test
    @DisplayName("control: 32 tiny copies shared by all 9 on top: taken from all 9, the live subscriber gets 20")
    void sharedOnTopControl()
    {
        final PipelineHarness harness = sharedOnTop(32, false);
        assertThat(hogsThenLive(harness)).as("its messages (taken back: " +
            harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) + ")").hasSize(20);
    }

    @Test
    @DisplayName("31 tiny shared copies and nine's one private message on top: the live subscriber gets 20 (at " +
        "63dfdbbf too: 31 blocked, under its bound of 32)")
    void thirtyOneBlockedControl()
    {
        final PipelineHarness harness = sharedOnTop(31, true);
        assertThat(hogsThenLive(harness)).as("its messages (taken back: " +
            harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) + ")").hasSize(20);
    }

    @Test
    @DisplayName("32 tiny copies shared by all 9, and one 1-byte message of nine's alone on top of them: the copies " +
        "are ready once nine's message is taken, and the live subscriber gets 20 (at 63dfdbbf each was blocked, nine " +
        "has them one deeper, and the plan gave up at 32 blocked before it looked at nine's message: 0 of 20)")
    void copiesOneHolderHasDeeperBecomeReady()
    {
        final PipelineHarness harness = sharedOnTop(32, true);
        assertThat(hogsThenLive(harness)).as("its messages (taken back: " +
            harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) + ")").hasSize(20);
    }

    /**
     * 8 sessions away of HOST_A on "a" and "pin", 60 copies of 4 KiB on "a" shared by all 8; one connection of HOST_A
     * on "pin" that never acknowledges; then {@code pins} one-byte messages on "pin", on top of the 8 queues and held
     * by that connection too; 200 honest devices of HOST_C away, one 4 KiB message each. Then HOST_A's connections
     * that never acknowledge take the last quarter and HOST_B's subscriber gets 20.
     *
     * @return entries the 8 gave, and how many honest devices lost their message.
     */
    private static long[] pinnedHost(final int pins)
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(1L << 20)).limits(l -> l.maxInflight(16)),
            new io.ringmq.pipeline.auth.Authenticator(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.LOOPBACK,
                null, null, null));
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        int packetId = 1;
        final int devices = 60;
        harness.addressKey(HOST_C);
        for (int d = 0; d < devices; d++)
        {
            AwayReclaimTest.away(harness, 1_000 + d, "dev" + d, "d/" + d);
            harness.packet(100, MessageMemoryTest.publish("d/" + d, 1, packetId++, 5));
        }
        harness.addressKey(HOST_A);
        AwayRoomReviewTest.sessionsAway(harness, 8, "a", "pin");
        harness.packet(30, connect("pinner", true));
        harness.packet(30, subscribe("pin", 1)); // never acknowledges
        for (int m = 0; m < 100; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("a", 1, packetId++, 10 + m));
        }
        for (int m = 0; m < pins; m++)
        {
            harness.packet(100, PipelineTest.publish("pin", 1, packetId++, false));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("nothing dropped yet").isZero();
        final long[] after = AwayRoomReviewTest.hogsThenDevices(harness, 60, packetId, devices);
        final long taken = after[0];
        final long devicesLost = after[1];
        return new long[] {taken - devicesLost, devicesLost, after[2], taken};
    }

    @Test
    @DisplayName("control: 64 pins on top of HOST_A's 8 queues (400 KiB of shared copies): stepped over, the 8 give " +
        "before the honest devices (4 KiB each)")
    void sixtyFourPinsAreSteppedOver()
    {
        final long[] lost = pinnedHost(64);
        assertThat(lost[3]).as("taken back").isPositive();
        assertThat(lost[0]).as("entries HOST_A's 8 gave against the devices' " + lost[1] + " (live got " + lost[2] +
            ")").isGreaterThan(lost[1]);
    }

    @Test
    @DisplayName("110 pins (one-byte messages in flight or queued to one connection that never acknowledges) on top of " +
        "HOST_A's 8 queues are stepped over too: the 8 give before the honest devices (at 63dfdbbf, 65 pins, one past " +
        "its 64 a queue, took the 8 out of every plan and the devices gave instead)")
    void manyPinsAreSteppedOver()
    {
        final long[] lost = pinnedHost(110);
        assertThat(lost[3]).as("taken back").isPositive();
        assertThat(lost[0]).as("entries HOST_A's 8 gave against the devices' " + lost[1] + " (live got " + lost[2] +
            ")").isGreaterThan(lost[1]);
    }
}
