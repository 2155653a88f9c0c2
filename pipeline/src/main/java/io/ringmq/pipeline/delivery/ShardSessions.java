package io.ringmq.pipeline.delivery;

import java.util.Arrays;

/**
 * The delivery halves a shard holds, by session id (ids are small and reused, so a growing array).
 */
final class ShardSessions
{
    private DeliverySession[] sessions = new DeliverySession[1024];

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
}
