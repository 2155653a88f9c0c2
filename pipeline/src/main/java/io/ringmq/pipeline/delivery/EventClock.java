package io.ringmq.pipeline.delivery;

/**
 * The clock of the event a delivery shard handles: read once, when first needed (most events need none), and then
 * the same for everything the event sends or finds expired, live or from a window or queue. Owned by its shard's
 * thread.
 */
final class EventClock
{
    private long nowMs;

    /**
     * A new event: the clock is read again when next needed.
     */
    void reset()
    {
        nowMs = 0;
    }

    /**
     * @return the event's time, read on the first call since {@link #reset()}.
     */
    long nowMs()
    {
        if (0 == nowMs)
        {
            nowMs = System.currentTimeMillis();
        }
        return nowMs;
    }
}
