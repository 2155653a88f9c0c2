package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The paced publishers' due queue against a naive reference (a list scanned for the earliest), with due times that
 * straddle the wrap of {@link System#nanoTime()}.
 */
class DueQueueTest
{
    @Test
    @DisplayName("the first slot is always the one due earliest, through adds, polls and reschedules")
    void matchesANaiveScan()
    {
        final SplittableRandom random = new SplittableRandom(11);
        for (final long base : new long[] {0, -5_000_000_000L, Long.MAX_VALUE - 1_000_000, Long.MIN_VALUE + 7})
        {
            final DueQueue queue = new DueQueue(2); // grows
            final List<long[]> reference = new ArrayList<>(); // {slot, dueNs}
            int nextSlot = 0;
            for (int step = 0; step < 20_000; step++)
            {
                final int op = random.nextInt(10);
                if (op < 4 || reference.isEmpty())
                {
                    final long dueNs = base + random.nextLong(2_000_000); // base + offset may wrap: compared as a - b
                    queue.add(nextSlot, dueNs);
                    reference.add(new long[] {nextSlot++, dueNs});
                }
                else if (op < 6)
                {
                    final long[] first = earliest(reference);
                    assertThat(queue.peekDueNs()).isEqualTo(first[1]);
                    reference.remove(indexOfSlot(reference, queue.peekSlot()));
                    queue.poll();
                }
                else
                {
                    final long[] first = earliest(reference);
                    assertThat(queue.peekDueNs()).isEqualTo(first[1]);
                    final long[] entry = reference.get(indexOfSlot(reference, queue.peekSlot()));
                    assertThat(entry[1]).isEqualTo(first[1]); // ties: any slot with the earliest time
                    entry[1] += 1 + random.nextLong(500_000);
                    queue.rescheduleFirst(entry[1]);
                }
                assertThat(queue.size()).isEqualTo(reference.size());
                if (!reference.isEmpty())
                {
                    assertThat(queue.peekDueNs()).isEqualTo(earliest(reference)[1]);
                }
            }
            long previous = Long.MIN_VALUE;
            boolean first = true;
            while (!queue.isEmpty())
            {
                final long dueNs = queue.peekDueNs();
                assertThat(first || dueNs - previous >= 0).as("drained in due order").isTrue();
                previous = dueNs;
                first = false;
                queue.poll();
            }
        }
    }

    @Test
    @DisplayName("1,000 publishers at one rate come out round-robin, as their spread starts put them")
    void spreadStartsComeOutInTurn()
    {
        final int publishers = 1_000;
        final FixedRateSchedule[] schedules = new FixedRateSchedule[publishers];
        final DueQueue queue = new DueQueue(publishers);
        final long intervalNs = FixedRateSchedule.offsetNs(1, 10);
        for (int i = 0; i < publishers; i++)
        {
            schedules[i] = new FixedRateSchedule(10, 1_000_000_000L);
            schedules[i].start(intervalNs * i / publishers);
            queue.add(i, schedules[i].nextDueNs());
        }
        long sent = 0;
        while (!queue.isEmpty())
        {
            final int slot = queue.peekSlot();
            assertThat(slot).isEqualTo((int)(sent % publishers));
            schedules[slot].advance();
            sent++;
            if (schedules[slot].isComplete())
            {
                queue.poll();
            }
            else
            {
                queue.rescheduleFirst(schedules[slot].nextDueNs());
            }
        }
        assertThat(sent).isEqualTo(10L * publishers);
    }

    @Test
    void emptyAfterClear()
    {
        final DueQueue queue = new DueQueue(4);
        queue.add(1, 10);
        queue.add(2, 5);
        assertThat(queue.peekSlot()).isEqualTo(2);
        queue.clear();
        assertThat(queue.isEmpty()).isTrue();
        queue.add(3, 7);
        assertThat(queue.peekSlot()).isEqualTo(3);
        assertThat(queue.peekDueNs()).isEqualTo(7);
    }

    private static long[] earliest(final List<long[]> entries)
    {
        long[] best = null;
        for (final long[] entry : entries)
        {
            if (null == best || entry[1] - best[1] < 0)
            {
                best = entry;
            }
        }
        return best;
    }

    private static int indexOfSlot(final List<long[]> entries, final int slot)
    {
        for (int i = 0; i < entries.size(); i++)
        {
            if (entries.get(i)[0] == slot)
            {
                return i;
            }
        }
        throw new AssertionError("no slot " + slot);
    }
}
