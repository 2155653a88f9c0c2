package io.ringmq.transport;

import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import io.netty.util.internal.PlatformDependent;
import io.ringmq.pipeline.BrokerContext;

/**
 * {@code --memory-budget}: an estimate of the memory in use, past which an I/O agent refuses new connections
 * and sheds QoS 0 PUBLISHes to subscribers (each counted) until it is back under. The estimate is the pooled
 * allocator's used memory (the connection buffers, direct) plus the JVM heap in use, sampled at most every
 * {@value #SAMPLE_INTERVAL_MS} ms on the agent's own thread, never per message.
 * <p>
 * The default ({@link BrokerContext#AUTO}) is three quarters of what the JVM may hold: its maximum heap plus its
 * maximum direct memory. A fixed number cannot suit both a 2-core box with a 512 MiB heap and a 28-core box with
 * 32 GiB; heap "in use" includes garbage not yet collected, so the budget leaves a quarter of headroom for the
 * collector to catch up before new work is turned away, and shedding starts well before an
 * {@link OutOfMemoryError} would.
 * <p>
 * That sum cannot see the heap fill on its own when direct memory is the larger part: under {@code bin/ringmq}'s
 * 256m the budget was 101 MiB (98 MiB in shared threading since its 4 MiB message log) and the heap 64 MiB, so
 * 8,676 TLS connections (about 8 KB of heap each in the JDK's {@code SSLEngine}) ran the heap out while the
 * estimate stayed under it. So the budget is also over while the old
 * generation, as its last collection left it, holds more than three quarters of its maximum
 * ({@link #heapPressure()}: that pool's usage after its last collection, read once per sample while the heap in use
 * is past half its maximum): what the
 * collector could not free is live, and new connections would only add to it. That reading is as old as the last
 * collection of the old generation, which a quiet broker may not run for a long time after its clients left: so
 * while it says "over", a full collection is asked for ({@link System#gc()}) at most every
 * {@value #COLLECT_INTERVAL_MS} ms by all agents of the JVM together, and the reading taken again; on a heap this
 * budget watches (tens of MiB) that is a pause of milliseconds, and only while near the limit.
 */
final class MemoryBudget
{
    static final long SAMPLE_INTERVAL_MS = 100;
    /** The least time between two collections asked for while the live heap reads past its share. */
    static final long COLLECT_INTERVAL_MS = 5_000;
    private static final java.util.concurrent.atomic.AtomicLong LAST_COLLECT_MS =
        new java.util.concurrent.atomic.AtomicLong(Long.MIN_VALUE / 2);

    private long budgetBytes;
    private final PooledByteBufAllocatorMetric pooled = PooledByteBufAllocator.DEFAULT.metric();
    private final Runtime runtime = Runtime.getRuntime();
    private long nextSampleMs = Long.MIN_VALUE;
    private long usedBytes;
    private boolean over;
    private final java.util.function.BooleanSupplier heapPressure;
    private final Runnable collect;

    MemoryBudget(final long configuredBytes)
    {
        this(configuredBytes, heapPressure(), System::gc);
    }

    /**
     * @param heapPressure whether the live heap is past its share after the last collection (tests give their own).
     * @param collect      asks for a collection, so that the reading is fresh (tests give their own).
     */
    MemoryBudget(final long configuredBytes, final java.util.function.BooleanSupplier heapPressure,
        final Runnable collect)
    {
        this.heapPressure = heapPressure;
        this.collect = collect;
        budget(configuredBytes);
    }

    /**
     * @return whether the live heap is past its share, after a fresh collection when the last one asked for is
     * {@value #COLLECT_INTERVAL_MS} ms old.
     */
    private boolean heapOver(final long nowMs)
    {
        if (!heapPressure.getAsBoolean())
        {
            return false;
        }
        final long last = LAST_COLLECT_MS.get();
        if (nowMs - last >= COLLECT_INTERVAL_MS && LAST_COLLECT_MS.compareAndSet(last, nowMs))
        {
            collect.run(); // the reading may be from before the clients that held it left
            return heapPressure.getAsBoolean();
        }
        return true;
    }

    /**
     * @return whether the old generation held more than three quarters of its maximum after its last collection;
     * never, where the JVM's collector has no such pool or no maximum for it. Looked at only while the heap in use
     * (garbage included) is past half its maximum: the management beans it reads cost half a MiB of resident
     * memory, which a broker far from its heap's end does not pay.
     */
    static java.util.function.BooleanSupplier heapPressure()
    {
        final Runtime runtime = Runtime.getRuntime();
        return () ->
        {
            final long max = runtime.maxMemory();
            // an old generation 3/4 full is at least half the heap (Serial's is 2/3 of it, G1's all of it)
            if (max == Long.MAX_VALUE || runtime.totalMemory() - runtime.freeMemory() <= max / 2)
            {
                return false;
            }
            final java.lang.management.MemoryPoolMXBean pool = OldGeneration.POOL;
            if (null == pool)
            {
                return false;
            }
            final java.lang.management.MemoryUsage afterCollection = pool.getCollectionUsage();
            return null != afterCollection && afterCollection.getUsed() > OldGeneration.MAX / 4 * 3;
        };
    }

    /**
     * The heap's old generation (Serial's Tenured, Parallel's and G1's Old), found when first needed.
     */
    private static final class OldGeneration
    {
        static final java.lang.management.MemoryPoolMXBean POOL = find();
        static final long MAX = null == POOL ? Long.MAX_VALUE : POOL.getUsage().getMax();

        private static java.lang.management.MemoryPoolMXBean find()
        {
            for (final java.lang.management.MemoryPoolMXBean pool :
                java.lang.management.ManagementFactory.getMemoryPoolMXBeans())
            {
                final String name = pool.getName();
                if (pool.getType() == java.lang.management.MemoryType.HEAP && pool.isCollectionUsageThresholdSupported() &&
                    (name.contains("Old") || name.contains("Tenured")) && pool.getUsage().getMax() > 0)
                {
                    return pool;
                }
            }
            return null;
        }
    }

    /**
     * @param configuredBytes the budget from the next sample on ({@link BrokerContext#AUTO} for the default).
     */
    void budget(final long configuredBytes)
    {
        this.budgetBytes = configuredBytes == BrokerContext.AUTO ? auto() : configuredBytes;
        this.nextSampleMs = Long.MIN_VALUE; // judged again at the next duty cycle
    }

    /**
     * @return the default budget: 3/4 of the JVM's maximum heap plus its maximum direct memory.
     */
    static long auto()
    {
        return (Runtime.getRuntime().maxMemory() + PlatformDependent.maxDirectMemory()) / 4 * 3;
    }

    /**
     * Samples the memory in use when the last sample is older than {@value #SAMPLE_INTERVAL_MS} ms.
     */
    void sample(final long nowMs)
    {
        if (nowMs >= nextSampleMs)
        {
            nextSampleMs = nowMs + SAMPLE_INTERVAL_MS;
            usedBytes = pooled.usedDirectMemory() + pooled.usedHeapMemory() +
                (runtime.totalMemory() - runtime.freeMemory());
            over = usedBytes > budgetBytes || heapOver(nowMs);
        }
    }

    /**
     * @return whether the last sample was over the budget.
     */
    boolean isOver()
    {
        return over;
    }

    long budgetBytes()
    {
        return budgetBytes;
    }

    long usedBytes()
    {
        return usedBytes;
    }
}
