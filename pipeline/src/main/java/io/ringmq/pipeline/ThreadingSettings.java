package io.ringmq.pipeline;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * How the broker's work maps onto threads, a part of {@link BrokerContext} (the {@code --threading},
 * {@code --io-threads}, {@code --route-shards}, {@code --idle-strategy}, {@code --pin}, {@code --tls-threads},
 * {@code --warmup} and {@code --stage-batch-limit} flags): defaults chosen by the core count, each fixed at start.
 */
public final class ThreadingSettings
{
    private static final int CORES = Runtime.getRuntime().availableProcessors();

    private BrokerContext.Threading threading = defaultThreading(CORES);
    /** Set by {@code --io-threads}; else {@link #defaultIoThreads} of the threading and the cores. */
    private int ioThreads;
    private boolean ioThreadsSet;
    private int routeShards = 1;
    private String idleStrategy = "wake";
    private String pin = "";
    /** Threads of the TLS handshake pool (key exchanges, signatures, certificate checks). */
    private int tlsThreads = Math.max(1, Math.min(4, CORES / 4));
    /** Loopback connections driven through the broker before its listeners accept; 0 (embedded, tests): none. */
    private int warmupConnections = 0;
    private int stageBatchLimit = 1_024;

    /**
     * Checks these settings; one I/O agent where everything shares a thread.
     *
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    ThreadingSettings conclude()
    {
        check(!ioThreadsSet || ioThreads >= 1 && ioThreads <= 256, "--io-threads must be 1..256");
        check(routeShards >= 1 && routeShards <= 64, "--route-shards must be 1..64");
        check(warmupConnections >= 0 && warmupConnections <= 1_000_000, "--warmup must be 0..1000000");
        check(stageBatchLimit >= 1, "--stage-batch-limit must be positive");
        check(tlsThreads >= 1 && tlsThreads <= 256, "--tls-threads must be 1..256");
        ioThreads = ioThreads();
        ioThreadsSet = true;
        return this;
    }

    public BrokerContext.Threading threading()
    {
        return threading;
    }

    public ThreadingSettings threading(final BrokerContext.Threading threading)
    {
        this.threading = threading;
        return this;
    }

    /**
     * @return I/O agents, each with its delivery shard (1 in {@code shared} and {@code invoker} threading, once
     * concluded).
     */
    public int ioThreads()
    {
        if (threading == BrokerContext.Threading.SHARED || threading == BrokerContext.Threading.INVOKER)
        {
            return 1;
        }
        return ioThreadsSet ? ioThreads : defaultIoThreads(threading, CORES);
    }

    public ThreadingSettings ioThreads(final int ioThreads)
    {
        this.ioThreads = ioThreads;
        this.ioThreadsSet = true;
        return this;
    }

    /**
     * The threading when {@code --threading} is not given: one thread on 2 cores (a small box whose clients share its
     * cores); I/O agents beside one stage thread up to 7; a thread per stage and per delivery shard from 8 (bin/ringmq
     * picks by the same rule). On a 16-core machine (docs/perf/scaling.md), a fan-out on 4 cores in
     * {@code shared-network} ran 7.6-8.0 M deliveries/s with its one stage thread busy throughout, and 8 cores in
     * {@code dedicated} 16.6-17.3 M.
     */
    static BrokerContext.Threading defaultThreading(final int cores)
    {
        return cores <= 2 ? BrokerContext.Threading.SHARED :
            cores < 8 ? BrokerContext.Threading.SHARED_NETWORK : BrokerContext.Threading.DEDICATED;
    }

