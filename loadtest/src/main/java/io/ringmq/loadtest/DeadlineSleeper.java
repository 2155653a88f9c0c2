package io.ringmq.loadtest;

import java.util.concurrent.locks.LockSupport;

/**
 * Sleeps a paced driver until a deadline under a millisecond away, waking close to it rather than late. A
 * {@link LockSupport#parkNanos} wakes after its timeout plus the kernel's timer slack (50 µs by default on Linux) and
 * the scheduler's delay, and every message due then would be sent, and timed, that much late. So this parks for the
 * wait less the overshoot it has seen (a moving average), then spins the last few microseconds at most.
 *
 * <pre>
 *   now                      deadline
 *    |-- park(wait - overshoot) --|
 *    |------ wait ----------------|
 *                          |spin| (only when woken less than SPIN_LIMIT_NS early)
 * </pre>
 *
 * Owned by one driver thread; allocates nothing.
 */
final class DeadlineSleeper
{
    /** Woken this close to the deadline or closer, spin on the clock instead of parking again. */
    static final long SPIN_LIMIT_NS = 15_000;
    /** An overshoot above this (a preempted thread) does not move the average. */
    private static final long OVERSHOOT_CEILING_NS = 200_000;
    /** The shortest park: shorter ones cost the same syscall and slack. */
    private static final long MIN_PARK_NS = 1_000;

    /** The moving average of how late a park wakes past its timeout, in ns (1/8 weight per sample). */
    private long overshootNs = 50_000;

    long overshootNs()
    {
        return overshootNs;
    }

    /**
     * Returns at or after {@code deadlineNs} when it is near, or earlier (then the caller's loop comes back).
     *
     * @param deadlineNs a {@link System#nanoTime()} value.
     */
    void sleepUntil(final long deadlineNs)
    {
        long now = System.nanoTime();
        long remainingNs = deadlineNs - now;
        if (remainingNs > SPIN_LIMIT_NS)
        {
            final long parkNs = Math.max(MIN_PARK_NS, remainingNs - overshootNs);
            LockSupport.parkNanos(parkNs);
            final long woken = System.nanoTime();
            final long sampleNs = woken - now - parkNs;
            if (sampleNs >= 0 && sampleNs < OVERSHOOT_CEILING_NS)
            {
                overshootNs += (sampleNs - overshootNs) >> 3;
            }
            now = woken;
            remainingNs = deadlineNs - now;
        }
        while (remainingNs > 0 && remainingNs <= SPIN_LIMIT_NS)
        {
            Thread.onSpinWait();
            remainingNs = deadlineNs - System.nanoTime();
        }
    }
}
