package io.ringmq.pipeline.persistence;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * When a delivery shard's journal writes the ends of messages it batched: not per message, but once the oldest has
 * waited the fsync interval, {@link ShardJournal#DEFER_RECORDS} have gathered, or something must be
 * written now.
 */
class ShardJournalTest
{
    private static final long SESSION = 7;

    private final MemoryStore store = MemoryStore.retaining();
    /** Holds ends for a minute: only the count, an exchange or a commit writes them within a test. */
    private final ShardJournal journal = ShardJournal.of(store, 60_000);

    private void queued(final long... numbers)
    {
        StoredMessages.queued(store, SESSION, numbers);
    }

    @Test
    @DisplayName("ends wait while the oldest is younger than the interval; the first look after it writes them all")
    void endsWaitUntilTheOldestIsDue()
    {
        queued(1, 2, 3);
        journal.done(SESSION, 1, 1);
        journal.done(SESSION, 2, 1);
        journal.commitDue();
        assertThat(store.size()).as("nothing written before the oldest is due").isEqualTo(3);
        assertThat(journal.deferred()).isEqualTo(2);

        final ShardJournal millisecond = ShardJournal.of(store, 1);
        final long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1);
        millisecond.done(SESSION, 1, 1);
        millisecond.done(SESSION, 2, 1);
        while (System.nanoTime() - due < 0)
        {
            LockSupport.parkNanos(due - System.nanoTime());
        }
        millisecond.commitDue();
        assertThat(store.size()).as("message 3 is still queued").isEqualTo(1);
        assertThat(millisecond.deferred()).isZero();
    }

    @Test
    @DisplayName("1,024 ends waiting are written at the next look, however young")
    void aFullBatchIsWrittenAtOnce()
    {
        final long[] numbers = new long[ShardJournal.DEFER_RECORDS];
        for (int i = 0; i < numbers.length; i++)
        {
            numbers[i] = i + 1;
        }
        queued(numbers);
        for (int i = 0; i < numbers.length - 1; i++)
        {
            journal.done(SESSION, numbers[i], 1);
        }
        journal.commitDue();
        assertThat(store.size()).isEqualTo(numbers.length);
        journal.done(SESSION, numbers[numbers.length - 1], 1);
        journal.commitDue();
        assertThat(store.size()).isZero();
        assertThat(journal.deferred()).isZero();
    }

    @Test
    @DisplayName("an exchange record is written at once, and takes the ends waiting with it (a packet id they freed may be its own)")
    void anExchangeTakesTheWaitingEnds()
    {
        queued(1, 2);
        journal.done(SESSION, 1, 1);
        journal.exchange(SESSION, 2, 5, 1);
        assertThat(journal.deferred()).isZero();
        assertThat(store.size()).as("message 2 and its exchange record").isEqualTo(2);
    }

    @Test
    @DisplayName("commit writes what waits now (a session moving away, a clean stop); with persistence off nothing is kept")
    void commitWritesNow()
    {
        queued(1);
        journal.done(SESSION, 1, 1);
        journal.commit();
        assertThat(store.size()).isZero();

        final ShardJournal none = ShardJournal.none();
        none.done(SESSION, 1, 1);
        none.commitDue();
        none.commit();
        assertThat(none.deferred()).isZero();
    }
}
