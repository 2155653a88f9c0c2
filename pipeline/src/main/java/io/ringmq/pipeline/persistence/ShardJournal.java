package io.ringmq.pipeline.persistence;

import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.collections.LongArrayList;

import java.util.concurrent.TimeUnit;

/**
 * A delivery shard's writes to the store: the rest of the life of a message the persistence stage stored for a
 * persistent session. Its QoS 2 exchange ({@link #exchange}) is written before the packet it goes with leaves, so
 * that after a restart the message is resent with the same packet id or its PUBREL is (exactly once, even across a
 * crash); the end of a message ({@link #done}) waits in the batch: a crash before it is written sends the message
 * again (a QoS 1 duplicate, which MQTT allows; a QoS 2 PUBREL with its packet id, which the client answers without
 * delivering twice, or the PUBLISH of one that ended before its PUBREC). The ends are written by
 * {@link #commitDue()} once the oldest has waited the fsync interval (they reach the disk no sooner anyway) or
 * {@value #DEFER_RECORDS} have gathered (a shard gone idle looks again when it next wakes, within 100 ms), by the
 * next exchange (so a packet id used again never meets an old exchange record after a crash), before a session
 * moves to another shard, and at a clean stop ({@link #commit()}, {@link #commitAll()}). At low load each message's
 * end was a write of its own.
 * <p>
 * A write that fails (a full disk) loses its batch. The ends in it are kept (up to {@value #MAX_KEPT_ENDS}; an
 * outage that outlasts them loses the rest) and batched again {@value #RETRY_AFTER_FAILURE_MS} ms after the failure
 * by the next look or exchange, and at a clean stop, so a failure that clears loses no end: otherwise a message
 * acknowledged before it would be sent again after a restart, and its QoS 2 exchange record could meet a packet id
 * used again since. Until then the shard's looks do not write (a full disk is not tried, and its failure recorded,
 * more than once a second), and a move or an exchange writes only its own: their failures stay theirs. A crash in
 * that second, after the disk cleared, can still leave an old exchange record beside a packet id used again.
 * Used by its shard's thread only, and by recovery before it starts and the clean stop after it has stopped.
 */
public final class ShardJournal
{
    /** Ends batched past this many are written at the next look, however young. */
    public static final int DEFER_RECORDS = 1024;
    /** After a failed write, the ends it lost are batched again no sooner than this. */
    public static final long RETRY_AFTER_FAILURE_MS = 1_000;
    /** Ends kept for a write that failed, at most (three longs each: 1.5 MiB). */
    public static final int MAX_KEPT_ENDS = 65_536;
    private static final int END_LONGS = 3;
    private static final ShardJournal NONE = new ShardJournal(null, 0, 0);

    private final StoreWriter writer;
    /** How long an end may wait for company before the next look writes it. */
    private final long deferNs;
    private final long retryNs;
    private final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(Records.MESSAGE_KEY_LENGTH);
    private final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(8);
    /** Ends batched since the last write, and when the first of them was ({@link System#nanoTime()}). */
    private int deferred;
    private long firstDeferredNs;
    /** The ends in the writer's batch: session key, message number and QoS of each. */
    private final LongArrayList batched = new LongArrayList();
    /** The ends a failed write lost, to be batched again once {@link #retryAtNs} has come. */
    private final LongArrayList lost = new LongArrayList();
    private long retryAtNs;

    private ShardJournal(final StoreWriter writer, final long deferNs, final long retryNs)
    {
        this.writer = writer;
        this.deferNs = deferNs;
        this.retryNs = retryNs;
    }

    /**
     * @return a journal that writes nothing (persistence off).
     */
    public static ShardJournal none()
    {
        return NONE;
    }

    /**
     * @param deferMs how long the end of a message may wait for others before it is written: the fsync interval.
     * @return the journal of one shard on a durable store.
     */
    public static ShardJournal of(final DurableStore store, final long deferMs)
    {
        return of(store, deferMs, RETRY_AFTER_FAILURE_MS);
    }

    /**
     * @param retryAfterFailureMs how long after a failed write the ends it lost are batched again (tests).
     */
    public static ShardJournal of(final DurableStore store, final long deferMs, final long retryAfterFailureMs)
    {
        return store.isDurable() ? new ShardJournal(store.writer(false), TimeUnit.MILLISECONDS.toNanos(deferMs),
            TimeUnit.MILLISECONDS.toNanos(retryAfterFailureMs)) : NONE;
    }

    /**
     * @return whether a message of a session is stored: both have a key (the session is persistent, the message
     * was stored for it).
     */
    public boolean isStored(final long sessionKey, final long messageNumber)
    {
        return null != writer && sessionKey != 0 && messageNumber != 0;
    }

