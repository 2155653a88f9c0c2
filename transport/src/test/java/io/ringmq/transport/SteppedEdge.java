package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent alone, stepped by the test on its own thread: real client sockets on one side; on the other the
 * ingress ring, whose slots the test reads in order (and so frees), and the outbound ring, which the test writes
 * as the pipeline would. Only the edge is under test: no stage runs.
 */
final class SteppedEdge implements AutoCloseable
{
    /** An accepting MQTT 5.0 CONNACK with no properties. */
    static final byte[] CONNACK_V5 = {0x20, 0x03, 0x00, 0x00, 0x00};
    static final byte[] CONNACK_V3 = {0x20, 0x02, 0x00, 0x00};
    private static final long STEP_LIMIT_NS = 10_000_000_000L;

    final BrokerContext context;
    final BrokerCounters counters = new BrokerCounters();
    final IoAgent agent;
    /** Its one listener, and the broker's count of connections held. */
    final Listener listener;
    final AtomicInteger connectionCount = new AtomicInteger();
    private final RingBuffer<IngressEvent> ring;
    private final Sequence consumed = new Sequence(-1);
    private final ManyToOneRingBuffer outbound;
    private final ServerSocketChannel server;
    private final List<RawClient> clients = new ArrayList<>();
    private final MessageLog log = new MessageLog(1 << 22);
    private long next;

    SteppedEdge(final BrokerContext context) throws IOException
    {
        this(context, new io.ringmq.pipeline.ListenerSettings(0, null));
    }

