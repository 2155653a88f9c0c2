package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionMemory;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import org.agrona.collections.IntHashSet;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Mqtt5ChaosTest's events (takeovers, clean starts over persistent sessions, wills, $share, QoS 2 with and
 * without PUBREL, restarts from the store), checking after each step that SessionMemory equals what the sessions
 * hold, recomputed from their state: no drift. Written by a reviewer of --max-session-memory.
 */
class SessionMemoryChaosReviewTest
{
    private static final int CLIENTS = 12;

    static long recomputed(final RoutingSession session) throws Exception
    {
        long bytes = SessionMemory.lengthOf(session.clientId()) + SessionMemory.lengthOf(session.userName()) +
            (session.aclClientId() == session.clientId() ? 0 : SessionMemory.lengthOf(session.aclClientId())) +
            SessionMemory.lengthOf(session.will());
        for (final Subscription subscription : session.subscriptions())
        {
            final String written = null == subscription.shareName() ? subscription.filter() :
                "$share/" + subscription.shareName() + "/" + subscription.filter();
            bytes += SessionMemory.subscriptionLength(written);
        }
        final java.lang.reflect.Field field = RoutingSession.class.getDeclaredField("awaitingPubrel");
        field.setAccessible(true);
        final IntHashSet ids = (IntHashSet)field.get(session);
        if (null != ids)
        {
            bytes += SessionMemory.PUBREL_SET_LENGTH + (long)ids.size() * SessionMemory.PUBREL_ID_LENGTH;
        }
        return bytes;
    }

    static void check(final RoutingStage routing, final String as) throws Exception
    {
        long total = 0;
        for (int id = 0, seen = 0; seen < routing.sessionCount(); id++)
        {
            final RoutingSession session = routing.sessions().get(id);
            if (null == session)
            {
                continue;
            }
            seen++;
            final long expected = recomputed(session);
            assertThat(session.heldBytes() + session.awaitedBytes()).as(as + " " + session).isEqualTo(expected);
            total += expected;
        }
        assertThat(routing.sessions().memory().totalBytes()).as(as + ": the sessions' total").isEqualTo(total);
    }

    @Test
    @Timeout(300)
    @DisplayName("50 seeds x 2,000 chaos events, with restarts: SessionMemory is always what the sessions hold")
    void noDrift() throws Exception
    {
        for (long seed = 1; seed <= 50; seed++)
        {
            run(seed, seed % 2 == 0 ? io.ringmq.pipeline.persistence.MemoryStore.retaining() : null);
        }
        System.out.println("refused (last harness of each seed): " + refused);
    }

    private static void run(final long seed, final io.ringmq.pipeline.persistence.MemoryStore store)
        throws Exception
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final BrokerContext context = new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
            .ioThreads(2))
            .limits(l -> l.maxInflight(1 + random.nextInt(4)).maxQueued(random.nextInt(9)))
            .observability(o -> o.sysIntervalMs(0))
            .limits(l -> l.maxSessions(random.nextBoolean() ? 6 : 1_000)
            .maxSubscriptionsPerClient(1 + random.nextInt(4)))
            .memory(m -> m.maxSessionMemory(random.nextBoolean() ? 64 * 1024 : 0));
        final Authenticator authenticator = new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
        PipelineHarness harness = null == store ? new PipelineHarness(context, authenticator) :
            new PipelineHarness(context, authenticator, store);
        final long small = seed % 3 == 0 ? 0 : 600 + random.nextInt(2_000);
        if (small > 0)
        {
            harness.pipeline.routing().sessions().memory().maxBytes(small, small / 2); // refusals happen often
        }
        final long[] connection = new long[CLIENTS];
        final int[] agent = new int[CLIENTS];
        final int[] version = new int[CLIENTS];
        long nextConnection = 1;
        for (int step = 0; step < 2_000; step++)
        {
            final int client = random.nextInt(CLIENTS);
            final int op = random.nextInt(10);
            if (null != store && random.nextInt(200) == 0)
            {
                harness = new PipelineHarness(context, authenticator, store);
                if (small > 0)
                {
                    harness.pipeline.routing().sessions().memory().maxBytes(small, small / 2);
                }
                java.util.Arrays.fill(connection, 0);
                check(harness.pipeline.routing(), "seed " + seed + " after recovery");
                continue;
            }
            if (connection[client] == 0 || op == 0)
            {
                connection[client] = nextConnection++;
                agent[client] = random.nextInt(2);
                final boolean clean = random.nextInt(3) == 0;
                version[client] = random.nextInt(4) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
                harness.offer(agent[client], connection[client], true,
                    Mqtt5ChaosTest.connect(random, client, clean, version[client], false), IngressEvent.PACKET,
                    version[client], 0, IngressEvent.NONE);
            }
            else if (op <= 7)
            {
                final byte[] packet = op <= 2 ? Mqtt5ChaosTest.subscribe(random, version[client]) :
                    op == 3 ? Mqtt5ChaosTest.unsubscribe(random, version[client]) :
                    op <= 6 ? Mqtt5ChaosTest.publish(random, version[client], false) :
                    Mqtt5ChaosTest.ackRun(random, version[client]);
                harness.offer(agent[client], connection[client], true, packet, IngressEvent.PACKET,
                    version[client], 0, IngressEvent.NONE);
            }
            else
            {
                final int kind = random.nextBoolean() ? IngressEvent.CONNECTION_LOST : IngressEvent.DISCONNECTED;
                final boolean v5 = version[client] == MqttVersion.V5;
                harness.offer(agent[client], connection[client], true, new byte[0], kind, version[client],
                    v5 && random.nextBoolean() ? 4 : 0, v5 && random.nextBoolean() ? random.nextInt(3) :
                    IngressEvent.NONE);
                connection[client] = 0;
            }
            check(harness.pipeline.routing(), "seed " + seed + " step " + step);
        }
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed).isZero();
        refused += harness.counters.get(BrokerCounters.SESSION_MEMORY_REFUSED);
    }

    private static long refused;
}
