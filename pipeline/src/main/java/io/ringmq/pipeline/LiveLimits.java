package io.ringmq.pipeline;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The limits in force, as a reload changes them: the reloading thread publishes a whole {@link BrokerContext}
 * (the running one with the reloaded limits, see {@link BrokerContext#withLiveLimitsOf}), and each owner of a
 * limit (every I/O agent, every delivery shard, the routing and the auth stage) takes it on its own thread at its
 * next duty cycle and counts itself done, so that no limit is written by two threads and no stage takes a lock:
 * <pre>
 *   reload ──publish(next)──▶ [ volatile current ] ◀── changed()? each owner, once per duty cycle ──▶ took()
 *        └──awaitTaken(timeout): every follower has it, or the time is up
 * </pre>
 * One volatile read per duty cycle per owner; nothing on the per-message path.
 */
public final class LiveLimits
{
    private final AtomicInteger followers = new AtomicInteger();
    private final AtomicInteger taken = new AtomicInteger();
    private volatile BrokerContext current;

    /**
     * @param initial the limits the broker started with.
     */
    public LiveLimits(final BrokerContext initial)
    {
        this.current = initial;
    }

    /**
     * Registers an owner that follows the limits (at wiring, before the agents run).
     *
     * @return the limits now.
     */
    public BrokerContext follow()
    {
        followers.incrementAndGet();
        return current;
    }

    /**
     * @return the limits published last (a volatile read: once per duty cycle, never per message).
     */
    public BrokerContext current()
    {
        return current;
    }

    /**
     * @param held what the owner holds now.
     * @return the newer limits, or null when {@code held} is the latest.
     */
    public BrokerContext changed(final BrokerContext held)
    {
        final BrokerContext now = current;
        return now == held ? null : now;
    }

    /**
     * An owner applied the limits {@link #changed} handed it (on its own thread).
     */
    public void took()
    {
        taken.incrementAndGet();
    }

    /**
     * Publishes new limits (the reloading thread; reloads are serialised by the broker).
     */
    public void publish(final BrokerContext next)
    {
        taken.set(0); // before the volatile write: no owner can count the new limits before they are visible
        current = next;
    }

    /**
     * Waits until every follower has taken the limits published last.
     *
     * @return whether all did within the time.
     */
    public boolean awaitTaken(final long timeoutMs)
    {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (taken.get() < followers.get())
        {
            if (System.nanoTime() - deadline > 0)
            {
                return false;
            }
            java.util.concurrent.locks.LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        return true;
    }

    /**
     * @return the owners that follow the limits.
     */
    public int followerCount()
    {
        return followers.get();
    }
}
