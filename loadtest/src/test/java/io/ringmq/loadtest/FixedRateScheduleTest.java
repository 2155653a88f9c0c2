package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The fixed-rate schedule's arithmetic against a {@link BigInteger} reference: exactly ⌊rate × duration⌋ messages,
 * message k due at ⌊k / rate⌋, none at or after the end, and no more however late the end is noticed.
 */
class FixedRateScheduleTest
{
    private static final long S = 1_000_000_000L;
    private static final BigInteger NS_PER_S = BigInteger.valueOf(S);

    /** {rate, durationNs, count}. */
    private static final long[][] CASES = {
        {100, 10 * S, 1_000},
        {100, 2 * S, 200},
        {3, 2_500_000_000L, 7}, // 7.5 rounds down
        {3, 10 * S, 30}, // 1e9 / 3 is not whole: an interval added 30 times would leave room for a 31st
        {7, S, 7},
        {1, 999_999_999L, 0},
        {1, S, 1},
        {1, S + 1, 1},
        {1_000_000_000, 1, 1},
        {999_999_999, 1, 0},
        {1_000_000, 3_600 * S, 3_600_000_000L}, // past an int
        {Integer.MAX_VALUE, 86_400 * S, Integer.MAX_VALUE * 86_400L},
        {Integer.MAX_VALUE, 86_400 * S + 123_456_789L, Integer.MAX_VALUE * 86_400L + 265_121_435L},
        {12_345, 0, 0},
    };

    @Test
    @DisplayName("a publisher owes exactly floor(rate x duration) messages")
    void messageCountIsRateTimesDurationRoundedDown()
    {
        for (final long[] c : CASES)
        {
            final int rate = (int)c[0];
            final long durationNs = c[1];
            assertThat(FixedRateSchedule.messageCount(rate, durationNs)).as("rate %d, %d ns", rate, durationNs)
                .isEqualTo(c[2])
                .isEqualTo(BigInteger.valueOf(rate).multiply(BigInteger.valueOf(durationNs)).divide(NS_PER_S)
                    .longValueExact());
        }
    }

    @Test
    @DisplayName("message k is due floor(k / rate) after the start; the last before the end, the next at or after it")
    void dueTimesAreExactAndInsideTheDuration()
    {
        for (final long[] c : CASES)
        {
            final int rate = (int)c[0];
            final long durationNs = c[1];
            final long count = FixedRateSchedule.messageCount(rate, durationNs);
            final long[] indices = {0, 1, 2, rate - 1L, rate, rate + 1L, count / 2, count - 2, count - 1, count};
            for (final long k : indices)
            {
                if (k < 0)
                {
                    continue;
                }
                assertThat(FixedRateSchedule.offsetNs(k, rate)).as("rate %d, k %d", rate, k).isEqualTo(
                    BigInteger.valueOf(k).multiply(NS_PER_S).divide(BigInteger.valueOf(rate)).longValueExact());
            }
            if (count > 0)
            {
                assertThat(FixedRateSchedule.offsetNs(count - 1, rate)).as("rate %d: the last is due before the end",
                    rate).isLessThan(durationNs);
            }
            // the count is the largest that keeps inside the duration, whole or rounded down
            final BigInteger next = BigInteger.valueOf(count + 1).multiply(NS_PER_S);
            assertThat(next.compareTo(BigInteger.valueOf(rate).multiply(BigInteger.valueOf(durationNs))))
                .as("rate %d, %d ns: message %d would be past rate x duration", rate, durationNs, count + 1)
                .isPositive();
        }
    }

