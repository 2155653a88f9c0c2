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
    /** Holds ends for a minute: only a failure's retry, an exchange or a commit writes them within a test. */
    private final ShardJournal journal = ShardJournal.of(store, 60_000);

    private void queued(final long... numbers)
    {
        StoredMessages.queued(store.inner, SESSION, numbers);
    }

    @Test
    @DisplayName("ends lost to a failed write go again with the next one: a QoS 1 message's and a QoS 2 message's " +
        "records, its exchange among them, are gone once the disk takes writes again")
    void lostEndsAreWrittenWithTheNextWrite()
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
        journal.commitDue(); // within a second of the failure: no second try, no second error
        assertThat(journal.deferred()).isEqualTo(2);

        store.fail = false;
        queued(4);
        journal.exchange(SESSION, 4, 5, 1); // packet id 5 again, now that message 2 is done with
        assertThat(journal.deferred()).isZero();
        assertThat(store.inner.size()).as("message 3, and message 4 with its exchange record").isEqualTo(3);
    }

    @Test
    @DisplayName("after a failed write the next look tries again once a second has passed, not at every duty cycle")
    void aFailedWriteIsTriedAgainAfterASecond()
    {
        queued(1, 2);
        store.fail = true;
        journal.done(SESSION, 1, 1);
        assertThatThrownBy(journal::commit).isInstanceOf(StoreException.class);
        store.fail = false;
        journal.done(SESSION, 2, 1);
        journal.commitDue();
        assertThat(store.inner.size()).as("too soon after the failure").isEqualTo(2);

        final long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ShardJournal.RETRY_AFTER_FAILURE_MS);
        while (System.nanoTime() - due < 0)
        {
            LockSupport.parkNanos(due - System.nanoTime()); // the retry is a matter of time: wait it out
        }
        journal.commitDue();
        assertThat(store.inner.size()).as("both ends written").isZero();
        assertThat(journal.deferred()).isZero();
    }

    @Test
    @DisplayName("a write that fails again keeps the ends for the one after")
    void aSecondFailureKeepsTheEnds()
    {
        queued(1);
        store.fail = true;
        journal.done(SESSION, 1, 1);
        assertThatThrownBy(journal::commit).isInstanceOf(StoreException.class);
        assertThatThrownBy(journal::commit).isInstanceOf(StoreException.class);
        assertThat(journal.deferred()).isEqualTo(1);
        store.fail = false;
        journal.commit();
        assertThat(store.inner.size()).isZero();
        assertThat(journal.deferred()).isZero();
    }
}
