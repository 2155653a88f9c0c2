package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;

/**
 * What becomes of a delivery shard's QoS 1 and 2 copies when one of its sessions moves to another shard, or arrives
 * from one (a client resuming through another I/O agent): the session takes private copies along, since references
 * are counted by one thread only, and the shard it arrives in counts them against its share of
 * {@code --max-message-memory}, sharing a copy another moving session brought already. Owned by the shard's thread.
 */
final class MovedMessages implements ShardMoves.Messages
{
    private final SharedMessage.Pool pool;
    private final WindowUpkeep upkeep;
    private final BrokerCounters counters;
    private final ShardJournal journal;

    /**
     * @param pool   the shard's copies, and its share of --max-message-memory.
     * @param upkeep what hands a shared subscriber's messages back, and forgets a session.
     */
    MovedMessages(final SharedMessage.Pool pool, final WindowUpkeep upkeep, final BrokerCounters counters,
        final ShardJournal journal)
    {
        this.pool = pool;
        this.upkeep = upkeep;
        this.counters = counters;
        this.journal = journal;
    }

    @Override
    public void writeEnds()
    {
        journal.commit();
    }

    /**
     * A session's delivery half leaves for another shard: it takes copies of its messages of its own along. Each
     * message in its window and queue is replaced by a copy of its own that belongs to that shard, and its reference
     * to this shard's copy, which other sessions here may share, is released here. A reference count is never
     * touched by two threads.
     */
    @Override
    public void leave(final DeliverySession session, final int toShard)
    {
        // every copy first: a copy that cannot be made (out of heap) leaves the session as it was
        final int slots = session.windowCapacity();
        final SharedMessage[] inflight = new SharedMessage[slots];
        for (int slot = 0; slot < slots; slot++)
        {
            final SharedMessage message = session.inflightMessage(slot);
            inflight[slot] = null == message ? null : message.copyFor(toShard);
        }
        final SharedMessage[] queued = new SharedMessage[session.queueSize()];
        for (int i = 0; i < queued.length; i++)
        {
            queued[i] = session.queuedMessage(i).copyFor(toShard);
        }
        for (int slot = 0; slot < slots; slot++)
        {
            if (null != inflight[slot])
            {
                final SharedMessage left = session.inflightMessage(slot);
                inflight[slot].retain();
                session.replaceInflight(slot, inflight[slot]);
                pool.release(left);
            }
        }
        for (int i = 0; i < queued.length; i++)
        {
            final SharedMessage left = session.queuedMessage(i);
            queued[i].retain();
            session.replaceQueued(i, queued[i]); // first: the entry no longer names this shard's copy
            pool.release(left);
        }
    }

    /**
     * Its copies are counted here. A message another moving session brought already is shared, as it was in the old
     * shard (sessions that shared one copy there bring a copy each); any other is kept while this shard's share has
     * room: in flight in any order, queued oldest first. What does not fit is dropped and counted, as it would be
     * had it been published now: an in-flight one is not resent when its client comes back.
     */
    @Override
    public void arrive(final DeliverySession session)
    {
        for (int slot = 0; slot < session.windowCapacity(); slot++)
        {
            final SharedMessage message = session.inflightMessage(slot);
            if (null != message && !keepArrived(message, session, slot, true))
            {
                final int qos = session.inflightQos(slot);
                session.removeInflight(slot); // a private copy nobody counted: nothing to release
                dropArrived(session, message.messageNumber(), qos);
            }
        }
        int kept = 0;
        while (kept < session.queueSize() && keepArrived(session.queuedMessage(kept), session, kept, false))
        {
            kept++;
        }
        while (session.queueSize() > kept)
        {
            final int newest = session.queueSize() - 1;
            final long messageNumber = session.queuedMessage(newest).messageNumber();
            final int qos = session.queuedQos(newest);
            session.removeNewestQueued(); // a private copy nobody counted: nothing to release
            dropArrived(session, messageNumber, qos);
        }
    }

    /**
     * @return false when the arrived copy in a window slot or queue place can be neither shared nor counted here.
     */
    private boolean keepArrived(final SharedMessage message, final DeliverySession session, final int at,
        final boolean inflight)
    {
        // the entry's own Subscription Identifier array stays with it: counted here as it was in the old shard
        final long ids = SharedMessage.Pool.idsCost(inflight ? session.inflightSubscriptionIds(at) :
            session.queuedSubscriptionIds(at));
        final SharedMessage local = pool.arrivedCopyOf(message);
        if (null != local)
        {
            if (ids > 0 && !pool.hasRoomFor((int)ids))
            {
                return false;
            }
            local.retain(); // the private copy it replaces was never counted: dropped with no release
            pool.charge(local, ids + SharedMessage.Pool.ENTRY_ALLOWANCE);
            if (inflight)
            {
                session.replaceInflight(at, local);
            }
            else
            {
                session.replaceQueued(at, local);
            }
            return true;
        }
        if (!pool.hasRoomFor((int)(message.length() + ids)))
        {
            return false;
        }
        pool.adopt(message);
        pool.charge(message, ids + SharedMessage.Pool.ENTRY_ALLOWANCE);
        return true;
    }

    private void dropArrived(final DeliverySession session, final long messageNumber, final int qos)
    {
        counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        journal.done(session.persistenceKey, messageNumber, qos);
    }

    /**
     * Its messages are released here; those its shared subscriptions took go back to their groups first when that
     * can be done, and the others are counted as dropped (their records stay: a restart would bring them back).
     */
    @Override
    public void abandon(final DeliverySession session)
    {
        boolean handedBack = false;
        try
        {
            upkeep.handBackShared(session);
            handedBack = true;
        }
        finally
        {
            long lost = 0;
            for (int slot = 0; slot < session.windowCapacity(); slot++)
            {
                lost += null != session.inflightMessage(slot) && (!handedBack || 0 == session.inflightGroup(slot)) ?
                    1 : 0;
            }
            for (int i = 0; i < session.queueSize(); i++)
            {
                lost += !handedBack || 0 == session.queuedGroup(i) ? 1 : 0;
            }
            counters.add(BrokerCounters.MESSAGE_MEMORY_DROPPED, lost);
            session.clear(pool);
        }
    }

    @Override
    public void forget(final DeliverySession session)
    {
        upkeep.forget(session);
    }
}
