package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeEncoder;
import io.ringmq.protocol.SubscriptionOptions;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One bridge to a remote broker (Mosquitto's {@code connection}): two MQTT client connections, one to the remote
 * broker and one to this broker's bridge listener, and a {@link BridgeRelay} each way between them. The local
 * connection is a 5.0 client that subscribes with No Local and Retain As Published, so what the bridge brings in is
 * never sent back and retained messages stay retained; toward a 3.1.1 remote the bridge asks, as Mosquitto does,
 * to be treated as a bridge (protocol level 0x84, {@code try_private}), toward a 5.0 one it subscribes with No Local.
 * <p>
 * Its own thread connects both (the remote first), subscribes, publishes the state notification and reads the
 * remote; a second thread reads the local connection. When either fails, both are closed and the bridge tries
 * again after {@code restart_timeout}; QoS 1/2 messages in flight are sent again by the session that held them
 * (both sessions are persistent unless {@code cleansession true}). Bridges are few and off the broker's own
 * message path, so they use blocking sockets (and the JDK's {@code SSLSocket} for TLS) rather than an I/O agent.
 */
final class Bridge implements AutoCloseable
{
    private static final System.Logger LOG = System.getLogger(Bridge.class.getName());
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    private static final byte[] UP = {'1'};
    private static final byte[] DOWN = {'0'};
    /** Disconnect with Will Message: the local will publishes the state 0 [MQTT-3.14.2-1]. */
    private static final int DISCONNECT_WITH_WILL = 0x04;
    private static final long UPKEEP_NS = TimeUnit.MILLISECONDS.toNanos(BridgeLink.READ_TICK_MS);

    private final BridgeSettings settings;
    private final int localPort;
    private final String password;
    private final Set<Integer> ownPorts;
    private final int localMaxPacket;
    private final SSLSocketFactory tls;
    private final Thread thread;
    /** From this broker to the remote one, and back: their exchanges in flight outlive a connection. */
    private final BridgeRelay outward;
    private final BridgeRelay inward;
    private volatile boolean closed;
    private volatile BridgeLink remote;
    private volatile BridgeLink local;
    private volatile boolean connected;
    /** Cleared when a 3.1.1 remote refused the bridge's private protocol level; Mosquitto does the same. */
    private boolean tryPrivate;
    private int nextAddress;
    private long delayMs;
    private volatile long connections;
    private volatile String lastFailure;
    /** The remote socket being connected (and its TLS handshake), for {@link #close} to end. */
    private volatile Socket dialing;
    /** SUBACKs still to come in this session; the bridge is connected when none is. */
    private final java.util.concurrent.atomic.AtomicInteger subackOwed = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * @param localPort      the bridge listener's port.
     * @param ownPorts       the local ports the bridge listener admits: the bridges' own sockets.
     * @param password       what the bridge listener asks of a bridge's CONNECT (no user name with it).
     * @param localMaxPacket the broker's maximum packet size, the largest packet taken on either side.
     * @param tls            the remote's TLS, or null for plain TCP.
     */
    Bridge(final BridgeSettings settings, final int localPort, final Set<Integer> ownPorts, final String password,
        final int localMaxPacket, final SSLSocketFactory tls)
    {
        this.settings = settings;
        this.password = password;
        this.localPort = localPort;
        this.ownPorts = ownPorts;
        this.localMaxPacket = localMaxPacket;
        this.tls = tls;
        this.tryPrivate = settings.tryPrivate() && settings.protocolVersion() != MqttVersion.V5;
        this.delayMs = TimeUnit.SECONDS.toMillis(settings.restartBaseSeconds());
        this.outward = new BridgeRelay("bridge " + settings.name() + " out", settings.topics(), true,
            settings.outgoingRetain(), settings.receiveMaximum());
        this.inward = new BridgeRelay("bridge " + settings.name() + " in", settings.topics(), false, true,
            settings.receiveMaximum());
        this.thread = new Thread(this::run, "ringmq-bridge-" + settings.name());
        thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    /**
     * @return whether both connections are up and both brokers acknowledged the bridge's subscriptions.
     */
    boolean isConnected()
    {
        return connected;
    }

    /**
     * @return how many times both connections came up.
     */
    long connections()
    {
        return connections;
    }

    /**
     * @return why the last connection failed or ended, or null while none did.
     */
    String lastFailure()
    {
        return lastFailure;
    }

    String name()
    {
        return settings.name();
    }

    private void run()
    {
        while (!closed)
        {
            try
            {
                session();
            }
            catch (final IOException | RuntimeException ex)
            {
                lastFailure = String.valueOf(ex.getMessage());
                if (!closed)
                {
                    LOG.log(System.Logger.Level.WARNING, "bridge " + settings.name() + ": " + ex.getMessage() +
                        "; again in " + delayMs + " ms");
                }
            }
            finally
            {
                connected = false;
                closeLinks(false);
            }
            if (!closed)
            {
                pause();
            }
        }
    }

    private void pause()
    {
        try
        {
            Thread.sleep(delayMs);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return;
        }
        if (settings.restartJitter())
        {
            // "decorrelated jitter": between the base and three times the last delay, at most the cap
            final long base = TimeUnit.SECONDS.toMillis(settings.restartBaseSeconds());
            final long cap = TimeUnit.SECONDS.toMillis(settings.restartCapSeconds());
            delayMs = Math.min(cap, ThreadLocalRandom.current().nextLong(base, Math.max(base + 1, delayMs * 3)));
        }
    }

    private void session() throws IOException
    {
        final long[] remoteLimits = new long[3];
        final BridgeLink remoteLink = openRemote(remoteLimits);
        remote = remoteLink;
        if (closed)
        {
            return;
        }
        final long[] localLimits = new long[3];
        final BridgeLink localLink = openLocal(localLimits);
        local = localLink;
        if (closed)
        {
            return;
        }
        // what was in flight either way is settled by what each side kept of its session
        final boolean remoteKept = remoteLimits[2] != 0;
        final boolean localKept = localLimits[2] != 0;
        outward.attach(localLink, remoteLink, (int)Math.min(remoteLimits[0], settings.receiveMaximum()),
            remoteLimits[1], localKept, remoteKept);
        inward.attach(remoteLink, localLink, (int)localLimits[0], localLimits[1], remoteKept, localKept);
        subackOwed.set((outward.topics().isEmpty() ? 0 : 1) + (inward.topics().isEmpty() ? 0 : 1));
        subscribe(localLink, outward.topics(), true);
        subscribe(remoteLink, inward.topics(), false);
        if (settings.notifications())
        {
            notify(localLink, settings.notificationTopic(), UP);
            if (!settings.notificationsLocalOnly())
            {
                notify(remoteLink, settings.notificationTopic(), UP);
            }
        }
        localLink.flush();
        remoteLink.flush();
        if (subackOwed.get() == 0)
        {
            up();
        }
        delayMs = TimeUnit.SECONDS.toMillis(settings.restartBaseSeconds());
        LOG.log(System.Logger.Level.INFO, "bridge " + settings.name() + ": connected to " + remoteLink);
        final Thread localReader = new Thread(() -> readQuietly(localLink, outward, inward, remoteLink),
            "ringmq-bridge-" + settings.name() + "-local");
        localReader.setDaemon(true);
        localReader.start();
        try
        {
            read(remoteLink, inward, outward, localLink);
        }
        finally
        {
            connected = false;
            closeLinksBounded();
            try
            {
                localReader.join(TimeUnit.SECONDS.toMillis(5));
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void readQuietly(final BridgeLink link, final BridgeRelay fromLink, final BridgeRelay toLink,
        final BridgeLink other)
    {
        try
        {
            read(link, fromLink, toLink, other);
        }
        catch (final IOException | RuntimeException ex)
        {
            if (!closed && !link.isClosed())
            {
                LOG.log(System.Logger.Level.WARNING, "bridge " + settings.name() + ": " + ex.getMessage());
            }
        }
        finally
        {
            other.close(); // the remote's reader sees it and ends the session
        }
    }

    /**
     * Reads one link until it fails: its PUBLISHes go through {@code fromLink}, its acknowledgements of what
     * {@code toLink} sent end those exchanges; both links are flushed whenever what was read is used up.
     */
    private void read(final BridgeLink link, final BridgeRelay fromLink, final BridgeRelay toLink,
        final BridgeLink other) throws IOException
    {
        long upkeepNs = System.nanoTime();
        while (!closed && !link.isClosed())
        {
            final PacketDecoder packet = link.read();
            final long nowNs = System.nanoTime();
            if (null == packet || nowNs - upkeepNs > UPKEEP_NS)
            {
                upkeepNs = nowNs; // also while packets keep coming: a link that only receives still pings
                link.upkeep(nowNs);
                other.checkStall(nowNs); // its reader may be the one stuck in a write to it
            }
            if (null == packet)
            {
                other.flush();
                continue;
            }
            switch (packet.packetType())
            {
                case PacketType.PUBLISH:
                    fromLink.onPublish(packet.publish());
                    break;
                case PacketType.PUBACK:
                case PacketType.PUBREC:
                case PacketType.PUBCOMP:
                    toLink.onAck(packet.packetType(), packet.ack().packetId(), packet.ack().reasonCode());
                    break;
                case PacketType.PUBREL:
                    fromLink.onRelease(packet.ack().packetId()); // the target already holds it
                    break;
                case PacketType.SUBACK:
                    checkSuback(link, packet);
                    break;
                case PacketType.PINGRESP:
                case PacketType.UNSUBACK:
                    break;
                case PacketType.DISCONNECT:
                    throw new IOException(link + " disconnected the bridge (reason 0x" +
                        Integer.toHexString(packet.disconnect().reasonCode()) + ")");
                default:
                    throw new IOException(link + " sent a " + PacketType.name(packet.packetType()) + " to a client");
            }
            if (link.drained())
            {
                other.flush();
                link.flush();
            }
        }
    }

    /**
     * Both sides subscribed: the bridge is connected.
     */
    private void up()
    {
        connections++;
        connected = true;
    }

    private void checkSuback(final BridgeLink link, final PacketDecoder packet)
    {
        if (subackOwed.decrementAndGet() == 0)
        {
            up();
        }
        for (int i = 0; i < packet.suback().reasonCodeCount(); i++)
        {
            if (packet.suback().reasonCode(i) >= ReasonCode.UNSPECIFIED_ERROR)
            {
                LOG.log(System.Logger.Level.WARNING, "bridge " + settings.name() + ": " + link + " refused a " +
                    "subscription (0x" + Integer.toHexString(packet.suback().reasonCode(i)) + ")");
            }
        }
    }

    /**
     * Connects to the remote broker, trying each address once (from the first, or round robin from the one after
     * the last), and waits for its CONNACK.
     *
     * @param limits out: [0] its receive maximum, [1] its maximum packet size.
     */
    private BridgeLink openRemote(final long[] limits) throws IOException
    {
        final List<BridgeSettings.Address> addresses = settings.addresses();
        IOException failure = null;
        for (int attempt = 0; attempt < addresses.size() && !closed; attempt++)
        {
            final int index = (settings.roundRobin() ? nextAddress + attempt : attempt) % addresses.size();
            final BridgeSettings.Address address = addresses.get(index);
            try
            {
                final BridgeLink link = new BridgeLink("remote " + address, dial(address),
                    settings.protocolVersion(), settings.keepAliveSeconds(), remoteMaxPacket());
                remote = link;
                try
                {
                    connectRemote(link, limits);
                }
                catch (final IOException | RuntimeException ex)
                {
                    link.close();
                    throw ex;
                }
                nextAddress = settings.roundRobin() ? index + 1 : 0;
                return link;
            }
            catch (final IOException ex)
            {
                failure = ex;
            }
        }
        nextAddress++;
        throw null == failure ? new IOException("closed") : failure;
    }

    private int remoteMaxPacket()
    {
        return settings.maxPacketSize() > 0 ? (int)Math.min(settings.maxPacketSize(), localMaxPacket) :
            localMaxPacket;
    }

    private Socket dial(final BridgeSettings.Address address) throws IOException
    {
        final InetSocketAddress to = new InetSocketAddress(address.host, address.port);
        if (to.isUnresolved())
        {
            throw new IOException("cannot resolve " + address.host);
        }
        final Socket socket = null == tls ? new Socket() : tls.createSocket();
        dialing = socket; // close() closes it: a connect to an address that never answers ends at once
        try
        {
            if (closed)
            {
                throw new IOException("closed");
            }
            socket.connect(to, CONNECT_TIMEOUT_MS);
            if (socket instanceof SSLSocket)
            {
                final SSLSocket secure = (SSLSocket)socket;
                final SSLParameters parameters = secure.getSSLParameters();
                if (!settings.insecure())
                {
                    parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate names the host
                }
                parameters.setServerNames(List.of()); // set below when the host is a name
                if (!Character.isDigit(address.host.charAt(0)) && address.host.indexOf(':') < 0)
                {
                    parameters.setServerNames(List.of(new javax.net.ssl.SNIHostName(address.host)));
                }
                if (null != settings.tlsVersion())
                {
                    parameters.setProtocols(new String[]{settings.tlsVersion()});
                }
                secure.setSSLParameters(parameters);
                secure.setSoTimeout(CONNECT_TIMEOUT_MS);
                secure.startHandshake();
            }
            return socket;
        }
        catch (final IOException | RuntimeException ex)
        {
            socket.close();
            throw ex instanceof IOException ? (IOException)ex : new IOException(ex.getMessage(), ex);
        }
        finally
        {
            dialing = null;
        }
    }

    private void connectRemote(final BridgeLink link, final long[] limits) throws IOException
    {
        final boolean v5 = settings.protocolVersion() == MqttVersion.V5;
        final ConnectEncoder connect = new ConnectEncoder().reset()
            .version(v5 ? MqttVersion.V5 : tryPrivate ? 0x80 | MqttVersion.V3_1_1 : MqttVersion.V3_1_1)
            .cleanStart(settings.cleanSession()).keepAlive(settings.keepAliveSeconds());
        connect.clientId().wrap(settings.remoteClientId());
        if (null != settings.remoteUserName())
        {
            connect.userName().wrap(settings.remoteUserName());
            if (null != settings.remotePassword())
            {
                connect.password().wrap(settings.remotePassword());
            }
        }
        if (v5)
        {
            final long expiry = settings.sessionExpirySeconds() >= 0 ? settings.sessionExpirySeconds() :
                settings.cleanSession() ? 0 : 0xFFFF_FFFFL;
            final MqttProperties properties = new MqttProperties()
                .setInt(PropertyId.RECEIVE_MAXIMUM, settings.receiveMaximum())
                .setInt(PropertyId.MAXIMUM_PACKET_SIZE, remoteMaxPacket());
            if (expiry > 0)
            {
                properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, (int)expiry);
            }
            connect.properties(properties);
        }
        if (settings.notifications() && !settings.notificationsLocalOnly())
        {
            will(connect, v5);
        }
        link.send(connect);
        link.flush();
        final PacketDecoder connack = awaitConnack(link);
        final int code = connack.connack().reasonCode();
        if (code != 0)
        {
            if (!v5 && code == ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION && tryPrivate)
            {
                tryPrivate = false; // not a broker that knows bridges: plain 3.1.1 from the next attempt
            }
            throw new IOException(link + " refused the bridge's CONNECT (code 0x" + Integer.toHexString(code) + ")");
        }
        limits[2] = connack.connack().isSessionPresent() ? 1 : 0;
        limits[0] = v5 ? connack.connack().properties().intValue(PropertyId.RECEIVE_MAXIMUM, 65_535) :
            settings.receiveMaximum();
        limits[1] = v5 ? connack.connack().properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE,
            Integer.MAX_VALUE) : 268_435_460L;
        if (v5)
        {
            link.keepAliveSeconds(connack.connack().properties().intValue(PropertyId.SERVER_KEEP_ALIVE,
                settings.keepAliveSeconds()));
        }
    }

    /**
     * The state notification's will: 0, retained, when the connection ends without a DISCONNECT.
     */
    private void will(final ConnectEncoder connect, final boolean v5)
    {
        connect.will(1, true, v5 ? new MqttProperties() : null);
        connect.willTopic().wrap(settings.notificationTopic());
        connect.willPayload().wrap(DOWN);
    }

    /**
     * Connects to this broker's bridge listener as a 5.0 client, from a loopback port the listener admits.
     *
     * @param limits out: [0] the broker's receive maximum, [1] its maximum packet size.
     */
    private BridgeLink openLocal(final long[] limits) throws IOException
    {
        final Socket socket = new Socket();
        int port = -1;
        try
        {
            socket.bind(new InetSocketAddress("127.0.0.1", 0));
            port = socket.getLocalPort();
            ownPorts.add(port);
            socket.connect(new InetSocketAddress("127.0.0.1", localPort), CONNECT_TIMEOUT_MS);
        }
        catch (final IOException ex)
        {
            ownPorts.remove(port);
            socket.close();
            throw ex;
        }
        final BridgeLink link = new BridgeLink("local " + settings.localClientId(), socket, MqttVersion.V5,
            settings.keepAliveSeconds(), localMaxPacket);
        local = link;
        try
        {
            final ConnectEncoder connect = new ConnectEncoder().reset().version(MqttVersion.V5)
                .cleanStart(settings.localCleanSession()).keepAlive(settings.keepAliveSeconds());
            connect.clientId().wrap(settings.localClientId());
            connect.password().wrap(password); // 5.0 allows a password without a user name
            final MqttProperties properties = new MqttProperties()
                .setInt(PropertyId.RECEIVE_MAXIMUM, settings.receiveMaximum());
            if (!settings.localCleanSession())
            {
                properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, (int)0xFFFF_FFFFL);
            }
            connect.properties(properties);
            if (settings.notifications())
            {
                will(connect, true);
            }
            link.send(connect);
            link.flush();
            final PacketDecoder connack = awaitConnack(link);
            if (connack.connack().reasonCode() != 0)
            {
                throw new IOException("this broker refused the bridge's local connection (0x" +
                    Integer.toHexString(connack.connack().reasonCode()) + ")");
            }
            limits[0] = connack.connack().properties().intValue(PropertyId.RECEIVE_MAXIMUM, 65_535);
            limits[1] = connack.connack().properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE);
            limits[2] = connack.connack().isSessionPresent() ? 1 : 0;
            link.keepAliveSeconds(connack.connack().properties().intValue(PropertyId.SERVER_KEEP_ALIVE,
                settings.keepAliveSeconds()));
            return link;
        }
        catch (final IOException | RuntimeException ex)
        {
            link.close();
            throw ex;
        }
        finally
        {
            ownPorts.remove(port); // accepted by now (or never): no later socket from that port gets in
        }
    }

    private PacketDecoder awaitConnack(final BridgeLink link) throws IOException
    {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONNECT_TIMEOUT_MS);
        while (!closed)
        {
            final PacketDecoder packet = link.read();
            if (null != packet)
            {
                if (packet.packetType() != PacketType.CONNACK)
                {
                    throw new IOException(link + " sent a " + PacketType.name(packet.packetType()) +
                        " before its CONNACK");
                }
                return packet;
            }
            if (System.nanoTime() > deadline)
            {
                throw new IOException(link + ": no CONNACK in " + CONNECT_TIMEOUT_MS + " ms");
            }
        }
        throw new IOException("closed");
    }

    /**
     * Subscribes to the topic lines' filters at one side: here with No Local and Retain As Published; at a 5.0
     * remote with both as well.
     */
    private static void subscribe(final BridgeLink link, final List<BridgeSettings.Topic> topics,
        final boolean localSide) throws IOException
    {
        if (topics.isEmpty())
        {
            return;
        }
        final boolean v5 = link.version == MqttVersion.V5;
        final SubscribeEncoder subscribe = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(link.version)
            .packetId(1);
        for (final BridgeSettings.Topic topic : topics)
        {
            subscribe.filters().add(localSide ? topic.localFilter() : topic.remoteFilter(),
                v5 ? SubscriptionOptions.of(topic.qos, true, true, 0) : topic.qos);
        }
        link.send(subscribe);
    }

    private static void notify(final BridgeLink link, final String topic, final byte[] state) throws IOException
    {
        link.send(state(link, topic, state));
    }

    /**
     * @return the state notification: retained, QoS 0.
     */
    private static PublishEncoder state(final BridgeLink link, final String topic, final byte[] state)
    {
        return new PublishEncoder().reset().version(link.version).qos(0).retain(true).topic(topic).payload(state);
    }

    /**
     * Closes both connections; {@code orderly}: first the remote one's retained state 0 (when it is notified too)
     * and DISCONNECT, and the local one's DISCONNECT with its will (the state 0), each skipped when a write holds the
     * link ({@link BridgeLink#goodbye}).
     */
    private void closeLinks(final boolean orderly)
    {
        final BridgeLink remoteLink = remote;
        final BridgeLink localLink = local;
        if (orderly && null != remoteLink)
        {
            remoteLink.goodbye(settings.notifications() && !settings.notificationsLocalOnly() ?
                state(remoteLink, settings.notificationTopic(), DOWN) : null, 0);
        }
        if (orderly && null != localLink)
        {
            localLink.goodbye(null, settings.notifications() ? DISCONNECT_WITH_WILL : 0);
        }
        if (null != remoteLink)
        {
            remoteLink.close();
        }
        if (null != localLink)
        {
            localLink.close();
        }
    }

    /**
     * {@link #closeLinks} with its last words given at most a second, on a thread of their own: a peer that stopped
     * reading cannot hold the bridge (or the broker's stop); a write stuck in them fails when the sockets close.
     */
    private void closeLinksBounded()
    {
        final Thread farewell = new Thread(() -> closeLinks(true), "ringmq-bridge-" + settings.name() + "-close");
        farewell.setDaemon(true);
        farewell.start();
        try
        {
            farewell.join(1_000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
        closeLinks(false);
    }

    /**
     * Stops the bridge: a connection still being made is ended, both connections are closed (after their last
     * words, given at most a second: a peer that stopped reading cannot hold the broker's stop), and its threads end.
     */
    @Override
    public void close()
    {
        closed = true;
        final Socket connecting = dialing;
        if (null != connecting)
        {
            try
            {
                connecting.close();
            }
            catch (final IOException ex)
            {
                // closing anyway
            }
        }
        closeLinksBounded();
        thread.interrupt();
        try
        {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString()
    {
        return "bridge " + settings.name() + (connected ? " (connected)" : "");
    }
}
