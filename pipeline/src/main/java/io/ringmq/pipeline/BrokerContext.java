package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;

/**
 * Every setting of a broker, with its default in one place. The command line fills it; {@link #conclude()}
 * validates it once before anything starts, and {@link #toString()} prints it at start.
 */
public final class BrokerContext
{
    /** How agents are mapped onto threads. */
    public enum Threading
    {
        /** Every I/O agent and every stage on its own thread (many cores). */
        DEDICATED,
        /** I/O agents on their own threads, all stages in one (4 to 8 cores). */
        SHARED_NETWORK,
        /** Everything on one thread (2 cores, and tests). */
        SHARED
    }

    private String bindAddress = "0.0.0.0";
    private int port = 1883;
    private int ioThreads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 4));
    private Threading threading = Runtime.getRuntime().availableProcessors() <= 2 ? Threading.SHARED :
        Runtime.getRuntime().availableProcessors() <= 8 ? Threading.SHARED_NETWORK : Threading.DEDICATED;
    private String idleStrategy = "wake";
    private String pin = "";
    private int ringSize = 16_384;
    private int outboundRingBytes = 16 * 1024 * 1024;
    private int maxConnections = 100_000;
    private int maxInflight = 32;
    private int maxQueued = 1_000;
    private int maxPacketSize = 1024 * 1024;
    private int connectTimeoutMs = 10_000;
    private int outboundHighWaterBytes = 1024 * 1024;
    private int acceptBacklog = 4_096;
    private Authenticator.AnonymousPolicy anonymous = Authenticator.AnonymousPolicy.LOOPBACK;
    private String user;
    private String password;
    private Path passwordFile;
    // the network edge's limits (transport)
    private int maxConnectSize = 64 * 1024;
    private int maxConnectionsPerAddress = 1_000;
    private boolean limitLoopback;
    private long memoryBudgetBytes = AUTO;
    private int maxTopicLevels = 128;
    private int maxTopicLength = 65_535;

    /** {@link #memoryBudgetBytes(long)}: let the transport size the budget from the JVM's limits. */
    public static final long AUTO = 0;

    /**
     * Checks every setting; call once before starting.
     *
     * @return this.
     * @throws IllegalArgumentException with a one-line reason.
     */
    public BrokerContext conclude()
    {
        check(port >= 0 && port <= 65_535, "--port must be 0..65535");
        check(ioThreads >= 1 && ioThreads <= 256, "--io-threads must be 1..256");
        check(ringSize >= 64 && Integer.bitCount(ringSize) == 1, "--ring-size must be a power of two >= 64");
        check(maxConnections >= 1, "--max-connections must be positive");
        check(maxInflight >= 1 && maxInflight <= 65_535, "--max-inflight must be 1..65535");
        check(maxQueued >= 0, "--max-queued must be >= 0");
        check(maxPacketSize >= 64 && maxPacketSize <= 268_435_460, "--max-packet-size must be 64..268435460");
        check(connectTimeoutMs >= 100, "--connect-timeout must be at least 100 ms");
        check((null == user) == (null == password), "--user and --pass go together");
        check(Integer.bitCount(outboundRingBytes) == 1, "outbound ring size must be a power of two");
        check(maxConnectSize >= 64, "--max-connect-size must be at least 64");
        check(maxConnectionsPerAddress >= 1, "--max-connections-per-address must be positive");
        check(memoryBudgetBytes == AUTO || memoryBudgetBytes >= 1024 * 1024,
            "--memory-budget must be at least 1 MiB (or 0 for auto)");
        check(maxTopicLevels >= 1, "--max-topic-levels must be positive");
        check(maxTopicLength >= 1 && maxTopicLength <= 65_535, "--max-topic-length must be 1..65535");
        try
        {
            InetAddress.getByName(bindAddress);
        }
        catch (final UnknownHostException ex)
        {
            throw new IllegalArgumentException("--bind: unknown address " + bindAddress);
        }
        if (threading == Threading.SHARED)
        {
            ioThreads = 1;
        }
        return this;
    }

    private static void check(final boolean condition, final String message)
    {
        if (!condition)
        {
            throw new IllegalArgumentException(message);
        }
    }

    public String toString()
    {
        return "bind=" + bindAddress + ":" + port + " threading=" + threading.name().toLowerCase().replace('_', '-') +
            " io-threads=" + ioThreads + " idle-strategy=" + idleStrategy + (pin.isEmpty() ? "" : " pin=" + pin) +
            " ring-size=" + ringSize + " max-connections=" + maxConnections + " max-inflight=" + maxInflight +
            " max-queued=" + maxQueued + " max-packet-size=" + maxPacketSize + " connect-timeout=" +
            connectTimeoutMs + "ms anonymous=" + anonymous.name().toLowerCase() +
            (null != user ? " user=" + user : "") + (null != passwordFile ? " password-file=" + passwordFile : "") +
            " max-connect-size=" + maxConnectSize + " max-connections-per-address=" + maxConnectionsPerAddress +
            (limitLoopback ? " limit-loopback" : "") + " memory-budget=" +
            (memoryBudgetBytes == AUTO ? "auto" : String.valueOf(memoryBudgetBytes)) + " max-topic-levels=" +
            maxTopicLevels + " max-topic-length=" + maxTopicLength;
    }

    public String bindAddress()
    {
        return bindAddress;
    }

    public BrokerContext bindAddress(final String bindAddress)
    {
        this.bindAddress = bindAddress;
        return this;
    }

    public int port()
    {
        return port;
    }

    public BrokerContext port(final int port)
    {
        this.port = port;
        return this;
    }

    public int ioThreads()
    {
        return ioThreads;
    }

    public BrokerContext ioThreads(final int ioThreads)
    {
        this.ioThreads = ioThreads;
        return this;
    }

    public Threading threading()
    {
        return threading;
    }

    public BrokerContext threading(final Threading threading)
    {
        this.threading = threading;
        return this;
    }

    public String idleStrategy()
    {
        return idleStrategy;
    }

    public BrokerContext idleStrategy(final String idleStrategy)
    {
        this.idleStrategy = idleStrategy;
        return this;
    }

    public String pin()
    {
        return pin;
    }

    public BrokerContext pin(final String pin)
    {
        this.pin = null == pin ? "" : pin;
        return this;
    }

    public int ringSize()
    {
        return ringSize;
    }

    public BrokerContext ringSize(final int ringSize)
    {
        this.ringSize = ringSize;
        return this;
    }

    public int outboundRingBytes()
    {
        return outboundRingBytes;
    }

    public BrokerContext outboundRingBytes(final int outboundRingBytes)
    {
        this.outboundRingBytes = outboundRingBytes;
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
     * @return the memory in use past which new connections are refused and QoS 0 is shed, or {@link #AUTO}.
     */
    public long memoryBudgetBytes()
    {
        return memoryBudgetBytes;
    }

    public BrokerContext memoryBudgetBytes(final long memoryBudgetBytes)
    {
        this.memoryBudgetBytes = memoryBudgetBytes;
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
}