    /**
     * @param listener the settings of its one listener (plain MQTT, or WebSocket; no TLS).
     */
    SteppedEdge(final BrokerContext context, final io.ringmq.pipeline.ListenerSettings listener) throws IOException
    {
        this.context = context.bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0)).conclude();
        ring = RingBuffer.createMultiProducer(() -> new IngressEvent(256), 1024, new BlockingWaitStrategy());
        ring.addGatingSequences(consumed);
        outbound = new ManyToOneRingBuffer(new UnsafeBuffer(
            ByteBuffer.allocateDirect(1024 * 1024 + RingBufferDescriptor.TRAILER_LENGTH)));
        server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress("127.0.0.1", 0), 4096); // room for a storm that waits for a step
        server.configureBlocking(false);
        final Listener[] listeners = Listener.wrap(server, listener);
        this.listener = listeners[0];
        agent = new IoAgent(0, this.context, counters, listeners, outbound, ring, log, connectionCount);
        agent.wire(new IoAgent[]{agent}, new Wakeable[]{Wakeable.NONE}, Wakeable.NONE);
    }

    RawClient client() throws IOException
    {
        final RawClient client = new RawClient(((InetSocketAddress)server.getLocalAddress()).getPort());
        clients.add(client);
        return client;
    }

    int port() throws IOException
    {
        return ((InetSocketAddress)server.getLocalAddress()).getPort();
    }

    /**
     * @return whether the outbound ring holds frames the agent has not drained yet.
     */
    boolean outboundPending()
    {
        return outbound.size() > 0;
    }

    /**
     * Connects an MQTT 5.0 client and answers its CONNECT with an accepting CONNACK, as the pipeline would.
     *
     * @return its connection id.
     */
    long connect5(final RawClient client, final String clientId, final int keepAlive,
        final MqttProperties properties) throws Exception
    {
        client.v5().send(RawClient.connect5(clientId, keepAlive, properties));
        final IngressEvent connect = next();
        assertThat(connect.packetType).isEqualTo(PacketType.CONNECT);
        final long connectionId = connect.connectionId;
        answer(connectionId, CONNACK_V5, client, PacketType.CONNACK);
        return connectionId;
    }

    long connect3(final RawClient client, final String clientId) throws Exception
    {
        client.send(RawClient.connect(clientId, true, 60));
        final IngressEvent connect = next();
        assertThat(connect.packetType).isEqualTo(PacketType.CONNECT);
        final long connectionId = connect.connectionId;
        answer(connectionId, CONNACK_V3, client, PacketType.CONNACK);
        return connectionId;
    }

    /**
     * Sends bytes to a client through the outbound ring, as the pipeline would.
     */
    void send(final long connectionId, final byte[] bytes)
    {
        assertThat(OutboundFrame.send(outbound, connectionId, new UnsafeBuffer(bytes), 0, bytes.length)).isTrue();
    }

    /**
     * Sends bytes to a client and waits until it reads a packet of the type expected.
     */
    void answer(final long connectionId, final byte[] bytes, final RawClient client, final int expectedType)
        throws Exception
    {
        send(connectionId, bytes);
        step(() -> hasBytes(client));
        assertThat(client.readPacket(5_000)).isEqualTo(expectedType);
    }

    /**
     * @return the next slot the agent publishes, stepping until it does; the slot before it is given back.
     */
    IngressEvent next()
    {
        if (next > 0 && ring.get(next - 1).logEnd >= 0)
        {
            log.release(ring.get(next - 1).logEnd); // as the last stage would: the log never fills in a long test
        }
        consumed.set(next - 1);
        final long sequence = next++;
        step(() -> ring.getCursor() >= sequence);
        return ring.get(sequence);
    }

    /**
     * @return whether the agent published a slot not yet taken by {@link #next()}.
     */
    boolean hasNext()
    {
        return ring.getCursor() >= next;
    }

    /**
     * Steps the agent until the condition holds (bounded: sockets take their time).
     */
    void step(final BooleanSupplier until)
    {
        final long deadline = System.nanoTime() + STEP_LIMIT_NS;
        while (!until.getAsBoolean() && System.nanoTime() < deadline)
        {
            try
            {
                agent.doWork();
            }
            catch (final Exception ex)
            {
                throw new IllegalStateException(ex);
            }
        }
        assertThat(until.getAsBoolean()).as("stepped until the condition held").isTrue();
    }

    /**
     * Steps the agent until the client has bytes, then reads the packet they start.
     */
    int read(final RawClient client) throws IOException
    {
        step(() -> hasBytes(client));
        return client.readPacket(5_000);
    }

    /**
     * Expects the MQTT 5.0 DISCONNECT the edge sends before it closes, the end handed to the pipeline with its
     * reason code, and the close.
     */
    IngressEvent expectDisconnect(final RawClient client, final long connectionId, final int reasonCode)
        throws IOException
    {
        return expectDisconnect(client, connectionId, reasonCode, "");
    }

    /**
     * @param reasonString text its Reason String must hold.
     */
    IngressEvent expectDisconnect(final RawClient client, final long connectionId, final int reasonCode,
        final String reasonString) throws IOException
    {
        assertThat(read(client)).as("a DISCONNECT").isEqualTo(PacketType.DISCONNECT);
        assertThat(client.decoder().disconnect().reasonCode()).as("its reason code").isEqualTo(reasonCode);
        if (!reasonString.isEmpty())
        {
            assertThat(client.decoder().disconnect().properties().slice(
                io.ringmq.protocol.PropertyId.REASON_STRING).asString()).as("its reason string")
                .contains(reasonString);
        }
        final IngressEvent end = expectEnd(connectionId, IngressEvent.CONNECTION_LOST, reasonCode);
        expectClosed(client);
        return end;
    }

    /**
     * Expects the end of a connection in the next slot.
     */
    IngressEvent expectEnd(final long connectionId, final int kind, final int reasonCode)
    {
        final IngressEvent end = next();
        assertThat(end.kind).as("an end").isEqualTo(kind);
        assertThat(end.connectionId).isEqualTo(connectionId);
        assertThat(end.reasonCode).as("the end's reason code").isEqualTo(reasonCode);
        return end;
    }

    /**
     * Expects the socket closed by the broker with nothing more sent (the agent closed it already).
     */
    static void expectClosed(final RawClient client) throws IOException
    {
        assertThat(client.readPacketOrClosed(5_000)).as("closed, nothing more sent").isEqualTo(-1);
    }

    static boolean hasBytes(final RawClient client)
    {
        try
        {
            return client.hasBytes();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    public void close() throws IOException
    {
        for (final RawClient client : clients)
        {
            client.close();
        }
        agent.onClose();
        server.close();
    }
}
