package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Third review of the room taken back from sessions away (3b157a37, helper-150): what roomAway claims against what
 * the drops that follow it free, and the per-copy address count across restarts, moves and takeovers.
 */
class ReclaimThirdReviewTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;
    private static final long HOST_E = AddressKeys.of(ReclaimReviewTest.address(10, 0, 0, 5));

    /**
     * roomAway adds up to 64 entries of every session it looks at (up to 1,024 sessions), but reclaim drops at most
     * 64 entries in all: 16 devices away with about 29 small messages each "could give" 64 KiB, a connected client
     * of another address wants about 30 KiB for one message, and 64 drops (416 bytes each) free 26.6 KiB: 64 device
     * messages are taken back and the message is dropped all the same.
     */
    @Test
    @DisplayName("no device message is taken back for a message that is dropped all the same: roomAway counts 64 " +
        "entries per session, reclaim drops 64 in all")
    void roomAwayCountsMoreThanOneReclaimDrops() throws Exception
    {
        final PipelineHarness harness = withPublisher(256 * 1024, l -> l.maxInflight(16));
        harness.addressKey(HOST_C);
        for (int i = 0; i < 16; i++)
        {
            AwayReclaimTest.away(harness, 1_000 + i, "dev" + i, "d/" + i);
        }
        int packetId = 1;
        for (int m = 0; m < 40; m++)
        {
            for (int i = 0; i < 16; i++)
            {
                harness.packet(100, PipelineTest.publish("d/" + i, 1, 1 + packetId++ % 60_000, false));
            }
        }
        packetId = slowLocalSubscribers(harness, packetId);
        final Object pool = pool(harness);
        final long free = freeBytes(pool);
        final long budget = (long)ReclaimInvariantsReviewTest.field(pool, "budgetBytes");
        final int size = (int)free + 30_000;
        assertThat(size + 128L).as("the message fits the quarter of the share a client may take back for")
            .isLessThanOrEqualTo(budget >> 2);

        harness.addressKey(HOST_E);
        harness.packet(2, connect("big", true));
        harness.packet(2, subscribe("big", 1));
        harness.outbound.takeTypes(2);
        harness.addressKey(HOST_B);
        final long takenBefore = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        harness.packet(100, ReclaimSecondReviewTest.sized("big", 1 + packetId++ % 60_000, 1, size));
        final int got = AwayReclaimTest.received(harness, 2).size();
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenBefore;
        // then rounds in which the slow local subscribers are sent one more message each before the next one
        long takenForNothing = taken == 0 || got > 0 ? 0 : taken;
        int arrived = got;
        for (int round = 2; round <= 8; round++)
        {
            for (int i = 0; i < 16; i++)
            {
                harness.packet(100, MessageMemoryTest.publish("s/" + i, 1, 1 + packetId++ % 60_000, 100 + round));
            }
            final long takenThen = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
            harness.packet(100, ReclaimSecondReviewTest.sized("big", 1 + packetId++ % 60_000, round, size));
            final int one = AwayReclaimTest.received(harness, 2).size();
            final long t = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenThen;
            arrived += one;
            takenForNothing += 0 == one ? t : 0;
        }
        assertThat(takenForNothing).as("device messages taken back for " + size + "-byte messages dropped all the " +
            "same (" + arrived + " of 8 arrived)").isZero();
    }

    /**
     * roomAway looks at up to 1,024 sessions away from where the next search starts; reclaim's first largestAway looks
     * at the same ones and moves on, its second looks at the next 1,024. 1,024 devices away hold one message of their
     * own each, 1,024 more (listed after them) share broadcast copies: roomAway sees the first 1,024 give plenty, the
     * first drop frees one device's 416 bytes, the second search finds only shared copies and gives up. A connected
     * client of another address wants 2 KiB more than is free for each of ten messages: the first event takes back one
     * device message and drops the message all the same (then the list, shuffled by the empty sessions leaving, lets
     * the second event make room, and the other nine arrive).
     */
    @Test
    @DisplayName("a device message is not taken back for nothing when more than 1,024 sessions are away: roomAway " +
        "and the searches that follow it look at different sessions")
    void roomAwayAndTheSearchesAfterItLookAtDifferentSessions() throws Exception
    {
        final PipelineHarness harness = withPublisher(1024 * 1024, l -> l.maxInflight(16));
        harness.addressKey(HOST_C);
        for (int i = 0; i < 1_024; i++)
        {
            AwayReclaimTest.away(harness, 10_000 + i, "dev" + i, "d/" + i);
        }
        for (int i = 0; i < 1_024; i++)
        {
            AwayReclaimTest.away(harness, 20_000 + i, "fan" + i, "b");
        }
        int packetId = 1;
        for (int i = 0; i < 1_024; i++)
        {
            harness.packet(100, PipelineTest.publish("d/" + i, 1, 1 + packetId++ % 60_000, false));
        }
        for (int m = 0; m < 40; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("b", 1, 1 + packetId++ % 60_000, m));
        }
        packetId = slowLocalSubscribers(harness, packetId);
        final Object pool = pool(harness);
        final long free = freeBytes(pool);
        final long budget = (long)ReclaimInvariantsReviewTest.field(pool, "budgetBytes");
        final int size = (int)free + 2_000;
        assertThat(size + 128L).isLessThanOrEqualTo(budget >> 2);

        harness.addressKey(HOST_E);
        harness.packet(2, connect("big", true));
        harness.packet(2, subscribe("big", 1));
        harness.outbound.takeTypes(2);
        harness.addressKey(HOST_B);
        final long takenBefore = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        int got = 0;
        int forNothing = 0;
        long takenForNothing = 0;
        for (int n = 0; n < 10; n++)
        {
            final long takenThen = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
            harness.packet(100, ReclaimSecondReviewTest.sized("big", 1 + packetId++ % 60_000, n, size));
            final int one = AwayReclaimTest.received(harness, 2).size();
            final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenThen;
            got += one;
            if (taken > 0 && 0 == one)
            {
                forNothing++;
                takenForNothing += taken;
            }
        }
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenBefore;
        assertThat(takenForNothing).as("device messages taken back for messages dropped all the same").isZero();
    }

    /**
     * MessageDelivery.enqueue makes the copy (retainedCopy, which takes room back) before it checks
     * --max-queued-bytes: a connected client whose window is full and whose queue is at its --max-queued-bytes has
     * device messages taken back for a message its own queue bound then drops. Only where --max-queued-bytes is below
     * a quarter of the shard's share (with the defaults roomWanted's quarter gate comes first).
     */
    @Test
    @DisplayName("no device message is taken back for a message the client's own --max-queued-bytes then drops")
    void nothingTakenBackForAMessageTheQueueBoundDrops() throws Exception
    {
        final PipelineHarness harness = withPublisher(64 * 1024, l -> l.maxInflight(1).maxQueuedBytes(8_192));
        harness.addressKey(HOST_C);
        for (int i = 0; i < 8; i++)
        {
            AwayReclaimTest.away(harness, 1_000 + i, "dev" + i, "d/" + i);
        }
        int packetId = 1;
        for (int m = 0; m < 2; m++)
        {
            for (int i = 0; i < 8; i++)
            {
                harness.packet(100, MessageMemoryTest.publish("d/" + i, 1, packetId++, m));
            }
        }
        harness.addressKey(HOST_E);
        harness.packet(2, connect("e", true));
        harness.packet(2, subscribe("e", 1));
        harness.outbound.takeTypes(2);
        harness.addressKey(HOST_B);
        harness.packet(100, MessageMemoryTest.publish("e", 1, packetId++, 1)); // in flight, never acknowledged
        harness.packet(100, MessageMemoryTest.publish("e", 1, packetId++, 2)); // queued: 4,097 of its 8,192
        packetId = slowLocalSubscribers(harness, packetId);
        final long free = freeBytes(pool(harness));
        final long takenBefore = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        final long queueFullBefore = harness.counters.get(BrokerCounters.QUEUED_BYTES_DROPPED);
        harness.addressKey(HOST_B);
        harness.packet(100, MessageMemoryTest.publish("e", 1, packetId++, 3));
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenBefore;
        final long queueFull = harness.counters.get(BrokerCounters.QUEUED_BYTES_DROPPED) - queueFullBefore;
        assertThat(taken == 0 || queueFull == 0).as(taken + " device messages taken back for a message then " +
            "dropped past its --max-queued-bytes").isTrue(); // at 75a94ed: 0 taken, the message dropped for memory
    }

    /**
     * Random two-shard histories (moves, takeovers, clean starts, shared subscriptions, QoS 0 queued, QoS 2, sessions
     * away with windows charged to their address), a restart, and a second history on the restored broker: the
     * pool's assert that a recycled copy no address holds (SharedMessage.addresses, holder) and AddressHolds' own
     * asserts never fire (an assertion error in a stage is counted as unexpected, not thrown to the test), the total
     * stays within the holds' sum, and comes back to 0 once every session ended. After the restart every restored
     * session with a queue is listed away.
     */
    @Test
    @DisplayName("random histories across a restart: no copy recycled that an address holds, the address total " +
        "exact, restored queues listed")
    void randomHistoriesAcrossRestart() throws Exception
    {
        long takenBack = 0;
        for (int seed = 0; seed < 16; seed++)
        {
            final MemoryStore store = MemoryStore.retaining();
            final PipelineHarness before = twoShards(store);
            history(before, seed, 400, new long[] {1});
            assertThat(before.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed + " before").isZero();
            takenBack += before.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
            before.settle();
            final PipelineHarness after = twoShards(store);
            restoredQueuesListed(after, "seed " + seed + " restored");
            final long[] next = {1_000_000};
            history(after, seed + 1_000, 400, next);
            takenBack += after.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
            for (final String client : CLIENTS)
            {
                final long connection = next[0]++;
                after.offer(0, connection, true, connect(client, true), IngressEvent.PACKET);
                after.offer(0, connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
            }
            for (final Object holds : ReclaimInvariantsReviewTest.all(after, "AddressHolds"))
            {
                assertThat(ReclaimInvariantsReviewTest.field(holds, "allBytes")).as("seed " + seed + ": the address total at the end")
                    .isEqualTo(0L);
            }
            assertThat(after.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed + " after").isZero();
        }
    }

    private static final String[] CLIENTS = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"};

    private static void history(final PipelineHarness harness, final int seed, final int steps,
        final long[] nextConnection) throws Exception
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final Map<Long, Integer> live = new HashMap<>();
        final long[] hosts = {HOST_A, HOST_B, HOST_C, AddressKeys.NONE};
        final String[] filters = {"t", "#", "u/1", "$share/g/t", "$share/h/u/1"};
        int packetId = 1;
        for (int step = 0; step < steps; step++)
        {
            final int action = random.nextInt(12);
            if (action < 3 || live.isEmpty())
            {
                final int agent = random.nextInt(2);
                final long connection = nextConnection[0]++;
                harness.addressKey(hosts[random.nextInt(hosts.length)]);
                harness.offer(agent, connection, true, connect(CLIENTS[random.nextInt(CLIENTS.length)],
                    random.nextInt(6) == 0), IngressEvent.PACKET);
                if (random.nextInt(5) > 0)
                {
                    harness.offer(agent, connection, true, subscribe(filters[random.nextInt(filters.length)],
                        random.nextInt(3)), IngressEvent.PACKET);
                }
                live.put(connection, agent);
            }
            else if (action < 8)
            {
                final long connection = ReclaimInvariantsReviewTest.pick(random, live);
                final String topic = new String[] {"t", "u/1", "u/2"}[random.nextInt(3)];
                harness.offer(live.get(connection), connection, true,
                    MessageMemoryTest.publish(topic, random.nextInt(3), 1 + packetId++ % 60_000, step),
                    IngressEvent.PACKET);
            }
            else if (action < 10)
            {
                final long connection = ReclaimInvariantsReviewTest.pick(random, live);
                ReclaimInvariantsReviewTest.acknowledgeSome(harness, random, connection, live.get(connection));
            }
            else
            {
                final long connection = ReclaimInvariantsReviewTest.pick(random, live);
                harness.offer(live.remove(connection), connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
            }
            for (final Long connection : new ArrayList<>(live.keySet()))
            {
                if (harness.closed(connection))
                {
                    harness.offer(live.remove(connection), connection, true, new byte[0],
                        IngressEvent.CONNECTION_LOST);
                }
            }
            assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed + " step " + step)
                .isZero();
            for (final Object holds : ReclaimInvariantsReviewTest.all(harness, "AddressHolds"))
            {
                long sum = 0;
                for (final Object hold : ((org.agrona.collections.Long2ObjectHashMap<?>)ReclaimInvariantsReviewTest.field(holds, "byAddress"))
                    .values())
                {
                    sum += (long)ReclaimInvariantsReviewTest.call(hold, "bytes");
                }
                assertThat((long)ReclaimInvariantsReviewTest.field(holds, "allBytes")).as("seed " + seed + " step " + step).isBetween(0L, sum);
            }
        }
        for (final Long connection : new ArrayList<>(live.keySet()))
        {
            harness.offer(live.remove(connection), connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed + " end").isZero();
    }

    /**
     * Every restored session that recovery queued a message for is listed, and none other.
     */
    private static void restoredQueuesListed(final PipelineHarness harness, final String where) throws Exception
    {
        for (final Object shard : ReclaimInvariantsReviewTest.all(harness, "ShardSessions"))
        {
            final org.agrona.collections.Int2IntHashMap at =
                (org.agrona.collections.Int2IntHashMap)ReclaimInvariantsReviewTest.field(shard, "awayAt");
            for (final Object s : (Object[])ReclaimInvariantsReviewTest.field(shard, "sessions"))
            {
                if (null == s)
                {
                    continue;
                }
                final int id = ((Number)ReclaimInvariantsReviewTest.field(s, "id")).intValue();
                final boolean queued = (int)ReclaimInvariantsReviewTest.call(s, "queueSize") > 0;
                assertThat(at.containsKey(id)).as(where + ": session " + id + " listed (queued: " + queued + ")")
                    .isEqualTo(queued);
            }
        }
    }

    /**
     * Subscribers on an address that is not limited (they take nothing back) that never acknowledge, sent 4 KiB
     * messages until the share is full.
     *
     * @return the next packet id.
     */
    private static int slowLocalSubscribers(final PipelineHarness harness, final int firstPacketId)
    {
        harness.addressKey(AddressKeys.NONE);
        int packetId = firstPacketId;
        for (int i = 0; i < 16; i++)
        {
            harness.packet(40 + i, connect("slow" + i, true));
            harness.packet(40 + i, subscribe("s/" + i, 1));
        }
        harness.addressKey(HOST_B);
        for (int m = 0; m < 6; m++)
        {
            for (int i = 0; i < 16; i++)
            {
                harness.packet(100, MessageMemoryTest.publish("s/" + i, 1, 1 + packetId++ % 60_000, m));
            }
        }
        return packetId;
    }

    /**
     * @return a broker with a {@code share} of message memory and {@code limits}, and a publisher on HOST_B
     * (connection 100).
     */
    private static PipelineHarness withPublisher(final int share,
        final java.util.function.Consumer<LimitSettings> limits)
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(share)).limits(limits), ANONYMOUS);
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        return harness;
    }

    private static PipelineHarness twoShards(final MemoryStore store)
    {
        return new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(64 * 1024))
            .limits(l -> l.maxInflight(3).maxQueued(6).queueQos0Messages(true))
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)), ANONYMOUS, store);
    }

    /**
     * @return what the shard's share has free (read from its fields, as at 75a94ed too).
     */
    private static long freeBytes(final Object pool) throws ReflectiveOperationException
    {
        return (long)ReclaimInvariantsReviewTest.field(pool, "budgetBytes") - (long)ReclaimInvariantsReviewTest.field(pool, "keptBytes");
    }

    private static Object pool(final PipelineHarness harness)
    {
        final List<Object> pools = ReclaimInvariantsReviewTest.all(harness, "Pool");
        assertThat(pools).as("pools").hasSize(1);
        return pools.get(0);
    }
}
