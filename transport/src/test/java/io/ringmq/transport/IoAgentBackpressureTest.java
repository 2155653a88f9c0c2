package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
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
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent on its own thread over an ingress ring that nobody consumes: a full ring pauses the connection,
 * and the agent then sleeps in short naps instead of spinning on it; when room appears it goes on by itself.
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
     * One agent on its own thread over a 64-slot ring that nobody consumes until the test moves {@link #stage};
     * a client connected through it (its CONNACK sent as the pipeline would) has sent {@link #PUBLISHES} QoS 0
     * PUBLISHes, so the ring is full and the connection paused.
     */
    private final class FullRing implements AutoCloseable
    {
        final BrokerCounters counters = new BrokerCounters();
        final RingBuffer<IngressEvent> ring =
            RingBuffer.createMultiProducer(() -> new IngressEvent(256), 64, new BlockingWaitStrategy());
        final Sequence stage = new Sequence(); // a stage that consumes nothing until told: the ring fills
        final ServerSocketChannel server = ServerSocketChannel.open();
        final IoAgent agent;
        final IdleStrategies.SleepingIdleStrategy idle;
        final AgentRunner runner;
        final Thread thread;
        final RawClient client;
        final ManyToOneRingBuffer outbound = new ManyToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(64 * 1024 + RingBufferDescriptor.TRAILER_LENGTH)));

        FullRing(final long pausedNapMs, final long maxSleepMs) throws Exception
        {
            this(pausedNapMs, maxSleepMs, Wakeable.NONE);
        }

        /**
         * @param pausedNapMs how long the agent sleeps at most with paused connections.
         * @param maxSleepMs  how long it sleeps at most otherwise.
         * @param shardWake   the agent's delivery shard.
         */
        FullRing(final long pausedNapMs, final long maxSleepMs, final Wakeable shardWake) throws Exception
        {
            final BrokerContext context =
                new BrokerContext().bindAddress("127.0.0.1").port(0).sysIntervalMs(0).conclude();
            ring.addGatingSequences(stage);
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            server.configureBlocking(false);
            agent = new IoAgent(0, context, counters, Listener.wrap(server), outbound, ring,
                new io.ringmq.pipeline.MessageLog(1 << 20), new AtomicInteger());
            agent.pausedNapMs(pausedNapMs);
            agent.shardWake(shardWake);
            idle = IdleStrategies.wake(agent.selector(), agent::hasPendingWork, agent.readyAfterSleep(), maxSleepMs);
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{idle}, Wakeable.NONE);
            runner = new AgentRunner(idle, Throwable::printStackTrace, null, agent);
            thread = AgentRunner.startOnThread(runner);
            client = new RawClient(((InetSocketAddress)server.getLocalAddress()).getPort());
            client.send(RawClient.connect("c", true, 60));
            await("CONNECT on the ring", () -> ring.getCursor() == 0);
            final int index = outbound.tryClaim(OutboundFrame.SEND, OutboundFrame.BYTES_OFFSET + 4); // the CONNACK
            outbound.buffer().putLong(index, ring.get(0).connectionId);
            outbound.buffer().putBytes(index + Long.BYTES, new byte[]{0x20, 0x02, 0x00, 0x00});
            outbound.commit(index);
            idle.wake();
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);

            final ByteArrayOutputStream publishes = new ByteArrayOutputStream();
            for (int i = 0; i < PUBLISHES; i++)
            {
                publishes.write(RawClient.publish("t", new byte[8], 0, 0));
            }
            client.send(publishes.toByteArray());
            await("the ring full", () -> counters.get(BrokerCounters.INGRESS_RING_FULL) > 0);
        }

        public void close() throws Exception
        {
            try (server; client)
            {
                runner.close(10, thread -> idle.wake()); // a long nap ends only by a wake
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
    @DisplayName("an agent that drains its outbound ring wakes the delivery shard that found it full")
    void drainedOutboundWakesTheShard() throws Exception
    {
        final AtomicInteger shardWakes = new AtomicInteger();
        try (FullRing full = new FullRing(IoAgent.PAUSED_SLEEP_MS, IdleStrategies.SLEEP_MS,
            shardWakes::incrementAndGet))
        {
            assertThat(shardWakes).hasValue(0); // the CONNACK went through a ring nobody found full
            full.agent.wantOutboundRoom(); // what OutboundRouter does when the ring refuses a shard's packet
            assertThat(OutboundFrame.send(full.outbound, full.ring.get(0).connectionId,
                new UnsafeBuffer(new byte[]{(byte)0xD0, 0x00}), 0, 2)).isTrue(); // a PINGRESP, then a wake
            full.idle.wake();
            await("the shard woken", () -> shardWakes.get() == 1);
            assertThat(full.client.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
        }
    }
}
