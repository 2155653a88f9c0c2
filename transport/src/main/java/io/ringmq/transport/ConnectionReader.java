package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.DisconnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

/**
 * The reading role of an I/O agent: reads a connection's bytes through its {@link SocketLayer}, frames and
 * decodes each packet once, judges what the edge judges (the first packet, the packet size, the topic limits,
 * keep-alive) and hands the rest to the pipeline through the {@link IngressProxy}.
 * <p>
 * Memory follows the bytes that arrived, never the length a header claims: the inbound buffer grows only as
 * bytes are read, and before CONNECT the first packet must be a CONNECT of at most {@code --max-connect-size},
 * judged as soon as its remaining length is known.
 */
final class ConnectionReader implements PausedConnections.Retry
{
    /**
     * Largest single read, and the scratch buffer's size; a partial packet's buffer grows toward it. 64 KiB: with a
     * client streaming 1 KiB PUBLISHes a read took 15 KiB of 16 and 52 KiB of 64 (docs/perf/2026-11-30-ingest-1k.md).
     */
    private static final int MAX_READ = 64 * 1024;
    private static final int MIN_READ = 1024;
    /**
     * A partial packet up to this long is carried into the scratch buffer and read behind there, so the read has room
     * for at least {@code MAX_READ - CARRY_LENGTH} bytes: with packets of a KiB nearly every read ends mid-packet, and
     * reading behind the partial in its own small buffer took one packet per read system call. A longer partial
     * packet grows its own buffer instead, toward the length that arrives.
     */
    private static final int CARRY_LENGTH = 4 * 1024;
    /** Reads of a layer's buffered input in one go before the connection waits for the next duty cycle. */
    private static final int MAX_LAYER_ROUNDS = 4;
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");
    private static final byte[] CONNACK_UNACCEPTABLE_VERSION = {0x20, 0x02, 0x00, 0x01};
    private static final byte[] CONNACK_IDENTIFIER_REJECTED = {0x20, 0x02, 0x00, 0x02};

    /** The limits in force; a reload replaces them on this agent's thread ({@link #limits}). */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final IngressProxy ingress;
    private final ConnectionTimers timers;
    private final ConnectionWriter writer;
    private final PausedConnections paused;
    private final ConnectionWriter.Closer closer;
    private final PacketDecoder decoder = new PacketDecoder();
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer runView = new UnsafeBuffer(0, 0);
    /** The acknowledgements read back to back since the last packet handed on: one slot for them all. */
    private final AckRun acks;
    /** Where a connection with no partial packet is read into: one per agent, so idle connections hold none. */
    private final ByteBuf scratch = Buffers.allocate(MAX_READ);
    /**
     * The connection whose partial packet the scratch buffer carries, during one read, and its own buffer, emptied:
     * {@link #keepRest} gives it back to the connection, with the rest in it, so carrying takes nothing from the
     * pool (netty's recycler would allocate a buffer object for most takes) and the connection keeps what it held.
     */
    private Connection carriedFor;
    private ByteBuf carriedFrom;
    private final IdleBuffers idle;
    private final InboundPublishes publishes;
    /** The longest certificate name taken as a user name (X.509 allows 64 characters in a CN). */
    private static final int MAX_IDENTITY_LENGTH = 1024;
    private final ConnectIdentity identities = new ConnectIdentity();
    private int maxConnectLength;
    /** Where CONNECT passwords are verified; null: the auth stage decides them itself (stage tests). */
    private final CredentialWorkers credentials;
    private final int agentIndex;
    private long nowMs;
    private java.util.ArrayList<Connection> again = new java.util.ArrayList<>();
    private java.util.ArrayList<Connection> spare = new java.util.ArrayList<>();
    // per-message counts, added to the shared counters by the agent once per duty cycle
    long packetsIn;
    long publishIn;
    long bytesIn;

