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
 */
final class MemoryBudget
{
    static final long SAMPLE_INTERVAL_MS = 100;

    private long budgetBytes;
    private final PooledByteBufAllocatorMetric pooled = PooledByteBufAllocator.DEFAULT.metric();
    private final Runtime runtime = Runtime.getRuntime();
    private long nextSampleMs = Long.MIN_VALUE;
    private long usedBytes;
    private boolean over;

    MemoryBudget(final long configuredBytes)
    {
        budget(configuredBytes);
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
            over = usedBytes > budgetBytes;
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
