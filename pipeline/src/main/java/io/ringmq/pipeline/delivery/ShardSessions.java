package io.ringmq.pipeline.delivery;

import org.agrona.collections.Int2IntHashMap;

import java.util.Arrays;

/**
 * The delivery halves a shard holds, by session id (ids are small and reused, so a growing array), and the sweep
 * that gives back the windows and queues of sessions that no longer use them ({@link DeliverySession#trim}): one
 * pass every {@link #SWEEP_INTERVAL_MS}, a bounded step per duty cycle. Owned by its shard's thread.
 */
final class ShardSessions
{
    /** How often a sweep starts: a window or queue unused for one to two of these is given back. */
    static final long SWEEP_INTERVAL_MS = 5_000;
    /** Sessions looked at per step of a sweep. */
    static final int SWEEP_STEP = 1_024;

    /** Sessions away looked at in one window ({@link #awayWindow}): what one plan of room taken back sees. */
    static final int AWAY_LOOK = 1_024;

    private DeliverySession[] sessions = new DeliverySession[1024];
    /**
     * Sessions whose client is away and that queued messages since (or were restored with their queues): where a full
     * share takes room back ({@link AwayRoom}). One that was resumed or emptied leaves when a window finds it so,
     * one that ends or moves leaves with {@link #remove}.
     */
    private DeliverySession[] away = new DeliverySession[16];
    /**
     * Each listed session's place in {@link #away}, by session id: kept here, not in the session, which every idle
     * connection has (IdleConnectionHeapTest).
     */
    private final Int2IntHashMap awayAt = new Int2IntHashMap(-1);
    private int awayCount;
    /** Where the looks through the list start ({@link #awayWindow}), until {@link #lookFurther}. */
    private int awayLook;
    /**
     * Looks through the list so far ({@link #awayWindow}): what a test reads to see them bounded.
     */
    private long awaySearches;
    /** Where the sweep in progress is; at or past the end while none is. */
    private int sweepAt;
    private long nextSweepMs;

    /**
     * @return the session's delivery half, or null when this shard does not hold it.
     */
    DeliverySession get(final int sessionId)
    {
        return sessionId >= 0 && sessionId < sessions.length ? sessions[sessionId] : null;
    }

    /**
     * @return one past the highest session id it may hold: where a walk over {@link #get} ends.
     */
    int idBound()
    {
        return sessions.length;
    }

    void put(final DeliverySession session)
    {
        if (session.id >= sessions.length)
        {
            sessions = Arrays.copyOf(sessions, Math.max(sessions.length * 2, session.id + 1));
        }
        final DeliverySession before = sessions[session.id];
        if (null != before && before != session)
        {
            leaveAway(before);
        }
        sessions[session.id] = session;
    }

    /**
     * Keeps a session that arrived from another shard, unless this shard holds one of that id already.
     */
    void adopt(final DeliverySession session)
    {
        if (null == get(session.id))
        {
            put(session);
        }
    }

    void remove(final int sessionId)
    {
        if (sessionId >= 0 && sessionId < sessions.length)
        {
            final DeliverySession session = sessions[sessionId];
            if (null != session)
            {
                leaveAway(session);
            }
            sessions[sessionId] = null;
        }
    }

    /**
     * A session whose client is away queued a message, or kept queued ones as it went: one a full share may take room
     * back from.
     */
    void queuedAway(final DeliverySession session)
    {
        if (awayAt.containsKey(session.id))
        {
            return;
        }
        if (awayCount == away.length)
        {
            away = Arrays.copyOf(away, awayCount * 2);
        }
        awayAt.put(session.id, awayCount);
        away[awayCount++] = session;
    }

    private void leaveAway(final DeliverySession session)
    {
        final int at = awayAt.get(session.id);
        if (at < 0 || away[at] != session)
        {
            return;
        }
        awayAt.remove(session.id);
        final DeliverySession last = away[--awayCount];
        away[awayCount] = null;
        if (last != session)
        {
            away[at] = last;
            awayAt.put(last.id, at);
        }
        if (away.length > AWAY_LOOK && awayCount < away.length >> 2)
        {
            away = Arrays.copyOf(away, away.length >> 1); // what a burst of sessions away grew is given back
            awayAt.compact();
        }
    }

    /**
     * Fills {@code into} with up to its length of the sessions away, from where this event's looks start (the same
     * ones for every look of an event, {@link #lookFurther}), each once; those no longer away with a queue leave the
     * list once the look is over.
     *
     * @return how many it filled.
     */
    int awayWindow(final DeliverySession[] into)
    {
        awaySearches++;
        int filled = 0;
        int stale = 0;
        final int start = awayLook < awayCount ? awayLook : 0;
        for (int i = 0, look = Math.min(into.length, awayCount); i < look; i++)
        {
            final DeliverySession session = away[(start + i) % awayCount];
            if (session.isOnline() || 0 == session.queueSize())
            {
                into[into.length - ++stale] = session; // kept at the far end until the look is over
            }
            else
            {
                into[filled++] = session;
            }
        }
        for (; stale > 0; stale--)
        {
            leaveAway(into[into.length - stale]);
            into[into.length - stale] = null;
        }
        return filled;
    }

    /**
     * @return which window of the list {@link #awayWindow} fills now: its start, in windows.
     */
    int windowKey()
    {
        return (awayLook < awayCount ? awayLook : 0) / AWAY_LOOK;
    }

    /**
     * An event that looked through the list is over: the next one looks at the next {@link #AWAY_LOOK} sessions away,
     * so that every one of them is looked at in turn; an event's own looks all start at the same place.
     */
    void lookFurther()
    {
        awayLook = awayCount == 0 ? 0 : (awayLook + AWAY_LOOK) % awayCount;
    }

    /**
     * Once per duty cycle: starts a sweep when one is due, and takes its next step.
     *
     * @return the sessions that gave back a window or a queue.
     */
    int sweep(final long nowMs)
    {
        if (nowMs >= nextSweepMs)
        {
            nextSweepMs = nowMs + SWEEP_INTERVAL_MS;
            sweepAt = 0;
        }
        final int end = Math.min(sessions.length, sweepAt + SWEEP_STEP);
        int released = 0;
        for (; sweepAt < end; sweepAt++)
        {
            final DeliverySession session = sessions[sweepAt];
            if (null != session && session.trim(true))
            {
                released++;
            }
        }
        return released;
    }
}
