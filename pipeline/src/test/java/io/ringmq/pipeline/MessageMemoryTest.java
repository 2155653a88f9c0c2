package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --max-message-memory}: the QoS 1 and 2 copies the delivery shards keep for subscribers are bounded all
 * together, each copy counted once however many sessions hold it; past the bound a message is not kept (dropped and
 * counted, as a full queue drops it), and what is acknowledged gives its room back.
 */
class MessageMemoryTest
{
    private static final int BUDGET = 64 * 1024;
    /**
     * A 4 KiB payload on topic "t" costs its copy's buffer (4,097 bytes, made to measure) and the allowance (128):
     * 15 copies fit in 64 KiB, the 16th would not.
     */
    private static final int KEPT = 15;
    /**
     * For sessions whose clients are away: 11 copies fit in three quarters of 64 KiB (the last quarter is kept for
     * clients that are connected), the 12th would not.
     */
    private static final int OFFLINE_KEPT = 11;
    private static final long COST = 4097 + 128;
    /** What each window or queue entry that holds a copy charges it ({@code SharedMessage.Pool.ENTRY_ALLOWANCE}). */
    private static final long ENTRY = MessageMemoryReviewTest.ENTRY;

    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    private final PipelineHarness harness = new PipelineHarness(new BrokerContext()
        .memory(m -> m.maxMessageMemory(BUDGET)),
        ANONYMOUS);

