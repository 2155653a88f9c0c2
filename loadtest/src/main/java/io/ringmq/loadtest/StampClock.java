package io.ringmq.loadtest;

import java.time.Instant;

/**
 * The clock of message stamps: {@link System#nanoTime()} (monotonic, cheap) shifted once so that it reads
 * nanoseconds since the Unix epoch. Latency inside the generator is a difference of the same clock; the epoch
 * alignment (to a microsecond) lets an outside subscriber, e.g. {@code mosquitto_sub -F '%U %x'}, time the same
 * messages for a cross-check.
 */
final class StampClock
{
    private static final long OFFSET_NS;

    static
    {
        final Instant now = Instant.now();
        OFFSET_NS = now.getEpochSecond() * 1_000_000_000L + now.getNano() - System.nanoTime();
    }

    private StampClock()
    {
    }

    static long nowNs()
    {
        return System.nanoTime() + OFFSET_NS;
    }

    /**
     * @return the stamp a message due at {@code nanoTime} carries.
     */
    static long stampOf(final long nanoTime)
    {
        return nanoTime + OFFSET_NS;
    }
}
