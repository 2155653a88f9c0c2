package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Defects a reviewer found in --max-session-memory (7b04322, 11e74c0), each a test that failed: with routing shards,
 * inbound QoS 2 packet ids were counted only by shard 0 (QoS 2 is routed by shard 0 alone; replicas never replay a
 * PUBLISH), so the replicas decided CONNECTs and SUBSCRIBEs differently from it (a refused filter subscribed on a
 * replica, a refused CONNECT shifting the replica's session ids: another client's messages); and a filter was
 * counted by its length, while the index keeps a node per level (128 levels: ~21 KB) and non-Latin-1 text takes
 * more than a byte a char.
 */
class SessionMemoryReviewTest
{
    private static final Authenticator ANONYMOUS = new Authenticator(Authenticator.AnonymousPolicy.ALL, null, null,
        null);

    private static PipelineHarness harness()
    {
        return new PipelineHarness(new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
            .ioThreads(1)
            .routeShards(2)).memory(m -> m.maxSessionMemory(64 * 1024)), ANONYMOUS);
    }

    /**
     * Publishes QoS 2 messages without PUBREL from connection {@code connectionId} until shard 0 refuses one.
     *
     * @return the packet ids taken.
     */
    private static int fillWithAwaitedIds(final PipelineHarness harness, final long connectionId)
    {
        int id = 1;
        while (harness.counters.get(BrokerCounters.SESSION_MEMORY_REFUSED) == 0 && id < 20_000)
        {
            harness.packet(connectionId, publish("q", 2, id++, false));
        }
        harness.outbound.takeTypes(connectionId);
        assertThat(harness.counters.get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(1);
        return id - 2;
    }

    @Test
    @DisplayName("route shards 2: every routing shard counts the same session memory (replicas decide as shard 0)")
    void replicasCountWhatShardZeroCounts()
    {
        final PipelineHarness harness = harness();
        harness.packet(2, connect("pub", true));
        harness.packet(2, publish("q", 2, 1, false)); // awaits PUBREL on shard 0 only
        assertThat(harness.pipeline.routing(1).sessions().memory().heldBytes())
            .as("routing shard 1's session memory")
            .isEqualTo(harness.pipeline.routing(0).sessions().memory().heldBytes());
    }

    @Test
    @DisplayName("route shards 2: packet ids awaiting PUBREL (shard 0's alone) do not count for a filter: one "
        + "SUBSCRIBE after they filled the bound is granted on every shard alike, and served")
    void filterJudgedAlikeAfterAwaitedIds()
    {
        final PipelineHarness harness = harness();
        final String topic = RouteShardsReviewTest.topicOf(1, 2); // QoS 0 on it: routed by shard 1
        harness.packet(1, connect("sub", true));
        harness.packet(2, connect("pub", true));
        harness.outbound.takeTypes(1);
        fillWithAwaitedIds(harness, 2);

        harness.packet(1, subscribe(topic, 0));
        final byte[] suback = harness.outbound.takePackets(1).get(0);
        assertThat(suback[suback.length - 1] & 0xFF).as("granted").isEqualTo(0);
        harness.packet(2, publish(topic, 0, 0, false));
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.PUBLISH);
    }

    @Test
    @DisplayName("MQTT-3.9.3-1 / route shards 2: a filter refused for --max-session-memory (SUBACK 0x80) is refused "
        + "on the replica too: nothing it routes reaches the client")
    void refusedFilterNotSubscribedOnReplica()
    {
        final PipelineHarness harness = harness();
        final String topic = RouteShardsReviewTest.topicOf(1, 2); // "m/N": QoS 0 on it is routed by shard 1
        harness.packet(1, connect("sub", true));
        harness.packet(2, connect("pub", true));
        harness.packet(3, connect("filler", true));
        harness.outbound.takeTypes(1);
        int refusedAt = -1;
        for (int i = 0; i < 260 && refusedAt < 0; i++)
        {
            final char level = (char)('a' + i / 10);
            final String filter = (level >= 'm' ? (char)(level + 1) : level) + "/" + "0123456789".repeat(9)
                .substring(0, topic.length() - 2 - 1) + (i % 10); // as long and as deep as the topic: the same cost
            harness.packet(3, subscribe(filter, 0));
            final byte[] granted = harness.outbound.takePackets(3).get(0);
            refusedAt = (granted[granted.length - 1] & 0xFF) == 0x80 ? i : -1;
        }
        assertThat(refusedAt).as("the filler reached the bound").isPositive();

        harness.packet(1, subscribe(topic, 0));
        final byte[] suback = harness.outbound.takePackets(1).get(0);
        assertThat(suback[suback.length - 1] & 0xFF).as("shard 0 refused the filter").isEqualTo(0x80);
        harness.packet(2, publish(topic, 0, 0, false));
        assertThat(harness.outbound.takeTypes(1))
            .as("nothing reaches a subscription the SUBACK refused").doesNotContain(PacketType.PUBLISH);
        assertThat(harness.pipeline.routing(1).index().size()).as("the replica's index")
            .isEqualTo(harness.pipeline.routing(0).index().size());
    }

    @Test
    @DisplayName("route shards 2: a persistent CONNECT after packet ids awaiting PUBREL filled the bound is judged "
        + "alike on every shard (they do not count for it): session ids stay the same, no client gets another's "
        + "messages")
    void connectJudgedAlikeAfterAwaitedIds()
    {
        final PipelineHarness harness = harness();
        final String topic = RouteShardsReviewTest.topicOf(1, 2);
        harness.packet(2, connect("pub", true));
        fillWithAwaitedIds(harness, 2);

        harness.packet(3, connect("kept-" + "r".repeat(100), false)); // persistent: kept offline where made
        final byte[] connack = harness.outbound.takePackets(3).get(0);
        assertThat(connack[3]).as("accepted").isEqualTo((byte)0);
        harness.offer(3, true, new byte[0], IngressEvent.CONNECTION_LOST); // the I/O agent closes it

        harness.packet(4, connect("victim", true));
        harness.packet(4, subscribe(topic, 0));
        harness.outbound.takeTypes(4);
        harness.packet(5, connect("bystander", true)); // subscribes to nothing
        harness.outbound.takeTypes(5);
        harness.packet(2, publish(topic, 0, 0, false));
        assertThat(harness.outbound.takeTypes(5)).as("a client that subscribed to nothing is sent nothing")
            .doesNotContain(PacketType.PUBLISH);
        assertThat(harness.outbound.takeTypes(4)).as("the subscriber receives the PUBLISH routing shard 1 routed")
            .containsExactly(PacketType.PUBLISH);
        assertThat(harness.pipeline.routing(1).sessionCount()).as("sessions on routing shard 1")
            .isEqualTo(harness.pipeline.routing(0).sessionCount());
    }

    @Test
    @DisplayName("route shards 2: after recovery every routing shard counts the same session memory (QoS 2 packet "
        + "ids awaiting PUBREL are restored into shard 0 only)")
    void replicasCountTheSameAfterRecovery()
    {
        final io.ringmq.pipeline.persistence.MemoryStore store =
            io.ringmq.pipeline.persistence.MemoryStore.retaining();
        final java.util.function.Supplier<BrokerContext> context = () -> new BrokerContext()
            .limits(l -> l.maxInflight(4))
            .threads(t -> t.routeShards(2)).memory(m -> m.maxSessionMemory(64 * 1024));
        final PipelineHarness before = new PipelineHarness(context.get(), ANONYMOUS, store);
        before.packet(1, connect("kept", false));
        for (int id = 1; id <= 100; id++)
        {
            before.packet(1, publish("q", 2, id, false));
        }
        before.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);

        final PipelineHarness after = new PipelineHarness(context.get(), ANONYMOUS, store);
        assertThat(after.pipeline.recovered()).contains("100 QoS 2 PUBLISH(es) awaiting PUBREL");
        assertThat(after.pipeline.routing(1).sessions().memory().heldBytes())
            .as("routing shard 1's session memory after recovery")
            .isEqualTo(after.pipeline.routing(0).sessions().memory().heldBytes());
    }

    private static byte[] subscribeMany(final java.util.List<String> filters)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(1);
        for (final String filter : filters)
        {
            encoder.filters().add(filter, 0);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static long usedHeap()
    {
        for (int i = 0; i < 4; i++)
        {
            System.gc();
        }
        return java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /**
     * Subscribes one client as {@code subscribe} does and checks that the heap it took is covered by what the bound
     * counted (within half as much again: the counting is by allowances).
     */
    private static void assertCountedCovers(final String what, final int filters,
        final java.util.function.Consumer<PipelineHarness> subscribe)
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxSessionMemory(1L << 30)), ANONYMOUS);
        harness.packet(1, connect("filters", true));
        harness.outbound.takeTypes(1);
        final long countedBefore = harness.pipeline.routing(0).sessions().memory().heldBytes();
        final long heapBefore = usedHeap();
        subscribe.accept(harness);
        final long heap = usedHeap() - heapBefore;
        final long counted = harness.pipeline.routing(0).sessions().memory().heldBytes() - countedBefore;
        assertThat(harness.pipeline.routing(0).index().size()).isEqualTo(filters);
        System.out.println(what + ": counted " + counted + " B, heap grew " + heap + " B");
        assertThat(heap).as("heap the %s took, against the %d bytes counted", what, counted)
            .isLessThan(counted * 3 / 2);
    }

    @Test
    @DisplayName("--max-session-memory counted a filter as 192 + 2 x its length, but a filter of 128 one-character "
        + "levels makes 128 index nodes: the bound must see what the sessions really hold")
    void deepFiltersHoldFarMoreThanCounted()
    {
        final String tail = "/a".repeat(127); // 128 levels: --max-topic-levels' default
        assertCountedCovers("2,000 deep filters", 2_000, harness ->
        {
            for (int packet = 0; packet < 20; packet++)
            {
                final java.util.List<String> filters = new java.util.ArrayList<>();
                for (int i = 0; i < 100; i++)
                {
                    filters.add("d" + (packet * 100 + i) + tail);
                }
                harness.packet(1, subscribeMany(filters));
                harness.outbound.takeTypes(1);
            }
        });
    }

    @Test
    @DisplayName("--max-session-memory counted a filter's chars, but one of non-Latin-1 text is held as UTF-16 by "
        + "the session and as UTF-8 (3 bytes a char here) by the index")
    void nonLatinFiltersHoldMoreThanCounted()
    {
        final String wide = "\u4e2d".repeat(21_000); // 63,000 bytes of UTF-8: within --max-topic-length
        assertCountedCovers("400 CJK filters", 400, harness ->
        {
            for (int i = 0; i < 400; i++)
            {
                harness.packet(1, subscribe(i + wide, 0));
                harness.outbound.takeTypes(1);
            }
        });
    }
}
