package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.Slice;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;

/**
 * The reading role of an I/O agent: reads a connection's bytes through its {@link SocketLayer}, frames and
 * decodes each packet once, judges what the edge judges (the first packet, the packet size, the topic limits,
 * keep-alive) and hands the rest to the pipeline through the {@link IngressProxy}.
 * <p>
 * Memory follows the bytes that arrived, never the length a header claims: the inbound buffer grows only as
 * bytes are read, and before CONNECT the first packet must be a CONNECT of at most {@code --max-connect-size},
 * judged as soon as its remaining length is known.
 */
final class ConnectionReader
{
    /** Largest single read; the buffer grows toward it only while the socket has that much. */
    private static final int MAX_READ = 16 * 1024;
    private static final int MIN_READ = 1024;
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");
    private static final byte[] CONNACK_UNACCEPTABLE_VERSION = {0x20, 0x02, 0x00, 0x01};

    private final BrokerContext context;
    private final BrokerCounters counters;
    private final IngressProxy ingress;
    private final ConnectionTimers timers;
    private final ConnectionWriter writer;
    private final PausedConnections paused;
    private final ConnectionWriter.Closer closer;
    private final PacketDecoder decoder = new PacketDecoder();
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final int maxConnectLength;
    private long nowMs;
    // per-message counts, added to the shared counters by the agent once per duty cycle
    long packetsIn;
    long publishIn;
    long bytesIn;

    ConnectionReader(final BrokerContext context, final BrokerCounters counters, final IngressProxy ingress,
        final ConnectionTimers timers, final ConnectionWriter writer, final PausedConnections paused,
        final ConnectionWriter.Closer closer)
    {
        this.context = context;
        this.counters = counters;
        this.ingress = ingress;
        this.timers = timers;
        this.writer = writer;
        this.paused = paused;
        this.closer = closer;
        this.maxConnectLength = Math.min(context.maxConnectSize(), context.maxPacketSize());
    }

