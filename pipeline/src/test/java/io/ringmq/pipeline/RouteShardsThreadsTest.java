package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import org.agrona.DirectBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Routing shards on threads of their own, as dedicated threading runs them, fed the chaos of {@link Mqtt5ChaosTest}
 * while they run: the replicas replay slots while shard 0 and the other shards work on later ones, so what they
 * share (the slot, the stamps, the epochs) is raced for real.
 */
class RouteShardsThreadsTest
{
    private static final int CLIENTS = 12;
    private static final int EVENTS = 4_000;
    /** ACL files a run reloads in turn: everything, then filters the chaos uses refused or read-checked. */
    private static final String[] ACLS = {"topic readwrite #", "topic readwrite t/a\ntopic read t/+\ntopic write #",
        "topic readwrite t/#\ntopic readwrite u"};

    @Test
    @Timeout(120)
    @DisplayName("3 routing shards on their own threads under 4,000 chaos events: no stage throws, and every shard "
        + "holds what shard 0 holds, session by session")
    void replicasHoldWhatShardZeroHoldsUnderThreads() throws Exception
    {
        for (long seed = 1; seed <= 3; seed++)
        {
            run(seed, null, null);
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("the same with CONNECTs that fail in the auth stage (a failed slot every shard sees) among sessions "
        + "that move between delivery shards: no shard undoes a move, every shard holds what shard 0 holds")
    void failedSlotsAmongMovesUnderThreads(@TempDir final Path directory) throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        Files.writeString(passwords, "eve:$7$1000$$AAAA\n", StandardCharsets.UTF_8); // malformed: the stage throws
        for (long seed = 1; seed <= 3; seed++)
        {
            run(seed, null, passwords);
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("the same with an ACL file and limits reloaded every 20 events while the shards run: every shard "
        + "takes each reload at the slot shard 0 stamps with it, and holds what shard 0 holds")
    void replicasTakeReloadsAtShardZerosSlot(@TempDir final Path directory) throws Exception
    {
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, ACLS[0], StandardCharsets.UTF_8);
        for (long seed = 1; seed <= 3; seed++)
        {
            run(seed, acl, null);
        }
    }

    private static BrokerContext context(final int maxSubscriptions)
    {
        return new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .memory(m -> m.ringSize(256))
            .observability(o -> o.sysIntervalMs(0)).limits(l -> l.maxSessions(1_000)
            .maxSubscriptionsPerClient(maxSubscriptions))
            .threads(t -> t.routeShards(3));
    }

    /**
     * @param acl       the ACL file to start with and reload others over, or null for none.
     * @param passwords a password file whose user "eve" makes the auth stage throw, or null for none (no failures).
     */
    private static void run(final long seed, final Path acl, final Path passwords) throws Exception
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final BrokerContext context = context(3).auth(a -> a.aclFile(acl));
        final PipelineHarness harness = new PipelineHarness(context,
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null,
                null == passwords ? null : PasswordFile.load(passwords)), new Discarding(),
            new PipelineTest.RecordingOutbound());
        final Pipeline pipeline = harness.pipeline;
        final StageAgent[] routes = pipeline.routingAgents();
        final List<StageAgent> others = new ArrayList<>(List.of(pipeline.authAgent(), pipeline.shardAgent(0),
            pipeline.shardAgent(1)));
        final List<Runner> runners = new ArrayList<>();
        for (final StageAgent agent : routes)
        {
            runners.add(new Runner(agent));
        }
        for (final StageAgent agent : others)
        {
            runners.add(new Runner(agent));
        }
        runners.forEach(Runner::start);
        try
        {
            final int failures = produce(harness, random, null == acl ? null : context, null != passwords);
            final BrokerCounters counters = harness.counters;
            // every slot through every stage (shard 0 may still put ticks on the ring: then again)
            await(() -> pipeline.ring().getMinimumGatingSequence() == pipeline.ring().getCursor());
            runners.get(0).stop(); // shard 0 stops: the others catch up with it and stop too
            await(() -> !routes[1].hasPendingWork() && !routes[2].hasPendingWork());
            runners.forEach(Runner::stop);
            assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed + ": the failures made")
                .isEqualTo(failures);
            for (int shard = 1; shard < routes.length; shard++)
            {
                assertThat(Mqtt5ChaosTest.sessions(pipeline.routing(shard)))
                    .as("seed " + seed + ": routing shard " + shard + " session by session")
                    .isEqualTo(Mqtt5ChaosTest.sessions(pipeline.routing()));
                assertThat(pipeline.routing(shard).index().size()).isEqualTo(pipeline.routing().index().size());
            }
        }
        finally
        {
            runners.forEach(Runner::stop);
        }
    }

    /**
     * Chaos events from one producer thread (an I/O agent's part), the stages running on theirs.
     */
    /**
     * @param failing whether to put CONNECTs on the ring that fail in the auth stage.
     * @return how many failed.
     */
    private static int produce(final PipelineHarness harness, final SplittableRandom random,
        final BrokerContext reloading, final boolean failing)
    {
        int failures = 0;
        final long[] connection = new long[CLIENTS];
        final int[] agent = new int[CLIENTS];
        final int[] version = new int[CLIENTS];
        long nextConnection = 1;
        for (int step = 0; step < EVENTS; step++)
        {
            if (null != reloading && step % 20 == 19)
            {
                final int reload = step / 20;
                harness.pipeline.reloadAclFile(AclFile.parse("acl", ACLS[reload % ACLS.length]));
                harness.pipeline.limits().publish(ReloadPlan.liveContext(reloading, context(1 + reload % 3)
                    .conclude()));
            }
            if (failing && random.nextInt(40) == 0)
            {
                harness.put(random.nextInt(2), nextConnection++, true,
                    PipelineFaultsTest.connectWithCredentials("eve", "eve", "x"), IngressEvent.PACKET,
                    MqttVersion.V3_1_1, 0, IngressEvent.NONE);
                failures++;
                continue;
            }
            final int client = random.nextInt(CLIENTS);
            final int op = random.nextInt(10);
            if (connection[client] == 0 || op == 0)
            {
                connection[client] = nextConnection++; // a takeover when one is live
                agent[client] = random.nextInt(2);
                version[client] = random.nextInt(4) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
                harness.put(agent[client], connection[client], true, Mqtt5ChaosTest.connect(random, client,
                    random.nextInt(3) == 0, version[client], false), IngressEvent.PACKET, version[client], 0,
                    IngressEvent.NONE);
                continue;
            }
            final byte[] packet;
            switch (op)
            {
                case 1: case 2: packet = Mqtt5ChaosTest.subscribe(random, version[client]); break;
                case 3: packet = Mqtt5ChaosTest.unsubscribe(random, version[client]); break;
                case 4: case 5: case 6: packet = Mqtt5ChaosTest.publish(random, version[client], false); break;
                case 7: packet = Mqtt5ChaosTest.ack(random); break;
                default:
                    final int kind = random.nextBoolean() ? IngressEvent.CONNECTION_LOST : IngressEvent.DISCONNECTED;
                    final boolean v5 = version[client] == MqttVersion.V5;
                    harness.put(agent[client], connection[client], true, new byte[0], kind, version[client],
                        v5 && random.nextBoolean() ? 4 : 0, v5 && random.nextBoolean() ? random.nextInt(3) :
                        IngressEvent.NONE);
                    connection[client] = 0;
                    continue;
            }
            harness.put(agent[client], connection[client], true, packet, IngressEvent.PACKET, version[client], 0,
                IngressEvent.NONE);
        }
        return failures;
    }

    private static void await(final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + 30_000_000_000L;
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime()).as("the stages caught up in time").isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    /**
     * One stage agent on a thread of its own until stopped.
     */
    private static final class Runner
    {
        private final AtomicBoolean running = new AtomicBoolean(true);
        private final Thread thread;

        Runner(final StageAgent agent)
        {
            thread = new Thread(() ->
            {
                while (running.get())
                {
                    if (agent.doWork() == 0)
                    {
                        Thread.yield();
                    }
                }
            }, agent.roleName());
            thread.setDaemon(true);
        }

        void start()
        {
            thread.start();
        }

        void stop()
        {
            running.set(false);
            try
            {
                thread.join(10_000);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * An outbound port that takes everything (the shards' threads write to it at once).
     */
    private static final class Discarding implements Outbound
    {
        public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            return true;
        }

        public boolean close(final int agentIndex, final long connectionId)
        {
            return true;
        }

        public void endOfBatch()
        {
        }
    }
}
