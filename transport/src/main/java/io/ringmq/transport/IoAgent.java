package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.agrona.concurrent.SystemEpochClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.MessageHandler;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network I/O agent: owns a selector and the connections assigned to it (and, for agent 0, the listening
 * socket). Each duty cycle it takes new connections, drains its outbound ring into connection buffers, reads
 * and frames packets and claims ingress ring slots for them, flushes every touched connection once, and checks
 * keep-alive and connect timeouts. It never blocks on a socket: a full ingress ring pauses reading from that
 * connection, and a subscriber whose outbound buffer is past the high-water mark has its QoS 0 messages dropped.
 */
final class IoAgent implements Agent
{
    static final int SEND = 1;
    static final int CLOSE = 2;
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");
    private static final byte[] CONNACK_UNACCEPTABLE_VERSION = {0x20, 0x02, 0x00, 0x01};

    private final int index;
    private final BrokerContext context;
    private final BrokerCounters counters;
    private final Selector selector;
    private final ServerSocketChannel server;
    private final ManyToOneRingBuffer outbound;
    private final IngressProxy ingress;
    private final ManyToOneConcurrentArrayQueue<SocketChannel> handoff = new ManyToOneConcurrentArrayQueue<>(4096);
    private final Long2ObjectHashMap<Connection> connections = new Long2ObjectHashMap<>();
    private final List<Connection> touched = new ArrayList<>();
    private final List<Connection> paused = new ArrayList<>();
    private final PacketDecoder decoder = new PacketDecoder();
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer outView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer constant = new UnsafeBuffer(new byte[0]);
    private final byte[] pingResponse = new byte[PingCodec.LENGTH];
    private final EpochClock clock = SystemEpochClock.INSTANCE;
    private final AtomicInteger connectionCount;
    private final ConnectionTimers timers;
    // per-message counts, added to the shared counters once per duty cycle rather than per message
    private long packetsIn;
    private long publishIn;
    private long publishOut;
    private long qos0Dropped;
    private final MessageHandler outboundHandler = this::onOutbound;
    private IoAgent[] agents;
    private Wakeable pipelineWake = Wakeable.NONE;
    private Wakeable[] agentWakes;
    private long nowMs;
    private long nextConnectionSeq;
    private int nextAgent;

    IoAgent(final int index, final BrokerContext context, final BrokerCounters counters,
        final ServerSocketChannel server, final ManyToOneRingBuffer outbound, final RingBuffer<IngressEvent> ingress,
        final MessageLog log, final AtomicInteger connectionCount) throws IOException
    {
        this.index = index;
        this.context = context;
        this.counters = counters;
        this.server = server;
        this.outbound = outbound;
        this.ingress = new IngressProxy(ingress, log, index);
        this.connectionCount = connectionCount;
        this.selector = Selector.open();
        this.timers = new ConnectionTimers(clock.time(), context.connectTimeoutMs(), this::expire);
        PingCodec.encode(new UnsafeBuffer(pingResponse), 0, PacketType.PINGRESP);
        if (null != server)
        {
            server.register(selector, SelectionKey.OP_ACCEPT);
        }
    }

    void wire(final IoAgent[] agents, final Wakeable[] agentWakes, final Wakeable pipelineWake)
    {
        this.agents = agents;
        this.agentWakes = agentWakes;
        this.pipelineWake = pipelineWake;
    }

    Selector selector()
    {
        return selector;
    }

    /**
     * @return true when another thread left work for this agent (for the idle strategy's last look).
     */
    boolean hasPendingWork()
    {
        return outbound.size() > 0 || !handoff.isEmpty();
    }

    public int doWork() throws Exception
    {
        nowMs = clock.time();
        int work = drainHandoff();
        work += outbound.read(outboundHandler, 4096);
        if (selector.selectNow() > 0 || !selector.selectedKeys().isEmpty())
        {
            work += processSelected();
        }
        work += retryPaused();
        work += ingress.retryEnds();
        work += flushTouched();
        work += timers.poll(nowMs);
        if (ingress.takePublished())
        {
            pipelineWake.wake(); // once per duty cycle, however many packets were handed on
        }
        publishCounts();
        return work;
    }

