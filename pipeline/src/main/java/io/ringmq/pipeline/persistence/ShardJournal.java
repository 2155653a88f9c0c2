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
 * moves to another shard, and at a clean stop ({@link #commit()}). At low load each message's end was a write of
 * its own. A write that fails (a full disk) loses its batch: the ends in it are kept and written again with the next
 * write, and the next look tries again {@value #RETRY_AFTER_FAILURE_MS} ms after the failure, so that no end is lost
 * to a failure that clears. Otherwise a message acknowledged before it would be sent again after a restart, and its
 * QoS 2 exchange record could meet a packet id used again since. Up to {@value #MAX_KEPT_ENDS} ends are kept; an
 * outage that outlasts them loses the rest, as every end was lost before. Used by its shard's thread only, and by
 * recovery before it starts and the clean stop after it has stopped.
 */
public final class ShardJournal
{
    /** Ends batched past this many are written at the next look, however young. */
    public static final int DEFER_RECORDS = 1024;
    /** After a failed write, the next look tries again no sooner than this: a full disk is not hammered. */
    public static final long RETRY_AFTER_FAILURE_MS = 1_000;
    /** Ends kept for a write that failed, at most (three longs each: 1.5 MiB). */
    public static final int MAX_KEPT_ENDS = 65_536;
    private static final int END_LONGS = 3;
    private static final ShardJournal NONE = new ShardJournal(null, 0);

    private final StoreWriter writer;
    /** How long an end may wait for company before the next look writes it. */
    private final long deferNs;
    private final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(Records.MESSAGE_KEY_LENGTH);
    private final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(8);
    /** Ends batched since the last write, and when the first of them was ({@link System#nanoTime()}). */
    private int deferred;
    private long firstDeferredNs;
    /** The ends in the writer's batch: session key, message number and QoS of each. */
    private final LongArrayList batched = new LongArrayList();
    /** The ends a failed write lost, to be batched again by the next {@link #commit()}. */
    private final LongArrayList lost = new LongArrayList();
    /** A write failed: the next look waits until {@link #retryAtNs}. */
    private boolean retrying;
    private long retryAtNs;

    private ShardJournal(final StoreWriter writer, final long deferNs)
    {
        this.writer = writer;
        this.deferNs = deferNs;
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
        return store.isDurable() ?
            new ShardJournal(store.writer(false), TimeUnit.MILLISECONDS.toNanos(deferMs)) : NONE;
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
        commit(); // with the ends waiting: a packet id they freed may be this one
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
        if (batched.size() < MAX_KEPT_ENDS * END_LONGS)
        {
            batched.addLong(sessionKey);
            batched.addLong(messageNumber);
            batched.addLong(qos);
        }
        writer.deleteOnce(key, 0, Records.messageKey(key, sessionKey, Records.QUEUED, messageNumber));
        if (qos == 2)
        {
            writer.delete(key, 0, Records.messageKey(key, sessionKey, Records.EXCHANGE, messageNumber)); // put twice
        }
    }

    /**
     * At the end of the shard's batch and once per duty cycle: writes the ends {@link #done} batched when the oldest
     * has waited the fsync interval or {@value #DEFER_RECORDS} have gathered. A shard that has gone idle comes here at
     * its next wake-up, within its longest sleep (100 ms).
     */
    public void commitDue()
    {
        if (0 == deferred)
        {
            return;
        }
        final long nowNs = System.nanoTime();
        if (retrying ? nowNs - retryAtNs >= 0 : deferred >= DEFER_RECORDS || nowNs - firstDeferredNs >= deferNs)
        {
            commit();
        }
    }

    /**
     * Writes what {@link #done} batched, now: before a session moves to another shard, and at a clean stop.
     */
    public void commit()
    {
        if (null == writer)
        {
            return; // NONE, shared by every shard: never written to
        }
        for (int i = 0; i < lost.size(); i += END_LONGS)
        {
            batch(lost.getLong(i), lost.getLong(i + 1), (int)lost.getLong(i + 2));
        }
        lost.clear();
        if (!writer.isEmpty())
        {
            try
            {
                writer.commit();
            }
            catch (final StoreException ex)
            {
                lost.addAll(batched); // the writer dropped its batch: these go again with the next write
                batched.clear();
                deferred = lost.size() / END_LONGS;
                retrying = 0 != deferred;
                retryAtNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_AFTER_FAILURE_MS);
                throw ex;
            }
        }
        batched.clear();
        deferred = 0;
        retrying = false;
    }

    /**
     * @return the ends {@link #done} batched that are not written yet.
     */
    public int deferred()
    {
        return deferred;
    }
}
