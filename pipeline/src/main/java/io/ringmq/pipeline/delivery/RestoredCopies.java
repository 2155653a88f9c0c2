package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Recovery's part in a delivery shard: the stored messages of its restored sessions go back in flight or into their
 * queues, as one pooled copy per message number however many sessions it was stored for, as it was held before the
 * restart. It owns the copies restored so far, until recovery is over ({@link #restored()}). Used only before the
 * shard runs, by the thread that recovers it, which hands the pool and sessions over to the shard's thread.
 */
final class RestoredCopies
{
    private final SharedMessage.Pool pool;
    private final BrokerCounters counters;
    private final ShardJournal journal;
    /**
     * During recovery, the copies restored so far by message number: a message routed to many persistent sessions is
     * stored once per session but comes back as one copy they share, as it was held before the restart.
     */
    private final Long2ObjectHashMap<SharedMessage> restoring = new Long2ObjectHashMap<>();
    /** Copies recovery made (one per distinct message number). */
    private int restoredCopies;

    RestoredCopies(final SharedMessage.Pool pool, final BrokerCounters counters, final ShardJournal journal)
    {
        this.pool = pool;
        this.counters = counters;
        this.journal = journal;
    }

    /**
     * Recovery: a stored message of a session goes back in flight (with its packet id and QoS 2 state when it had
     * them, else a new packet id, written before it can be sent) or into the queue; one copy per message number,
     * shared by every session it was stored for, until {@link #restored()}. A queued one that would take the shard
     * past the three quarters of its share of --max-message-memory that sessions away may keep is dropped, and its
     * record with it. A message that came through a shared subscription keeps its group, so it goes to another
     * member if the session ends.
     */
    void restore(final DeliverySession session, final Message stored, final long number, final int qos,
        final boolean retain, final int publishedQos, final int[] ids, final boolean inflight, final int packetId,
        final int state, final int group)
    {
        SharedMessage message = restoring.get(number);
        // the entry's own Subscription Identifier array is counted with its copy, as routing counts it
        final long idsCost = SharedMessage.Pool.idsCost(ids);
        if (null != message && !inflight && idsCost > 0 && !pool.hasRoomOffline((int)idsCost))
        {
            counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
            journal.done(session.persistenceKey, number, qos);
            return;
        }
        if (null == message)
        {
            final byte[] topic = stored.topic();
            final byte[] properties = stored.properties();
            final byte[] payload = stored.payload();
            if (!inflight && !pool.hasRoomOffline((int)(topic.length + properties.length + payload.length + idsCost)))
            {
                // every session is away after a restart: the newest queued ones past the three quarters sessions away
                // may keep are dropped, as they would have been had they come now, or had their clients gone away
                // before it; those in flight (a window each, at most) all come back
                counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
                journal.done(session.persistenceKey, number, qos);
                return;
            }
            message = pool.copy(new UnsafeBuffer(topic), 0, topic.length, new UnsafeBuffer(properties), 0,
                properties.length, new UnsafeBuffer(payload), 0, payload.length, stored.expiresAtMs(), publishedQos);
            message.messageNumber(number);
            message.restored(true);
            restoring.put(number, message);
            restoredCopies++;
        }
        message.retain();
        pool.charge(message, idsCost + SharedMessage.Pool.ENTRY_ALLOWANCE);
        if (!inflight)
        {
            session.enqueue(message, qos, retain, ids, group);
            return;
        }
        final int slot = restoreInflight(session, message, qos, retain, ids, packetId, state, group);
        if (qos == 2 && session.inflightPacketId(slot) != packetId)
        {
            // a new id (none stored, or a stored one that could not be kept): written before it can be sent
            journal.exchange(session.persistenceKey, number, session.inflightPacketId(slot),
                DeliverySession.AWAIT_PUBREC);
        }
    }

    /**
     * Recovery: puts a message back in flight, with the packet id and state it had before the restart, or (0) a new
     * packet id. The window was made large enough for every restored message ({@link DeliveryShard#restoreSession}).
     *
     * @return its slot.
     */
    private static int restoreInflight(final DeliverySession session, final SharedMessage message, final int qos,
        final boolean retain, final int[] subscriptionIds, final int packetId, final int state, final int group)
    {
        session.packetIds().unreserve(packetId);
        if (packetId <= 0 || packetId > 65_535 || session.findInflight(packetId) >= 0)
        {
            // none, out of range, or taken already
            return session.addInflight(message, qos, retain, subscriptionIds, group);
        }
        final int at = session.packetIds().startAt(packetId);
        final int slot = session.addInflight(message, qos, retain, subscriptionIds, group);
        session.inflightState(slot, state);
        session.packetIds().resumeAfter(at, packetId);
        return slot;
    }

    /**
     * Recovery is over: messages routed from now on are new copies.
     *
     * @return the copies restored: one per distinct message.
     */
    int restored()
    {
        final int copies = restoredCopies;
        restoring.clear();
        restoredCopies = 0;
        return copies;
    }
}
