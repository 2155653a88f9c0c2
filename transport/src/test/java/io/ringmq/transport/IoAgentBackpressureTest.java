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

    @Test
    @DisplayName("a paused connection on a full ingress ring does not make its I/O agent busy-spin")
    void fullRingLetsTheAgentSleep() throws Exception
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0).sysIntervalMs(0).conclude();
        final BrokerCounters counters = new BrokerCounters();
        final RingBuffer<IngressEvent> ring =
            RingBuffer.createMultiProducer(() -> new IngressEvent(256), 64, new BlockingWaitStrategy());
        final Sequence stage = new Sequence(); // a stage that consumes nothing until told: the ring fills
        ring.addGatingSequences(stage);
        final ManyToOneRingBuffer outbound = new ManyToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(64 * 1024 + RingBufferDescriptor.TRAILER_LENGTH)));
        try (ServerSocketChannel server = ServerSocketChannel.open())
        {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            server.configureBlocking(false);
            final IoAgent agent = new IoAgent(0, context, counters, Listener.wrap(server), outbound, ring,
                new io.ringmq.pipeline.MessageLog(1 << 20), new AtomicInteger());
            final IdleStrategies.SleepingIdleStrategy idle =
                IdleStrategies.wake(agent.selector(), agent::hasPendingWork, agent.readyAfterSleep());
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{idle}, Wakeable.NONE);
            final AgentRunner runner = new AgentRunner(idle, Throwable::printStackTrace, null, agent);
            final Thread thread = AgentRunner.startOnThread(runner);
            try (RawClient client = new RawClient(((InetSocketAddress)server.getLocalAddress()).getPort()))
            {
                client.send(RawClient.connect("c", true, 60));
                await("CONNECT on the ring", () -> ring.getCursor() == 0);
                final int index = outbound.tryClaim(OutboundFrame.SEND, OutboundFrame.BYTES_OFFSET + 4); // the pipeline's CONNACK
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

                final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
                final long cpuStart = threads.getThreadCpuTime(thread.getId());
                final long wallStart = System.nanoTime();
                Thread.sleep(500); // the measuring window: the ring stays full all along
                final long cpuNs = threads.getThreadCpuTime(thread.getId()) - cpuStart;
                final long wallNs = System.nanoTime() - wallStart;
                assertThat(ring.remainingCapacity()).isZero();
                final double share = (double)cpuNs / wallNs;
                assertThat(share).as("I/O thread CPU share while paused").isLessThan(0.25);

                stage.set(ring.getCursor()); // room again: the agent resumes by itself, within its short nap
                await("every packet handed on", () -> ring.getCursor() == PUBLISHES);
            }
            finally
            {
                runner.close();
            }
        }
    }
}
