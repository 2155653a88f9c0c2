package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.DisconnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The framing half of an I/O agent's reading role, on the agent's thread: frames and decodes each packet a
 * connection has buffered once, judges what the edge judges on it (the packet size as soon as the remaining length
 * is known, keep-alive, what a client may send when) and hands it to the pipeline through the {@link IngressProxy}:
 * a run of acknowledgements in one slot ({@link AckRun}), a PUBLISH through {@link InboundPublishes}, the first
 * packet through {@link InboundConnects}. A full ingress ring pauses the connection with its packets kept
 * buffered ({@link PausedConnections}); it retries them.
 * <p>
 * It owns the decoder, the views over the buffered bytes and the run; the buffers themselves are the
 * {@link InboundBuffers}', given back to them after every batch.
 */
final class PacketFramer implements PausedConnections.Retry
{
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");

    /** The limits in force; a reload replaces them on this agent's thread ({@link #limits}). */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final IngressProxy ingress;
    private final ConnectionWriter writer;
    private final PausedConnections paused;
    private final ConnectionWriter.Closer closer;
    private final InboundBuffers buffers;
    private final PacketDecoder decoder = new PacketDecoder();
    /** Puts the topics of a mounted listener's clients under its mount point; this agent's. */
    private final MountPoints mountPoints = new MountPoints();
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer runView = new UnsafeBuffer(0, 0);
    /** The acknowledgements read back to back since the last packet handed on: one slot for them all. */
    private final AckRun acks;
    private final InboundPublishes publishes;
    private final InboundConnects connects;
    private int maxConnectLength;
    private long nowMs;
    // per-message counts, added to the shared counters by the agent once per duty cycle
    long packetsIn;
    long publishIn;

    PacketFramer(final BrokerContext context, final BrokerCounters counters, final IngressProxy ingress,
        final ConnectionTimers timers, final ConnectionWriter writer, final PausedConnections paused,
        final ConnectionWriter.Closer closer, final CredentialWorkers credentials, final int agentIndex,
        final InboundBuffers buffers)
    {
        this.context = context;
        this.counters = counters;
        this.ingress = ingress;
        this.writer = writer;
        this.paused = paused;
        this.closer = closer;
        this.buffers = buffers;
        this.maxConnectLength = Math.min(context.maxConnectSize(), context.limits().maxPacketSize());
        this.publishes = new InboundPublishes(context, counters, ingress, closer, mountPoints);
        this.connects = new InboundConnects(context, counters, ingress, timers, writer, closer, credentials,
            agentIndex, mountPoints);
        this.acks = new AckRun(ingress.inlineCapacity());
    }

