package io.ringmq.pipeline.persistence;

import org.agrona.ExpandableDirectByteBuffer;

/**
 * A delivery shard's writes to the store: the rest of the life of a message the persistence stage stored for a
 * persistent session. Its QoS 2 exchange ({@link #exchange}) is written before the packet it goes with leaves, so
 * that after a restart the message is resent with the same packet id or its PUBREL is (exactly once, even across a
 * crash); the end of a message ({@link #done}) is batched until {@link #commit()} at the end of the shard's batch:
 * a crash before it resends a message the client had, which MQTT allows (a QoS 1 duplicate, or a QoS 2 resend with
 * its packet id, which the client answers without delivering twice). Owned by its shard's thread.
 */
public final class ShardJournal
{
    private static final ShardJournal NONE = new ShardJournal(null);

    private final StoreWriter writer;
    private final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(Records.MESSAGE_KEY_LENGTH);
    private final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(8);

    private ShardJournal(final StoreWriter writer)
    {
        this.writer = writer;
    }

    /**
     * @return a journal that writes nothing (persistence off).
     */
    public static ShardJournal none()
    {
        return NONE;
    }

    /**
     * @return the journal of one shard on a durable store.
     */
    public static ShardJournal of(final DurableStore store)
    {
        return store.isDurable() ? new ShardJournal(store.writer(false)) : NONE;
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
        writer.commit();
    }

    /**
     * A message is done with for a session: acknowledged, refused, expired or dropped.
     *
     * @param qos the QoS it had for the session (only QoS 2 has an exchange record).
     */
    public void done(final long sessionKey, final long messageNumber, final int qos)
    {
        if (!isStored(sessionKey, messageNumber))
        {
            return;
        }
        writer.deleteOnce(key, 0, Records.messageKey(key, sessionKey, Records.QUEUED, messageNumber));
        if (qos == 2)
        {
            writer.delete(key, 0, Records.messageKey(key, sessionKey, Records.EXCHANGE, messageNumber)); // put twice
        }
    }

    /**
     * Writes what {@link #done} batched.
     */
    public void commit()
    {
        if (null != writer && !writer.isEmpty())
        {
            writer.commit();
        }
    }
}
