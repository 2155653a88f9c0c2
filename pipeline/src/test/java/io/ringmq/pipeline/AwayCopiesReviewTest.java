package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of ffde657 (--max-message-memory: sessions whose clients are away keep copies within three quarters, the
 * last quarter is for connected clients), by an adversarial reviewer. The rule is applied only when a copy is made
 * for an away session: copies an away session came to hold another way (taken while its client was connected, or
 * restored after a restart, when every session is away) are not held to it, and hold the last quarter for as long as
 * the session lives (7 days by default).
 */
class AwayCopiesReviewTest
{
    private static final int BUDGET = 64 * 1024;
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    @Test
    @DisplayName("a persistent subscriber that fell behind while connected (its queue took the whole share, as a "
        + "connected client's may) and whose connection then dropped is away: it must leave the last quarter to "
        + "connected clients, but a connected subscriber that acknowledges everything gets none of 20 messages")
    void awayAfterFallingBehindLeavesAQuarter()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(BUDGET)).limits(l -> l.maxInflight(2)),
            ANONYMOUS);
        harness.packet(1, connect("slow", false));
        harness.packet(1, subscribe("t", 1));
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 40; i++)
        {
            harness.packet(100, MessageMemoryTest.publish(i + 1, i)); // never acknowledged by "slow"
        }
        harness.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST); // its client goes away: the session stays

        harness.packet(2, connect("live", true));
        harness.packet(2, subscribe("t", 1));
        harness.outbound.takeTypes(2);
        final List<String> live = liveDeliveries(harness, 40, 60);
        assertThat(live).as("a connected subscriber's messages while a session that is away holds copies")
            .hasSize(20);
    }

    @Test
    @DisplayName("after a restart (the same bound) every persistent session is away, but recovery restores their "
        + "queued copies within the whole share (RestoredCopies: pool.hasRoomFor, not hasRoomOffline): a connected subscriber that acknowledges everything then gets none of 20 messages "
        + "(the offline.py scenario the commit fixed, back after any restart)")
    void recoveryLeavesAQuarterToConnectedClients()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store = io.ringmq.pipeline.persistence.MemoryStore.retaining();
        final PipelineHarness before = new PipelineHarness(new BrokerContext().memory(m -> m.maxMessageMemory(BUDGET))
            .limits(l -> l.maxInflight(2)),
            ANONYMOUS, store); // the same bound before and after
        before.packet(1, connect("away", false));
        before.packet(1, subscribe("t", 1));
        before.packet(100, connect("pub", true));
        // connected and behind while the messages come: its queue holds the whole share, as a connected client's may
        for (int i = 0; i < 40; i++)
        {
            before.packet(100, MessageMemoryTest.publish(i + 1, i));
        }
        before.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);

        final PipelineHarness after = new PipelineHarness(new BrokerContext().memory(m -> m.maxMessageMemory(BUDGET))
            .limits(l -> l.maxInflight(2)),
            ANONYMOUS, store); // a restart: "away" is restored, away, its queue within the whole share
        after.packet(2, connect("live", true));
        after.packet(2, subscribe("t", 1));
        after.outbound.takeTypes(2);
        after.packet(100, connect("pub", true));
        assertThat(after.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("what the away session holds after recovery")
            .isLessThanOrEqualTo(BUDGET - (BUDGET >> 2)); // now: 15 copies, all of the share
        assertThat(liveDeliveries(after, 40, 60)).as("a connected subscriber's messages after the restart")
            .hasSize(20);
    }

    @Test
    @DisplayName("the same after a restart with only queued copies (a store written under a larger bound): the away "
        + "session comes back holding the whole share, a connected subscriber gets none of 20 messages")
    void recoveryOfQueuedCopiesLeavesAQuarter()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store = MessageMemoryTest.storeWithThirtyQueued();

        final PipelineHarness after = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(BUDGET)), ANONYMOUS,
            store);
        after.packet(2, connect("live", true));
        after.packet(2, subscribe("t", 1));
        after.outbound.takeTypes(2);
        after.packet(100, connect("pub", true));
        assertThat(liveDeliveries(after, 30, 50)).as("a connected subscriber's messages after the restart")
            .hasSize(20);
    }

    /**
     * Publishes messages {@code from} to {@code to} from connection 100 and acknowledges each one connection 2 is sent.
     *
     * @return the payload numbers connection 2 got.
     */
    static List<String> liveDeliveries(final PipelineHarness harness, final int from, final int to)
    {
        final List<String> live = new ArrayList<>();
        for (int i = from; i < to; i++)
        {
            harness.packet(100, MessageMemoryTest.publish(i + 1, i));
            for (final byte[] packet : harness.outbound.takePackets(2))
            {
                if ((packet[0] & 0xF0) >> 4 == PacketType.PUBLISH)
                {
                    live.add(PipelineTest.payloadsOf(List.of(packet)).get(0));
                    harness.packet(2, ack(PacketType.PUBACK, PipelineTest.packetId(packet)));
                }
            }
        }
        return live;
    }
}
