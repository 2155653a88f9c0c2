package io.ringmq.pipeline.delivery;

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

    private DeliverySession[] sessions = new DeliverySession[1024];
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

    void put(final DeliverySession session)
    {
        if (session.id >= sessions.length)
        {
            sessions = Arrays.copyOf(sessions, Math.max(sessions.length * 2, session.id + 1));
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
            sessions[sessionId] = null;
        }
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
