package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Third review of 659e40df (helper-153), end to end: with --queue-qos0-messages, a session away subscribed to a topic
 * both on its own and through a shared subscription of its own group queued one QoS 0 message as one copy named twice
 * (MessageDelivery shared the event's copy when it was not stored). Such a copy is never ready, so a plan reached the
 * queue under it only after every ready copy in the window was taken, and stepped over it in one of its 16 stuck
 * rounds; 17 kept the queue out of every plan. Now the second target gets a copy of its own. Also one message through a
 * group on top of a queue, which put the whole queue last. As in AwayRoomSecondReviewTest.pinnedHost: HOST_A's 8 sessions away share 100 copies of 4 KiB, 60 honest
 * devices of HOST_C hold one 4 KiB message each, then HOST_A's connections that never acknowledge take the last
 * quarter and HOST_B's subscriber asks for 20.
 */
class AwayRoomThirdReviewTest
{
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;

    /**
     * @param shared whether each of HOST_A's 8 also has "$share/gN/dbl" of its own beside "dbl".
     * @return entries HOST_A's 8 gave, devices that lost their message, messages the live subscriber got, taken back.
     */
    private static long[] doubledOnTop(final int doubles, final boolean shared)
    {
        return onTop(doubles, shared, 0, 60);
    }

    /**
     * As {@link #doubledOnTop}, then {@code grouped} QoS 1 one-byte messages on "s", which each of the 8 takes through
     * "$share/sN/s", a group of its own.
     */
    private static long[] onTop(final int doubles, final boolean shared, final int grouped, final int devices)
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(1L << 20)).limits(l -> l.maxInflight(16).queueQos0Messages(true)),
            new io.ringmq.pipeline.auth.Authenticator(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.LOOPBACK,
                null, null, null));
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        int packetId = 1;
        harness.addressKey(HOST_C);
        for (int d = 0; d < devices; d++)
        {
            AwayReclaimTest.away(harness, 1_000 + d, "dev" + d, "d/" + d);
            harness.packet(100, MessageMemoryTest.publish("d/" + d, 1, packetId++, 5));
        }
        harness.addressKey(HOST_A);
        for (int i = 0; i < 8; i++)
        {
            harness.packet(10 + i, connect("away" + i, false));
            harness.packet(10 + i, subscribe("a", 1));
            harness.packet(10 + i, subscribe("dbl", 0));
            if (shared)
            {
                harness.packet(10 + i, subscribe("$share/g" + i + "/dbl", 0));
            }
            if (grouped > 0)
            {
                harness.packet(10 + i, subscribe("$share/s" + i + "/s", 1));
            }
            harness.offer(10 + i, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        for (int m = 0; m < 160 - devices; m++) // as much held away in all as with the devices
        {
            harness.packet(100, MessageMemoryTest.publish("a", 1, packetId++, 10 + m));
        }
        for (int m = 0; m < doubles; m++)
        {
            harness.packet(100, PipelineTest.publish("dbl", 0, 0, false));
        }
        for (int m = 0; m < grouped; m++)
        {
            harness.packet(100, PipelineTest.publish("s", 1, packetId++, false));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("nothing dropped yet").isZero();
        final long[] after = AwayRoomReviewTest.hogsThenDevices(harness, 60, packetId, devices);
        final long taken = after[0];
        final long devicesLost = after[1];
        return new long[] {taken - devicesLost, devicesLost, after[2], taken,
            harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)};
    }

    private static void hostAGivesFirst(final long[] r)
    {
        assertThat(r[3]).as("taken back").isPositive();
        assertThat(r[1]).as("devices that lost their message while HOST_A's 8 gave " + r[0] + " entries (live got " +
            r[2] + ")").isLessThan(r[0]);
    }

    @Test
    @DisplayName("control: no QoS 0 message on top: HOST_A's 8 (400 KiB shared) give before the devices")
    void control()
    {
        hostAGivesFirst(doubledOnTop(0, true));
    }

    @Test
    @DisplayName("control: 17 QoS 0 messages on top through its own subscription only (one entry each): HOST_A gives first")
    void ownSubscriptionOnly()
    {
        hostAGivesFirst(doubledOnTop(17, false));
    }

    @Test
    @DisplayName("one QoS 0 message on \"dbl\", own and shared subscription (one copy named twice a queue): HOST_A's " +
        "8 give first (at 659e40df the devices gave first)")
    void oneDoubledMessage()
    {
        hostAGivesFirst(doubledOnTop(1, true));
    }

    @Test
    @DisplayName("17 such QoS 0 messages: HOST_A's 8 give first (at 659e40df they never gave)")
    void seventeenDoubledMessages()
    {
        hostAGivesFirst(doubledOnTop(17, true));
    }

    @Test
    @DisplayName("one QoS 1 message through a shared subscription of each session's own group on top: HOST_A's 8 " +
        "give first (at 659e40df and 63dfdbbf the top entry's group put the whole queue last)")
    void oneGroupedMessage()
    {
        hostAGivesFirst(onTop(0, false, 1, 60));
    }

    @Test
    @DisplayName("no honest devices, 16 doubled QoS 0 messages on top of HOST_A's 8: the 16th stuck round reaches " +
        "their 640 KiB, and they give room to the connected clients (passes)")
    void sixteenDoubledNoDevices()
    {
        final long[] r = onTop(16, true, 0, 0);
        assertThat(r[0]).as("HOST_A's 8 gave (connected clients' messages dropped: " + r[4] + ")").isPositive();
    }

    @Test
    @DisplayName("no honest devices, 17 doubled QoS 0 messages on top of HOST_A's 8 (17 tiny messages in all): their " +
        "640 KiB give room to the connected clients (at 659e40df every plan ended at 16 stuck rounds, the 8 never " +
        "gave, and connected clients' messages were dropped instead)")
    void seventeenDoubledNoDevices()
    {
        final long[] r = onTop(17, true, 0, 0);
        assertThat(r[0]).as("HOST_A's 8 gave (connected clients' messages dropped: " + r[4] + ")").isPositive();
    }
}
