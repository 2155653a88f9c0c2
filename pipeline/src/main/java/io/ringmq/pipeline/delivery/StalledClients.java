package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.status.BrokerCounters;
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
 * A client is stalled when the copy it has had in flight the longest is the same one at looks a timeout apart: each
 * copy that becomes its oldest must be acknowledged within the timeout, its transmission included. Its time goes on
 * while it is away and across its connections (one that took its session over every 200 ms was never stalled, review
 * of 09f749b9, helper-158); once a copy, a client that comes back gets half the timeout at least to acknowledge it
 * sent again. Only connected clients are ended, never the broker's own bridges (their windows wait for the remote
 * broker). The looks are made only while a connected client that is not stalled itself is refused a copy, at most
 * one every {@link #LOOK_INTERVAL_MS}, each over the shard's sessions in steps of {@link #LOOK_STEP}; each ends at
 * most one connection, the stalled one whose end frees the most ({@link DeliverySession#soleBytes}: a copy others
 * hold too frees only its entry).
 * Without the first rule a client that never acknowledges, refused for holding its part, would have every small
 * stalled client ended in turn for more of its own; without ending smaller ones than the client refused, an honest
 * subscriber holding its 32 messages of 16 KiB in flight got 58 % of them past the last 16 stalled clients that each
 * held less. None is ended while everyone finds room. Owned by its shard's thread.
 */
final class StalledClients
{
    /** The least time from the start of one look to the start of the next. */
    static final long LOOK_INTERVAL_MS = 100;
    /**
     * The work of one step of a look: a session looked at is one, a stalled one as many more as the window slots and
     * queue entries read to see what its end frees. A shard with more takes a step at most every
     * {@link #STEP_INTERVAL_MS}, so that a look over 100,000 sessions (about 1 ms whole), or over stalled clients that
     * queue 512,000 entries between them (what a 16 MiB share holds at most), never pauses the shard's thread for more
     * than about a tenth of a millisecond.
     */
    static final int LOOK_STEP = 8_192;
    static final long STEP_INTERVAL_MS = 10;

    private final ShardSessions sessions;
    private final ShardOutput output;
    private final BrokerCounters counters;
    /** What each session seen with messages in flight at the last looks had in flight the longest, and since when. */
    private final Int2ObjectHashMap<Watch> watched = new Int2ObjectHashMap<>();
    private long timeoutMs;
    private long nextStepMs;
    /** Looks begun: the look that last saw each watch. */
    private long looks;
    /** Where the look in progress goes on; 0 while none is. */
    private int lookAt;
    /** When the look in progress began. */
    private long lookBeganMs;
    /** Of the sessions the look in progress saw stalled, the one whose end frees the most, and what that is. */
    private DeliverySession most;
    private long mostFreed;

    StalledClients(final ShardSessions sessions, final ShardOutput output, final BrokerCounters counters,
        final long timeoutMs)
    {
        this.sessions = sessions;
        this.output = output;
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
            lookAt = 0;
            most = null;
        }
        this.timeoutMs = timeoutMs;
    }

    /**
     * A connected client found no room for its next copy: when a step of a look is due, and it is not stalled
     * itself, takes it; at the end of a look, ends the connection and session of the stalled client whose end frees
     * the most, if it is stalled still.
     *
     * @return whether a connection was ended (the room comes back once its end is handled).
     */
    boolean refused(final DeliverySession refused, final long nowMs)
    {
        if (0 == timeoutMs || nowMs < nextStepMs)
        {
            return false;
        }
        final Watch own = watched.get(refused.id);
        if (null != own && stalled(own, refused, refused.earliestInflight(), nowMs))
        {
            return false; // one that acknowledges nothing makes no one else give way for more of its own
        }
        if (0 == lookAt)
        {
            looks++;
            lookBeganMs = nowMs;
            most = null;
            mostFreed = 0;
        }
        if (!step(nowMs))
        {
            nextStepMs = nowMs + STEP_INTERVAL_MS;
            return false;
        }
        nextStepMs = Math.max(nowMs, lookBeganMs + LOOK_INTERVAL_MS);
        watched.values().removeIf(watch -> watch.look != looks);
        final DeliverySession stalled = most;
        most = null;
        if (null == stalled || sessions.get(stalled.id) != stalled || !stalled.isOnline() || stalled.ownBridge())
        {
            return false;
        }
        final Watch watch = watched.get(stalled.id);
        if (null == watch || watch.ended || !stalled(watch, stalled, stalled.earliestInflight(), nowMs))
        {
            return false; // it acknowledged, or left, since the look saw it
        }
        watch.ended = true; // until its end is handled: never chosen twice
        counters.increment(BrokerCounters.STALLED_CLIENTS_ENDED);
        output.closeEndingSession(stalled.connectionId); // its agent tells a 5.0 client why (0x97), and reads no more
        return true;
    }

    /**
     * One step of a look over the shard's sessions: each connected one with messages in flight is watched from the
     * first look that sees what it has had in flight the longest; the stalled one whose end frees the most is kept.
     *
     * @return whether the look is done (those no look saw are then forgotten).
     */
    private boolean step(final long nowMs)
    {
        final int bound = sessions.idBound();
        int id = lookAt;
        for (int work = 0; id < bound && work < LOOK_STEP; id++, work++)
        {
            final DeliverySession session = sessions.get(id);
            // sessions away are watched too, so that going away for a while times nothing again
            final long earliest = null == session || session.ownBridge() ? 0 : session.earliestInflight();
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
            if (watch.origin != earliest && (!watch.ended || watch.connectionId != session.connectionId))
            {
                watch.origin = earliest;
                watch.sinceMs = nowMs;
                watch.graced = false;
                watch.connectionId = session.connectionId;
                watch.ended = false;
            }
            else if (watch.connectionId != session.connectionId)
            {
                // away, or resumed on a new connection: its oldest copy is timed on, or reconnecting every so often
                // would escape the timeout with its window kept (review of 09f749b9, helper-158); an end that came
                // too late (the client was back first) is made again. Once a copy, a client back gets half the
                // timeout at least to acknowledge it sent again.
                watch.connectionId = session.connectionId;
                watch.ended = false;
                if (session.isOnline() && !watch.graced)
                {
                    watch.graced = true;
                    watch.sinceMs = Math.max(watch.sinceMs, nowMs - timeoutMs / 2);
                }
            }
            watch.look = looks;
            if (!watch.ended && session.isOnline() && stalled(watch, session, earliest, nowMs))
            {
                work += session.windowCapacity() + session.queueSize();
                final long freed = session.soleBytes();
                if (freed > mostFreed)
                {
                    most = session;
                    mostFreed = freed;
                }
            }
        }
        lookAt = id >= bound ? 0 : id;
        return 0 == lookAt;
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
     * @return whether a look is under way, a step of it taken and more to come (for benchmarks).
     */
    boolean looking()
    {
        return 0 != lookAt;
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
        /** Its client came back on a new connection while this copy was its oldest, and was given time. */
        boolean graced;
    }
}
