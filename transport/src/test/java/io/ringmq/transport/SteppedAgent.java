package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent for a test to step on its own thread: a loopback listening socket, an ingress ring of 64 slots that
 * no stage consumes (the test reads its slots, and says which it has taken, {@link #open(BrokerContext, Sequence)})
 * and an outbound ring the test writes (what the pipeline would answer). The caller wires the agent
 * ({@link IoAgent#wire}) with the wake it wants.
 */
final class SteppedAgent implements AutoCloseable
{
    final ServerSocketChannel server;
    final RingBuffer<IngressEvent> ring;
    final ManyToOneRingBuffer outbound;
    final IoAgent agent;

    private SteppedAgent(final BrokerContext context, final Sequence consumed) throws IOException
    {
        ring = RingBuffer.createMultiProducer(() -> new IngressEvent(256), 64, new BlockingWaitStrategy());
        ring.addGatingSequences(consumed);
        outbound = new ManyToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(64 * 1024 + RingBufferDescriptor.TRAILER_LENGTH)));
        server = ServerSocketChannel.open();
        try
        {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            server.configureBlocking(false);
            agent = new IoAgent(0, context, new BrokerCounters(), Listener.wrap(server), outbound, ring,
                new MessageLog(1 << 20), new AtomicInteger());
        }
        catch (final IOException | RuntimeException ex)
        {
            server.close();
            throw ex;
        }
    }

    static SteppedAgent open(final BrokerContext context) throws IOException
    {
        return new SteppedAgent(context, new Sequence(Long.MAX_VALUE - 1)); // the ring never fills
    }

    /**
     * @param consumed the slots the test has taken (a stage that consumes nothing until the test says so): the
     *                 64-slot ring fills once 64 slots past it are handed on.
     */
    static SteppedAgent open(final BrokerContext context, final Sequence consumed) throws IOException
    {
        return new SteppedAgent(context, consumed);
    }

    /**
     * Steps the agent until the condition holds (bounded: sockets take their time).
     */
    void stepUntil(final BooleanSupplier until) throws Exception
    {
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (!until.getAsBoolean() && System.nanoTime() < deadline)
        {
            agent.doWork();
        }
        assertThat(until.getAsBoolean()).isTrue();
    }

    /**
     * @return whether the client has bytes to read, for {@link #stepUntil}.
     */
    static boolean hasBytes(final RawClient client)
    {
        try
        {
            return client.hasBytes();
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
    }

    int port() throws IOException
    {
        return ((InetSocketAddress)server.getLocalAddress()).getPort();
    }

    @Override
    public void close() throws IOException
    {
        server.close();
    }
}
