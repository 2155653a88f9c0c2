package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * Ends the connection and the session of a client that holds messages in flight and acknowledges none of them, once a
 * client that is not stalled finds no room in the shard's share of --max-message-memory:
 * {@code --stalled-client-timeout}. What is in flight is never dropped while its session lives [MQTT-4.4.0-1], and
 * every bound taken when a copy is made leaves a part of what is free, so the clients of enough addresses that never
 * acknowledge held the whole share between them (24 connections from eight hosts did), and an honest subscriber got
 * none of its QoS 1 messages (stop 61's open case). Its session ends with the connection whatever its Session Expiry
 * Interval, and frees all it held: stored session state may be discarded as an automated response to defined
 * conditions, which ends the session (MQTT 3.1.1, section 4.1); its client finds no session present when it comes
 * back. Ending only the connection of a persistent session would free nothing it has in flight, and 25 such clients
 * that never acknowledged kept the share full with none ended (review of 36e05eca, helper-157).
 * <p>
 * A client is stalled when the copy it has had in flight the longest is the same one, on the same connection, at
 * looks a timeout apart: each copy that becomes its oldest must be acknowledged within the timeout, its transmission
 * included. The looks are made only while a connected client that is not stalled itself is refused a copy, at most
 * one every {@link #LOOK_INTERVAL_MS}, each over the shard's sessions; each ends at most one connection, the stalled
 * one whose end frees the most ({@link DeliverySession#soleBytes}: a copy others hold too frees only its entry).
 * Without the first rule a client that never acknowledges, refused for holding its part, would have every small
 * stalled client ended in turn for more of its own; without ending smaller ones than the client refused, an honest
 * subscriber holding its 32 messages of 16 KiB in flight got 58 % of them past the last 16 stalled clients that each
 * held less. None is ended while everyone finds room. Owned by its shard's thread.
 */
final class StalledClients
{
    /** The least time between two looks: the cost of a look is one pass over the shard's sessions. */
    static final long LOOK_INTERVAL_MS = 100;

    private final ShardSessions sessions;
    private final ShardOutput output;
    private final ControlPackets control;
    private final BrokerCounters counters;
    /** What each session seen with messages in flight at the last looks had in flight the longest, and since when. */
    private final Int2ObjectHashMap<Watch> watched = new Int2ObjectHashMap<>();
    private long timeoutMs;
    private long nextLookMs;
    private long looks;

    StalledClients(final ShardSessions sessions, final ShardOutput output, final ControlPackets control,
        final BrokerCounters counters, final long timeoutMs)
    {
        this.sessions = sessions;
        this.output = output;
        this.control = control;
        this.counters = counters;
        this.timeoutMs = timeoutMs;
    }

    /**
     * @param timeoutMs {@code --stalled-client-timeout} from now on (a reload); 0 ends no one.
     */
    void timeoutMs(final long timeoutMs)
    {
        if (timeoutMs != this.timeoutMs)
        {
            watched.clear(); // stalls are timed again from the next look: a lower timeout ends no one at once
        }
        this.timeoutMs = timeoutMs;
    }

    /**
     * A connected client found no room for its next copy: when a look is due, and it is not stalled itself, ends the
     * connection of the stalled client whose end frees the most.
     *
     * @return whether a connection was ended (the room comes back once its end is handled).
     */
    boolean refused(final DeliverySession refused, final long nowMs)
    {
        if (0 == timeoutMs || nowMs < nextLookMs)
        {
            return false;
        }
        final Watch own = watched.get(refused.id);
        if (null != own && stalled(own, refused, refused.earliestInflight(), nowMs))
        {
            return false; // one that acknowledges nothing makes no one else give way for more of its own
        }
        nextLookMs = nowMs + LOOK_INTERVAL_MS;
        final DeliverySession stalled = look(nowMs);
        if (null == stalled)
        {
            return false;
        }
        watched.get(stalled.id).ended = true; // until its end is handled: never chosen twice
        counters.increment(BrokerCounters.STALLED_CLIENTS_ENDED);
        final int disconnect = control.disconnect(stalled.version, ReasonCode.QUOTA_EXCEEDED);
        if (disconnect > 0 && disconnect <= stalled.maxPacketSize)
        {
            output.sendControl(stalled.connectionId, control, disconnect);
        }
        output.closeEndingSession(stalled.connectionId);
        return true;
    }

    /**
     * One pass over the shard's sessions: each connected one with messages in flight is watched from the first look
     * that sees what it has had in flight the longest; those no look saw so are forgotten.
     *
     * @return of the connected sessions stalled for the timeout, the one whose end frees the most; null when none
     * would free anything.
     */
    private DeliverySession look(final long nowMs)
    {
        looks++;
        DeliverySession most = null;
        long mostFreed = 0;
        for (int id = 0, end = sessions.idBound(); id < end; id++)
        {
            final DeliverySession session = sessions.get(id);
            final long earliest = null == session || !session.isOnline() ? 0 : session.earliestInflight();
            if (0 == earliest)
            {
                continue;
            }
            Watch watch = watched.get(id);
            if (null == watch)
            {
                watch = new Watch();
                watched.put(id, watch);
            }
            if (watch.connectionId != session.connectionId || watch.origin != earliest && !watch.ended)
            {
                watch.origin = earliest;
                watch.connectionId = session.connectionId;
                watch.sinceMs = nowMs;
                watch.ended = false;
            }
            watch.look = looks;
            if (!watch.ended && stalled(watch, session, earliest, nowMs))
            {
                final long freed = session.soleBytes();
                if (freed > mostFreed)
                {
                    most = session;
                    mostFreed = freed;
                }
            }
        }
        watched.values().removeIf(watch -> watch.look != looks);
        return most;
    }

    /**
     * @return whether {@code watch} saw {@code session} on its connection with {@code earliest} the copy it has had in
     * flight the longest, since at least the timeout ago.
     */
    private boolean stalled(final Watch watch, final DeliverySession session, final long earliest, final long nowMs)
    {
        return watch.connectionId == session.connectionId && watch.origin == earliest && 0 != earliest &&
            nowMs - watch.sinceMs >= timeoutMs;
    }

    /**
     * @return sessions watched (for tests).
     */
    int watched()
    {
        return watched.size();
    }

    /**
     * What one session had in flight the longest when looks saw it, on which connection, since when.
     */
    private static final class Watch
    {
        long origin;
        long connectionId;
        long sinceMs;
        long look;
        /** Its connection was ended: skipped until the session is on another. */
        boolean ended;
    }
}