    /**
     * Takes reloaded limits (this agent's thread): every packet from now on is judged by the new maximum packet
     * size, topic limits and keep-alive cap, on connections old and new alike.
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
        this.maxConnectLength = Math.min(next.maxConnectSize(), next.limits().maxPacketSize());
        publishes.limits(next);
        connects.limits(next);
    }

    /**
     * The duty cycle's clock, read once per cycle.
     */
    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
    }

    /**
     * A connection is closing: what its PUBLISHes hold is given back.
     */
    void release(final Connection connection)
    {
        publishes.release(connection);
        ingress.flush(); // its PUBLISHes read in this batch are copied before their bytes go back to the pool
    }

    /**
     * A paused connection's turn: {@link #processInbound}.
     */
    @Override
    public int retry(final Connection connection)
    {
        return processInbound(connection);
    }

    @Override
    public boolean hasRoom()
    {
        return ingress.hasRoom();
    }

    /**
     * Frames, validates and hands on every complete packet buffered for the connection, until one must wait.
     *
     * @return packets handed on.
     */
    int processInbound(final Connection connection)
    {
        final ByteBuf in = connection.in;
        if (null == in)
        {
            return 0;
        }
        ingress.beginBatch(); // the packets' bytes stay where they were read until endBatch has copied them
        try
        {
            return frame(connection, in);
        }
        finally
        {
            acks.clear(); // handed on or read again: never carried to the next connection, even after an error
            ingress.endBatch();
            // even after an unexpected error: the scratch buffer is never left lent (closed: null)
            try
            {
                if (!buffers.keepRest(connection))
                {
                    closer.pastUnadmittedShare(connection); // a partial CONNECT past what unadmitted ones share
                }
            }
            catch (final OutOfMemoryError ex)
            {
                closer.outOfBufferMemory(connection); // no buffer of its own for its partial packet: it ends
            }
        }
    }

    private int frame(final Connection connection, final ByteBuf in)
    {
        if (connection.hashing)
        {
            // its CONNECT waits for the credential workers' verdict, which frames it again: what is read behind it
            // meanwhile (bytes at a time, up to the hashing buffer's limit) is only kept, never decoded again; past
            // that limit it is not read (nor is its socket watched) until the verdict
            connection.updateInterest();
            return 0;
        }
        int handed = 0;
        // the buffer's address, read once: nothing framed here moves it (only a read into it or keepRest may, after);
        // per packet, netty's checks on every call (the buffer's reference count, again and again) cost about 5 % of
        // the broker's CPU at QoS 0 ingest
        final long address = in.hasMemoryAddress() ? in.memoryAddress() : 0;
        // closed first: a closed connection's buffer has gone back to the pool
        while (!connection.closed && !connection.closing)
        {
            // the address above is only good while the buffer is this connection's: netty's per-call check, once
            // made on every packet, is asserted here instead (a release inside this loop would be a reuse)
            assert in.refCnt() > 0 : connection + ": its buffer was released while its packets were framed";
            final int reader = in.readerIndex();
            final int available = in.writerIndex() - reader;
            if (available <= 0)
            {
                break;
            }
            if (connection.connack == Connection.CONNACK_REFUSED)
            {
                in.readerIndex(in.writerIndex()); // nothing after a refused CONNECT is processed [MQTT-3.1.4-5]
                break;
            }
            if (connection.connectSeen && connection.connack == Connection.CONNACK_PENDING &&
                !isAuth(connection, in, reader))
            {
                // hold it until the CONNACK is written: it is the first packet the server sends [MQTT-3.2.0-1];
                // only AUTH goes on, as enhanced authentication exchanges it before the CONNACK (4.12)
                connection.awaitingConnack = true;
                connection.updateInterest();
                break;
            }
            if (0 != address)
            {
                inView.wrap(address + reader, available);
            }
            else
            {
                Buffers.view(inView, in, reader, available);
            }
            final int version = connection.connectSeen ? connection.version : MqttVersion.V5;
            // until it is admitted a client's packets (its CONNECT, then the AUTHs of an enhanced authentication) are
            // held to --max-connect-size: a partial AUTH claiming --max-packet-size would hold that much buffered
            // for a client no one has authenticated yet
            final int maxLength = connection.connack == Connection.CONNACK_ACCEPTED ? context.limits().maxPacketSize() :
                maxConnectLength;
            final int length = decoder.decode(inView, 0, available, version, maxLength);
            if (!connection.connectSeen && connects.refuseFirstPacket(connection, decoder.packetType(), length))
            {
                return handed;
            }
            if (length == DecodeError.NEED_MORE)
            {
                break;
            }
            if (!canJoinRun(connection, length))
            {
                // the run goes on before this packet: a packet of another kind, or an acknowledgement of another
                // type or past the run's room, which then starts the next run
                final int run = handRun(connection, in);
                if (run < 0)
                {
                    return handed; // the ring is full: the run and what follows it wait, kept buffered
                }
                handed += run;
            }
            if (canJoinRun(connection, length))
            {
                acks.add(reader, decoder.packetType(), length);
                connection.lastPacketMs = nowMs; // a complete packet: only that resets keep-alive [MQTT-3.1.2-24]
                in.readerIndex(reader + length); // handed on with its run
                continue;
            }
            if (length < 0)
            {
                onBadPacket(connection, length);
                return handed;
            }
            connection.lastPacketMs = nowMs; // a complete packet: only that resets keep-alive [MQTT-3.1.2-24]
            if (!onPacket(connection, length))
            {
                if (connection.hashing)
                {
                    connection.updateInterest(); // read on only while a little is buffered behind the CONNECT
                }
                else
                {
                    pause(connection);
                }
                return handed; // ring full, or the CONNECT waits for its credential verdict, kept buffered
            }
            handed++;
            if (connection.closed || connection.closing)
            {
                return handed; // DISCONNECT or a protocol violation: nothing more of it is read
            }
            resume(connection);
            in.readerIndex(reader + length);
        }
        if (!connection.closed)
        {
            handed += Math.max(0, handRun(connection, in)); // closed: its acknowledgements no longer matter
        }
        return handed;
    }

    /**
     * @return whether the complete packet just framed may join the run of acknowledgements (start it, when none).
     */
    private boolean canJoinRun(final Connection connection, final int length)
    {
        return length > 0 && connection.connectSeen && acks.fits(decoder.packetType(), length);
    }

    /**
     * Hands on the run of acknowledgements read so far, if any, in one slot. When the ring is full, the connection
     * is paused with its buffer back at the run's start, so the run is read again, and what follows it after it.
     *
     * @return the acknowledgements handed on, -1 when the ring is full.
     */
    private int handRun(final Connection connection, final ByteBuf in)
    {
        final int count = acks.count();
        if (count == 0)
        {
            return 0;
        }
        Buffers.view(runView, in, acks.start(), acks.length());
        if (!ingress.packet(connection.id, connection.version, connection.loopback, acks.packetType(), runView,
            acks.length()))
        {
            in.readerIndex(acks.start());
            acks.clear();
            pause(connection);
            return -1;
        }
        acks.clear();
        packetsIn += count;
        resume(connection);
        return count;
    }

    /**
     * A packet went on: a connection paused on a full ring is read again.
     */
    private static void resume(final Connection connection)
    {
        if (connection.paused)
        {
            connection.paused = false;
            connection.updateInterest();
        }
    }

    /**
     * @return whether the next buffered packet is an MQTT 5.0 AUTH, judged from its first byte.
     */
    private static boolean isAuth(final Connection connection, final ByteBuf in, final int index)
    {
        return connection.version == MqttVersion.V5 && (in.getByte(index) & 0xF0) == PacketType.AUTH << 4;
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
     * A SUBSCRIBE or UNSUBSCRIBE, its filters under the listener's mount point when it has one.
     *
     * @return false when it could not be handed on now.
     */
    private boolean onFilters(final Connection connection, final int type, final int length)
    {
        DirectBuffer handed = inView;
        int handedLength = length;
        if (null != connection.mountPoint)
        {
            handedLength = mountPoints.filters(connection.mountPoint, inView, length, decoder.subscribe(),
                context.limits().maxPacketSize());
            if (handedLength == MountPoints.TOO_LONG)
            {
                counters.increment(BrokerCounters.PACKET_TOO_LARGE);
                protocolViolation(connection, PacketType.name(type) + " over the maximum packet size (or a filter " +
                    "over 65,535 bytes) with the listener's mount_point", ReasonCode.PACKET_TOO_LARGE);
                return true;
            }
            handed = mountPoints.packet();
        }
        if (!ingress.packet(connection.id, connection.version, connection.loopback, type, handed, handedLength,
            type == PacketType.SUBSCRIBE ? InboundConnects.limitedAddressKey(connection) : AddressKeys.NONE))
        {
            return false;
        }
        packetsIn++;
        return true;
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
            final boolean done = connects.onConnect(connection, decoder.connect(), inView, length);
            if (connection.connectSeen)
            {
                packetsIn++; // handed on: a CONNECT the edge refused itself is not counted
            }
            return done;
        }
        switch (type)
        {
            case PacketType.PINGREQ:
                packetsIn++;
                writer.sendPingResponse(connection); // [MQTT-3.12.4-1]
                return true;
            case PacketType.DISCONNECT:
                packetsIn++;
                onDisconnect(connection);
                return true;
            case PacketType.PUBLISH:
                if (!publishes.onPublish(connection, decoder.publish(), inView, length))
                {
                    return false;
                }
                if (!connection.closing && !connection.closed)
                {
                    packetsIn++;
                    publishIn++;
                }
                return true;
            case PacketType.AUTH:
                if (connection.version != MqttVersion.V5)
                {
                    protocolViolation(connection, "AUTH is not an MQTT 3.1.1 packet", ReasonCode.PROTOCOL_ERROR);
                    return true;
                }
                // an MQTT 5.0 AUTH goes to the pipeline like the acknowledgements (4.12)
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
                if (!ingress.packet(connection.id, connection.version, connection.loopback, type, inView, length))
                {
                    return false;
                }
                packetsIn++;
                return true;
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
                return onFilters(connection, type, length);
            case PacketType.CONNECT:
                protocolViolation(connection, "second CONNECT [MQTT-3.1.0-2]", ReasonCode.PROTOCOL_ERROR);
                return true;
            default:
                protocolViolation(connection, PacketType.name(type) + " is not sent by clients",
                    ReasonCode.PROTOCOL_ERROR);
                return true;
        }
    }

    /**
     * A client's DISCONNECT. On 5.0 its reason code (0x04: publish the will) and Session Expiry Interval go to the
     * pipeline with the end; an interval set where the CONNECT's was 0 makes it no valid DISCONNECT
     * [MQTT-3.14.2-2].
     */
    private void onDisconnect(final Connection connection)
    {
        if (connection.version == MqttVersion.V5)
        {
            final DisconnectFlyweight disconnect = decoder.disconnect();
            final long expiry = disconnect.properties().longValue(PropertyId.SESSION_EXPIRY_INTERVAL, IngressEvent.NONE);
            if (expiry > 0 && connection.sessionExpiryInterval == 0)
            {
                protocolViolation(connection, "DISCONNECT sets a session expiry the CONNECT had as 0 [MQTT-3.14.2-2]",
                    ReasonCode.PROTOCOL_ERROR);
                return;
            }
            connection.endReasonCode = disconnect.reasonCode();
            connection.endSessionExpiryInterval = expiry;
        }
        closer.close(connection, IngressEvent.DISCONNECTED);
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
            connects.refuseVersion(connection, DecodeError.describe(error));
            connection.in.skipBytes(connection.inBytes());
            return;
        }
        final int reasonCode = DecodeError.reasonCode(error); // 0x81 malformed, 0x82 protocol error, 0x95 too large
        protocolViolation(connection, DecodeError.describe(error),
            ReasonCode.isAllowed(PacketType.DISCONNECT, MqttVersion.V5, reasonCode) ? reasonCode :
                ReasonCode.PROTOCOL_ERROR);
    }

    private void protocolViolation(final Connection connection, final String why, final int reasonCode)
    {
        protocolViolation(counters, closer, connection, why, reasonCode);
    }

    /**
     * Ends a connection for breaking the protocol, counted: on 5.0 with a DISCONNECT of that reason code first.
     */
    static void protocolViolation(final BrokerCounters counters, final ConnectionWriter.Closer closer,
        final Connection connection, final String why, final int reasonCode)
    {
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + why);
        closer.disconnect(connection, reasonCode, why);
    }
}