    @Test
    @DisplayName("due times are strictly increasing at any rate")
    void dueTimesIncrease()
    {
        final SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < 1_000; i++)
        {
            final int rate = 1 + random.nextInt(Integer.MAX_VALUE - 1);
            final long k = random.nextLong(1L << 40);
            assertThat(FixedRateSchedule.offsetNs(k + 1, rate)).as("rate %d, k %d", rate, k)
                .isGreaterThanOrEqualTo(FixedRateSchedule.offsetNs(k, rate) + (rate <= S ? 1 : 0));
        }
        for (int rate = 1; rate <= 1_000; rate++)
        {
            long previous = -1;
            for (long k = 0; k <= 2L * rate; k++)
            {
                final long offset = FixedRateSchedule.offsetNs(k, rate);
                assertThat(offset).isGreaterThan(previous);
                previous = offset;
            }
            assertThat(FixedRateSchedule.offsetNs(2L * rate, rate)).isEqualTo(2 * S); // whole seconds land exactly
        }
    }

    @Test
    @DisplayName("a publisher that notices the end late, or wakes late, sends what it owes and no more")
    void noMoreThanScheduledHoweverLateTheEndIsNoticed()
    {
        final SplittableRandom random = new SplittableRandom(7);
        final int[][] pairs = {{100, 10}, {100, 2}, {3, 3}, {1_000, 1}, {50_000, 1}};
        for (final int[] pair : pairs)
        {
            final int rate = pair[0];
            final long durationNs = pair[1] * S;
            final FixedRateSchedule schedule = new FixedRateSchedule(rate, durationNs);
            final long startNs = -5 * S; // nanoTime may be negative
            schedule.start(startNs);
            long now = startNs;
            long lastDueNs = Long.MIN_VALUE;
            long sent = 0;
            // wake at random, then go on 19 ms past the end (the overshoot the issue saw) and far past it
            while (now - (startNs + durationNs + 19_000_000L) < 0)
            {
                now += 1 + random.nextLong(2_000_000L);
                while (schedule.isDue(now))
                {
                    final long dueNs = schedule.nextDueNs();
                    assertThat(dueNs - startNs).isEqualTo(FixedRateSchedule.offsetNs(sent, rate));
                    assertThat(dueNs - now).as("never early").isLessThanOrEqualTo(0);
                    assertThat(dueNs - (startNs + durationNs)).as("never at or after the end").isNegative();
                    assertThat(dueNs).isGreaterThan(lastDueNs);
                    lastDueNs = dueNs;
                    schedule.advance();
                    sent++;
                }
            }
            assertThat(schedule.isDue(now + 3_600 * S)).isFalse();
            assertThat(sent).as("rate %d for %d s", rate, pair[1]).isEqualTo(schedule.sent())
                .isEqualTo(schedule.count()).isEqualTo((long)rate * pair[1]);
            assertThat(schedule.isComplete()).isTrue();
            assertThat(schedule.remaining()).isZero();
        }
    }

    @Test
    @DisplayName("a publisher that wakes once, long after the end, owes the whole schedule at once, stamped as due")
    void aLatePublisherStillOwesEveryScheduledMessage()
    {
        final FixedRateSchedule schedule = new FixedRateSchedule(3, 2_500_000_000L);
        schedule.start(1_000);
        final long wakeNs = 1_000 + 60 * S;
        final long[] due = new long[8];
        int sent = 0;
        while (schedule.isDue(wakeNs))
        {
            due[sent++] = schedule.nextDueNs();
            schedule.advance();
        }
        assertThat(sent).isEqualTo(7);
        assertThat(due).containsExactly(1_000, 1_000 + 333_333_333L, 1_000 + 666_666_666L, 1_000 + S,
            1_000 + 1_333_333_333L, 1_000 + 1_666_666_666L, 1_000 + 2 * S, 0);
    }

    @Test
    void restartingStartsAgainFromTheFirstMessage()
    {
        final FixedRateSchedule schedule = new FixedRateSchedule(10, S);
        schedule.start(0);
        while (schedule.isDue(S))
        {
            schedule.advance();
        }
        assertThat(schedule.sent()).isEqualTo(10);
        schedule.start(5 * S);
        assertThat(schedule.sent()).isZero();
        assertThat(schedule.isDue(5 * S - 1)).isFalse();
        assertThat(schedule.isDue(5 * S)).isTrue();
        assertThat(schedule.nextDueNs()).isEqualTo(5 * S);
    }

    @Test
    void rateZeroHasNoSchedule()
    {
        assertThatThrownBy(() -> FixedRateSchedule.messageCount(0, S)).isInstanceOf(IllegalArgumentException.class);
        final Settings settings = new Settings();
        settings.rate = 0;
        assertThat(settings.scheduledPerPublisher()).isZero();
        settings.rate = 3;
        settings.durationNs = 2_500_000_000L;
        assertThat(settings.scheduledPerPublisher()).isEqualTo(7);
    }
}