    @Test
    @DisplayName("ten offline sessions share each copy: 10 of 30 messages of 4 KiB are kept for all ten (three "
        + "quarters of the budget, each copy counted once with its ten queue entries), the other 200 deliveries "
        + "dropped and counted; each returning session gets the first 10, in order [MQTT-4.6.0-6]")
    void aSharedCopyCountsOnce()
    {
        final int sessions = 10;
        final int kept = 10; // 10 x (4,225 + 10 x 32) within 49,152; one session alone keeps 11
        for (int s = 0; s < sessions; s++)
        {
            harness.packet(s + 1, connect("away-" + s, false));
            harness.packet(s + 1, subscribe("t", 1));
            harness.offer(s + 1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 30; i++)
        {
            harness.packet(100, publish(i + 1, i));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED))
            .isEqualTo(sessions * (30L - kept));
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isEqualTo(kept * (COST + sessions * ENTRY));
        for (int s = 0; s < sessions; s++)
        {
            assertThat(drain(200 + s, "away-" + s)).as("session %d", s)
                .containsExactlyElementsOf(range(0, kept));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("all acknowledged: nothing held").isZero();

        harness.offer(200, true, new byte[0], IngressEvent.CONNECTION_LOST);
        for (int i = 30; i < 35; i++)
        {
            harness.packet(100, publish(i + 1, i)); // room again
        }
        assertThat(drain(300, "away-0")).containsExactlyElementsOf(range(30, 35));
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("an online subscriber that never acknowledges holds about half the budget, and no more (its window "
        + "of 32 and its queue would take all of it): further messages to it are dropped, and an acknowledgement makes "
        + "room again")
    void aStuckWindowHoldsItsShare()
    {
        // the 8th fits: 7 x 4,097 held + 4,225 <= 65,536 - 7 x (4,225 + 32) kept; the 9th does not
        final int fair = 8;
        harness.packet(1, connect("stuck", true));
        harness.packet(1, subscribe("t", 1));
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 40; i++)
        {
            harness.packet(100, publish(i + 1, i));
        }
        final List<byte[]> sent = publishes(1);
        assertThat(PipelineTest.payloadsOf(sent)).hasSize(fair); // the window (32) would take more: the budget did not
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isEqualTo(40 - fair);
        harness.packet(1, ack(PacketType.PUBACK, PipelineTest.packetId(sent.get(0))));
        harness.packet(100, publish(41, 40));
        assertThat(PipelineTest.payloadsOf(publishes(1))).containsExactly(String.format("%08d", 40));
    }

    @Test
    @DisplayName("a store written under a larger bound: recovery keeps the oldest queued messages within the three "
        + "quarters of --max-message-memory sessions away may keep (every session is away after a restart), drops and "
        + "counts the newest, and the returning session gets the kept ones in order")
    void recoveryKeepsWithinTheBound()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store = storeWithThirtyQueued();

        final PipelineHarness after = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(BUDGET)), ANONYMOUS,
            store); // a restart with a smaller bound
        assertThat(after.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isEqualTo(30 - OFFLINE_KEPT);
        assertThat(drain(after, 2, "away")).containsExactlyElementsOf(range(0, OFFLINE_KEPT));
        assertThat(after.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("a persistent subscriber whose client is away keeps copies within three quarters of "
        + "--max-message-memory, copies made for connected clients included: a connected subscriber that acknowledges "
        + "gets all 20 messages (before, 4: the away session held each copy it had acknowledged)")
    void awaySessionsLeaveAQuarter()
    {
        harness.packet(2, connect("live", true));
        harness.packet(1, connect("away", false));
        harness.packet(1, subscribe("t", 1));
        harness.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.packet(100, connect("pub", true));
        for (int i = 0; i < 30; i++)
        {
            harness.packet(100, publish(i + 1, i));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isEqualTo(OFFLINE_KEPT * (COST + ENTRY));
        harness.packet(2, subscribe("#", 1)); // the index matches "#" before "t": a copy made for it comes first
        harness.outbound.takeTypes(2);
        assertThat(AwayCopiesReviewTest.liveDeliveries(harness, 30, 50)).as("the connected subscriber's messages").containsExactlyElementsOf(range(30, 50));
        assertThat(drain(3, "away")).as("the away session's, in order").containsExactlyElementsOf(range(0, OFFLINE_KEPT));
    }

    @Test
    @DisplayName("a persistent session whose client leaves keeps the queued copies a connected client holds too (past "
        + "the three quarters of a budget a reload lowered, dropping them would free nothing): it gets all 12 back")
    void goingAwayKeepsSharedCopies()
    {
        final BrokerContext context = new BrokerContext().memory(m -> m.maxMessageMemory(2 * BUDGET))
            .limits(l -> l.maxInflight(2));
        final PipelineHarness shared = new PipelineHarness(context, ANONYMOUS);
        shared.packet(1, connect("leaving", false));
        shared.packet(1, subscribe("t", 1));
        shared.packet(2, connect("holding", true)); // connected, acknowledges nothing: it holds every copy too
        shared.packet(2, subscribe("t", 1));
        shared.packet(100, connect("pub", true));
        for (int i = 0; i < 12; i++)
        {
            shared.packet(100, publish(i + 1, i)); // 12 x 4,289 bytes: within what two connected holders may keep
        }
        assertThat(shared.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        shared.pipeline.limits().publish(ReloadPlan.liveContext(context,
            new BrokerContext().memory(m -> m.maxMessageMemory(BUDGET)).limits(l -> l.maxInflight(2)).conclude()));
        shared.step(); // a reload halves the budget: the 51 KB held are past three quarters of it
        assertThat(shared.counters.get(BrokerCounters.MESSAGE_MEMORY)).isGreaterThan(BUDGET - BUDGET / 4);
        shared.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        assertThat(shared.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        assertThat(drain(shared, 3, "leaving")).containsExactlyElementsOf(range(0, 12));
    }

    /**
     * @return a store holding 30 messages of 4 KiB queued for the persistent session "away", written by a broker
     * with no bound of its own (a quarter of the heap), as a restart with a smaller one finds it.
     */
    static io.ringmq.pipeline.persistence.MemoryStore storeWithThirtyQueued()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store = io.ringmq.pipeline.persistence.MemoryStore.retaining();
        final PipelineHarness before = new PipelineHarness(new BrokerContext(), ANONYMOUS, store);
        before.packet(1, connect("away", false));
        before.packet(1, subscribe("t", 1));
        before.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        before.packet(100, connect("pub", true));
        for (int i = 0; i < 30; i++)
        {
            before.packet(100, publish(i + 1, i));
        }
        assertThat(before.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        return store;
    }

    /**
     * The session comes back on {@code connectionId}, and every message it is sent is acknowledged.
     *
     * @return the numbers of the messages it got, in the order sent.
     */
    private List<String> drain(final long connectionId, final String clientId)
    {
        return drain(harness, connectionId, clientId);
    }

    private static List<String> drain(final PipelineHarness harness, final long connectionId, final String clientId)
    {
        harness.packet(connectionId, connect(clientId, false));
        final List<String> got = new ArrayList<>();
        while (true)
        {
            final List<byte[]> publishes = publishes(harness, connectionId);
            if (publishes.isEmpty())
            {
                return got;
            }
            got.addAll(PipelineTest.payloadsOf(publishes));
            for (final byte[] publish : publishes)
            {
                harness.packet(connectionId, ack(PacketType.PUBACK, PipelineTest.packetId(publish)));
            }
        }
    }

    /**
     * @return the PUBLISHes sent to the connection since the last look (the other packets are left out).
     */
    private List<byte[]> publishes(final long connectionId)
    {
        return publishes(harness, connectionId);
    }

    private static List<byte[]> publishes(final PipelineHarness harness, final long connectionId)
    {
        final List<byte[]> publishes = new ArrayList<>();
        for (final byte[] packet : harness.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xF0) >> 4 == PacketType.PUBLISH)
            {
                publishes.add(packet);
            }
        }
        return publishes;
    }

    private static List<String> range(final int from, final int to)
    {
        final List<String> numbers = new ArrayList<>();
        for (int i = from; i < to; i++)
        {
            numbers.add(String.format("%08d", i));
        }
        return numbers;
    }

    /**
     * A QoS 1 PUBLISH to "t" of 4 KiB whose payload starts with its number (8 digits) and is padded with spaces.
     */
    static byte[] publish(final int packetId, final int number)
    {
        return publish("t", packetId, number);
    }

    /**
     * The same to {@code topic}.
     */
    static byte[] publish(final String topic, final int packetId, final int number)
    {
        return publish(topic, 1, packetId, number);
    }

    /**
     * The same at {@code qos}.
     */
    static byte[] publish(final String topic, final int qos, final int packetId, final int number)
    {
        final byte[] payload = new byte[4096];
        java.util.Arrays.fill(payload, (byte)' ');
        System.arraycopy(String.format("%08d", number).getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0,
            payload, 0, 8);
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).topic(topic)
            .payload(payload);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
