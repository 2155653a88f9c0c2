package io.ringmq.loadtest;

/**
 * One publisher's fixed-rate schedule: for {@code -rate R -duration D} it owes exactly {@code count = ⌊R × D⌋}
 * messages, message {@code k} (k = 0 … count − 1) due at {@code start + k / R}, so none is due at or after
 * {@code start + D}. Each due time is computed from {@code k}, not by adding a rounded interval, so no error builds
 * up and the count never depends on when the generator notices the end of the run.
 *
 * <pre>
 *   R = 3/s, D = 2.5 s: R × D = 7.5, rounded down to 7
 *
 *   start                                   start + D
 *     |-----|-----|-----|-----|-----|-----|-----:----|
 *     0    1/3   2/3    1    4/3   5/3    2     :       seconds after start
 *     k=0   1     2     3     4     5     6     :  (k = 7 at 7/3 s is not owed)
 * </pre>
 *
 * <p>Open loop: a message sent late still carries the time it was due ({@link #nextDueNs()}), so its latency includes
 * the delay. Owned by the thread that publishes.
 */
final class FixedRateSchedule
{
    private static final long NS_PER_S = 1_000_000_000L;

    private final int rate;
    private final long count;
    private long startNs;
    private long next;

    /**
     * @param rate       messages per second, at least 1.
     * @param durationNs how long the schedule runs.
     */
    FixedRateSchedule(final int rate, final long durationNs)
    {
        this.rate = rate;
        this.count = messageCount(rate, durationNs);
    }

    /**
     * @return {@code ⌊rate × durationNs / 10⁹⌋}: the messages a publisher owes, exactly, without overflow for any
     * duration whose count fits a long.
     */
    static long messageCount(final int rate, final long durationNs)
    {
        if (rate < 1)
        {
            throw new IllegalArgumentException("rate must be at least 1: " + rate);
        }
        if (durationNs <= 0)
        {
            return 0;
        }
        // whole seconds, then the fraction: (durationNs % 1e9) * rate < 1e9 * 2^31 fits a long
        return Math.addExact(Math.multiplyExact(durationNs / NS_PER_S, (long)rate),
            durationNs % NS_PER_S * rate / NS_PER_S);
    }

    /**
     * @return {@code ⌊index × 10⁹ / rate⌋}: when message {@code index} is due, in nanoseconds after the start.
     */
    static long offsetNs(final long index, final int rate)
    {
        // whole seconds, then the remainder: (index % rate) * 1e9 < 2^31 * 1e9 fits a long
        return Math.addExact(Math.multiplyExact(index / rate, NS_PER_S), index % rate * NS_PER_S / rate);
    }

    /**
     * Starts (or restarts) the schedule: message 0 is due at {@code startNs}.
     */
    void start(final long startNs)
    {
        this.startNs = startNs;
        this.next = 0;
    }

    /**
     * @return the messages owed in all.
     */
    long count()
    {
        return count;
    }

    /**
     * @return the messages sent so far (taken with {@link #advance()}).
     */
    long sent()
    {
        return next;
    }

    /**
     * @return the messages owed and not sent yet.
     */
    long remaining()
    {
        return count - next;
    }

    boolean isComplete()
    {
        return next >= count;
    }

    /**
     * @return when the next message is due ({@link System#nanoTime()}); meaningless once {@link #isComplete()}.
     */
    long nextDueNs()
    {
        return startNs + offsetNs(next, rate);
    }

    /**
     * @return whether a message is owed and due by {@code nowNs}.
     */
    boolean isDue(final long nowNs)
    {
        return next < count && nextDueNs() - nowNs <= 0;
    }

    /**
     * Records that the message due at {@link #nextDueNs()} was sent.
     */
    void advance()
    {
        next++;
    }
}