    private void publishCounts()
    {
        if ((packetsIn | publishIn | publishOut | qos0Dropped) != 0)
        {
            counters.add(BrokerCounters.PACKETS_IN, packetsIn);
            counters.add(BrokerCounters.PUBLISH_IN, publishIn);
            counters.add(BrokerCounters.PUBLISH_OUT, publishOut);
            counters.add(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER, qos0Dropped);
            packetsIn = 0;
            publishIn = 0;
            publishOut = 0;
            qos0Dropped = 0;
        }
    }

    private int processSelected() throws IOException
    {
        int work = 0;
        final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
        while (keys.hasNext())
        {
            final SelectionKey key = keys.next();
            keys.remove();
            if (!key.isValid())
            {
                continue;
            }
            if (key.isAcceptable())
            {
                work += accept();
                continue;
            }
            final Connection connection = (Connection)key.attachment();
            if (key.isWritable())
            {
                flush(connection);
            }
            if (key.isValid() && key.isReadable())
            {
                work += read(connection);
            }
        }
        return work;
    }

    private int accept() throws IOException
    {
        int accepted = 0;
        SocketChannel channel;
        while (null != (channel = server.accept()))
        {
            accepted++;
            if (connectionCount.incrementAndGet() > context.maxConnections())
            {
                connectionCount.decrementAndGet();
                counters.increment(BrokerCounters.CONNECTIONS_REFUSED_LIMIT);
                CloseHelper.quietClose(channel);
                continue;
            }
            counters.increment(BrokerCounters.CONNECTIONS_ACCEPTED);
            final int target = nextAgent++ % agents.length;
            if (target == index)
            {
                register(channel);
            }
            else if (agents[target].handoff.offer(channel))
            {
                agentWakes[target].wake();
            }
            else
            {
                register(channel);
            }
        }
        return accepted;
    }

    private int drainHandoff() throws IOException
    {
        int work = 0;
        SocketChannel channel;
        while (null != (channel = handoff.poll()))
        {
            register(channel);
            work++;
        }
        return work;
    }

    private void register(final SocketChannel channel) throws IOException
    {
        try
        {
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            final boolean loopback = channel.getRemoteAddress() instanceof InetSocketAddress &&
                ((InetSocketAddress)channel.getRemoteAddress()).getAddress().isLoopbackAddress();
            final long id = ((long)index << 40) | (nextConnectionSeq++ & 0xFF_FFFF_FFFFL);
            final Connection connection = new Connection(id, channel, loopback, clock.time());
            connection.in = Buffers.allocate();
            connection.out = Buffers.allocate();
            connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            connections.put(id, connection);
            timers.onAccepted(connection);
        }
        catch (final IOException ex)
        {
            connectionCount.decrementAndGet();
            CloseHelper.quietClose(channel);
        }
    }