    ConnectionReader(final BrokerContext context, final BrokerCounters counters, final IngressProxy ingress,
        final ConnectionTimers timers, final ConnectionWriter writer, final PausedConnections paused,
        final ConnectionWriter.Closer closer, final CredentialWorkers credentials, final int agentIndex,
        final IdleBuffers idle)
    {
        this.idle = idle;
        this.credentials = credentials;
        this.agentIndex = agentIndex;
        this.context = context;
        this.counters = counters;
        this.ingress = ingress;
        this.timers = timers;
        this.writer = writer;
        this.paused = paused;
        this.closer = closer;
        this.maxConnectLength = Math.min(context.maxConnectSize(), context.maxPacketSize());
        this.publishes = new InboundPublishes(context, counters, ingress, closer);
        this.acks = new AckRun(ingress.inlineCapacity());
    }

    /**
     * Takes reloaded limits (this agent's thread): every packet from now on is judged by the new maximum packet
     * size, topic limits and keep-alive cap, on connections old and new alike.
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
        this.maxConnectLength = Math.min(next.maxConnectSize(), next.maxPacketSize());
        publishes.limits(next);
    }

    /**
     * The duty cycle's clock, read once per cycle.
     */
    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
    }

    /**
     * Reads what the socket has and processes every complete packet. A layer that took more from the socket than
     * it could hand on (TLS) is read again, a few times here and then once per duty cycle
     * ({@link #readAgain()}), so nothing waits for a socket that has no more to say; what a layer has to write
     * on its own (a handshake step, a pong) is flushed.
     *
     * @return 1 when the socket was read.
     */
    int read(final Connection connection)
    {
        if (!connection.readable())
        {
            return 0;
        }
        final SocketLayer layer = connection.layer;
        int rounds = 0;
        do
        {
            int read;
            try
            {
                read = layer.read(readBuffer(connection));
                bytesIn += Math.max(0, read);
            }
            catch (final IOException ex)
            {
                read = -1;
            }
            catch (final RuntimeException ex)
            {
                keepRest(connection); // a layer that throws never leaves the scratch buffer lent to its connection
                throw ex;
            }
            if (read < 0)
            {
                closer.close(connection, IngressEvent.CONNECTION_LOST);
                return 1;
            }
            if (read == 0)
            {
                keepRest(connection); // gives the scratch buffer back
            }
            else
            {
                if (!connection.addressSettled && !settleAddress(connection))
                {
                    return 1;
                }
                processInbound(connection); // also gives back what it no longer needs, the scratch buffer included
            }
        }
        while (layer.hasBufferedInput() && ++rounds < MAX_LAYER_ROUNDS && connection.readable());
        if (!connection.closed)
        {
            if (layer.holdsIdleBuffers())
            {
                // what the layer wrote of its own (a WebSocket pong, the 101) took its buffer: the sweep gives it
                // back once the connection is idle, as it does the connection's own
                idle.use(connection);
            }
            if (layer.hasPendingOutput())
            {
                writer.flush(connection);
            }
            if (layer.hasBufferedInput() && !connection.readAgain && !connection.closed)
            {
                connection.readAgain = true;
                again.add(connection);
            }
        }
        return 1;
    }

    /**
     * @return where the next read goes: into the agent's scratch buffer, lent to the connection until
     * {@link #processInbound} has taken what it can from it, behind the connection's partial packet when one of at
     * most {@link #CARRY_LENGTH} waits (carried over from its own buffer, {@link #carriedFrom}); behind a
     * longer partial packet in its own buffer, which grows toward {@link #MAX_READ} only as the socket has that much.
     */
    private ByteBuf readBuffer(final Connection connection)
    {
        final ByteBuf in = connection.in;
        if (null == in || in.readableBytes() <= CARRY_LENGTH || connection.hashing)
        {
            scratch.clear();
            if (connection.hashing || connection.connack != Connection.CONNACK_ACCEPTED)
            {
                // not admitted yet (its CONNECT hashed, in the pipeline or still to come, as when it arrives with a
                // burst behind it): a read takes at most what a hashing connection may hold, whatever the socket has
                final int start = MAX_READ - Connection.HASHING_BUFFER_LIMIT - (null == in ? 0 : in.readableBytes());
                scratch.setIndex(start, start);
            }
            if (null != in)
            {
                idle.use(connection);
                scratch.writeBytes(in, in.readerIndex(), in.readableBytes()); // what remains is kept in order
                carriedFor = connection;
                carriedFrom = in.clear();
            }
            connection.in = scratch;
            return scratch;
        }
        idle.use(connection);
        // room for what is likely there, never for what a header claims: memory follows arrived bytes
        in.ensureWritable(Math.min(MAX_READ, Math.max(MIN_READ, in.writableBytes())));
        return in;
    }

    /**
     * After processing: bytes left over (a partial packet, or packets held while the connection waits) move from
     * the scratch buffer into a pooled buffer of their own; an emptied one of its own stays for the next read until
     * {@link IdleBuffers} finds it unused. An idle connection holds none.
     */
    private void keepRest(final Connection connection)
    {
        final ByteBuf in = connection.in;
        final ByteBuf carried = takeCarried(connection);
        if (null == in)
        {
            if (null != carried)
            {
                carried.release(); // never left behind, whatever took the connection's buffer
            }
            return;
        }
        if (!in.isReadable())
        {
            final ByteBuf own = in != scratch ? in : carried; // the scratch buffer never stays with a connection
            connection.in = null == own ? null : IdleBuffers.emptied(own);
        }
        else if (in == scratch)
        {
            final int rest = in.readableBytes();
            final ByteBuf own = null != carried ? carried : Buffers.allocate(Math.max(Buffers.INITIAL_CAPACITY, rest));
            own.writeBytes(in, rest); // grows a carried buffer when the rest is longer than it was
            connection.in = own;
            idle.use(connection);
        }
        else
        {
            in.discardReadBytes(); // keep a partial packet at the front; its buffer grows only as it arrives
        }
    }

    /**
     * @return the connection's own buffer while the scratch buffer carries its partial packet (no longer noted as
     * carried), or null.
     */
    private ByteBuf takeCarried(final Connection connection)
    {
        if (carriedFor != connection)
        {
            return null;
        }
        final ByteBuf carried = carriedFrom;
        carriedFor = null;
        carriedFrom = null;
        return carried;
    }

    /**
     * Gives back a closed connection's inbound buffer, once, and its own buffer when the scratch buffer it is
     * borrowing carries its partial packet; never the scratch buffer.
     */
    void release(final Connection connection)
    {
        publishes.release(connection);
        ingress.flush(); // its PUBLISHes read in this batch are copied before their bytes go back to the pool
        final ByteBuf in = connection.in;
        final ByteBuf carried = takeCarried(connection);
        connection.in = null;
        if (null != in && in != scratch)
        {
            in.release();
        }
        if (null != carried)
        {
            carried.release();
        }
    }

    /**
     * Gives back the scratch buffer: the agent is closing.
     */
    void close()
    {
        if (scratch.refCnt() > 0)
        {
            scratch.release();
        }
    }

    /**
     * Behind a PROXY-protocol listener, the first MQTT bytes come after the header: the client it names is who the
     * loopback rule and the per-address limit apply to, not the proxy.
     *
     * @return false when the connection was closed (its address holds its limit).
     */
    private boolean settleAddress(final Connection connection)
    {
        connection.addressSettled = true;
        final java.net.InetSocketAddress client = connection.layer.proxiedAddress();
        if (null == client)
        {
            return true; // LOCAL or UNKNOWN: the proxy speaks for itself, as its own peer
        }
        connection.loopback = null != client.getAddress() && client.getAddress().isLoopbackAddress();
        if (null != client.getAddress() && !connection.accepted.acquireProxied(client.getAddress()))
        {
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS);
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return false;
        }
        return true;
    }

    /**
     * @return whether a connection waits to be read again and may be read now.
     */
    boolean hasReadableAgain()
    {
        for (int i = 0, size = again.size(); i < size; i++)
        {
            if (again.get(i).readable())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * Reads again every connection whose layer holds input, once it may be read; once per duty cycle.
     *
     * @return connections read.
     */
    int readAgain()
    {
        final int count = again.size();
        if (0 == count)
        {
            return 0;
        }
        final java.util.ArrayList<Connection> now = again;
        again = spare;
        spare = now;
        int work = 0;
        for (int i = 0; i < count; i++)
        {
            final Connection connection = now.get(i);
            connection.readAgain = false;
            if (connection.closed)
            {
                continue;
            }
            if (connection.readable())
            {
                work += read(connection);
            }
            else if (connection.layer.hasBufferedInput())
            {
                connection.readAgain = true; // paused: waits here, not on a socket that may stay quiet
                again.add(connection);
            }
        }
        now.clear();
        return work;
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
            keepRest(connection); // even after an unexpected error: the scratch buffer is never left lent (closed: null)
        }
    }

    private int frame(final Connection connection, final ByteBuf in)
    {
        int handed = 0;
        // closed first: a closed connection's buffer has gone back to the pool
        while (!connection.closed && !connection.closing && in.isReadable())
        {
            if (connection.connack == Connection.CONNACK_REFUSED)
            {
                in.skipBytes(in.readableBytes()); // nothing after a refused CONNECT is processed [MQTT-3.1.4-5]
                break;
            }
            if (connection.connectSeen && connection.connack == Connection.CONNACK_PENDING && !isAuth(connection, in))
            {
                // hold it until the CONNACK is written: it is the first packet the server sends [MQTT-3.2.0-1];
                // only AUTH goes on, as enhanced authentication exchanges it before the CONNACK (4.12)
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
                acks.add(in.readerIndex(), decoder.packetType(), length);
                connection.lastPacketMs = nowMs; // a complete packet: only that resets keep-alive [MQTT-3.1.2-24]
                in.skipBytes(length); // handed on with its run
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
            in.skipBytes(length);
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

    /**
     * @return whether the next buffered packet is an MQTT 5.0 AUTH, judged from its first byte.
     */
    private static boolean isAuth(final Connection connection, final ByteBuf in)
    {
        return connection.version == MqttVersion.V5 && (in.getByte(in.readerIndex()) & 0xF0) == PacketType.AUTH << 4;
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
            return onConnect(connection, length); // refuseFirstPacket let only a CONNECT through
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
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
                if (!ingress.packet(connection.id, connection.version, connection.loopback, type, inView, length))
                {
                    return false;
                }
                packetsIn++;
                return true;
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
     * The first packet, a CONNECT: handed to the pipeline, which answers it, unless the edge refuses it itself.
     *
     * @return false when it could not be handed on now.
     */
    private boolean onConnect(final Connection connection, final int length)
    {
        final ConnectFlyweight connect = decoder.connect();
        final int version = connect.protocolLevel();
        final int keepAlive = connect.keepAlive();
        if (version != MqttVersion.V5 && context.maxKeepAliveSeconds() < 65_535 &&
            (keepAlive == 0 || keepAlive > context.maxKeepAliveSeconds()))
        {
            // 3.1.1 cannot announce a server keep-alive: refused as Mosquitto refuses it (identifier rejected)
            refuseConnect(connection, CONNACK_IDENTIFIER_REJECTED, "keep-alive " + keepAlive + " over --max-keepalive");
            return true;
        }
        DirectBuffer packet = inView;
        int packetLength = length;
        if (null != connection.accepted.listener && connection.accepted.listener.layers.useIdentityAsUsername())
        {
            // the certificate is the credential: its CN is the user name, no password is asked or checked
            final String identity = connection.layer.peerIdentity();
            if (null == identity || identity.length() > MAX_IDENTITY_LENGTH || CredentialRequest.asksMethod(connect))
            {
                // no name to be, or an enhanced authentication that would prove another user than the certificate
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
            }
            else
            {
                packetLength = identities.rewrite(inView, 0, length, connect, identity);
                packet = identities.buffer();
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_CONNECTION_ACCEPTED);
            }
        }
        else if (!connect.hasUserName() && null != connection.accepted.listener &&
            null != connection.accepted.listener.settings.anonymous() && !CredentialRequest.asksMethod(connect))
        {
            // per_listener_settings: this listener's allow_anonymous, decided here as a verdict the auth stage takes
            final Authenticator.AnonymousPolicy anonymous = connection.accepted.listener.settings.anonymous();
            final boolean allowed = anonymous == Authenticator.AnonymousPolicy.ALL ||
                (anonymous == Authenticator.AnonymousPolicy.LOOPBACK && connection.loopback);
            connection.credentialVerdict = Authenticator.verdictOf(allowed ? ReasonCode.V3_CONNECTION_ACCEPTED :
                ReasonCode.V3_NOT_AUTHORIZED);
        }
        else if (null != credentials && CredentialRequest.asksMethod(connect))
        {
            connection.exchange = true; // a refusal counts toward the address's back-off (ConnectionWriter)
            if (credentials.isBackingOff(remoteAddress(connection), connection.loopback))
            {
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_NOT_AUTHORIZED);
            }
        }
        else if (null != credentials && connection.credentialVerdict == CredentialRequest.NO_VERDICT &&
            CredentialRequest.needsWorker(connect))
        {
            askVerdict(connection, connect);
            if (connection.hashing)
            {
                return false;
            }
        }
        if (!ingress.packet(connection.id, version, connection.loopback, PacketType.CONNECT, packet, packetLength,
            connection.credentialVerdict))
        {
            return false;
        }
        packetsIn++;
        connection.connectSeen = true;
        connection.version = version;
        // on 5.0 the CONNACK announces the same as Server Keep Alive when it differs [MQTT-3.2.2-21]
        connection.keepAliveSeconds = context.keepAliveFor(keepAlive);
        connection.sessionExpiryInterval = connect.properties().longValue(PropertyId.SESSION_EXPIRY_INTERVAL, 0);
        connection.maxPacketSize = (int)Math.min(Integer.MAX_VALUE,
            connect.properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE));
        timers.onConnected(connection);
        return true;
    }

    /**
     * Hands a CONNECT's user name and a copy of its password to the credential workers; the CONNECT stays in the
     * inbound buffer and the connection unread until the verdict comes back ({@link #onVerdict}). A full queue is
     * a refusal at once: the CONNECT goes on with a server-unavailable verdict.
     */
    private void askVerdict(final Connection connection, final ConnectFlyweight connect)
    {
        if (connection.hashing)
        {
            return;
        }
        final CredentialRequest request = new CredentialRequest(agentIndex, connection.id,
            connect.userName().asString(), connect.password().toByteArray(), remoteAddress(connection),
            connection.loopback);
        connection.hashing = true; // before submit: an inline verdict (invoker mode) arrives through the queue
        connection.updateInterest();
        if (!credentials.submit(request))
        {
            request.wipe();
            connection.hashing = false;
            connection.updateInterest();
            connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_SERVER_UNAVAILABLE);
        }
    }

    /**
     * A credential verdict for a connection of this agent: its CONNECT goes on to the pipeline with it.
     */
    void onVerdict(final Connection connection, final long verdict)
    {
        connection.hashing = false;
        connection.credentialVerdict = verdict;
        connection.updateInterest();
        processInbound(connection);
    }

    /**
     * @return the client's address for the back-off: the PROXY protocol's when a proxy named it, else the socket's.
     */
    static InetAddress remoteAddress(final Connection connection)
    {
        final InetSocketAddress proxied = connection.layer.proxiedAddress();
        if (null != proxied)
        {
            return proxied.getAddress();
        }
        try
        {
            final java.net.SocketAddress remote = connection.accepted.channel.getRemoteAddress();
            return remote instanceof InetSocketAddress ? ((InetSocketAddress)remote).getAddress() : null;
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /**
     * Answers a CONNECT with a refusing 3.1.1-format CONNACK and closes once it is written; the pipeline never
     * sees the connection.
     */
    private void refuseConnect(final Connection connection, final byte[] connack, final String why)
    {
        writer.sendConstant(connection, connack);
        connection.connack = Connection.CONNACK_REFUSED;
        connection.updateInterest();
        writer.closeAfterFlush(connection);
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " refused: " + why);
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
            refuseConnect(connection, CONNACK_UNACCEPTABLE_VERSION, DecodeError.describe(error));
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
