package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Second review of the room taken back from sessions away (helper-149): random histories on two delivery shards
 * (moves, takeovers, clean starts replacing persistent sessions, shared subscriptions, QoS 0 queued, QoS 2, tiny and
 * 4 KiB messages), the share small enough that room is taken back often; with a restart, the history goes on after it
 * (helper-152's moves-and-restart histories, folded in here). After every step: the shard's list of sessions away has no stale or
 * duplicate entry and its places agree with its map, and AddressHolds' total is within the sum of its holds (a copy
 * several addresses hold counts there once); once every session ended, the total is 0 and nothing is listed. With a
 * restart, no message taken back comes back and none a session held is lost beyond recovery's own counted drops.
 */
class ReclaimInvariantsReviewTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
    private static final long[] HOSTS = {HeldMemoryReviewTest.HOST_A, HeldMemoryReviewTest.HOST_B,
        HeldMemoryReviewTest.HOST_C, AddressKeys.NONE};
    private static final String[] CLIENTS = {"c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"};
    private static final String[] FILTERS = {"t", "#", "u/1", "u/2", "$share/g/t", "$share/h/u/1"};

    @Test
    @DisplayName("random two-shard histories keep the list of sessions away, its places and the address total exact")
    void randomHistories() throws Exception
    {
        long takenBack = 0;
        for (int seed = 0; seed < 40; seed++)
        {
            takenBack += history(seed, MemoryStore.none());
        }
        assertThat(takenBack).as("room was taken back in these histories").isPositive();
    }

    @Test
    @DisplayName("after the same histories and a restart, each persistent session gets back the stored messages it " +
        "held: none taken back comes back, none it held is lost beyond recovery's own drops")
    void restartsKeepWhatWasHeld() throws Exception
    {
        long takenBack = 0;
        for (int seed = 100; seed < 130; seed++)
        {
            takenBack += history(seed, MemoryStore.retaining());
        }
        assertThat(takenBack).as("room was taken back in these histories").isPositive();
    }

    private static PipelineHarness twoShards(final MemoryStore store)
    {
        return new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(64 * 1024))
            .limits(l -> l.maxInflight(3).maxQueued(6).queueQos0Messages(true))
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)), ANONYMOUS, store);
    }

    /**
     * @return the messages taken back from sessions away in the history.
     */
    private static long history(final int seed, final MemoryStore store) throws Exception
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final PipelineHarness harness = twoShards(store);
        long nextConnection = steps(harness, random, 1, "seed " + seed);
        if (store.isDurable())
        {
            final PipelineHarness after = restartKeepsWhatWasHeld(harness, store, seed);
            check(after, "seed " + seed + " restarted");
            steps(after, random, nextConnection, "seed " + seed + " after the restart");
            return harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) +
                after.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        }
        for (final String client : CLIENTS)
        {
            final long connection = nextConnection++;
            harness.offer(0, connection, true, connect(client, true), IngressEvent.PACKET);
            harness.offer(0, connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        check(harness, "seed " + seed + " end");
        for (final Object holds : all(harness, "AddressHolds"))
        {
            assertThat(field(holds, "allBytes")).as("seed " + seed + ": the address total once every session ended")
                .isEqualTo(0L);
        }
        for (final Object sessions : all(harness, "ShardSessions"))
        {
            assertThat(((Number)field(sessions, "awayCount")).intValue()).as("seed " + seed + ": listed at the end")
                .isZero();
        }
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed).isZero();
        return harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
    }

    /**
     * 500 random steps of a history on {@code harness}, its connections numbered from {@code firstConnection}, each
     * followed by {@link #check}; every connection still open is lost at the end.
     *
     * @return the next connection number.
     */
    private static long steps(final PipelineHarness harness, final SplittableRandom random,
        final long firstConnection, final String where) throws Exception
    {
        final Map<Long, Integer> live = new HashMap<>();
        long nextConnection = firstConnection;
        int packetId = 1;
        for (int step = 0; step < 500; step++)
        {
            final int action = random.nextInt(12);
            if (action < 3 || live.isEmpty())
            {
                final int agent = random.nextInt(2);
                final long connection = nextConnection++;
                harness.addressKey(HOSTS[random.nextInt(HOSTS.length)]);
                harness.offer(agent, connection, true, connect(CLIENTS[random.nextInt(CLIENTS.length)],
                    random.nextInt(5) == 0), IngressEvent.PACKET);
                harness.offer(agent, connection, true, subscribe(FILTERS[random.nextInt(FILTERS.length)],
                    random.nextInt(3)), IngressEvent.PACKET);
                live.put(connection, agent);
            }
            else if (action < 7)
            {
                final long connection = pick(random, live);
                final String topic = new String[] {"t", "u/1", "u/2"}[random.nextInt(3)];
                final byte[] packet = random.nextInt(4) > 0 ? // 4 KiB, or a tiny one (a pin, a device's reading)
                    MessageMemoryTest.publish(topic, random.nextInt(3), 1 + packetId++ % 60_000, step) :
                    PipelineTest.publish(topic, random.nextInt(3), 1 + packetId++ % 60_000, false);
                harness.offer(live.get(connection), connection, true, packet, IngressEvent.PACKET);
            }
            else if (action < 10)
            {
                final long connection = pick(random, live);
                acknowledgeSome(harness, random, connection, live.get(connection));
            }
            else
            {
                final long connection = pick(random, live);
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
            check(harness, where + " step " + step);
        }
        for (final Long connection : new ArrayList<>(live.keySet()))
        {
            harness.offer(live.remove(connection), connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        return nextConnection;
    }

    /**
     * Acknowledges what was sent to {@code connection}, leaving about a third unacknowledged.
     */
    static void acknowledgeSome(final PipelineHarness harness, final SplittableRandom random,
        final long connection, final int agent)
    {
        for (final byte[] p : harness.outbound.takePackets(connection))
        {
            final int type = (p[0] & 0xF0) >> 4;
            if (random.nextInt(3) == 0)
            {
                continue; // never acknowledged
            }
            if (type == PacketType.PUBLISH && (p[0] & 0x06) != 0)
            {
                final int qos = (p[0] & 0x06) >> 1;
                harness.offer(agent, connection, true, PipelineTest.ack(qos == 1 ? PacketType.PUBACK :
                    PacketType.PUBREC, PipelineTest.packetId(p)), IngressEvent.PACKET);
            }
            else if (type == PacketType.PUBREL)
            {
                harness.offer(agent, connection, true,
                    PipelineTest.ack(PacketType.PUBCOMP, (p[2] & 0xFF) << 8 | (p[3] & 0xFF)), IngressEvent.PACKET);
            }
        }
    }

    /**
     * A restart of {@code harness}'s store: what each persistent session holds after it, it held before, and what it
     * held before and not after is no more than recovery's own counted drops.
     *
     * @return the restarted pipeline.
     */
    private static PipelineHarness restartKeepsWhatWasHeld(final PipelineHarness harness, final MemoryStore store,
        final int seed) throws Exception
    {
        harness.settle();
        final Map<Long, TreeSet<Long>> before = held(harness);
        final PipelineHarness after = twoShards(store);
        final long droppedAtRecovery = after.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        final Map<Long, TreeSet<Long>> restored = held(after);
        for (final Map.Entry<Long, TreeSet<Long>> e : restored.entrySet())
        {
            assertThat(before.getOrDefault(e.getKey(), new TreeSet<>())).as("seed " + seed + ": session key " +
                e.getKey() + " held before the restart what it holds after").containsAll(e.getValue());
        }
        long lost = 0;
        for (final Map.Entry<Long, TreeSet<Long>> e : before.entrySet())
        {
            final TreeSet<Long> missing = new TreeSet<>(e.getValue());
            missing.removeAll(restored.getOrDefault(e.getKey(), new TreeSet<>()));
            lost += missing.size();
        }
        assertThat(lost).as("seed " + seed + ": held before the restart, not after, beyond recovery's own drops")
            .isLessThanOrEqualTo(droppedAtRecovery);
        return after;
    }

    private static void check(final PipelineHarness harness, final String where) throws Exception
    {
        // an assertion error in a stage (-ea: SharedMessage.Pool.recycle, AddressHolds) is counted, not thrown here
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as(where + ": unexpected errors").isZero();
        for (final Object shard : all(harness, "ShardSessions"))
        {
            final Object[] sessions = (Object[])field(shard, "sessions");
            final Object[] away = (Object[])field(shard, "away");
            final int count = ((Number)field(shard, "awayCount")).intValue();
            final org.agrona.collections.Int2IntHashMap at =
                (org.agrona.collections.Int2IntHashMap)field(shard, "awayAt");
            assertThat(at.size()).as(where + ": places mapped against listed").isEqualTo(count);
            for (int i = 0; i < count; i++)
            {
                final Object s = away[i];
                assertThat(s).as(where + ": listed " + i).isNotNull();
                final int id = ((Number)field(s, "id")).intValue();
                assertThat(at.get(id)).as(where + ": place of session " + id).isEqualTo(i);
                assertThat(id < sessions.length ? sessions[id] : null).as(where + ": session " + id +
                    " listed away is the shard's session of that id (not stale)").isSameAs(s);
            }
            for (int i = count; i < away.length; i++)
            {
                assertThat(away[i]).as(where + ": slot past the count").isNull();
            }
            checkAwayQueued(sessions, where);
        }
        for (final Object holds : all(harness, "AddressHolds"))
        {
            long sum = 0;
            final org.agrona.collections.Long2ObjectHashMap<?> byAddress =
                (org.agrona.collections.Long2ObjectHashMap<?>)field(holds, "byAddress");
            for (final Object hold : byAddress.values())
            {
                sum += (long)call(hold, "bytes");
            }
            assertThat((long)field(holds, "allBytes")).as(where + ": the address total, each copy once")
                .isBetween(0L, sum);
        }
    }

    /**
     * Each copy a shard's sessions hold counts as {@code awayQueued} exactly the queue entries of its sessions whose
     * client is away that name it (what says a copy is held by sessions away alone, and may be taken back whole), never
     * more than its references, and a copy in a window is never held by sessions away alone.
     */
    private static void checkAwayQueued(final Object[] sessions, final String where) throws Exception
    {
        final Map<Object, Integer> counted = new java.util.IdentityHashMap<>();
        final Map<Object, Boolean> inWindow = new java.util.IdentityHashMap<>();
        for (final Object s : sessions)
        {
            if (null == s)
            {
                continue;
            }
            final boolean online = (boolean)call(s, "isOnline");
            final int capacity = (int)call(s, "windowCapacity");
            for (int slot = 0; slot < capacity; slot++)
            {
                final Object m = call(s, "inflightMessage", slot);
                if (null != m)
                {
                    counted.putIfAbsent(m, 0);
                    inWindow.put(m, true);
                }
            }
            final int queued = (int)call(s, "queueSize");
            for (int i = 0; i < queued; i++)
            {
                counted.merge(call(s, "queuedMessage", i), online ? 0 : 1, Integer::sum);
            }
        }
        for (final Map.Entry<Object, Integer> e : counted.entrySet())
        {
            final int awayQueued = ((Number)field(e.getKey(), "awayQueued")).intValue();
            assertThat(awayQueued).as(where + ": queue entries away naming a copy").isEqualTo(e.getValue());
            assertThat(awayQueued).as(where + ": within its references")
                .isLessThanOrEqualTo(((Number)field(e.getKey(), "references")).intValue());
            if (inWindow.containsKey(e.getKey()))
            {
                assertThat((boolean)call(e.getKey(), "heldOnlyAway")).as(where + ": a copy in a window held only " +
                    "away").isFalse();
            }
        }
    }

    /**
     * @return the stored message numbers each persistent session holds, in flight or queued, by its store key.
     */
    private static Map<Long, TreeSet<Long>> held(final PipelineHarness harness) throws Exception
    {
        final Map<Long, TreeSet<Long>> held = new HashMap<>();
        for (final Object shard : all(harness, "ShardSessions"))
        {
            for (final Object s : (Object[])field(shard, "sessions"))
            {
                if (null == s || 0 == (long)field(s, "persistenceKey"))
                {
                    continue;
                }
                final TreeSet<Long> numbers = held.computeIfAbsent((long)field(s, "persistenceKey"),
                    k -> new TreeSet<>());
                final int capacity = (int)call(s, "windowCapacity");
                for (int slot = 0; slot < capacity; slot++)
                {
                    final Object m = call(s, "inflightMessage", slot);
                    if (null != m && (long)call(m, "messageNumber") != 0)
                    {
                        numbers.add((long)call(m, "messageNumber"));
                    }
                }
                final int queued = (int)call(s, "queueSize");
                for (int i = 0; i < queued; i++)
                {
                    final Object m = call(s, "queuedMessage", i);
                    if ((long)call(m, "messageNumber") != 0 && (int)call(s, "queuedQos", i) > 0)
                    {
                        numbers.add((long)call(m, "messageNumber"));
                    }
                }
            }
        }
        return held;
    }

    static List<Object> all(final PipelineHarness harness, final String simpleName)
    {
        final List<Object> found = new ArrayList<>();
        AddressHoldReviewTest.find(harness.pipeline, simpleName, found,
            java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
        assertThat(found).as(simpleName).isNotEmpty();
        return found;
    }

    static Object field(final Object o, final String name) throws ReflectiveOperationException
    {
        for (Class<?> c = o.getClass(); null != c; c = c.getSuperclass())
        {
            try
            {
                final Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            }
            catch (final NoSuchFieldException e)
            {
                // the superclass
            }
        }
        throw new NoSuchFieldException(name);
    }

    static Object call(final Object o, final String name) throws ReflectiveOperationException
    {
        final Method m = o.getClass().getDeclaredMethod(name);
        m.setAccessible(true);
        return m.invoke(o);
    }

    static Object call(final Object o, final String name, final int arg) throws ReflectiveOperationException
    {
        final Method m = o.getClass().getDeclaredMethod(name, int.class);
        m.setAccessible(true);
        return m.invoke(o, arg);
    }

    static long pick(final SplittableRandom random, final Map<Long, Integer> live)
    {
        final List<Long> keys = new ArrayList<>(live.keySet());
        return keys.get(random.nextInt(keys.size()));
    }
}