    private int read(final Connection connection)
    {
        if (connection.paused || connection.closed)
        {
            return 0;
        }
        final ByteBuf in = connection.in;
        int read;
        try
        {
            in.ensureWritable(Math.min(16 * 1024, Math.max(1024, in.writableBytes())));
            read = in.writeBytes(connection.channel, in.writableBytes());
        }
        catch (final IOException ex)
        {
            read = -1;
        }
        if (read < 0)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
            return 1;
        }
        if (read > 0)
        {
            connection.lastReadMs = nowMs;
            processInbound(connection);
        }
        return 1;
    }

    /**
     * Frames and validates every complete packet buffered for the connection and hands each on.
     */
    private void processInbound(final Connection connection)
    {
        final ByteBuf in = connection.in;
        while (in.isReadable() && !connection.closed)
        {
            final int available = in.readableBytes();
            Buffers.view(inView, in, in.readerIndex(), available);
            final int version = connection.connectSeen ? connection.version : MqttVersion.V5;
            final int length = decoder.decode(inView, 0, available, version, context.maxPacketSize());
            if (length == DecodeError.NEED_MORE)
            {
                final int frameLength = decoder.frame().frameLength();
                if (frameLength > available)
                {
                    in.discardReadBytes();
                    in.ensureWritable(frameLength - available);
                }
                return;
            }
            if (length < 0)
            {
                onBadPacket(connection, length);
                return;
            }
            if (!onPacket(connection, length))
            {
                // ingress ring full: keep the bytes and stop reading this socket (and being woken for it)
                connection.paused = true;
                connection.key.interestOps(connection.key.interestOps() & ~SelectionKey.OP_READ);
                paused.add(connection);
                counters.increment(ingress.takeLogFull() ?
                    BrokerCounters.MESSAGE_LOG_FULL : BrokerCounters.INGRESS_RING_FULL);
                return;
            }
            if (connection.closed)
            {
                return; // DISCONNECT or a protocol violation: its buffers are already released
            }
            in.skipBytes(length);
        }
        if (!connection.closed)
        {
            Buffers.compact(in);
        }
    }

    /**
     * @return false when the packet could not be handed on now (the ingress ring is full).
     */
    private boolean onPacket(final Connection connection, final int length)
    {
        final int type = decoder.packetType();
        packetsIn++;
        if (!connection.connectSeen)
        {
            if (type != PacketType.CONNECT)
            {
                protocolViolation(connection, "first packet is not CONNECT [MQTT-3.1.0-1]");
                return true;
            }
            if (!ingress.packet(connection.id, decoder.connect().protocolLevel(), connection.loopback, type,
                inView, length))
            {
                return false;
            }
            connection.connectSeen = true;
            connection.version = decoder.connect().protocolLevel();
            connection.keepAliveSeconds = decoder.connect().keepAlive();
            timers.onConnected(connection);
            return true;
        }
        switch (type)
        {
            case PacketType.PINGREQ:
                append(connection, constant(pingResponse), 0, pingResponse.length); // [MQTT-3.12.4-1]
                return true;
            case PacketType.DISCONNECT:
                close(connection, IngressEvent.DISCONNECTED);
                return true;
            case PacketType.PUBLISH:
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
                if (type == PacketType.PUBLISH)
                {
                    publishIn++;
                }
                return ingress.packet(connection.id, connection.version, connection.loopback, type, inView, length);
            case PacketType.CONNECT:
                protocolViolation(connection, "second CONNECT [MQTT-3.1.0-2]");
                return true;
            default:
                protocolViolation(connection, PacketType.name(type) + " is not sent by clients");
                return true;
        }
    }

    private void onBadPacket(final Connection connection, final int error)
    {
        if (error == DecodeError.PACKET_TOO_LARGE)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE);
        }
        if (!connection.connectSeen && error == DecodeError.UNSUPPORTED_PROTOCOL_VERSION &&
            decoder.packetType() == PacketType.CONNECT)
        {
            // [MQTT-3.1.2-2] answer in the 3.1.1 format, which 3.1 clients also read, then close
            append(connection, constant(CONNACK_UNACCEPTABLE_VERSION), 0, CONNACK_UNACCEPTABLE_VERSION.length);
            connection.closeAfterFlush = true;
            counters.increment(BrokerCounters.PROTOCOL_ERRORS);
            return;
        }
        protocolViolation(connection, DecodeError.describe(error));
    }

    private void protocolViolation(final Connection connection, final String why)
    {
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + why);
        close(connection, IngressEvent.CONNECTION_LOST);
    }

    private int retryPaused()
    {
        if (paused.isEmpty())
        {
            return 0;
        }
        int work = 0;
        for (int i = paused.size() - 1; i >= 0; i--)
        {
            final Connection connection = paused.get(i);
            connection.paused = false;
            paused.remove(i);
            if (!connection.closed)
            {
                connection.key.interestOps(connection.key.interestOps() | SelectionKey.OP_READ);
                processInbound(connection);
                work++;
            }
        }
        return work;
    }

    /**
     * Ends a connection and tells the pipeline, unless it never got as far as CONNECT.
     */
    private void close(final Connection connection, final int kind)
    {
        if (connection.closed)
        {
            return;
        }
        connection.closed = true;
        timers.onClosed(connection);
        connection.key.cancel();
        CloseHelper.quietClose(connection.channel);
        connection.in.release();
        connection.out.release();
        connections.remove(connection.id);
        connectionCount.decrementAndGet();
        counters.increment(BrokerCounters.CONNECTIONS_CLOSED);
        if (connection.connectSeen)
        {
            ingress.end(connection.id, kind, connection.version);
        }
    }

    private void onOutbound(final int msgTypeId, final org.agrona.MutableDirectBuffer buffer, final int index,
        final int length)
    {
        final long connectionId = buffer.getLong(index);
        if (msgTypeId == SEND)
        {
            send(connectionId, buffer, index + Long.BYTES, length - Long.BYTES);
        }
        else
        {
            closeAfterFlush(connectionId);
        }
    }

    /**
     * Queues bytes for a connection; called from the outbound ring, or directly when delivery shares this thread.
     */
    void send(final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        final Connection connection = connections.get(connectionId);
        if (null == connection || connection.closed)
        {
            return;
        }
        final int first = buffer.getByte(offset) & 0xFF;
        final boolean publish = (first >>> 4) == PacketType.PUBLISH;
        if (publish && (first & 0x06) == 0 && connection.out.readableBytes() > context.outboundHighWaterBytes())
        {
            qos0Dropped++;
            return;
        }
        if (publish)
        {
            publishOut++;
        }
        append(connection, buffer, offset, length);
    }

    void closeAfterFlush(final long connectionId)
    {
        final Connection connection = connections.get(connectionId);
        if (null != connection && !connection.closed)
        {
            connection.closeAfterFlush = true;
            touch(connection);
        }
    }

    private void append(final Connection connection, final DirectBuffer buffer, final int offset, final int length)
    {
        Buffers.append(connection.out, outView, buffer, offset, length);
        touch(connection);
    }

    private void touch(final Connection connection)
    {
        if (!connection.touched)
        {
            connection.touched = true;
            touched.add(connection);
        }
    }

    /**
     * Writes every connection that was given bytes this cycle, once.
     */
    int flushTouched()
    {
        final int count = touched.size();
        for (int i = 0; i < count; i++)
        {
            final Connection connection = touched.get(i);
            connection.touched = false;
            if (!connection.closed)
            {
                flush(connection);
            }
        }
        touched.clear();
        publishCounts(); // also reached straight from the delivery stage in the shared mode
        return count;
    }

    private void flush(final Connection connection)
    {
        final ByteBuf out = connection.out;
        try
        {
            if (out.isReadable())
            {
                out.readBytes(connection.channel, out.readableBytes());
            }
        }
        catch (final IOException ex)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
            return;
        }
        if (out.isReadable())
        {
            if ((connection.key.interestOps() & SelectionKey.OP_WRITE) == 0)
            {
                counters.increment(BrokerCounters.SOCKET_WRITE_BLOCKED);
                connection.key.interestOps((connection.paused ? 0 : SelectionKey.OP_READ) | SelectionKey.OP_WRITE);
            }
            return;
        }
        if ((connection.key.interestOps() & SelectionKey.OP_WRITE) != 0)
        {
            connection.key.interestOps(connection.paused ? 0 : SelectionKey.OP_READ);
        }
        Buffers.compact(out);
        if (connection.closeAfterFlush)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }
    }

    private void expire(final Connection connection, final boolean connectTimeout)
    {
        counters.increment(connectTimeout ? BrokerCounters.CONNECT_TIMEOUTS : BrokerCounters.KEEP_ALIVE_TIMEOUTS);
        close(connection, IngressEvent.CONNECTION_LOST);
    }

    private UnsafeBuffer constant(final byte[] bytes)
    {
        constant.wrap(bytes);
        return constant;
    }

    public void onClose()
    {
        for (final Connection connection : new ArrayList<>(connections.values()))
        {
            flush(connection);
            close(connection, IngressEvent.CONNECTION_LOST);
        }
        publishCounts();
        CloseHelper.quietClose(selector);
    }

    public String roleName()
    {
        return "io-" + index;
    }
}
