package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of a93abac (--max-client-session-memory, and the last quarter of --max-session-memory kept for new
 * sessions), by an adversarial reviewer.
 */
class ClientShareReviewTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.ALL, null, null, null);
    /** --max-session-memory 512 KiB: each session's share is an eighth (64 KiB), filters fill 384 KiB. */
    private static final long BOUND = 512 * 1024;

    @Test
    @DisplayName("six clients, each within its own share (an eighth), fill the three quarters filters may take: from "
        + "then on no client whose CONNECT carries a will gets in, not even one resuming its own persistent session "
        + "(README: 'a session that holds much is still resumed'); a device's will is the common case, not an attack")
    void greedyFiltersLockOutEveryClientWithAWill()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(BOUND)), ANONYMOUS);
        harness.packet(1, connectWithWill("device", false, 1_000));
        assertThat(connackCode(harness, 1)).as("the device's first CONNECT").isZero();
        harness.packet(1, subscribe("cmd/device", 1));
        harness.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST); // away: its session waits for it

        fillFiltersToThreeQuarters(harness);

        harness.packet(50, connect("no-will", true));
        assertThat(connackCode(harness, 50)).as("a new client without a will: the last quarter at work").isZero();
        harness.packet(51, connectWithWill("device", false, 1_000));
        assertThat(connackCode(harness, 51)).as("the device resuming its own session with its usual will")
            .isZero();
    }

    @Test
    @DisplayName("the same, for a new client: six greedy sessions within their shares refuse every new client with a "
        + "1 KB will (CONNACK 3), for as long as their sessions live")
    void greedyFiltersLockOutNewClientsWithAWill()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(BOUND)), ANONYMOUS);
        fillFiltersToThreeQuarters(harness);
        int refused = 0;
        for (int c = 0; c < 20; c++)
        {
            harness.packet(60 + c, connectWithWill("sensor-" + c, true, 1_000));
            refused += connackCode(harness, 60 + c) != 0 ? 1 : 0;
        }
        assertThat(refused).as("new clients with a 1 KB will refused, of 20").isZero();
    }

    @Test
    @DisplayName("README: --max-client-session-memory bounds 'what one session may hold ... in filters and QoS 2 packet "
        + "ids'; but the share also counts the session's will (and client id, user name), which the CONNECT's size "
        + "bounds: a client with a 60 KB will (within --max-connect-size 64 KiB) and a 64 KiB share gets 2 of 10 small "
        + "filters, whatever the broker holds")
    void theShareCountsTheWill()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(64L << 20)
            .maxClientSessionMemory(64 * 1024)), ANONYMOUS);
        harness.packet(1, connectWithWill("device", true, 60_000));
        assertThat(connackCode(harness, 1)).isZero();
        int granted = 0;
        for (int i = 0; i < 10; i++)
        {
            harness.packet(1, subscribe("cmd/device/" + i + "/" + "x".repeat(500), 1));
            final byte[] suback = harness.outbound.takePackets(1).get(0);
            granted += (suback[suback.length - 1] & 0xFF) == 1 ? 1 : 0;
        }
        assertThat(harness.counters.get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED)).as("refused for its share")
            .isZero();
        assertThat(granted).as("filters granted of 10 (each ~1.5 KB, 15 KB in all, in a 64 KiB share)").isEqualTo(10);
    }

    @Test
    @DisplayName("a client that first fills its share with QoS 2 packet ids it never releases then subscribes filters: "
        + "each is held within the share on its own (filters are judged by what every routing shard counts, packet "
        + "ids by shard 0 alone, so they cannot share one count), never more (the README says so)")
    void packetIdsFirstThenASecondShareOfFilters()
    {
        final long share = 64 * 1024;
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(64L << 20)
            .maxClientSessionMemory(share)), ANONYMOUS);
        harness.packet(1, connect("greedy", true));
        for (int id = 1; id < 20_000 && harness.counters.get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED) == 0; id++)
        {
            harness.packet(1, PipelineTest.publish("q", 2, id, false)); // never released
        }
        assertThat(harness.counters.get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED)).as("its share is spent")
            .isEqualTo(1);
        subscribeUntilRefused(harness, 1, "g/" + "x".repeat(1_000) + "/");
        final io.ringmq.pipeline.session.RoutingSession greedy =
            harness.pipeline.routing(0).sessions().find("greedy");
        assertThat(greedy.filterBytes()).as("its filters, with a share of %d", share).isLessThanOrEqualTo(share)
            .isGreaterThan(share - 3_000);
        assertThat(greedy.awaitedBytes()).as("its packet ids awaiting PUBREL").isLessThanOrEqualTo(share);
    }

    @Test
    @DisplayName("a restart with a smaller --max-session-memory restores what the store holds (README: 'whatever the "
        + "bound'), past the bound: then a persistent client resuming its own session, which adds nothing, is refused "
        + "(CONNACK 3) as a new one is, and cannot come back to unsubscribe; the bound stays exceeded until sessions "
        + "expire (7 days by default)")
    void aResumeAddsNothingAndIsStillRefusedPastALoweredBound()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store = io.ringmq.pipeline.persistence.MemoryStore.retaining();
        final PipelineHarness before = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(1L << 20)), ANONYMOUS,
            store);
        for (int c = 0; c < 4; c++)
        {
            before.packet(10 + c, connect("device-" + c, false));
            for (int i = 0; i < 20; i++)
            {
                before.packet(10 + c, subscribe("d" + c + "/" + i + "/" + "x".repeat(1_000), 1));
            }
            before.offer(10 + c, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        assertThat(before.pipeline.routing(0).sessions().memory().heldBytes()).as("held before the restart")
            .isGreaterThan(128 * 1024);

        final PipelineHarness after = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(128 * 1024)), ANONYMOUS,
            store);
        after.packet(1, connect("device-0", false));
        assertThat(connackCode(after, 1)).as("device-0 resuming its own session (no will: it adds nothing)").isZero();
    }

    /**
     * Six clients subscribe long filters until refused (each its share of 64 KiB, the last the three quarters), then
     * a seventh small ones until the three quarters are full to within one small filter.
     */
    private static void fillFiltersToThreeQuarters(final PipelineHarness harness)
    {
        for (int g = 0; g < 6; g++)
        {
            harness.packet(10 + g, connect("greedy-" + g, true));
            subscribeUntilRefused(harness, 10 + g, "g" + g + "/" + "x".repeat(1_000) + "/");
        }
        harness.packet(20, connect("greedy-small", true));
        subscribeUntilRefused(harness, 20, "s/");
        assertThat(harness.pipeline.routing(0).sessions().memory().heldBytes()).as("held")
            .isGreaterThan(BOUND * 3 / 4 - 1_000);
    }

    private static void subscribeUntilRefused(final PipelineHarness harness, final long connectionId,
        final String prefix)
    {
        harness.outbound.takePackets(connectionId);
        for (int n = 0; n < 1_000; n++)
        {
            harness.packet(connectionId, subscribe(prefix + n, 1));
            final byte[] suback = harness.outbound.takePackets(connectionId).get(0);
            if ((suback[suback.length - 1] & 0xFF) == 0x80)
            {
                return;
            }
        }
        throw new AssertionError("never refused");
    }

    private static int connackCode(final PipelineHarness harness, final long connectionId)
    {
        for (final byte[] packet : harness.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xF0) >> 4 == PacketType.CONNACK)
            {
                return packet[3] & 0xFF;
            }
        }
        throw new AssertionError("no CONNACK");
    }

    private static byte[] connectWithWill(final String clientId, final boolean clean, final int willPayloadLength)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean).will(1, false, null);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap("status/" + clientId);
        encoder.willPayload().wrap("o".repeat(willPayloadLength));
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
