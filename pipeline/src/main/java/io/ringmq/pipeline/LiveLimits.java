package io.ringmq.pipeline;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The limits in force, as a reload changes them: the reloading thread publishes a whole {@link BrokerContext}
 * (the running one with the reloaded limits, see {@link ReloadPlan#liveContext}), and each owner of a
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
    /**
     * One publication and the owners that took it: an owner that takes an older one late counts toward that one,
     * never toward the one published since (a reload whose wait timed out must not let the next return early).
     */
    private static final class Round
    {
        final BrokerContext limits;
        final AtomicInteger taken = new AtomicInteger();

        Round(final BrokerContext limits)
        {
            this.limits = limits;
        }
    }

    private final AtomicInteger followers = new AtomicInteger();
    private volatile Round current;

    /**
     * @param initial the limits the broker started with.
     */
    public LiveLimits(final BrokerContext initial)
    {
        this.current = new Round(initial);
    }

    /**
     * Registers an owner that follows the limits (at wiring, before the agents run).
     *
     * @return the limits now.
     */
    public BrokerContext follow()
    {
        followers.incrementAndGet();
        return current.limits;
    }

    /**
     * @return the limits published last (a volatile read: once per duty cycle, never per message).
     */
    public BrokerContext current()
    {
        return current.limits;
    }

    /**
     * @param held what the owner holds now.
     * @return the newer limits, or null when {@code held} is the latest.
     */
    public BrokerContext changed(final BrokerContext held)
    {
        final BrokerContext now = current.limits;
        return now == held ? null : now;
    }

    /**
     * An owner applied the limits {@link #changed} handed it (on its own thread). Counted only while they are still
     * the latest: when newer ones were published meanwhile, the owner takes those at its next duty cycle and counts
     * then.
     *
     * @param taken what {@link #changed} returned and the owner applied.
     */
    public void took(final BrokerContext taken)
    {
        final Round round = current;
        if (round.limits == taken)
        {
            round.taken.incrementAndGet();
        }
    }

    /**
     * Publishes new limits (the reloading thread; reloads are serialised by the broker).
     */
    public void publish(final BrokerContext next)
    {
        current = new Round(next); // a new count with them: no owner can count them before they are visible
    }

    /**
     * Waits until every follower has taken the limits published last.
     *
     * @return whether all did within the time.
     */
    public boolean awaitTaken(final long timeoutMs)
    {
        final Round round = current;
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (round.taken.get() < followers.get())
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
