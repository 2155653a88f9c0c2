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

/**
 * One I/O agent for a test to step on its own thread: a loopback listening socket, an ingress ring nobody consumes
 * (the test reads its slots) and an outbound ring the test writes (what the pipeline would answer). The caller wires
 * the agent ({@link IoAgent#wire}) with the wake it wants.
 */
final class SteppedAgent implements AutoCloseable
{
    final ServerSocketChannel server;
    final RingBuffer<IngressEvent> ring;
    final ManyToOneRingBuffer outbound;
    final IoAgent agent;

    private SteppedAgent(final BrokerContext context) throws IOException
    {
        ring = RingBuffer.createMultiProducer(() -> new IngressEvent(256), 64, new BlockingWaitStrategy());
        ring.addGatingSequences(new Sequence(Long.MAX_VALUE - 1)); // nothing consumes: the test reads the slots
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
        return new SteppedAgent(context);
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