    /**
     * Records a QoS 2 message's packet id and state, and writes it now: before its PUBLISH or PUBREL leaves.
     */
    public void exchange(final long sessionKey, final long messageNumber, final int packetId, final int state)
    {
        if (!isStored(sessionKey, messageNumber))
        {
            return;
        }
        value.putInt(0, packetId);
        value.putByte(4, (byte)state);
        writer.put(key, 0, Records.messageKey(key, sessionKey, Records.EXCHANGE, messageNumber), value, 0, 5);
        write(retryDue(System.nanoTime())); // with the ends waiting: a packet id they freed may be this one
    }

    /**
     * A message is done with for a session: acknowledged, refused, expired or dropped.
     *
     * @param qos the QoS it had for the session (only QoS 2 has an exchange record; QoS 0, queued under
     *            {@code --queue-qos0-messages}, has none).
     */
    public void done(final long sessionKey, final long messageNumber, final int qos)
    {
        if (qos == 0 || !isStored(sessionKey, messageNumber))
        {
            return;
        }
        batch(sessionKey, messageNumber, qos);
        if (0 == deferred++)
        {
            firstDeferredNs = System.nanoTime();
        }
    }

    /**
     * Puts the deletes of a message's records into the writer's batch, and keeps the end (up to
     * {@value #MAX_KEPT_ENDS}) until that batch is written.
     */
    private void batch(final long sessionKey, final long messageNumber, final int qos)
    {
        writer.deleteOnce(key, 0, Records.messageKey(key, sessionKey, Records.QUEUED, messageNumber));
        if (qos == 2)
        {
            writer.delete(key, 0, Records.messageKey(key, sessionKey, Records.EXCHANGE, messageNumber)); // put twice
        }
        if (batched.size() < MAX_KEPT_ENDS * END_LONGS)
        {
            batched.addLong(sessionKey);
            batched.addLong(messageNumber);
            batched.addLong(qos);
        }
    }

    /**
     * At the end of the shard's batch and once per duty cycle: writes the ends {@link #done} batched when the oldest
     * has waited the fsync interval or {@value #DEFER_RECORDS} have gathered. A shard that has gone idle comes here at
     * its next wake-up, within its longest sleep (100 ms). After a failed write, nothing before
     * {@value #RETRY_AFTER_FAILURE_MS} ms have passed, then with the ends it lost.
     */
    public void commitDue()
    {
        if (0 == deferred)
        {
            return;
        }
        final long nowNs = System.nanoTime();
        if (lost.isEmpty() ? deferred >= DEFER_RECORDS || nowNs - firstDeferredNs >= deferNs : retryDue(nowNs))
        {
            write(true);
        }
    }

    /**
     * Writes what {@link #done} batched, now: before a session moves to another shard. Ends a failed write lost wait
     * for their own retry: a move does not fail for them.
     */
    public void commit()
    {
        write(false);
    }

    /**
     * Writes what {@link #done} batched and what a failed write lost, now: at a clean stop.
     */
    public void commitAll()
    {
        write(true);
    }

    private boolean retryDue(final long nowNs)
    {
        return !lost.isEmpty() && nowNs - retryAtNs >= 0;
    }

    private void write(final boolean withLost)
    {
        if (null == writer)
        {
            return; // NONE, shared by every shard: never written to
        }
        if (withLost)
        {
            while (!lost.isEmpty())
            {
                // from the end, so that an end is out of the list once it is in the batch, whatever fails after it
                final int last = lost.size() - END_LONGS;
                batch(lost.getLong(last), lost.getLong(last + 1), (int)lost.getLong(last + 2));
                lost.removeAt(last + 2);
                lost.removeAt(last + 1);
                lost.removeAt(last);
            }
        }
        if (!writer.isEmpty())
        {
            try
            {
                writer.commit();
            }
            catch (final StoreException ex)
            {
                // the writer dropped its batch: these go again, a retry interval from now
                for (int i = 0; i < batched.size() && lost.size() < MAX_KEPT_ENDS * END_LONGS; i += END_LONGS)
                {
                    lost.addLong(batched.getLong(i));
                    lost.addLong(batched.getLong(i + 1));
                    lost.addLong(batched.getLong(i + 2));
                }
                batched.clear();
                deferred = lost.size() / END_LONGS;
                retryAtNs = System.nanoTime() + retryNs;
                throw ex;
            }
        }
        batched.clear();
        deferred = lost.size() / END_LONGS;
    }

    /**
     * @return the ends {@link #done} batched, or lost by a failed write, that are not written yet.
     */
    public int deferred()
    {
        return deferred;
    }
}