    /**
     * The duty cycle's clock, read once per cycle.
     */
    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
    }

    /**
     * Reads what the socket has and processes every complete packet.
     *
     * @return 1 when the socket was read.
     */
    int read(final Connection connection)
    {
        if (!connection.readable())
        {
            return 0;
        }
        final ByteBuf in = connection.in;
        int read;
        try
        {
            // room for what is likely there, never for what a header claims: memory follows arrived bytes
            in.ensureWritable(Math.min(MAX_READ, Math.max(MIN_READ, in.writableBytes())));
            read = connection.layer.read(in);
            bytesIn += Math.max(0, read);
        }
        catch (final IOException ex)
        {
            read = -1;
        }
        if (read < 0)
        {
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return 1;
        }
        if (read > 0)
        {
            processInbound(connection);
        }
        return 1;
    }

    /**
     * Frames, validates and hands on every complete packet buffered for the connection, until one must wait.
     *
     * @return packets handed on.
     */
    int processInbound(final Connection connection)
    {
        final ByteBuf in = connection.in;
        int handed = 0;
        while (in.isReadable() && !connection.closed)
        {
            if (connection.connack == Connection.CONNACK_REFUSED)
            {
                in.skipBytes(in.readableBytes()); // nothing after a refused CONNECT is processed [MQTT-3.1.4-5]
                break;
            }
            if (connection.connectSeen && connection.connack == Connection.CONNACK_PENDING)
            {
                // hold it until the CONNACK is written: it is the first packet the server sends [MQTT-3.2.0-1]
                connection.awaitingConnack = true;
                connection.updateInterest();
                break;
            }
            final int available = in.readableBytes();
            Buffers.view(inView, in, in.readerIndex(), available);
            final int version = connection.connectSeen ? connection.version : MqttVersion.V5;
            final int maxLength = connection.connectSeen ? context.maxPacketSize() : maxConnectLength;
            final int length = decoder.decode(inView, 0, available, version, maxLength);
            if (!connection.connectSeen && refuseFirstPacket(connection, length))
            {
                return handed;
            }
            if (length == DecodeError.NEED_MORE)
            {
                break;
            }
            if (length < 0)
            {
                onBadPacket(connection, length);
                return handed;
            }
            connection.lastPacketMs = nowMs; // a complete packet: only that resets keep-alive [MQTT-3.1.2-24]
            if (!onPacket(connection, length))
            {
                pause(connection);
                return handed;
            }
            handed++;
            if (connection.closed)
            {
                return handed; // DISCONNECT or a protocol violation: its buffers are already released
            }
            if (connection.paused)
            {
                connection.paused = false;
                connection.updateInterest();
            }
            in.skipBytes(length);
        }
        if (!connection.closed)
        {
            if (in.isReadable())
            {
                in.discardReadBytes(); // keep a partial packet at the front; its buffer grows only as it arrives
            }
            else
            {
                Buffers.compact(in);
            }
        }
        return handed;
    }

    /**
     * Before CONNECT the first packet must be a CONNECT of at most {@code --max-connect-size}, judged from the
     * fixed header alone, so an unauthenticated socket never makes the broker buffer much.
     *
     * @return true when the connection was closed for it.
     */
    private boolean refuseFirstPacket(final Connection connection, final int length)
    {
        final boolean notConnect = decoder.packetType() != PacketType.CONNECT;
        if (!notConnect && length != DecodeError.PACKET_TOO_LARGE)
        {
            return false;
        }
        counters.increment(BrokerCounters.PRE_CONNECT_REFUSED);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + (notConnect ?
            "first packet is not CONNECT [MQTT-3.1.0-1]" : "CONNECT over --max-connect-size"));
        closer.close(connection, IngressEvent.CONNECTION_LOST);
        return true;
    }

    private void pause(final Connection connection)
    {
        // ingress ring full: keep the bytes and stop reading this socket (and being woken for it)
        if (!connection.paused)
        {
            connection.paused = true;
            connection.updateInterest();
            counters.increment(ingress.takeLogFull() ? BrokerCounters.MESSAGE_LOG_FULL : BrokerCounters.INGRESS_RING_FULL);
        }
        paused.add(connection);
    }

    /**
     * @return false when the packet could not be handed on now (the ingress ring is full).
     */
    private boolean onPacket(final Connection connection, final int length)
    {
        final int type = decoder.packetType();
        if (!connection.connectSeen)
        {
            // refuseFirstPacket let only a CONNECT through
            if (!ingress.packet(connection.id, decoder.connect().protocolLevel(), connection.loopback, type,
                inView, length))
            {
                return false;
            }
            packetsIn++;
            connection.connectSeen = true;
            connection.version = decoder.connect().protocolLevel();
            connection.keepAliveSeconds = decoder.connect().keepAlive();
            timers.onConnected(connection);
            return true;
        }
        switch (type)
        {
            case PacketType.PINGREQ:
                packetsIn++;
                writer.sendPingResponse(connection); // [MQTT-3.12.4-1]
                return true;
            case PacketType.DISCONNECT:
                packetsIn++;
                closer.close(connection, IngressEvent.DISCONNECTED);
                return true;
            case PacketType.PUBLISH:
                if (!topicWithinLimits(connection))
                {
                    return true;
                }
                if (!ingress.packet(connection.id, connection.version, connection.loopback, type, inView, length))
                {
                    return false;
                }
                packetsIn++;
                publishIn++;
                return true;
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
                if (!ingress.packet(connection.id, connection.version, connection.loopback, type, inView, length))
                {
                    return false;
                }
                packetsIn++;
                return true;
            case PacketType.CONNECT:
                protocolViolation(connection, "second CONNECT [MQTT-3.1.0-2]");
                return true;
            default:
                protocolViolation(connection, PacketType.name(type) + " is not sent by clients");
                return true;
        }
    }

    /**
     * {@code --max-topic-length} and {@code --max-topic-levels} on a decoded PUBLISH; over either closes the
     * connection, counted apart from other protocol errors.
     *
     * @return false when the connection was closed for it.
     */
    private boolean topicWithinLimits(final Connection connection)
    {
        final Slice topic = decoder.publish().topic();
        final int topicLength = topic.length();
        if (topicLength > context.maxTopicLength())
        {
            counters.increment(BrokerCounters.TOPIC_TOO_LONG);
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return false;
        }
        if (topicLength >= context.maxTopicLevels() && levels(topic.buffer(), topic.offset(), topicLength) >
            context.maxTopicLevels())
        {
            counters.increment(BrokerCounters.TOPIC_TOO_MANY_LEVELS);
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return false;
        }
        return true;
    }

    /**
     * @return the levels of a topic name: one more than its separators.
     */
    static int levels(final DirectBuffer buffer, final int offset, final int length)
    {
        int levels = 1;
        for (int i = offset, end = offset + length; i < end; i++)
        {
            if (buffer.getByte(i) == '/')
            {
                levels++;
            }
        }
        return levels;
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
            writer.sendConstant(connection, CONNACK_UNACCEPTABLE_VERSION);
            connection.connack = Connection.CONNACK_REFUSED;
            connection.in.skipBytes(connection.in.readableBytes());
            connection.updateInterest();
            writer.closeAfterFlush(connection);
            counters.increment(BrokerCounters.PROTOCOL_ERRORS);
            return;
        }
        protocolViolation(connection, DecodeError.describe(error));
    }

    private void protocolViolation(final Connection connection, final String why)
    {
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + why);
        closer.close(connection, IngressEvent.CONNECTION_LOST);
    }
}
