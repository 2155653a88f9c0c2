package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent over an ingress ring that nobody consumes: a full ring pauses the connection, and the agent then
 * sleeps instead of spinning on it, in short naps; when room appears it goes on, woken by the thread that freed it
 * or at the end of its nap. And the other way: a delivery shard that found the agent's outbound ring full is woken
 * once the agent drains it.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IoAgentBackpressureTest
{
    private static final int PUBLISHES = 100;

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() < deadline).as("timed out waiting for " + what).isTrue();
            Thread.sleep(5);
        }
    }

    /**
     * One agent over a 64-slot ring that nobody consumes until the test moves {@link #stage}, on its own thread or
     * stepped by the test's; a client connected through it (its CONNACK sent as the pipeline would) has sent
     * {@link #PUBLISHES} QoS 0 PUBLISHes, so the ring is full and the connection paused.
     */
    private final class FullRing implements AutoCloseable
    {
        final BrokerCounters counters = new BrokerCounters();
        final RingBuffer<IngressEvent> ring =
            RingBuffer.createMultiProducer(() -> new IngressEvent(256), 64, new BlockingWaitStrategy());
        final Sequence stage = new Sequence(); // a stage that consumes nothing until told: the ring fills
        final ServerSocketChannel server = ServerSocketChannel.open();
        final ManyToOneRingBuffer outbound = new ManyToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(64 * 1024 + RingBufferDescriptor.TRAILER_LENGTH)));
        final IoAgent agent;
        final IdleStrategies.SleepingIdleStrategy idle;
        /** Null when the test steps the agent. */
        final AgentRunner runner;
        final Thread thread;
        RawClient client;
        /** Null unless asked for: a second client that sends nothing after its CONNECT. */
        RawClient silent;

        /**
         * On a thread of its own.
         */
        FullRing(final long pausedNapMs, final long maxSleepMs) throws Exception
        {
            this(pausedNapMs, maxSleepMs, Wakeable.NONE, true);
        }

        /**
         * @param pausedNapMs how long the agent sleeps at most with paused connections.
         * @param maxSleepMs  how long it sleeps at most otherwise.
         * @param shardWake   the agent's delivery shard.
         * @param threaded    on a thread of its own; false: each {@link #until} steps it on the caller's thread.
         */
        FullRing(final long pausedNapMs, final long maxSleepMs, final Wakeable shardWake, final boolean threaded)
            throws Exception
        {
            this(pausedNapMs, maxSleepMs, shardWake, threaded, 60, false);
        }

        /**
         * @param keepAliveSeconds the keep-alive of both clients: the publisher, and a second one connected before
         *                         the ring fills that then sends nothing.
         */
        FullRing(final long pausedNapMs, final long maxSleepMs, final Wakeable shardWake, final boolean threaded,
            final int keepAliveSeconds) throws Exception
        {
            this(pausedNapMs, maxSleepMs, shardWake, threaded, keepAliveSeconds, true);
        }

        private FullRing(final long pausedNapMs, final long maxSleepMs, final Wakeable shardWake,
            final boolean threaded, final int keepAliveSeconds, final boolean silentToo) throws Exception
        {
            final BrokerContext context =
                new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0)).conclude();
            ring.addGatingSequences(stage);
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            server.configureBlocking(false);
            agent = new IoAgent(0, context, counters, Listener.wrap(server), outbound, ring,
                new io.ringmq.pipeline.MessageLog(1 << 20), new AtomicInteger());
            agent.pausedNapMs(pausedNapMs);
            agent.shardWake(shardWake);
            idle = IdleStrategies.wake(agent.selector(), agent::hasPendingWork, agent.readyAfterSleep(), maxSleepMs);
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{idle}, Wakeable.NONE);
            runner = threaded ? new AgentRunner(idle, Throwable::printStackTrace, null, agent) : null;
            thread = threaded ? AgentRunner.startOnThread(runner) : null;
            try
            {
                client = connected("c", keepAliveSeconds, 0);
                silent = silentToo ? connected("s", keepAliveSeconds, 1) : null;

                final ByteArrayOutputStream publishes = new ByteArrayOutputStream();
                for (int i = 0; i < PUBLISHES; i++)
                {
                    publishes.write(RawClient.publish("t", new byte[8], 0, 0));
                }
                client.send(publishes.toByteArray());
                until("the ring full", () -> counters.get(BrokerCounters.INGRESS_RING_FULL) > 0);
            }
            catch (final Exception | AssertionError failure)
            {
                close(); // no agent thread left asleep behind a failed set-up
                throw failure;
            }
        }

        /**
         * A client connected, its CONNACK sent as the pipeline would.
         *
         * @param slot where its CONNECT lands on the ring.
         */
        private RawClient connected(final String clientId, final int keepAliveSeconds, final long slot)
            throws Exception
        {
            final RawClient connecting = new RawClient(((InetSocketAddress)server.getLocalAddress()).getPort());
            if (slot == 0)
            {
                client = connecting; // closed with the rest should what follows fail
            }
            else
            {
                silent = connecting;
            }
            connecting.send(RawClient.connect(clientId, true, keepAliveSeconds));
            until("CONNECT on the ring", () -> ring.getCursor() == slot);
            final int index = outbound.tryClaim(OutboundFrame.SEND, OutboundFrame.BYTES_OFFSET + 4); // CONNACK
            outbound.buffer().putLong(index, ring.get(slot).connectionId);
            outbound.buffer().putBytes(index + Long.BYTES, new byte[]{0x20, 0x02, 0x00, 0x00});
            outbound.commit(index);
            idle.wake();
            until("the CONNACK written", () -> 0 == outbound.size());
            assertThat(connecting.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            return connecting;
        }

        /**
         * Waits for a condition, stepping the agent first each time when it has no thread of its own.
         */
        void until(final String what, final BooleanSupplier condition) throws Exception
        {
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (true)
            {
                if (null == runner)
                {
                    agent.doWork();
                }
                if (condition.getAsBoolean())
                {
                    return;
                }
                assertThat(System.nanoTime() < deadline).as("timed out waiting for " + what).isTrue();
                Thread.sleep(null == runner ? 1 : 5);
            }
        }

        public void close() throws Exception
        {
            try (server; RawClient connected = client; RawClient quiet = silent)
            {
                if (null != runner)
                {
                    runner.close(10, thread -> idle.wake()); // a long nap ends only by a wake
                }
                else
                {
                    agent.onClose();
                }
            }
        }
    }

    @Test
    @DisplayName("a paused connection on a full ingress ring does not make its I/O agent busy-spin")
    void fullRingLetsTheAgentSleep() throws Exception
    {
        try (FullRing full = new FullRing(IoAgent.PAUSED_SLEEP_MS, IdleStrategies.SLEEP_MS))
        {
            final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            final long cpuStart = threads.getThreadCpuTime(full.thread.getId());
            final long wallStart = System.nanoTime();
            Thread.sleep(500); // the measuring window: the ring stays full all along
            final long cpuNs = threads.getThreadCpuTime(full.thread.getId()) - cpuStart;
            final long wallNs = System.nanoTime() - wallStart;
            assertThat(full.ring.remainingCapacity()).isZero();
            final double share = (double)cpuNs / wallNs;
            assertThat(share).as("I/O thread CPU share while paused").isLessThan(0.25);

            full.stage.set(full.ring.getCursor()); // room again: the agent resumes by itself, within its short nap
            await("every packet handed on", () -> full.ring.getCursor() == PUBLISHES);
        }
    }

    @Test
    @DisplayName("the thread that frees the ring wakes an agent asleep with paused connections, which then goes on")
    void freedRoomWakesThePausedAgent() throws Exception
    {
        final long never = TimeUnit.MINUTES.toMillis(10); // longer than the test: only a wake ends a nap
        try (FullRing full = new FullRing(never, never))
        {
            await("the agent asleep, waiting for room",
                () -> full.agent.waitsForRingRoom() && full.idle.isSleeping());
            full.stage.set(full.ring.getCursor()); // what the release stage does, then its wake:
            AgentThreads.wakeWaitingForRoom(new IoAgent[]{full.agent}, new Wakeable[]{full.idle});
            await("every packet handed on", () -> full.ring.getCursor() == PUBLISHES);
            await("no longer waiting for room", () -> !full.agent.waitsForRingRoom());
        }
    }

    @Test
    @DisplayName("room freed since an agent's last retry keeps it from sleeping: its last look sees the release move")
    void roomFreedSinceTheRetryKeepsTheAgentAwake() throws Exception
    {
        final long never = TimeUnit.MINUTES.toMillis(10);
        try (FullRing full = new FullRing(never, never, Wakeable.NONE, false)) // stepped: no thread to wake
        {
            full.until("a retry that moved nothing", full.agent::waitsForRingRoom);
            assertThat(full.agent.hasPendingWork()).as("nothing freed: it may sleep").isFalse();
            full.stage.set(full.ring.getCursor()); // freed while the agent is awake: a wake would find no sleeper
            assertThat(full.agent.hasPendingWork()).as("the last look before sleeping").isTrue();
            full.until("every packet handed on", () -> full.ring.getCursor() == PUBLISHES);
            assertThat(full.agent.waitsForRingRoom()).isFalse();
            assertThat(full.agent.hasPendingWork()).as("nothing paused: it may sleep").isFalse();
        }
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a connection paused on a full ingress ring is not ended by keep-alive; a silent " +
        "one is, and its end waits for ring room as paused connections do")
    void keepAliveEndsTheSilentNotThePaused() throws Exception
    {
        final long never = TimeUnit.MINUTES.toMillis(10);
        try (FullRing full = new FullRing(never, never, Wakeable.NONE, false, 1)) // keep-alive 1 s for both
        {
            // 1.5 s on, with the ring still full: the silent client's keep-alive ends it; the publisher, whose
            // complete packets wait unread behind the broker's own backlog, has been heard from and stays
            full.until("the silent client's keep-alive timeout",
                () -> full.counters.get(BrokerCounters.KEEP_ALIVE_TIMEOUTS) >= 1);
            full.until("its end waiting", full.agent::waitsForRingRoom);
            assertThat(full.agent.sleepLimitMs()).as("a nap, not a sleep").isEqualTo(never);
            assertThat(full.agent.hasPendingWork()).as("nothing freed: it may nap").isFalse();
            final long deadline = System.currentTimeMillis() + 1_600; // past the publisher's own 1.5 s, stepped
            full.until("past the paused publisher's keep-alive", () -> System.currentTimeMillis() > deadline);
            assertThat(full.counters.get(BrokerCounters.KEEP_ALIVE_TIMEOUTS)).as("only the silent one").isEqualTo(1);

            final long before = full.ring.getCursor();
            full.stage.set(before);
            assertThat(full.agent.hasPendingWork()).as("the last look before sleeping").isTrue();
            full.until("the silent client's end on the ring", () -> lostSince(full, before) == 1);
            full.until("the publisher's packets handed on", () -> full.ring.getCursor() == PUBLISHES + 2);
            assertThat(lostSince(full, before)).as("the publisher still connected").isEqualTo(1);
            assertThat(full.agent.waitsForRingRoom()).isFalse();
            // taken, its packets were heard from then: silent since, it ends by its own keep-alive
            full.until("the publisher's keep-alive timeout once it has drained",
                () -> full.counters.get(BrokerCounters.KEEP_ALIVE_TIMEOUTS) == 2);
        }
    }

    @Test
    @DisplayName("ring room goes first to the connections that waited for it, not to sockets that became ready since")
    void waitingConnectionsGoBeforeFreshReads() throws Exception
    {
        final long never = TimeUnit.MINUTES.toMillis(10);
        try (FullRing full = new FullRing(never, never, Wakeable.NONE, false, 60, true)) // stepped
        {
            full.until("the publisher waiting for room", full.agent::waitsForRingRoom);
            final long waiting = full.ring.get(0).connectionId;
            final long fresh = full.ring.get(1).connectionId;
            final ByteArrayOutputStream publishes = new ByteArrayOutputStream();
            for (int i = 0; i < 10; i++)
            {
                publishes.write(RawClient.publish("u", new byte[8], 0, 0));
            }
            assertThat(full.agent.connection(waiting).inBytes()).as("ten packets or more of it buffered")
                .isGreaterThanOrEqualTo(10 * RawClient.publish("t", new byte[8], 0, 0).length);
            full.silent.send(publishes.toByteArray());
            final SelectionKey freshKey = full.agent.connection(fresh).key;
            await("the second client's PUBLISHes ready on the broker's socket", () -> readable(full, freshKey));

            final long before = full.ring.getCursor();
            full.stage.set(before - full.ring.getBufferSize() + 10); // ten slots free
            full.agent.doWork(); // one duty cycle: the retry, then the fresh read
            assertThat(full.ring.getCursor()).isEqualTo(before + 10);
            for (long sequence = before + 1; sequence <= before + 10; sequence++)
            {
                assertThat(full.ring.get(sequence).connectionId).as("slot " + sequence + " goes to the one that waited")
                    .isEqualTo(waiting);
            }
            assertThat(full.agent.connection(fresh).paused).as("the fresh reader waits behind it").isTrue();

            full.stage.set(full.ring.getCursor());
            full.until("every packet of both handed on", () -> full.ring.getCursor() == PUBLISHES + 1 + 10);
        }
    }

    @Test
    @DisplayName("a socket the sleeping select finds ready while connections wait for room is read after them")
    void readyAtWakeWaitsBehindThePaused() throws Exception
    {
        final long never = TimeUnit.MINUTES.toMillis(10);
        try (FullRing full = new FullRing(never, never, Wakeable.NONE, true, 60, true)) // its own thread
        {
            await("the agent asleep, waiting for room",
                () -> full.agent.waitsForRingRoom() && full.idle.isSleeping());
            final long waiting = full.ring.get(0).connectionId;
            final long before = full.ring.getCursor();
            full.stage.set(before - full.ring.getBufferSize() + 10); // ten slots free, and no wake: a socket's
            final ByteArrayOutputStream publishes = new ByteArrayOutputStream();
            for (int i = 0; i < 10; i++)
            {
                publishes.write(RawClient.publish("u", new byte[8], 0, 0));
            }
            full.silent.send(publishes.toByteArray()); // ends the sleep: ready in its select
            await("the ten slots taken", () -> full.ring.getCursor() >= before + 10);
            for (long sequence = before + 1; sequence <= before + 10; sequence++)
            {
                assertThat(full.ring.get(sequence).connectionId).as("slot " + sequence + " goes to the one that waited")
                    .isEqualTo(waiting);
            }
        }
    }

    /**
     * @return whether the broker's end of a connection has bytes to read (asked on the agent's own selector, on the
     * thread that steps the agent).
     */
    private static boolean readable(final FullRing full, final SelectionKey key)
    {
        assertThat(full.runner).as("only where the test's thread steps the agent").isNull();
        try
        {
            full.agent.selector().selectNow();
            final boolean ready = key.isValid() && (key.readyOps() & SelectionKey.OP_READ) != 0;
            full.agent.selector().selectedKeys().clear();
            return ready;
        }
        catch (final java.io.IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
    }

    private static int lostSince(final FullRing full, final long after)
    {
        int lost = 0;
        for (long sequence = after + 1; sequence <= full.ring.getCursor(); sequence++)
        {
            lost += IngressEvent.CONNECTION_LOST == full.ring.get(sequence).kind ? 1 : 0;
        }
        return lost;
    }

    @Test
    @DisplayName("an agent that drains its outbound ring wakes the delivery shard that found it full")
    void drainedOutboundWakesTheShard() throws Exception
    {
        final AtomicInteger shardWakes = new AtomicInteger();
        try (FullRing full = new FullRing(IoAgent.PAUSED_SLEEP_MS, IdleStrategies.SLEEP_MS,
            shardWakes::incrementAndGet, false)) // stepped: the ring fills before the agent reads it
        {
            final Outbound shard = new OutboundRouter(new ManyToOneRingBuffer[]{full.outbound},
                new IoAgent[]{full.agent}, new boolean[]{false}).forShard(0);
            final long connectionId = full.ring.get(0).connectionId;
            final UnsafeBuffer pingresps = new UnsafeBuffer(new byte[1024]);
            for (int i = 0; i < pingresps.capacity(); i += 2)
            {
                pingresps.putByte(i, (byte)0xD0);
            }
            int sent = 0;
            while (shard.send(0, connectionId, pingresps, 0, pingresps.capacity()))
            {
                sent++;
            }
            assertThat(sent).as("packets the 64 KiB ring took").isBetween(32, 64);
            assertThat(shardWakes).as("the CONNACK went through a ring nobody found full").hasValue(0);
            full.agent.doWork(); // drains the ring the shard found full
            assertThat(shardWakes).hasValue(1);
            full.agent.doWork();
            assertThat(shardWakes).as("once per refusal").hasValue(1);
        }
    }
}
