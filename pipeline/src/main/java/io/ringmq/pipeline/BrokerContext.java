package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.PersistenceSettings;

import org.agrona.BitUtil;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * Every setting of a broker, with its default in one place. The command line fills it; {@link #conclude()}
 * validates it once before anything starts, and {@link #toString()} prints it at start.
 */
public final class BrokerContext implements Cloneable
{
    /** How agents are mapped onto threads. */
    public enum Threading
    {
        /** Every I/O agent and every stage on its own thread (many cores). */
        DEDICATED,
        /** I/O agents on their own threads, all stages in one (4 to 8 cores). */
        SHARED_NETWORK,
        /** Everything on one thread (2 cores, and tests). */
        SHARED,
        /** No threads at all: whoever holds the broker steps every agent (deterministic tests). */
        INVOKER
    }

    /** The listener {@code --bind} and {@code --port} describe (Mosquitto's {@code port}); may be dropped. */
    private final ListenerSettings defaultListener = new ListenerSettings(1883, "0.0.0.0");
    private boolean hasDefaultListener = true;
    private final java.util.List<ListenerSettings> extraListeners = new java.util.ArrayList<>();
    /** Threads, agents on them, and the work of each duty cycle. */
    private final ThreadingSettings threads = new ThreadingSettings();
    private int maxConnections = 100_000;
    private int maxInflight = 32;
    private int maxQueued = 1_000;
    private int maxPacketSize = 1024 * 1024;
    private int connectTimeoutMs = 10_000;
    private int outboundHighWaterBytes = 1024 * 1024;
    private int acceptBacklog = 4_096;
    // ---- pipeline sizes and per-client limits
    private int maxClientIdLength = 1_024;
    private int maxSubscriptionsPerClient = 10_000;
    private long maxQueuedBytes = 16L * 1024 * 1024;
    private int maxRetainedMessages = 100_000;
    /** AUTO: a quarter of the heap, where retained messages live, at most 256 MiB. */
    private long maxRetainedBytes = AUTO;
    private long persistentClientExpirationMs = 7L * 24 * 3600 * 1000;
    private int maxSessions = 200_000;
    private long sysIntervalMs = 10_000;
    /** Derived: the routing stage's output log, sized so one entry always holds a fan-out to every session. */
    private int routeLogBytes;

    /** Retained message bytes one SUBSCRIBE may carry; past it they are counted, not sent. */
    public static final int RETAINED_BYTES_PER_SUBSCRIBE = 1024 * 1024;
    /** Discarded session ids announced in one routing output entry; the rest wait for the next. */
    public static final int DISCARDED_PER_ENTRY = 65_536;

    private Authenticator.AnonymousPolicy anonymous = Authenticator.AnonymousPolicy.LOOPBACK;
    private String user;
    private String password;
    private Path passwordFile;
    private Path aclFile;
    private boolean useUserNameAsClientId;
    /** Password checking: credential workers, per-address back-off, cache of verified credentials. */
    private final io.ringmq.pipeline.auth.CredentialSettings credentialSettings =
        new io.ringmq.pipeline.auth.CredentialSettings();
    // the network edge's limits (transport)
    private int maxConnectSize = 64 * 1024;
    private int maxConnectionsPerAddress = 1_000;
    private boolean limitLoopback;
    private int maxTopicLevels = 128;
    private int maxTopicLength = 65_535;
    private int maxKeepAliveSeconds = 65_535;
    private int topicAliasMaximum = 64;
    private int receiveMaximum = 1_024;
    private String sharedSubscriptionStrategy = "round-robin";
    /** The strategies a shared subscription group may pick its member by. */
    public static final java.util.List<String> SHARED_STRATEGIES =
        java.util.List.of("round-robin", "random", "sticky", "hash-client", "hash-topic", "least-loaded");

    /** The store (the persistence stage, RocksDB in persistence/); the command line's default is rocksdb. */
    private final PersistenceSettings persistence = new PersistenceSettings();
    /** Rings, logs and the bounds of what messages and sessions hold; live limits among them (copied on reload). */
    private MemorySettings memory = new MemorySettings();

    /** A bound of {@link MemorySettings} or {@code --max-retained-bytes}: sized from the JVM's limits. */
    public static final long AUTO = 0;

    // counters file (ringmq stat)
    private Path countersDir = defaultCountersDir();
    // the Prometheus endpoint (/metrics, /health); port 0 is off
    private String metricsBindAddress = "127.0.0.1";
    private int metricsPort = 0;

    /** {@link #metricsEndpoint(String, int)}: serve the metrics on a free port the system picks (tests). */
    public static final int METRICS_PORT_EPHEMERAL = -1;

    /**
     * Checks every setting; call once before starting.
     *
     * @return this.
     * @throws IllegalArgumentException with a one-line reason.
     */
    public BrokerContext conclude()
    {
        check(port() >= 0 && port() <= 65_535, "--port must be 0..65535");
        threads.conclude();
        check(maxConnections >= 1, "--max-connections must be positive");
        check(maxInflight >= 1 && maxInflight <= 65_535, "--max-inflight must be 1..65535");
        check(maxQueued >= 0, "--max-queued must be >= 0");
        check(maxPacketSize >= 64 && maxPacketSize <= 268_435_460, "--max-packet-size must be 64..268435460");
        check(connectTimeoutMs >= 100, "--connect-timeout must be at least 100 ms");
        check((null == user) == (null == password), "--user and --pass go together");
        credentialSettings.conclude();
        check(maxPacketSize <= MAX_PACKET_SIZE_LIMIT, "--max-packet-size must be at most " + MAX_PACKET_SIZE_LIMIT +
            " (64 MiB): every packet must fit the outbound ring and the message log");
        check(maxClientIdLength >= 23 && maxClientIdLength <= 65_535,
            "--max-client-id-length must be 23..65535 (a server accepts at least 23 [MQTT-3.1.3-5])");
        check(maxSubscriptionsPerClient >= 1, "--max-subscriptions-per-client must be positive");
        check(maxQueuedBytes >= 1024, "--max-queued-bytes must be at least 1024");
        check(maxRetainedMessages >= 1 && maxRetainedBytes >= 0,
            "--max-retained-messages must be >= 1, --max-retained-bytes >= 1 (or 0 for a quarter of the heap)");
        check(persistentClientExpirationMs >= 0, "--persistent-client-expiration must be >= 0");
        memory.conclude(maxPacketSize);
        check(maxSessions >= 1 && maxSessions <= 10_000_000, "--max-sessions must be 1..10000000");
        check(sysIntervalMs == 0 || sysIntervalMs >= 100, "--sys-interval must be 0 (off) or at least 100 ms");
        // the routing log holds two of its largest entries
        routeLogBytes = (int)Math.max(memory.messageLogBytes(),
            BitUtil.findNextPositivePowerOfTwo(routeEntryBytes(maxSessions, maxPacketSize) * 2));
        check(maxConnectSize >= 64, "--max-connect-size must be at least 64");
        check(maxConnectionsPerAddress >= 1, "--max-connections-per-address must be positive");
        check(maxTopicLevels >= 1, "--max-topic-levels must be positive");
        check(maxTopicLength >= 1 && maxTopicLength <= 65_535, "--max-topic-length must be 1..65535");
        check(maxKeepAliveSeconds >= 1 && maxKeepAliveSeconds <= 65_535, "--max-keepalive must be 1..65535");
        check(topicAliasMaximum >= 0 && topicAliasMaximum <= 65_535, "--topic-alias-maximum must be 0..65535");
        check(receiveMaximum >= 1 && receiveMaximum <= 65_535, "--receive-maximum must be 1..65535");
        check(SHARED_STRATEGIES.contains(sharedSubscriptionStrategy),
            "--shared-subscription-strategy must be one of " + SHARED_STRATEGIES);
        persistence.conclude();
        check(metricsPort >= METRICS_PORT_EPHEMERAL && metricsPort <= 65_535, "--metrics-port must be 0..65535");
        check(0 == metricsPort || isAddress(metricsBindAddress), "--metrics-bind: unknown address " +
            metricsBindAddress);
        check(isAddress(defaultListener.bindAddress()), "--bind: unknown address " + defaultListener.bindAddress());
        check(!listeners().isEmpty(), "no listener: give --port or --listener");
        passwordFile = sharedFile(passwordFile, "password_file", ListenerSettings::passwordFile);
        aclFile = sharedFile(aclFile, "acl_file", ListenerSettings::aclFile);
        final java.util.Set<String> endpoints = new java.util.HashSet<>();
        for (final ListenerSettings listener : listeners())
        {
            listener.conclude();
            check(0 == listener.port() || endpoints.add(listener.port() + "@" + listener.bindAddress()),
                "two listeners on " + listener);
        }
        return this;
    }

    /**
     * {@code per_listener_settings true} with a password or ACL file on listeners: one file for the broker, as long
     * as every listener that names one names the same (a listener without one then checks against it too: stricter
     * than Mosquitto, never looser).
     *
     * @return the broker's file.
     */
    private Path sharedFile(final Path brokerFile, final String directive,
        final java.util.function.Function<ListenerSettings, Path> ofListener)
    {
        Path shared = brokerFile;
        for (final ListenerSettings listener : listeners())
        {
            final Path file = ofListener.apply(listener);
            if (null != file)
            {
                check(null == shared || shared.equals(file), "per_listener_settings: listeners with different " +
                    directive + "s (" + shared + ", " + file + ") are not supported; use one file for all listeners");
                shared = file;
            }
        }
        return shared;
    }

    /**
     * @return a copy for the context a reload publishes ({@link ReloadPlan#liveContext}), with its own memory
     * settings (live limits among them); the listeners, credential and store settings it shares are never changed
     * while the broker runs.
     */
    BrokerContext copy()
    {
        try
        {
            final BrokerContext copy = (BrokerContext)clone();
            copy.memory = memory.copy();
            return copy;
        }
        catch (final CloneNotSupportedException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * @return whether a packet of this size fits the outbound rings, the message logs and the routing log this
     * context was sized for at start (by {@link #conclude()}).
     */
    public boolean fitsBuffers(final int packetSize)
    {
        return memory.fitsRings(packetSize) && routeEntryBytes(maxSessions, packetSize) * 2 <= routeLogBytes;
    }

    /**
     * @return the largest routing output entry: a target per session (16 bytes each), a will and the return codes of
     * one packet, the retained messages of one SUBSCRIBE, and a batch of discarded ids.
     */
    private static long routeEntryBytes(final int maxSessions, final int packetSize)
    {
        return maxSessions * 16L + 2L * packetSize + RETAINED_BYTES_PER_SUBSCRIBE + DISCARDED_PER_ENTRY * 4L +
            RouteOutput.MAX_ID_INTS * 4L + 4096;
    }

    /** The largest --max-packet-size: the outbound ring for it is 512 MiB per I/O agent. */
    public static final int MAX_PACKET_SIZE_LIMIT = 64 * 1024 * 1024;

    public String toString()
    {
        return "listeners=" + listeners() + " " + threads +
            " " + memory + " max-connections=" + maxConnections + " max-inflight=" + maxInflight +
            " max-queued=" + maxQueued + " max-packet-size=" + maxPacketSize + " connect-timeout=" +
            connectTimeoutMs + "ms max-client-id-length=" + maxClientIdLength + " max-subscriptions-per-client=" +
            maxSubscriptionsPerClient + " max-queued-bytes=" + maxQueuedBytes + " max-retained=" +
            maxRetainedMessages + "/" + retainedBytes() + "B" + (maxRetainedBytes == AUTO ? "(auto)" : "") +
            " persistent-client-expiration=" +
            persistentClientExpirationMs / 1000 + "s max-sessions=" + maxSessions + " sys-interval=" + sysIntervalMs +
            "ms anonymous=" + anonymous.name().toLowerCase() +
            (null != user ? " user=" + user : "") + (null != passwordFile ? " password-file=" + passwordFile : "") +
            (null != aclFile ? " acl-file=" + aclFile : "") +
            (useUserNameAsClientId ? " use-username-as-clientid" : "") +
            " " + credentialSettings +
            " counters-dir=" + countersDir + " " + persistence +
            (0 == metricsPort ? "" : " metrics=" + metricsBindAddress + ":" + metricsPort) +
            " max-connect-size=" + maxConnectSize + " max-connections-per-address=" + maxConnectionsPerAddress +
            (limitLoopback ? " limit-loopback" : "") + " max-topic-levels=" +
            maxTopicLevels + " max-topic-length=" + maxTopicLength + " max-keepalive=" + maxKeepAliveSeconds +
            " topic-alias-maximum=" + topicAliasMaximum + " receive-maximum=" + receiveMaximum +
            " shared-subscription-strategy=" + sharedSubscriptionStrategy +
            (threads.warmupConnections() > 0 ? " warmup=" + threads.warmupConnections() : "");
    }

    public String bindAddress()
    {
        return defaultListener.bindAddress();
    }

    public BrokerContext bindAddress(final String bindAddress)
    {
        defaultListener.bindAddress(bindAddress);
        return this;
    }

    public int port()
    {
        return defaultListener.port();
    }

    /**
     * @return the listener {@code --bind} and {@code --port} describe, which settings given before any
     * {@code listener} line of a Mosquitto config file apply to.
     */
    public ListenerSettings defaultListener()
    {
        return defaultListener;
    }

    /**
     * Keeps or drops the listener of {@code --bind}/{@code --port} (dropped when a config file names listeners and
     * no port, as Mosquitto does).
     */
    public BrokerContext hasDefaultListener(final boolean hasDefaultListener)
    {
        this.hasDefaultListener = hasDefaultListener;
        return this;
    }

    /**
     * Adds a listener besides the default one.
     */
    public BrokerContext addListener(final ListenerSettings listener)
    {
        extraListeners.add(listener);
        return this;
    }

    /**
     * @return every listener, the default one (when kept) first.
     */
    public java.util.List<ListenerSettings> listeners()
    {
        final java.util.List<ListenerSettings> all = new java.util.ArrayList<>(extraListeners.size() + 1);
        if (hasDefaultListener)
        {
            all.add(defaultListener);
        }
        all.addAll(extraListeners);
        return all;
    }

    public BrokerContext port(final int port)
    {
        defaultListener.port(port);
        return this;
    }

    public int maxConnections()
    {
        return maxConnections;
    }

    public BrokerContext maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    public int maxInflight()
    {
        return maxInflight;
    }

    public BrokerContext maxInflight(final int maxInflight)
    {
        this.maxInflight = maxInflight;
        return this;
    }

    public int maxQueued()
    {
        return maxQueued;
    }

    public BrokerContext maxQueued(final int maxQueued)
    {
        this.maxQueued = maxQueued;
        return this;
    }

    public int maxPacketSize()
    {
        return maxPacketSize;
    }

    public BrokerContext maxPacketSize(final int maxPacketSize)
    {
        this.maxPacketSize = maxPacketSize;
        return this;
    }

    public int connectTimeoutMs()
    {
        return connectTimeoutMs;
    }

    public BrokerContext connectTimeoutMs(final int connectTimeoutMs)
    {
        this.connectTimeoutMs = connectTimeoutMs;
        return this;
    }

    public int outboundHighWaterBytes()
    {
        return outboundHighWaterBytes;
    }

    public BrokerContext outboundHighWaterBytes(final int bytes)
    {
        this.outboundHighWaterBytes = bytes;
        return this;
    }

    public int acceptBacklog()
    {
        return acceptBacklog;
    }

    public BrokerContext acceptBacklog(final int acceptBacklog)
    {
        this.acceptBacklog = acceptBacklog;
        return this;
    }

    public Authenticator.AnonymousPolicy anonymous()
    {
        return anonymous;
    }

    public BrokerContext anonymous(final Authenticator.AnonymousPolicy anonymous)
    {
        this.anonymous = anonymous;
        return this;
    }

    public String user()
    {
        return user;
    }

    public String password()
    {
        return password;
    }

    public BrokerContext credentials(final String user, final String password)
    {
        this.user = user;
        this.password = password;
        return this;
    }

    /**
     * @return the settings of password checking (threads, queue, back-off, cache), to change in place.
     */
    public io.ringmq.pipeline.auth.CredentialSettings credentialSettings()
    {
        return credentialSettings;
    }

    public Path passwordFile()
    {
        return passwordFile;
    }

    public BrokerContext passwordFile(final Path passwordFile)
    {
        this.passwordFile = passwordFile;
        return this;
    }

    /**
     * @return the ACL file (Mosquitto's acl_file format), or null: everything open but writes to {@code $SYS}.
     */
    public Path aclFile()
    {
        return aclFile;
    }

    public BrokerContext aclFile(final Path aclFile)
    {
        this.aclFile = aclFile;
        return this;
    }

    /**
     * @return whether a client's id is its user name (Mosquitto's use_username_as_clientid); a client without one
     * is then refused.
     */
    public boolean useUserNameAsClientId()
    {
        return useUserNameAsClientId;
    }

    public BrokerContext useUserNameAsClientId(final boolean useUserNameAsClientId)
    {
        this.useUserNameAsClientId = useUserNameAsClientId;
        return this;
    }

    /**
     * @return how often the $SYS tree is published; 0 turns it off.
     */
    public long sysIntervalMs()
    {
        return sysIntervalMs;
    }

    public BrokerContext sysIntervalMs(final long sysIntervalMs)
    {
        this.sysIntervalMs = sysIntervalMs;
        return this;
    }

    /**
     * @return sessions held at once, online or not; a CONNECT that would create one more is refused.
     */
    public int maxSessions()
    {
        return maxSessions;
    }

    public BrokerContext maxSessions(final int maxSessions)
    {
        this.maxSessions = maxSessions;
        return this;
    }

    /**
     * @return the routing stage's output log, derived by {@link #conclude()} from the session limit.
     */
    public int routeLogBytes()
    {
        return routeLogBytes;
    }

    public int maxClientIdLength()
    {
        return maxClientIdLength;
    }

    public BrokerContext maxClientIdLength(final int maxClientIdLength)
    {
        this.maxClientIdLength = maxClientIdLength;
        return this;
    }

    public int maxSubscriptionsPerClient()
    {
        return maxSubscriptionsPerClient;
    }

    public BrokerContext maxSubscriptionsPerClient(final int maxSubscriptionsPerClient)
    {
        this.maxSubscriptionsPerClient = maxSubscriptionsPerClient;
        return this;
    }

    public long maxQueuedBytes()
    {
        return maxQueuedBytes;
    }

    public BrokerContext maxQueuedBytes(final long maxQueuedBytes)
    {
        this.maxQueuedBytes = maxQueuedBytes;
        return this;
    }

    public int maxRetainedMessages()
    {
        return maxRetainedMessages;
    }

    /**
     * @return {@code --max-retained-bytes} as given: bytes, or {@link #AUTO}.
     */
    public long maxRetainedBytes()
    {
        return maxRetainedBytes;
    }

    /**
     * @return the topic and payload bytes of retained messages a routing stage holds: {@code --max-retained-bytes},
     * or a quarter of the JVM's maximum heap, at most 256 MiB (16 MiB under {@code bin/ringmq}'s 256m), so that
     * retained messages alone never fill the heap they live on.
     */
    public long retainedBytes()
    {
        return maxRetainedBytes == AUTO ? Math.min(256L * 1024 * 1024, MemorySettings.quarterOfHeap()) :
            maxRetainedBytes;
    }

    public BrokerContext maxRetained(final int messages, final long bytes)
    {
        this.maxRetainedMessages = messages;
        this.maxRetainedBytes = bytes;
        return this;
    }

    public long persistentClientExpirationMs()
    {
        return persistentClientExpirationMs;
    }

    /**
     * @param ms how long a persistent session whose client never comes back is kept; 0 keeps it forever.
     */
    public BrokerContext persistentClientExpirationMs(final long ms)
    {
        this.persistentClientExpirationMs = ms;
        return this;
    }

    /**
     * @return the largest first packet (a CONNECT) accepted before a client has connected, judged from its fixed
     * header; {@link #maxPacketSize()} applies too when it is smaller.
     */
    public int maxConnectSize()
    {
        return maxConnectSize;
    }

    public BrokerContext maxConnectSize(final int maxConnectSize)
    {
        this.maxConnectSize = maxConnectSize;
        return this;
    }

    /**
     * @return /dev/shm/ringmq where /dev/shm is a writable directory (counters then never touch a disk), else
     * ringmq under java.io.tmpdir.
     */
    public static Path defaultCountersDir()
    {
        final Path shm = Path.of("/dev/shm");
        if (Files.isDirectory(shm) && Files.isWritable(shm))
        {
            return shm.resolve("ringmq");
        }
        return Path.of(System.getProperty("java.io.tmpdir"), "ringmq");
    }

    public Path countersDir()
    {
        return countersDir;
    }

    public BrokerContext countersDir(final Path countersDir)
    {
        this.countersDir = null == countersDir ? defaultCountersDir() : countersDir;
        return this;
    }

    /**
     * @return the address the Prometheus endpoint listens on.
     */
    public String metricsBindAddress()
    {
        return metricsBindAddress;
    }

    /**
     * @return the port of the Prometheus endpoint ({@code /metrics}, {@code /health}): 0 when it is off,
     * {@link #METRICS_PORT_EPHEMERAL} for a free port the system picks.
     */
    public int metricsPort()
    {
        return metricsPort;
    }

    /**
     * @param bindAddress the address to serve {@code /metrics} and {@code /health} on (null: 127.0.0.1).
     * @param port        0 for off, {@link #METRICS_PORT_EPHEMERAL} for a free port.
     * @return this.
     */
    public BrokerContext metricsEndpoint(final String bindAddress, final int port)
    {
        this.metricsBindAddress = null == bindAddress ? "127.0.0.1" : bindAddress;
        this.metricsPort = port;
        return this;
    }

    private static boolean isAddress(final String address)
    {
        try
        {
            InetAddress.getByName(address);
            return true;
        }
        catch (final UnknownHostException ex)
        {
            return false;
        }
    }

    /**
     * @return connections held at once from one remote address (loopback exempt unless {@link #limitLoopback()}).
     */
    public int maxConnectionsPerAddress()
    {
        return maxConnectionsPerAddress;
    }

    public BrokerContext maxConnectionsPerAddress(final int maxConnectionsPerAddress)
    {
        this.maxConnectionsPerAddress = maxConnectionsPerAddress;
        return this;
    }

    public boolean limitLoopback()
    {
        return limitLoopback;
    }

    public BrokerContext limitLoopback(final boolean limitLoopback)
    {
        this.limitLoopback = limitLoopback;
        return this;
    }

    public int maxTopicLevels()
    {
        return maxTopicLevels;
    }

    public BrokerContext maxTopicLevels(final int maxTopicLevels)
    {
        this.maxTopicLevels = maxTopicLevels;
        return this;
    }

    public int maxTopicLength()
    {
        return maxTopicLength;
    }

    public BrokerContext maxTopicLength(final int maxTopicLength)
    {
        this.maxTopicLength = maxTopicLength;
        return this;
    }

    /**
     * @return the longest keep-alive a client may ask for; a longer or zero one is cut to it and, on MQTT 5.0,
     * announced as the server keep alive [MQTT-3.2.2-21].
     */
    public int maxKeepAliveSeconds()
    {
        return maxKeepAliveSeconds;
    }

    /**
     * @return the Session Expiry Interval the broker applies to a 5.0 client that asked for {@code requested}
     * seconds, or to a 3.1.1 client with clean session 0 ({@code 0xFFFFFFFF}): at most
     * {@code --persistent-client-expiration} (0 = sessions are kept until their client comes back). A value other
     * than the one asked for is announced in the CONNACK (5.0 section 3.2.2.3.2).
     */
    public long sessionExpiryFor(final long requested)
    {
        if (requested <= 0)
        {
            return 0;
        }
        final long maxSeconds = persistentClientExpirationMs / 1000;
        return maxSeconds > 0 && requested > maxSeconds ? maxSeconds : requested;
    }

    /**
     * @return the Session Expiry Interval the broker applies to a CONNECT: a 3.1.1 clean session 0 keeps its session
     * as long as {@code --persistent-client-expiration} allows; a 5.0 client's is its own, within that.
     */
    public long sessionExpiryFor(final io.ringmq.protocol.ConnectFlyweight connect)
    {
        if (connect.protocolLevel() == io.ringmq.protocol.MqttVersion.V5)
        {
            return sessionExpiryFor(connect.properties().longValue(
                io.ringmq.protocol.PropertyId.SESSION_EXPIRY_INTERVAL, 0));
        }
        return connect.isCleanStart() ? 0 : sessionExpiryFor(0xFFFF_FFFFL);
    }

    /**
     * @return the keep-alive the broker applies to a client that asked for {@code requested} seconds: that, or
     * {@link #maxKeepAliveSeconds()} when it asked for more, or for none while a maximum below 65,535 is set.
     */
    public int keepAliveFor(final int requested)
    {
        if (maxKeepAliveSeconds >= 65_535)
        {
            return requested;
        }
        return requested == 0 || requested > maxKeepAliveSeconds ? maxKeepAliveSeconds : requested;
    }

    public BrokerContext maxKeepAliveSeconds(final int maxKeepAliveSeconds)
    {
        this.maxKeepAliveSeconds = maxKeepAliveSeconds;
        return this;
    }

    /**
     * @return the topic aliases an MQTT 5.0 client may use toward the broker (announced in CONNACK; 0: none).
     */
    public int topicAliasMaximum()
    {
        return topicAliasMaximum;
    }

    public BrokerContext topicAliasMaximum(final int topicAliasMaximum)
    {
        this.topicAliasMaximum = topicAliasMaximum;
        return this;
    }

    /**
     * @return the unacknowledged QoS 1 and 2 PUBLISHes an MQTT 5.0 client may have toward the broker (announced in
     * CONNACK; one more is answered with DISCONNECT 0x93).
     */
    public int receiveMaximum()
    {
        return receiveMaximum;
    }

    public BrokerContext receiveMaximum(final int receiveMaximum)
    {
        this.receiveMaximum = receiveMaximum;
        return this;
    }

    /**
     * @return how a shared subscription group picks the member a message goes to: one of
     * {@link #SHARED_STRATEGIES}.
     */
    public String sharedSubscriptionStrategy()
    {
        return sharedSubscriptionStrategy;
    }

    public BrokerContext sharedSubscriptionStrategy(final String sharedSubscriptionStrategy)
    {
        this.sharedSubscriptionStrategy = sharedSubscriptionStrategy;
        return this;
    }

    /**
     * @return the store's settings, to change in place.
     */
    public PersistenceSettings persistence()
    {
        return persistence;
    }

    /**
     * Changes the store's settings in a chain: {@code context.port(0).persistence(p -> p.persistent(true))}.
     */
    public BrokerContext persistence(final java.util.function.Consumer<PersistenceSettings> change)
    {
        change.accept(persistence);
        return this;
    }

    /**
     * @return the rings, logs and memory bounds, to change in place.
     */
    public MemorySettings memory()
    {
        return memory;
    }

    /**
     * Changes the memory settings in a chain: {@code context.port(0).memory(m -> m.ringSize(1024))}.
     */
    public BrokerContext memory(final java.util.function.Consumer<MemorySettings> change)
    {
        change.accept(memory);
        return this;
    }

    /**
     * @return the threads and what runs on them, to change in place.
     */
    public ThreadingSettings threads()
    {
        return threads;
    }

    /**
     * Changes the threading settings in a chain: {@code context.port(0).threads(t -> t.ioThreads(2))}.
     */
    public BrokerContext threads(final java.util.function.Consumer<ThreadingSettings> change)
    {
        change.accept(threads);
        return this;
    }
}
