package io.ringmq.pipeline;

import io.ringmq.pipeline.persistence.PersistenceSettings;

import org.agrona.BitUtil;

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
    private final java.util.List<BridgeSettings> bridges = new java.util.ArrayList<>();
    /** What each client may do and hold, the sessions, and what every CONNACK announces; live ones among them. */
    private LimitSettings limits = new LimitSettings();
    /** Threads, agents on them, and the work of each duty cycle. */
    private final ThreadingSettings threads = new ThreadingSettings();
    private int outboundHighWaterBytes = 1024 * 1024;
    private int acceptBacklog = 4_096;
    /** Derived: the routing stage's output log, sized so one entry always holds a fan-out to every session. */
    private int routeLogBytes;

    /**
     * Retained message bytes one routing output may carry: a SUBACK's (the rest go in parts, {@code RetainedLine}),
     * beside one message past it (an entry has room for a packet besides them).
     */
    public static final int RETAINED_BYTES_PER_SUBSCRIBE = 1024 * 1024;
    /** Discarded session ids announced in one routing output entry; the rest wait for the next. */
    public static final int DISCARDED_PER_ENTRY = 65_536;

    /** Who may connect and what each client may do. */
    private AuthSettings auth = new AuthSettings();
    // the network edge's limits (transport)
    private int maxConnectSize = 64 * 1024;
    private int maxConnectionsPerAddress = 1_000;
    private boolean limitLoopback;

    /** The store (the persistence stage, RocksDB in persistence/); the command line's default is rocksdb. */
    private final PersistenceSettings persistence = new PersistenceSettings();
    /** Rings, logs and the bounds of what messages and sessions hold; live limits among them (copied on reload). */
    private MemorySettings memory = new MemorySettings();

    /** A bound of {@link MemorySettings} or {@code --max-retained-bytes}: sized from the JVM's limits. */
    public static final long AUTO = 0;

    /** The $SYS tree, the counters file and the Prometheus endpoint. */
    private ObservabilitySettings observability = new ObservabilitySettings();

    /**
     * Checks every setting; call once before starting.
     *
     * @return this.
     * @throws IllegalArgumentException with a one-line reason.
     */
    public BrokerContext conclude()
    {
        check(port() >= 0 && port() <= 65_535, "--port must be 0..65535");
        limits.conclude();
        threads.conclude();
        auth.conclude();
        memory.conclude(limits.maxPacketSize());
        observability.conclude();
        // the routing log holds two of its largest entries
        routeLogBytes = (int)Math.max(memory.messageLogBytes(),
            BitUtil.findNextPositivePowerOfTwo(routeEntryBytes(limits.maxSessions(), limits.maxPacketSize()) * 2));
        check(maxConnectSize >= 64, "--max-connect-size must be at least 64");
        check(maxConnectionsPerAddress >= 1, "--max-connections-per-address must be positive");
        persistence.conclude();
        check(SettingChecks.isAddress(defaultListener.bindAddress()), "--bind: unknown address " +
            defaultListener.bindAddress());
        check(!listeners().isEmpty(), "no listener: give --port or --listener");
        auth.passwordFile(sharedFile(auth.passwordFile(), "password_file", ListenerSettings::passwordFile));
        auth.aclFile(sharedFile(auth.aclFile(), "acl_file", ListenerSettings::aclFile));
        final java.util.Set<String> endpoints = new java.util.HashSet<>();
        for (final ListenerSettings listener : listeners())
        {
            listener.conclude();
            check(0 == listener.port() || endpoints.add(listener.port() + "@" + listener.bindAddress()),
                "two listeners on " + listener);
        }
        final java.util.Set<String> bridgeNames = new java.util.HashSet<>();
        for (final BridgeSettings bridge : bridges)
        {
            bridge.conclude(hostName());
            check(bridgeNames.add(bridge.name()), "two bridges named " + bridge.name());
        }
        return this;
    }

    private static String hostName()
    {
        try
        {
            return java.net.InetAddress.getLocalHost().getHostName();
        }
        catch (final java.io.IOException ex)
        {
            return "ringmq";
        }
    }

    /**
     * Adds a bridge to a remote broker (a config file's {@code connection} section).
     */
    public BrokerContext addBridge(final BridgeSettings bridge)
    {
        bridges.add(bridge);
        return this;
    }

    /**
     * @return the bridges to remote brokers, in file order.
     */
    public java.util.List<BridgeSettings> bridges()
    {
        return java.util.Collections.unmodifiableList(bridges);
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
     * @return a copy for the context a reload publishes ({@link ReloadPlan#liveContext}), with its own memory,
     * limit, authentication and observability settings (live ones among them); the listeners, credential and
     * store settings it shares are never changed while the broker runs.
     */
    BrokerContext copy()
    {
        try
        {
            final BrokerContext copy = (BrokerContext)clone();
            copy.memory = memory.copy();
            copy.limits = limits.copy();
            copy.auth = auth.copy();
            copy.observability = observability.copy();
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
        return memory.fitsRings(packetSize) && routeEntryBytes(limits.maxSessions(), packetSize) * 2 <= routeLogBytes;
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


    public String toString()
    {
        return "listeners=" + listeners() + " " + threads +
            " " + memory + " " + limits + " " + observability + " " + auth +
            " " + persistence +
            " max-connect-size=" + maxConnectSize + " max-connections-per-address=" + maxConnectionsPerAddress +
            (limitLoopback ? " limit-loopback" : "") +
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

    /**
     * @return the routing stage's output log, derived by {@link #conclude()} from the session limit.
     */
    public int routeLogBytes()
    {
        return routeLogBytes;
    }

    /**
     * @return the largest first packet (a CONNECT) accepted before a client has connected, judged from its fixed
     * header; {@link LimitSettings#maxPacketSize()} applies too when it is smaller.
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

    /**
     * @return the store's settings, to change in place.
     */
    public ObservabilitySettings observability()
    {
        return observability;
    }

    /**
     * Changes the observability settings in place, in a chain.
     */
    public BrokerContext observability(final java.util.function.Consumer<ObservabilitySettings> change)
    {
        change.accept(observability);
        return this;
    }

    public AuthSettings auth()
    {
        return auth;
    }

    /**
     * Changes the authentication settings in place, in a chain.
     */
    public BrokerContext auth(final java.util.function.Consumer<AuthSettings> change)
    {
        change.accept(auth);
        return this;
    }

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

    /**
     * @return what each client may do and hold, to change in place.
     */
    public LimitSettings limits()
    {
        return limits;
    }

    /**
     * Changes the client limits in a chain: {@code context.port(0).limits(l -> l.maxInflight(4))}.
     */
    public BrokerContext limits(final java.util.function.Consumer<LimitSettings> change)
    {
        change.accept(limits);
        return this;
    }
}