    /**
     * I/O agents when {@code --io-threads} is not given, in both threadings that have several: half the cores up to 4,
     * then a quarter of them, at most 16 (each agent has its delivery shard; bin/ringmq sizes memory by the same
     * rule). Measured on a 16-core machine (docs/perf/scaling.md): one I/O agent fanned out about 3.5 M
     * deliveries/s whatever the cores around it (3.45 M in {@code dedicated} threading on 4 cores, 3.58 M in
     * {@code shared-network} on 2), 2 agents 7.6-8.0 M on 4 cores; QoS 0 ingest on 8 cores in {@code dedicated}
     * threading ran 2.7 M msg/s with 2 agents and 4.2-4.9 M with 4.
     *
     * @return 1 in {@code shared} and {@code invoker}; else between 1 and 16.
     */
    static int defaultIoThreads(final BrokerContext.Threading threading, final int cores)
    {
        if (threading == BrokerContext.Threading.SHARED || threading == BrokerContext.Threading.INVOKER)
        {
            return 1;
        }
        return Math.max(1, Math.min(16, Math.max(cores / 4, Math.min(4, cores / 2))));
    }

    /**
     * @return routing stages that split the PUBLISHes between them by topic, each holding a replica of the sessions
     * and subscriptions (1: one routing stage, as always).
     */
    public int routeShards()
    {
        return routeShards;
    }

    public ThreadingSettings routeShards(final int routeShards)
    {
        this.routeShards = routeShards;
        return this;
    }

    public String idleStrategy()
    {
        return idleStrategy;
    }

    public ThreadingSettings idleStrategy(final String idleStrategy)
    {
        this.idleStrategy = idleStrategy;
        return this;
    }

    public String pin()
    {
        return pin;
    }

    public ThreadingSettings pin(final String pin)
    {
        this.pin = null == pin ? "" : pin;
        return this;
    }

    public int tlsThreads()
    {
        return tlsThreads;
    }

    public ThreadingSettings tlsThreads(final int tlsThreads)
    {
        this.tlsThreads = tlsThreads;
        return this;
    }

    /**
     * @return how many loopback connections the broker drives through its own paths at start, before its listeners
     * accept (loading classes and compiling the connect path ahead of the first clients); 0: none.
     */
    public int warmupConnections()
    {
        return warmupConnections;
    }

    public ThreadingSettings warmupConnections(final int warmupConnections)
    {
        this.warmupConnections = warmupConnections;
        return this;
    }

    public int stageBatchLimit()
    {
        return stageBatchLimit;
    }

    /**
     * @return the most events a stage handles in one turn on its thread, in batches of at most
     * {@link #stageBatchLimit()} (each batch ends with the stage's flush and commit). In {@code shared} threading
     * the ring's size, up to four batches: the stages and the one I/O agent take turns on one thread, and the agent
     * cannot hand on more in a turn than the ring holds, so with a ring of up to four batches (2,048 slots at
     * bin/ringmq's 256m) the stages drain in their turn what it read in its own. A turn of one batch left the ring
     * full from one cycle to the next under a flood, and the agent paused and resumed the reading of about half its
     * publishers in every cycle (docs/perf/2026-12-04-shared-batch-limit.md). Four batches bound how long the agent's
     * timers, accepts and other clients' reads wait behind a flood on a larger ring. Elsewhere one batch: a stage
     * thread of its own, or a thread the stages alone share, drains the ring over several turns while the I/O agents
     * go on reading on theirs; invoker threading (tests) keeps the one batch its stepped tests count on.
     */
    public int stageTurnLimit(final int ringSize)
    {
        if (threading != BrokerContext.Threading.SHARED)
        {
            return stageBatchLimit;
        }
        return (int)Math.max(stageBatchLimit, Math.min(ringSize, 4L * stageBatchLimit));
    }

    public ThreadingSettings stageBatchLimit(final int stageBatchLimit)
    {
        this.stageBatchLimit = stageBatchLimit;
        return this;
    }

    @Override
    public String toString()
    {
        return "threading=" + threading.name().toLowerCase().replace('_', '-') + " io-threads=" + ioThreads() +
            (routeShards == 1 ? "" : " route-shards=" + routeShards) + " idle-strategy=" + idleStrategy +
            (pin.isEmpty() ? "" : " pin=" + pin);
    }
}
