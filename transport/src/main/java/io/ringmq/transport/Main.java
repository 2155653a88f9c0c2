package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialSettings;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * The {@code ringmq} command line: runs a broker, or ({@code ringmq passwd}) writes password file entries.
 */
@Command(name = "ringmq", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
    sortOptions = false, usageHelpAutoWidth = true,
    description = "An MQTT 3.1.1 broker on LMAX Disruptor rings. With no options: port 1883, anonymous clients "
        + "from loopback only.",
    subcommands = {PasswdCommand.class, HashBenchCommand.class, StatCommand.class, ReloadCommand.class})
public final class Main implements Callable<Integer>
{
    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
        description = "Read options from FILE: ringmq's, one per line ('max-connections 5000', 'port=1883', "
            + "'--port 1883'), and Mosquitto's mosquitto.conf directives (listener, allow_anonymous, password_file, "
            + "acl_file, certfile, include_dir ...); '#' starts a comment. Options on the command line win.")
    Path config;

    @Option(names = {"-b", "--bind"}, paramLabel = "ADDRESS", description = "Address of the default listener "
        + "(default: 0.0.0.0).")
    String bind;

    @Option(names = {"-p", "--port"}, description = "Port of the default listener; 0 picks a free one (default: "
        + "1883; with --listener and no --port or --bind, no default listener).")
    Integer port;

    @Option(names = "--listener", paramLabel = "SPEC", description = "Another listener: PORT[@ADDRESS][,name=value]..."
        + " with the names of a mosquitto.conf listener section: protocol=mqtt|websockets, certfile, keyfile, cafile, "
        + "capath, require_certificate, use_identity_as_username, tls_version, ciphers, max_connections, "
        + "proxy_protocol=v1|v2|any, websocket_path; repeatable.")
    List<String> listenerSpecs = new ArrayList<>();

    /** What the config file said beyond options: its listeners (set before {@link #context()}). */
    ConfigFile.Parsed fromFile;
    /** The command line as given, read again (with its config file) by a reload. */
    String[] originalArgs;

    @Option(names = "--user", description = "A user name clients may connect with (with --pass).")
    String user;

    @Option(names = "--pass", description = "The password of --user (shows in 'ps': prefer --pass-file or "
        + "--pass-env).")
    String pass;

    @Option(names = "--pass-file", paramLabel = "FILE",
        description = "Read the password of --user from the first line of FILE.")
    Path passFile;

    @Option(names = "--pass-env", paramLabel = "VAR",
        description = "Read the password of --user from the environment variable VAR.")
    String passEnv;

    @Option(names = "--tls-threads", paramLabel = "N", description = "Threads that run TLS handshakes' key "
        + "exchanges and signatures, never an I/O thread (default: cores/4, 1..4).")
    Integer tlsThreads;

    // password checking: credential workers, back-off after failures, cache (defaults in CredentialSettings)
    @Option(names = "--auth-threads", paramLabel = "N",
        description = "Threads that verify CONNECT passwords, never an I/O or stage thread (default: cores/4, >= 1).")
    Integer authThreads;

    @Option(names = "--auth-queue", paramLabel = "N", description = "CONNECTs waiting for a password check at most; "
        + "more are refused with server unavailable (default: " + CredentialSettings.DEFAULT_QUEUE_LENGTH + ").")
    Integer authQueue;

    @Option(names = "--auth-max-failures", paramLabel = "N", description = "Failed logins from one address within "
        + "--auth-failure-window before it backs off; 0: no limit (default: " + CredentialSettings.DEFAULT_MAX_FAILURES
        + ").")
    Integer authMaxFailures;

    @Option(names = "--auth-failure-window", paramLabel = "DURATION",
        description = "Window the failures are counted in (default: 60s).")
    String authFailureWindow;

    @Option(names = "--auth-backoff", paramLabel = "DURATION", description = "First back-off of an address: its "
        + "logins are refused without a password check; each next one doubles (default: 1s).")
    String authBackoff;

    @Option(names = "--auth-backoff-max", paramLabel = "DURATION", description = "Longest back-off (default: 5m).")
    String authBackoffMax;

    @Option(names = "--auth-tracked-addresses", paramLabel = "N", description = "Addresses whose failures are "
        + "remembered at most (default: " + CredentialSettings.DEFAULT_TRACKED_ADDRESSES + ").")
    Integer authTrackedAddresses;

    @Option(names = "--auth-cache-size", paramLabel = "N", description = "Verified logins remembered (keyed HMAC, "
        + "never the password), so a reconnect skips PBKDF2; 0: none (default: " +
        CredentialSettings.DEFAULT_CACHE_SIZE + ").")
    Integer authCacheSize;

    @Option(names = "--auth-exempt-loopback", description = "Never back off loopback addresses.")
    boolean authExemptLoopback;

    @Option(names = "--password-file", paramLabel = "FILE",
        description = "user:hash lines (PBKDF2-SHA512, as written by 'ringmq passwd' or mosquitto_passwd).")
    Path passwordFile;

    @Option(names = "--acl-file", paramLabel = "FILE",
        description = "Access control in Mosquitto's acl_file format (user, topic, pattern lines); reloaded with "
            + "the password file. Without it every topic is open but $SYS, which clients may only read.")
    Path aclFile;

    @Option(names = "--use-username-as-clientid",
        description = "A client's id is its user name (Mosquitto's use_username_as_clientid): no user can take "
            + "over another's session; clients without a user name are refused.")
    boolean useUserNameAsClientId;

    @Option(names = "--anonymous", paramLabel = "WHO",
        description = "Who may connect without a user name: loopback, all or none (default: ${DEFAULT-VALUE}).")
    String anonymous = "loopback";

    @Option(names = "--threading", paramLabel = "MODE",
        description = "shared (one thread), shared-network (I/O threads + one stage thread) or dedicated "
            + "(a thread per I/O agent and per stage); default by core count: <=2 shared, <=8 shared-network.")
    String threading;

    @Option(names = "--io-threads", paramLabel = "N", description = "I/O agents (default: cores/4, 1..16).")
    Integer ioThreads;

    @Option(names = "--route-shards", paramLabel = "N", description = "Routing stages that share the PUBLISHes by " +
        "topic, each with a replica of the sessions and subscriptions (default 1; for many cores with --threading " +
        "dedicated: one thread each, --pin route=A-B).")
    Integer routeShards;

    @Option(names = "--idle-strategy", paramLabel = "NAME",
        description = "wake (sleep until given work), busy-spin, yield or backoff (default: ${DEFAULT-VALUE}).")
    String idleStrategy = "wake";

    @Option(names = "--pin", paramLabel = "SPEC",
        description = "Bind threads to cores, e.g. io=2-9,auth=10,route=11,deliver=12,pipeline=3.")
    String pin;

    @Option(names = "--ring-size", paramLabel = "N", description = "Ingress ring slots, a power of two (default: ${DEFAULT-VALUE}).")
    int ringSize = 16_384;

    @Option(names = "--max-connections", paramLabel = "N", description = "Connections held at once (default: ${DEFAULT-VALUE}).")
    int maxConnections = 100_000;

    @Option(names = "--max-inflight", paramLabel = "N",
        description = "Unacknowledged QoS 1/2 messages per client (default: ${DEFAULT-VALUE}).")
    int maxInflight = 32;

    @Option(names = "--max-queued", paramLabel = "N",
        description = "QoS 1/2 messages queued per client beyond the in-flight window or while offline "
            + "(default: ${DEFAULT-VALUE}).")
    int maxQueued = 1_000;

    @Option(names = "--max-packet-size", paramLabel = "BYTES", description = "Largest packet accepted (default: ${DEFAULT-VALUE}).")
    int maxPacketSize = 1024 * 1024;

    @Option(names = "--connect-timeout", paramLabel = "DURATION",
        description = "Close a connection that sends no CONNECT within this, e.g. 10s or 500ms (default: ${DEFAULT-VALUE}).")
    String connectTimeout = "10s";

    // ---- pipeline sizes and per-client limits (defaults in BrokerContext)
    private static final BrokerContext DEFAULTS = new BrokerContext();

    @Option(names = "--max-client-id-length", paramLabel = "N",
        description = "Longer client identifiers are refused (default: ${DEFAULT-VALUE}).")
    int maxClientIdLength = DEFAULTS.maxClientIdLength();

    @Option(names = "--max-subscriptions-per-client", paramLabel = "N",
        description = "Further filters get a failure return code in SUBACK (default: ${DEFAULT-VALUE}).")
    int maxSubscriptionsPerClient = DEFAULTS.maxSubscriptionsPerClient();

    @Option(names = "--max-queued-bytes", paramLabel = "BYTES",
        description = "QoS 1/2 topic+payload bytes queued per client; then the newest is dropped "
            + "(default: ${DEFAULT-VALUE}).")
    long maxQueuedBytes = DEFAULTS.maxQueuedBytes();

    @Option(names = "--max-message-memory", paramLabel = "BYTES",
        description = "QoS 1/2 messages held for subscribers, in flight or queued, all clients together (each copy "
            + "once); past it further ones are dropped and counted; 0 = a quarter of the max heap "
            + "(default: ${DEFAULT-VALUE}).")
    long maxMessageMemory = BrokerContext.AUTO;

    @Option(names = "--max-session-memory", paramLabel = "BYTES",
        description = "Client ids, user names, wills and subscription filters the sessions hold, all clients "
            + "together; past it a CONNECT (0x97 / 3) or a filter (0x97 / 0x80) is refused and counted (filters fill "
            + "three quarters, the rest is kept for CONNECTs); 0 = a quarter of the max heap (default: "
            + "${DEFAULT-VALUE}).")
    long maxSessionMemory = BrokerContext.AUTO;

    @Option(names = "--max-client-session-memory", paramLabel = "BYTES",
        description = "What one session may hold of --max-session-memory in subscription filters, and apart in QoS 2 "
            + "packet ids awaiting PUBREL; past it a filter (0x97 / 0x80) or a QoS 2 PUBLISH (PUBREC 0x97) is refused "
            + "and counted; 0 = an eighth of --max-session-memory (default: ${DEFAULT-VALUE}).")
    long maxClientSessionMemory = BrokerContext.AUTO;

    @Option(names = "--max-retained-messages", paramLabel = "N",
        description = "Retained messages held; further ones are not stored (default: ${DEFAULT-VALUE}).")
    int maxRetainedMessages = DEFAULTS.maxRetainedMessages();

    @Option(names = "--max-retained-bytes", paramLabel = "BYTES",
        description = "Topic+payload bytes of retained messages held; 0 = a quarter of the max heap, at most 256 MiB "
            + "(default: ${DEFAULT-VALUE}).")
    long maxRetainedBytes = BrokerContext.AUTO;

    @Option(names = "--persistent-client-expiration", paramLabel = "DURATION",
        description = "Drop a persistent session whose client has not come back for this long, e.g. 2h, 7d, 1w; "
            + "0 keeps it forever (default: ${DEFAULT-VALUE}).")
    String persistentClientExpiration = "7d";

    @Option(names = "--log-level", paramLabel = "LEVEL",
        description = "error, warn, info or debug (default: ${DEFAULT-VALUE}).")
    String logLevel = "info";

    @Option(names = "--log-format", paramLabel = "FORMAT",
        description = "text, or json for one JSON object per line (default: ${DEFAULT-VALUE}).")
    String logFormat = "text";

    @Option(names = "--sys-interval", paramLabel = "DURATION",
        description = "How often the $SYS tree is published, retained (Mosquitto's topics); 0 turns it off "
            + "(default: ${DEFAULT-VALUE}).")
    String sysInterval = "10s";

    @Option(names = "--warmup", paramLabel = "N",
        description = "Loopback connections driven through the broker's own accept, CONNECT, SUBSCRIBE, PUBLISH and "
            + "DISCONNECT paths at start, before its listeners accept, so the first clients meet compiled code; they "
            + "leave no session, message or count behind. 0 turns it off (default: ${DEFAULT-VALUE}).")
    int warmup = Warmup.DEFAULT_CONNECTIONS;

    @Option(names = "--max-sessions", paramLabel = "N",
        description = "Sessions held at once, online or offline; a CONNECT that would create one more is refused "
            + "(default: ${DEFAULT-VALUE}).")
    int maxSessions = DEFAULTS.maxSessions();

    @Option(names = "--slot-inline-bytes", paramLabel = "BYTES",
        description = "Packet bytes kept inside an ingress ring slot; larger packets go to the I/O agent's "
            + "message log (default: ${DEFAULT-VALUE}).")
    int slotInlineBytes = DEFAULTS.slotInlineBytes();

    @Option(names = "--message-log-bytes", paramLabel = "BYTES",
        description = "Off-heap message log per I/O agent, a power of two (default: 16 MiB, or room for two "
            + "packets of --max-packet-size).")
    int messageLogBytes = DEFAULTS.messageLogBytes();

    @Option(names = "--outbound-ring-bytes", paramLabel = "BYTES",
        description = "Off-heap outbound ring per I/O agent (the delivery shards' bytes for its sockets), a power of "
            + "two of at least 8 x (--max-packet-size + 64) (default: 16 MiB, or what --max-packet-size needs).")
    int outboundRingBytes = DEFAULTS.outboundRingBytes();

    @Option(names = "--stage-batch-limit", paramLabel = "N",
        description = "Events a stage handles per duty cycle before others get the thread (default: ${DEFAULT-VALUE}).")
    int stageBatchLimit = DEFAULTS.stageBatchLimit();
    @Option(names = "--counters-dir", paramLabel = "DIR",
        description = "Where the counters file that 'ringmq stat' reads is kept (default: /dev/shm/ringmq, or "
            + "ringmq under java.io.tmpdir where there is no /dev/shm).")
    Path countersDir;

    // the Prometheus endpoint
    @Option(names = "--metrics-port", paramLabel = "PORT",
        description = "Serve /metrics (Prometheus text format: the broker's counters and JVM metrics) and /health "
            + "over HTTP on this port; 0 = off (default: ${DEFAULT-VALUE}).")
    int metricsPort = 0;

    @Option(names = "--metrics-bind", paramLabel = "ADDRESS",
        description = "Address the metrics endpoint listens on (default: ${DEFAULT-VALUE}).")
    String metricsBind = "127.0.0.1";

    // the network edge's limits
    @Option(names = "--max-connect-size", paramLabel = "BYTES",
        description = "Largest first packet (a CONNECT) before a client has connected, judged from its fixed header "
            + "(default: ${DEFAULT-VALUE}).")
    int maxConnectSize = 64 * 1024;

    @Option(names = "--max-connections-per-address", paramLabel = "N",
        description = "Connections held at once from one remote address; loopback is exempt unless "
            + "--limit-loopback (default: ${DEFAULT-VALUE}).")
    int maxConnectionsPerAddress = 1_000;

    @Option(names = "--limit-loopback", description = "Apply --max-connections-per-address to loopback too.")
    boolean limitLoopback;

    @Option(names = "--memory-budget", paramLabel = "BYTES",
        description = "Memory in use (pooled buffers + JVM heap) past which new connections are refused and QoS 0 "
            + "to subscribers is shed; 0 = 3/4 of max heap + max direct memory (default: ${DEFAULT-VALUE}).")
    long memoryBudget = BrokerContext.AUTO;

    @Option(names = "--max-topic-levels", paramLabel = "N",
        description = "Most levels in a PUBLISH topic; more closes the connection (default: ${DEFAULT-VALUE}).")
    int maxTopicLevels = 128;

    @Option(names = "--max-topic-length", paramLabel = "BYTES",
        description = "Longest PUBLISH topic; longer closes the connection (default: ${DEFAULT-VALUE}).")
    int maxTopicLength = 65_535;

    @Option(names = "--max-keepalive", paramLabel = "SECONDS",
        description = "Longest keep-alive a client may ask for; longer (or 0) is cut to it, and MQTT 5.0 clients "
            + "are told (server keep alive) (default: ${DEFAULT-VALUE}).")
    int maxKeepAlive = 65_535;

    @Option(names = "--topic-alias-maximum", paramLabel = "N",
        description = "Topic aliases an MQTT 5.0 client may use toward the broker; 0 = none (default: "
            + "${DEFAULT-VALUE}).")
    int topicAliasMaximum = 64;

    @Option(names = "--receive-maximum", paramLabel = "N",
        description = "Unacknowledged QoS 1/2 PUBLISHes an MQTT 5.0 client may send the broker at once; one more "
            + "is a protocol error, DISCONNECT 0x93 (default: ${DEFAULT-VALUE}).")
    int receiveMaximum = 1_024;

    @Option(names = "--persistence", paramLabel = "KIND",
        description = "rocksdb: persistent sessions, their QoS 1/2 messages and retained messages survive a restart "
            + "or a crash, under --data-dir; memory: nothing is kept (Mosquitto's 'persistence true|false' works "
            + "too) (default: ${DEFAULT-VALUE}).")
    String persistence = "rocksdb";

    @Option(names = {"--data-dir", "--persistence_location"}, paramLabel = "DIR",
        description = "Where the store lives; one broker per directory (default: ${DEFAULT-VALUE}).")
    Path dataDir = Path.of("data");

    @Option(names = "--durability", paramLabel = "MODE",
        description = "sync: fsync every group commit (nothing acknowledged is lost, even by a power cut); "
            + "periodic: fsync every --fsync-interval (a power cut loses at most that window); none: the OS "
            + "writes back when it will. In every mode a crash of the broker process loses nothing acknowledged "
            + "(default: ${DEFAULT-VALUE}).")
    String durability = "periodic";

    @Option(names = "--fsync-interval", paramLabel = "DURATION",
        description = "How often --durability periodic fsyncs (default: ${DEFAULT-VALUE}).")
    String fsyncInterval = "10ms";

    @Option(names = "--strict-recovery",
        description = "Refuse to start when the store is damaged, instead of starting with what could be recovered.")
    boolean strictRecovery;

    @Option(names = "--persistence-cache", paramLabel = "BYTES",
        description = "The store's block cache (default: ${DEFAULT-VALUE}).")
    long persistenceCache = DEFAULTS.persistenceCacheBytes();

    @Option(names = "--persistence-write-buffers", paramLabel = "BYTES",
        description = "The store's memtables, all together (default: ${DEFAULT-VALUE}).")
    long persistenceWriteBuffers = DEFAULTS.persistenceWriteBufferBytes();

    @Option(names = "--shared-subscription-strategy", paramLabel = "NAME",
        description = "How a $share group picks its member: round-robin, random, sticky, hash-client, hash-topic, "
            + "least-loaded (default: ${DEFAULT-VALUE}).")
    String sharedSubscriptionStrategy = "round-robin";

    public Integer call() throws Exception
    {
        final BrokerContext context;
        try
        {
            Logging.configure(logLevel, logFormat);
            context = context().conclude();
            new CorePinning(context.pin());
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 2;
        }
        final SignalReloads running = new SignalReloads(originalArgs);
        final boolean reloads = running.onSighup(); // before the broker starts: a signal is handled
        final Broker broker;
        try
        {
            broker = Broker.launch(context);
            running.started(broker);
            broker.counters().set(BrokerCounters.RELOAD_READY, reloads ? 1 : 0); // ringmq reload may signal it
        }
        catch (final IOException | IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 1;
        }
        catch (final OutOfMemoryError ex)
        {
            System.err.println("ringmq: " + outOfMemoryAtStart(ex));
            return 1;
        }
        broker.onFatalError(error ->
        {
            System.err.println("ringmq: fatal error, exiting: " + error);
            System.exit(70); // EX_SOFTWARE: the shutdown hook closes the broker; a supervisor restarts it
        });
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            watchStop(stopped);
            broker.close(); // connections closed, stages stopped, the store synced, recorded clean, closed
            // java.util.logging may already be shut down by its own hook: print to the console directly
            System.out.println("ringmq stopped; counters:");
            System.out.print(broker.counters().describe(false));
            System.out.flush();
            stopped.countDown();
        }, "ringmq-shutdown"));
        if (null != broker.recovered())
        {
            System.out.println(broker.recovered());
        }
        System.out.println("ringmq " + Version.VERSION + " listening on " + String.join(", ", broker.listenerNames()));
        stopped.await();
        return 0;
    }

    /**
     * Bounds a clean stop (SIGTERM): a close that has not finished within {@link #STOP_BOUND_MS} halts the process,
     * rather than leave a supervisor waiting. What was acknowledged is in RocksDB's write-ahead log by then in every
     * durability mode (written before the acknowledgement left), so the next start recovers it.
     */
    private static void watchStop(final CountDownLatch stopped)
    {
        final Thread watchdog = new Thread(() ->
        {
            try
            {
                if (!stopped.await(STOP_BOUND_MS, java.util.concurrent.TimeUnit.MILLISECONDS))
                {
                    System.err.println("ringmq: the stop did not finish within " + STOP_BOUND_MS + " ms; halting");
                    Runtime.getRuntime().halt(1);
                }
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }, "ringmq-stop-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /** How long a clean stop may take before the process halts. */
    static final long STOP_BOUND_MS = 30_000;

    /**
     * @return the password of --user from --pass, --pass-file or --pass-env (at most one), or null.
     */
    String password()
    {
        final int given = (null != pass ? 1 : 0) + (null != passFile ? 1 : 0) + (null != passEnv ? 1 : 0);
        if (given > 1)
        {
            throw new IllegalArgumentException("--pass, --pass-file and --pass-env exclude each other");
        }
        if (null != passFile)
        {
            try
            {
                final java.util.List<String> lines = java.nio.file.Files.readAllLines(passFile, StandardCharsets.UTF_8);
                if (lines.isEmpty() || lines.get(0).isEmpty())
                {
                    throw new IllegalArgumentException("--pass-file " + passFile + " is empty");
                }
                return lines.get(0);
            }
            catch (final IOException ex)
            {
                throw new IllegalArgumentException("--pass-file: cannot read " + passFile + ": " + ex.getMessage());
            }
        }
        if (null != passEnv)
        {
            final String value = System.getenv(passEnv);
            if (null == value || value.isEmpty())
            {
                throw new IllegalArgumentException("--pass-env: " + passEnv + " is not set");
            }
            return value;
        }
        return pass;
    }

    private void credentialSettings(final CredentialSettings settings)
    {
        if (null != authThreads)
        {
            settings.threads(authThreads);
        }
        if (null != authQueue)
        {
            settings.queueLength(authQueue);
        }
        if (null != authMaxFailures)
        {
            settings.maxFailures(authMaxFailures);
        }
        if (null != authFailureWindow)
        {
            settings.failureWindowMs(OptionValues.parseLongDurationMs(authFailureWindow));
        }
        settings.backoff(null == authBackoff ? settings.backoffMs() : OptionValues.parseLongDurationMs(authBackoff),
            null == authBackoffMax ? settings.backoffMaxMs() : OptionValues.parseLongDurationMs(authBackoffMax));
        if (null != authTrackedAddresses)
        {
            settings.trackedAddresses(authTrackedAddresses);
        }
        if (null != authCacheSize)
        {
            settings.cacheSize(authCacheSize);
        }
        settings.exemptLoopback(authExemptLoopback);
    }

    BrokerContext context()
    {
        final BrokerContext context = new BrokerContext()
            .bindAddress(null == bind ? "0.0.0.0" : bind)
            .port(null == port ? 1883 : port)
            .idleStrategy(idleStrategy)
            .pin(pin)
            .ringSize(ringSize)
            .maxConnections(maxConnections)
            .maxInflight(maxInflight)
            .maxQueued(maxQueued)
            .maxPacketSize(maxPacketSize)
            .connectTimeoutMs(OptionValues.parseDurationMs(connectTimeout))
            .maxClientIdLength(maxClientIdLength)
            .maxSubscriptionsPerClient(maxSubscriptionsPerClient)
            .maxQueuedBytes(maxQueuedBytes)
            .maxMessageMemory(maxMessageMemory)
            .maxSessionMemory(maxSessionMemory)
            .maxClientSessionMemory(maxClientSessionMemory)
            .maxRetained(maxRetainedMessages, maxRetainedBytes)
            .persistentClientExpirationMs(OptionValues.parseLongDurationMs(persistentClientExpiration))
            .maxSessions(maxSessions)
            .sysIntervalMs(OptionValues.parseLongDurationMs(sysInterval))
            .warmupConnections(warmup)
            .slotInlineBytes(slotInlineBytes)
            .messageLogBytes(messageLogBytes)
            .outboundRingBytes(outboundRingBytes)
            .stageBatchLimit(stageBatchLimit)
            .anonymous(OptionValues.parseEnum(Authenticator.AnonymousPolicy.class, anonymous, "--anonymous"))
            .credentials(user, password())
            .passwordFile(passwordFile)
            .aclFile(aclFile)
            .useUserNameAsClientId(useUserNameAsClientId)
            .countersDir(countersDir)
            .metricsEndpoint(metricsBind, metricsPort)
            .maxConnectSize(maxConnectSize)
            .maxConnectionsPerAddress(maxConnectionsPerAddress)
            .limitLoopback(limitLoopback)
            .memoryBudgetBytes(memoryBudget)
            .maxTopicLevels(maxTopicLevels)
            .maxTopicLength(maxTopicLength)
            .maxKeepAliveSeconds(maxKeepAlive)
            .topicAliasMaximum(topicAliasMaximum)
            .receiveMaximum(receiveMaximum)
            .sharedSubscriptionStrategy(sharedSubscriptionStrategy)
            .persistent(parsePersistence(persistence))
            .dataDir(dataDir)
            .durability(OptionValues.parseEnum(io.ringmq.pipeline.persistence.Durability.class, durability, "--durability"),
                OptionValues.parseLongDurationMs(fsyncInterval))
            .strictRecovery(strictRecovery)
            .persistenceMemory(persistenceCache, persistenceWriteBuffers);
        listeners(context);
        credentialSettings(context.credentialSettings());
        if (null != threading)
        {
            context.threading(OptionValues.parseEnum(BrokerContext.Threading.class, threading, "--threading"));
            if (context.threading() == BrokerContext.Threading.INVOKER)
            {
                throw new IllegalArgumentException("--threading invoker runs no thread: it is for embedding tests");
            }
        }
        if (null != ioThreads)
        {
            context.ioThreads(ioThreads);
        }
        if (null != routeShards)
        {
            context.routeShards(routeShards);
        }
        if (!List.of("wake", "busy-spin", "yield", "backoff").contains(idleStrategy))
        {
            throw new IllegalArgumentException("--idle-strategy must be wake, busy-spin, yield or backoff");
        }
        return context;
    }

    /**
     * @return true for rocksdb (or Mosquitto's {@code persistence true}), false for memory (or {@code false}).
     */
    static boolean parsePersistence(final String text)
    {
        switch (text.strip().toLowerCase(Locale.ROOT))
        {
            case "rocksdb":
            case "true":
                return true;
            case "memory":
            case "false":
                return false;
            default:
                throw new IllegalArgumentException("--persistence must be rocksdb or memory (or true/false): '" +
                    text + "'");
        }
    }

    /**
     * The listeners: the default one (kept unless listeners are given and neither --port nor --bind is, as
     * Mosquitto does), the config file's {@code listener} sections, then {@code --listener}.
     */
    private void listeners(final BrokerContext context)
    {
        final List<ListenerSettings> extra = new ArrayList<>();
        if (null != fromFile)
        {
            for (final String[] directive : fromFile.defaultListener)
            {
                ConfigFile.applyListener(context.defaultListener(), directive[0], directive[1], directive[2]);
            }
            extra.addAll(fromFile.listeners);
        }
        for (final String spec : listenerSpecs)
        {
            extra.add(ConfigFile.parseListener(spec));
        }
        extra.forEach(context::addListener);
        context.hasDefaultListener(extra.isEmpty() || null != port || null != bind);
    }

    /**
     * Reads the command line and its config file again, as at start: what a reload applies.
     */
    static BrokerContext rereadContext(final String[] args) throws IOException
    {
        return reread(args).context().conclude();
    }

    /**
     * Reads the command line and its config file again into a fresh {@code Main} (its log level is not in the
     * context).
     */
    static Main reread(final String[] args) throws IOException
    {
        final Options options = withConfigFile(args);
        final Main main = new Main();
        final CommandLine commandLine = new CommandLine(main);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.setAllowSubcommandsAsOptionParameters(true);
        try
        {
            commandLine.parseArgs(options.args());
        }
        catch (final CommandLine.ParameterException ex)
        {
            throw new IllegalArgumentException(ex.getMessage(), ex);
        }
        main.fromFile = options.fromFile();
        return main;
    }

    /**
     * A command line with its config file read: the file's options first, so the command line wins.
     */
    record Options(String[] args, ConfigFile.Parsed fromFile)
    {
    }

    /**
     * Reads the config file {@code -c} names, if any.
     */
    static Options withConfigFile(final String[] args) throws IOException
    {
        Path file = null;
        for (int i = 0; i < args.length; i++)
        {
            if ((args[i].equals("-c") || args[i].equals("--config")) && i + 1 < args.length)
            {
                file = Path.of(args[i + 1]);
            }
            else if (args[i].startsWith("--config="))
            {
                file = Path.of(args[i].substring("--config=".length()));
            }
        }
        if (null == file)
        {
            return new Options(args, null);
        }
        final CommandLine.Model.CommandSpec spec = new CommandLine(new Main()).getCommandSpec();
        final ConfigFile.Parsed parsed = ConfigFile.read(file, name -> null != spec.findOption("--" + name));
        final List<String> merged = new ArrayList<>(parsed.args);
        merged.addAll(List.of(args));
        return new Options(merged.toArray(new String[0]), parsed);
    }

    public static void main(final String[] args)
    {
        System.exit(run(args));
    }

    /**
     * @return what to tell the user when the broker runs out of memory while it starts: the heap (the store's sessions
     * and messages are recovered into it), or the direct memory the rings and message logs are mapped from.
     */
    static String outOfMemoryAtStart(final OutOfMemoryError error)
    {
        final String why = String.valueOf(error.getMessage());
        if (why.contains("Java heap space") || why.contains("GC overhead"))
        {
            return "not enough heap to start (" + why + "): the persistent sessions and messages recovered from " +
                "--data-dir, and the limits' structures, live on the heap: raise -Xmx (bin/ringmq: --memory-limit)";
        }
        return "not enough memory for the rings and message logs (" + why + "): lower --max-packet-size, " +
            "--io-threads or --message-log-bytes, or raise -XX:MaxDirectMemorySize";
    }

    /**
     * Runs the command line; returns the exit code (0 ok, 1 failed to start, 2 bad options).
     */
    public static int run(final String... args)
    {
        quietNettyEvents();
        final Main main = new Main();
        final CommandLine commandLine = new CommandLine(main);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.setAllowSubcommandsAsOptionParameters(true); // --password-file passwd: a file, not the subcommand
        commandLine.setExecutionExceptionHandler((ex, cmd, parseResult) ->
        {
            cmd.getErr().println("ringmq: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        try
        {
            final Options options = withConfigFile(args);
            main.fromFile = options.fromFile();
            main.originalArgs = args.clone();
            if (null != options.fromFile())
            {
                options.fromFile().warnings.forEach(warning -> System.err.println("ringmq: warning: " + warning));
            }
            return commandLine.execute(options.args());
        }
        catch (final IOException | IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 2;
        }
    }

    /**
     * Turns off netty's JFR allocation events unless {@code -Dio.netty.jfr.enabled} says otherwise: their first
     * chunk allocation registers them with JFR, which loads and initialises JFR's metadata (about 80 classes, 0.25 to
     * 0.4 s on a loaded 2-core machine) on an I/O thread, in front of the first connection, recording or not.
     * JFR's own events (CPU, allocation, locks) are not affected; docs/perf/README.md says how to profile.
     */
    static void quietNettyEvents()
    {
        if (null == System.getProperty("io.netty.jfr.enabled"))
        {
            System.setProperty("io.netty.jfr.enabled", "false");
        }
    }

    /**
     * The version, from the jar manifest when there is one.
     */
    static final class Version implements CommandLine.IVersionProvider
    {
        static final String VERSION = null != Main.class.getPackage().getImplementationVersion() ?
            Main.class.getPackage().getImplementationVersion() : "0.1.0-SNAPSHOT";

        public String[] getVersion()
        {
            return new String[]{"ringmq " + VERSION, "Java " + System.getProperty("java.version")};
        }
    }
}
