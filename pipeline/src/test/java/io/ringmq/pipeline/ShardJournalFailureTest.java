package io.ringmq.pipeline;

import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoredMessages;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A delivery shard's journal and a write that fails (a full disk that then clears): the ends of messages it lost are
 * written with the next write, so no acknowledged message is sent again after a restart and no QoS 2 exchange record
 * outlives its message to meet a packet id used again.
 */
class ShardJournalFailureTest
{
    private static final long SESSION = 7;

    private final FailingStore store = new FailingStore();
    /** Holds ends for a minute, and batches lost ones again at once: only a write of its own takes them. */
    private final ShardJournal journal = ShardJournal.of(store, 60_000, 0);
    /** Holds ends, and lost ones, for a minute. */
    private final ShardJournal patient = ShardJournal.of(store, 60_000, 60_000);

    private void queued(final long... numbers)
    {
        StoredMessages.queued(store.inner, SESSION, numbers);
    }

    /**
     * Message 1 (QoS 1) is stored and acknowledged, and the write of its end fails: the disk is full.
     */
    private void endLost(final ShardJournal shard)
    {
        queued(1);
        store.fail = true;
        shard.done(SESSION, 1, 1);
        assertThatThrownBy(shard::commit).isInstanceOf(StoreException.class);
    }

    /**
     * Every stored message's records are gone, and the shard has nothing left to write.
     */
    private void assertAllWritten(final ShardJournal shard)
    {
        assertThat(store.inner.size()).isZero();
        assertThat(shard.deferred()).isZero();
    }

    @Test
    @DisplayName("ends lost to a failed write go with the next write once it is time: a QoS 1 message's and a QoS 2 " +
        "message's records, its exchange among them, are gone when an exchange reusing its packet id is written")
    void lostEndsGoWithTheNextExchange()
    {
        queued(1, 2, 3);
        journal.exchange(SESSION, 2, 5, 1); // message 2 is QoS 2: its exchange record is written before it leaves
        assertThat(store.inner.size()).isEqualTo(4);

        store.fail = true;
        journal.done(SESSION, 1, 1);
        journal.done(SESSION, 2, 2);
        assertThatThrownBy(journal::commit).isInstanceOf(StoreException.class);
        assertThat(store.inner.size()).as("nothing written").isEqualTo(4);
        assertThat(journal.deferred()).as("the ends wait for the next write").isEqualTo(2);

        store.fail = false;
        queued(4);
        journal.exchange(SESSION, 4, 5, 1); // packet id 5 again, now that message 2 is done with
        assertThat(journal.deferred()).isZero();
        assertThat(store.inner.size()).as("message 3, and message 4 with its exchange record").isEqualTo(3);
    }

    @Test
    @DisplayName("before the retry is due, the looks write nothing and a move writes only its own ends; a clean stop " +
        "writes them all")
    void lostEndsWaitForTheirRetry()
    {
        endLost(patient);
        store.fail = false;
        queued(2);
        patient.done(SESSION, 2, 1);
        patient.commitDue();
        assertThat(store.inner.size()).as("no look before the retry is due").isEqualTo(2);

        patient.commit(); // a session moves away: its own ends, not those lost
        assertThat(store.inner.size()).as("message 1's end still waits").isEqualTo(1);
        assertThat(patient.deferred()).isEqualTo(1);

        patient.commitAll();
        assertAllWritten(patient);
    }

    @Test
    @DisplayName("a look after the retry interval writes the lost ends")
    void theNextLookRetries()
    {
        final ShardJournal quick = ShardJournal.of(store, 60_000, 50);
        endLost(quick);
        store.fail = false;
        final long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50);
        while (System.nanoTime() - due < 0)
        {
            LockSupport.parkNanos(due - System.nanoTime()); // the retry is a matter of time: wait it out
        }
        quick.commitDue();
        assertAllWritten(quick);
    }

    @Test
    @DisplayName("a retry that fails again keeps the ends for the one after")
    void aSecondFailureKeepsTheEnds()
    {
        endLost(journal);
        assertThatThrownBy(journal::commitDue).as("the retry is due at once here").isInstanceOf(StoreException.class);
        assertThat(journal.deferred()).isEqualTo(1);
        store.fail = false;
        journal.commitDue();
        assertAllWritten(journal);
    }
}
