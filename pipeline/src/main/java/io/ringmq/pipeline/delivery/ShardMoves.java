package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.LongHashSet;

/**
 * A shard's part in moving sessions between shards: a client that resumes its session through another I/O agent
 * takes the session's delivery half with it. The old shard hands it over, tagged with the moving CONNECT's
 * connection id; the new shard waits for it on that CONNECT. Either side may fail on the CONNECT: a move that
 * happened is still taken in (an orphan, kept offline when it arrives), and one whose session ended meanwhile is
 * dropped when it arrives (stale). Owned by its shard's thread.
 */
final class ShardMoves
{
    private final int index;
    private final ShardHandover handover;
    private final ShardSessions sessions;
    private final BrokerCounters counters;
    private int maxInflight;
    private final SessionWindows windows;
    private final Messages messages;
    /** Sessions handed over by other shards, by the connection id of the CONNECT that moved them. */
    private final Long2ObjectHashMap<DeliverySession> arrived = new Long2ObjectHashMap<>();
    /** Moves into this shard whose CONNECT failed here before the session arrived: connection id to session id. */
    private final Long2LongHashMap orphans = new Long2LongHashMap(-1);
    /** Hand-overs to drop on arrival: their session ended while they were on their way. */
    private final LongHashSet stale = new LongHashSet();
    private long lastHandedOver = IngressEvent.NONE;

    /**
     * @param messages what becomes of the messages a moving session holds, in this shard.
     */
    ShardMoves(final int index, final ShardHandover handover, final ShardSessions sessions,
        final BrokerCounters counters, final int maxInflight, final SessionWindows windows, final Messages messages)
    {
        this.messages = messages;
        this.index = index;
        this.handover = handover;
        this.sessions = sessions;
        this.counters = counters;
        this.maxInflight = maxInflight;
        this.windows = windows;
    }

    /**
     * The messages of a session's delivery half as it moves, each call on the thread of the shard named.
     */
    interface Messages
    {
        /**
         * On the old shard, before the hand-over publishes the session to the new one: it takes copies of its own.
         */
        void leave(DeliverySession session, int toShard);

        /**
         * On the old shard, once the session has its copies and before the hand-over: writes the ends of messages its
         * journal batched, since the session may take a packet id they freed again in the other shard, whose exchange
         * record would not write them. A failure here still hands the session over.
         */
        void writeEnds();

        /**
         * On the old shard, when {@link #leave} failed (out of heap): its references here are released, and it moves
         * with no message rather than not at all.
         */
        void abandon(DeliverySession session);

        /**
         * On the new shard, as it takes the session in: the copies are counted there.
         */
        void arrive(DeliverySession session);

        /**
         * On the new shard: a session that ended while on its way is dropped (its messages released, a shared
         * subscriber's handed back).
         */
        void forget(DeliverySession session);
    }

    /**
     * @return whether a CONNECT this shard serves must wait: its session's delivery half is still on its way from
     * the shard that held it.
     */
    boolean mustWait(final IngressEvent event)
    {
        return event.movedFromShard != IngressEvent.NONE && event.movedFromShard != index &&
            event.sessionId != IngressEvent.NONE && !arrived(event.connectionId);
    }

    /**
     * Gives a session's delivery half to the shard of its client's new connection, which waits for it on the same
     * CONNECT; an empty one when this shard has none, so that shard never waits forever.
     */
    void handOver(final IngressEvent event, final DeliverySession current)
    {
        if (event.connectionId == lastHandedOver)
        {
            return; // done already, before this shard failed on the same CONNECT
        }
        lastHandedOver = event.connectionId;
        final DeliverySession moving = null != current ? current :
            new DeliverySession(event.sessionId, true, maxInflight, windows);
        if (null != current)
        {
            sessions.remove(event.sessionId);
        }
        moving.unbind(); // before its copies are the other shard's: its address's hold is this shard's
        boolean copied = false;
        try
        {
            messages.leave(moving, event.agentIndex); // before the hand-over publishes it to the other shard's thread
            copied = true;
            messages.writeEnds();
        }
        finally
        {
            if (!copied)
            {
                messages.abandon(moving); // the error goes on to the stage; the new shard still gets the session
            }
            moving.releaseAliases(); // counted by this shard: the new one makes its own for the new connection
            moving.handoverTag = event.connectionId;
            counters.increment(BrokerCounters.SESSIONS_MOVED);
            handover.send(event.agentIndex, moving); // the new shard sees this CONNECT too and takes it there
        }
    }

    /**
     * @return the session the CONNECT of this connection moved here (it has arrived: {@link #mustWait} said so).
     */
    DeliverySession take(final long connectionId)
    {
        return arrived.remove(connectionId);
    }

    /**
     * A move into this shard whose CONNECT failed here: keep the session (offline) when it arrives.
     */
    void adoptWhenArrived(final long connectionId, final int sessionId)
    {
        drain();
        final DeliverySession session = arrived.remove(connectionId);
        if (null != session)
        {
            sessions.adopt(session);
        }
        else
        {
            orphans.put(connectionId, sessionId);
        }
    }

    /**
     * Takes in what other shards handed over (each duty cycle while orphans wait).
     */
    void poll()
    {
        if (!orphans.isEmpty())
        {
            drain();
        }
    }

    /**
     * A session ended: a hand-over of it still to arrive is dropped then.
     */
    void onForget(final int sessionId)
    {
        if (orphans.isEmpty())
        {
            return;
        }
        final Long2LongHashMap.KeyIterator tags = orphans.keySet().iterator();
        while (tags.hasNext())
        {
            final long tag = tags.nextValue();
            if (orphans.get(tag) == sessionId)
            {
                tags.remove();
                stale.add(tag); // that session ended: drop its hand-over when it arrives
            }
        }
    }

    private boolean arrived(final long connectionId)
    {
        drain();
        return arrived.containsKey(connectionId);
    }

    private void drain()
    {
        DeliverySession session;
        while (null != (session = handover.poll(index)))
        {
            messages.arrive(session);
            final long tag = session.handoverTag;
            final long orphanOf = orphans.remove(tag);
            if (orphanOf != orphans.missingValue())
            {
                sessions.adopt(session);
            }
            else if (stale.remove(tag))
            {
                messages.forget(session); // its session ended while it was on its way
            }
            else
            {
                arrived.put(tag, session); // its CONNECT is still to come here: it waits in arrived
            }
        }
    }

    /**
     * @param maxInflight the in-flight window of the sessions moved here from now on (a reload).
     */
    void maxInflight(final int maxInflight)
    {
        this.maxInflight = maxInflight;
    }
}
