package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * Ends the connection of a client that holds messages in flight and acknowledges none of them, once clients that hold
 * less find no room in the shard's share of --max-message-memory: {@code --stalled-client-timeout}. What is in flight
 * is never dropped while its session lives [MQTT-4.4.0-1], and every bound taken when a copy is made leaves a part of
 * what is free, so the clients of enough addresses that never acknowledge held the whole share between them (24
 * connections from eight hosts did), and an honest subscriber got none of its QoS 1 messages (stop 61's open case).
 * Ending the connection ends a clean session and what it held; a persistent session goes away, its queue given back
 * as any session away's, its window kept for its client to resume.
 * <p>
 * A client is stalled when the copy it has had in flight the longest is the same one, on the same connection, at
 * looks a timeout apart. The looks are made only while a connected client is refused a copy, at most one every
 * {@link #LOOK_INTERVAL_MS}, each over the shard's sessions; each ends at most one connection, the stalled one whose
 * end frees the most ({@link #freedByEnd}), and only one that holds more than the client refused. A client that acknowledges
 * anything in order, however slowly, is never stalled, and none is ended while everyone finds room. Owned by its
 * shard's thread.
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
        this.timeoutMs = timeoutMs;
        if (0 == timeoutMs)
        {
            watched.clear();
        }
    }

    /**
     * A connected client that holds {@code heldBytes} found no room for a copy of {@code cost} bytes more: when a look
     * is due, ends the connection of the stalled client that holds the most, if one holds more than that.
     *
     * @return whether a connection was ended (the room comes back once its end is handled).
     */
    boolean refused(final long heldBytes, final long cost, final long nowMs)
    {
        if (0 == timeoutMs || nowMs < nextLookMs)
        {
            return false;
        }
        nextLookMs = nowMs + LOOK_INTERVAL_MS;
        final DeliverySession stalled = look(heldBytes + cost, nowMs);
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
        output.close(stalled.connectionId);
        return true;
    }

    /**
     * One pass over the shard's sessions: each connected one with messages in flight is watched from the first look
     * that sees what it has had in flight the longest; those no look saw so are forgotten.
     *
     * @return of the connected sessions stalled for the timeout that hold more than {@code moreThan}, the one whose end
     * frees the most; null when none would free anything.
     */
    private DeliverySession look(final long moreThan, final long nowMs)
    {
        looks++;
        DeliverySession most = null;
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
            if (!watch.ended && nowMs - watch.sinceMs >= timeoutMs && session.heldBytes() > moreThan &&
                freedByEnd(session) > (null == most ? 0 : freedByEnd(most)))
            {
                most = session;
            }
        }
        watched.values().removeIf(watch -> watch.look != looks);
        return most;
    }

    /**
     * @return what ending its connection gives back at most: all it holds for a clean session, which ends with it; its
     * queue for a persistent one, whose window stays for its client to resume [MQTT-4.4.0-1] (one with nothing
     * queued would free nothing, and keeps its connection).
     */
    private static long freedByEnd(final DeliverySession session)
    {
        return session.persistent ? session.queuedBytes() : session.heldBytes();
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
