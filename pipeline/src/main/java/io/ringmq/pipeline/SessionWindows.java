package io.ringmq.pipeline;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Room left in each session's in-flight window, by session id: written by the delivery shard that holds the
 * session (single writer per session), read by the routing stage for the least-loaded shared subscription
 * strategy and to pace a subscription's retained messages ({@code RetainedLine}), so routing never touches
 * delivery's structures. Plain ordered writes and volatile reads of ints, each the room plus one: 0 is a session no
 * shard wrote of.
 */
public final class SessionWindows
{
    private final UnsafeBuffer windows;
    private final int capacity;

    /**
     * @param capacity session ids covered (--max-sessions); larger ids read as 0.
     */
    public SessionWindows(final int capacity)
    {
        this.capacity = capacity;
        this.windows = new UnsafeBuffer(new byte[capacity * 4]);
    }

    /**
     * Delivery's side: the session's window has {@code free} slots left.
     */
    public void free(final int sessionId, final int free)
    {
        if (sessionId >= 0 && sessionId < capacity)
        {
            windows.putIntOrdered(sessionId * 4, free + 1);
        }
    }

    /**
     * Routing's side.
     */
    public int free(final int sessionId)
    {
        return Math.max(0, written(sessionId) - 1);
    }

    /**
     * Routing's side.
     *
     * @return whether the session's shard wrote that its window has no room (false for one it never wrote of).
     */
    public boolean full(final int sessionId)
    {
        return written(sessionId) == 1;
    }

    private int written(final int sessionId)
    {
        return sessionId >= 0 && sessionId < capacity ? windows.getIntVolatile(sessionId * 4) : 0;
    }
}
