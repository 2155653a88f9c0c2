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
    @DisplayName("a connected subscriber that never acknowledges holds at most about half the share: a subscriber that " +
        "acknowledges still gets every one of its 20 messages (before: none, for as long as the other stayed)")
    void aSubscriberThatNeverAcknowledgesLeavesRoom()
    {
        final int budget = 64 * 1024;
        final PipelineHarness harness = smallShare(2);
        subscribersThatNeverAcknowledge(harness, 1);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("what the one that never acknowledges holds")
            .isLessThanOrEqualTo(budget / 2 + 4_096 + 1_024);
        assertThat(liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
    }

    @Test
    @DisplayName("two subscribers that never acknowledge, sharing every copy, hold about half the share between them: " +
        "a third that acknowledges gets all 20 of its messages (review of 477c832, which took room back from the " +
        "largest queue instead: shared copies free nothing there, and it got none)")
    void twoSubscribersSharingCopiesLeaveRoom()
    {
        final PipelineHarness harness = smallShare(2);
        subscribersThatNeverAcknowledge(harness, 2);
        assertThat(liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
    }

    @Test
    @DisplayName("a subscriber that acknowledges in bursts of 4 keeps getting every message of a topic that one which " +
        "never acknowledges subscribed to after it (review of 477c832: 31 of 80, then 10 of 40)")
    void aSubscriberBesideOneThatNeverAcknowledgesGetsItsTopic()
    {
        final PipelineHarness harness = smallShare(8);
        harness.packet(2, connect("live", true));
        harness.packet(2, subscribe("t", 1));
        harness.outbound.takeTypes(2);
        harness.packet(1, connect("hog", true));
        harness.packet(1, subscribe("t", 1));
        harness.packet(100, connect("pub", true));
        int next = 0;
        int got = 0;
        for (int round = 0; round < 30; round++)
        {
            for (int b = 0; b < 4; b++, next++)
            {
                harness.packet(100, MessageMemoryTest.publish("t", next + 1, next));
            }
            for (int pass = 0; pass < 4; pass++)
            {
                for (final byte[] packet : harness.outbound.takePackets(2))
                {
                    if ((packet[0] & 0xF0) >> 4 == io.ringmq.protocol.PacketType.PUBLISH)
                    {
                        got++;
                        harness.packet(2, PipelineTest.ack(io.ringmq.protocol.PacketType.PUBACK,
                            PipelineTest.packetId(packet)));
                    }
                }
            }
        }
        assertThat(got).as("of 120").isEqualTo(120);
    }

    @Test
    @DisplayName("24 connections of one address that never acknowledge, each sent its own topic's messages, hold about " +
        "three quarters of the share between them (seven eighths, one new session at a time): a subscriber on another " +
        "address that acknowledges gets all 20 of " +
        "its messages " +
        "(review of 09ed1b1: each held half of what the ones before left, and together they took it all)")
    void theConnectionsOfOneAddressLeaveRoom()
    {
        final PipelineHarness harness = smallShare(2);
        harness.addressKey(HOST_A);
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 24; i++)
        {
            final long connection = 1 + 2 * i;
            harness.packet(connection, connect("hog" + i, true));
            harness.packet(connection, subscribe("h/" + i, 1));
            for (int m = 0; m < 10; m++)
            {
                harness.packet(100, MessageMemoryTest.publish("h/" + i, m + 1, m));
            }
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("what the 24 hold")
            .isLessThanOrEqualTo(64 * 1024 * 7 / 8 + 4_096 + 1_024);
        harness.addressKey(HOST_B);
        assertThat(liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
    }

    @Test
    @DisplayName("50 subscribers of one address that share a topic's copies are charged each copy once and 32 bytes " +
        "an entry, as the share counts them: each gets all 4 messages, none dropped (charged whole per session they " +
        "would have held 400 KiB against a 64 KiB share)")
    void anAddressIsChargedASharedCopyOnce()
    {
        final PipelineHarness harness = smallShare(8);
        harness.addressKey(HOST_A);
        for (int i = 0; i < 50; i++)
        {
            harness.packet(1 + 2 * i, connect("sub" + i, true));
            harness.packet(1 + 2 * i, subscribe("t", 1));
        }
        harness.packet(100, connect("pub", true));
        for (int m = 0; m < 4; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("t", m + 1, m));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("dropped").isZero();
        for (int i = 0; i < 50; i++)
        {
            assertThat(harness.outbound.takeTypes(1 + 2 * i)).as("what subscriber " + i + " got")
                .filteredOn(type -> type == io.ringmq.protocol.PacketType.PUBLISH).hasSize(4);
        }
        for (int i = 0; i < 50; i++)
        {
            harness.offer(1 + 2 * i, false, new byte[0], IngressEvent.CONNECTION_LOST); // unbound: discharged to 0
        }
        harness.packet(1, connect("sub0", true));
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("errors").isZero();
    }

    /** Three client addresses ({@code AddressKeys}). */
    static final long HOST_A = io.ringmq.pipeline.auth.AddressKeys.of(address(10, 0, 0, 1));
    static final long HOST_B = io.ringmq.pipeline.auth.AddressKeys.of(address(10, 0, 0, 2));
    static final long HOST_C = io.ringmq.pipeline.auth.AddressKeys.of(address(10, 0, 0, 3));

    private static java.net.InetAddress address(final int a, final int b, final int c, final int d)
    {
        try
        {
            return java.net.InetAddress.getByAddress(new byte[] {(byte)a, (byte)b, (byte)c, (byte)d});
        }
        catch (final java.net.UnknownHostException e)
        {
            throw new IllegalStateException(e);
        }
    }

    /**
     * @return a pipeline with 64 KiB of message memory and windows of {@code maxInflight}.
     */
    static PipelineHarness smallShare(final int maxInflight)
    {
        return new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(64 * 1024)).limits(l -> l.maxInflight(maxInflight)), ANONYMOUS);
    }

    /**
     * @return {@link #smallShare} with a publisher connected from HOST_B (connection 100, a clean session).
     */
    static PipelineHarness shareWithPublisher(final int maxInflight)
    {
        final PipelineHarness harness = smallShare(maxInflight);
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        return harness;
    }

    /**
     * {@code count} subscribers of "h" (connections 1, 3, ...) that never acknowledge, sent 40 messages of 4 KiB.
     */
    private static void subscribersThatNeverAcknowledge(final PipelineHarness harness, final int count)
    {
        for (int i = 0; i < count; i++)
        {
            harness.packet(1 + 2 * i, connect("hog" + i, true));
            harness.packet(1 + 2 * i, subscribe("h", 1));
        }
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 40; i++)
        {
            harness.packet(100, MessageMemoryTest.publish("h", i + 1, i));
        }
    }

    /**
     * @return what a subscriber of "t" (connection 2) that acknowledges each message gets of 20 published after.
     */
    static java.util.List<String> liveGetsItsTwenty(final PipelineHarness harness)
    {
        harness.packet(2, connect("live", true));
        harness.packet(2, subscribe("t", 1));
        harness.outbound.takeTypes(2);
        return AwayCopiesReviewTest.liveDeliveries(harness, 40, 60);
    }
}
