package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The paced driver's sub-millisecond sleep: never past a deadline already gone, never a busy wait for long, and an
 * overshoot estimate that stays in its bounds however the machine behaves.
 */
class DeadlineSleeperTest
{
    @Test
    @DisplayName("a deadline already passed returns at once")
    void pastDeadlineReturnsAtOnce()
    {
        final DeadlineSleeper sleeper = new DeadlineSleeper();
        final long start = System.nanoTime();
        for (int i = 0; i < 1_000; i++)
        {
            sleeper.sleepUntil(start - 1);
        }
        assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(1));
    }

    @Test
    @DisplayName("looping on sleepUntil reaches each deadline, 200 µs apart, and the estimate stays bounded")
    void reachesDeadlines()
    {
        final DeadlineSleeper sleeper = new DeadlineSleeper();
        final long start = System.nanoTime();
        for (int i = 1; i <= 200; i++)
        {
            final long deadline = start + i * 200_000L;
            int calls = 0;
            while (System.nanoTime() - deadline < 0)
            {
                sleeper.sleepUntil(deadline);
                calls++;
                assertThat(calls).as("a sleep makes progress").isLessThan(10_000);
            }
            assertThat(sleeper.overshootNs()).isBetween(0L, 200_000L);
        }
        // 200 deadlines 200 µs apart: 40 ms, with a loose bound for a busy machine
        assertThat(System.nanoTime() - start).isLessThan(TimeUnit.SECONDS.toNanos(5));
    }
}
