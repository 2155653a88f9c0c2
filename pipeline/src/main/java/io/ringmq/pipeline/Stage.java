package io.ringmq.pipeline;

/**
 * One step of the pipeline, called for every ingress event in ring order on the stage's single thread.
 */
public interface Stage
{
    /**
     * @param event the slot, filled by the I/O agent and earlier stages.
     * @return true when done with it; false when it cannot be finished yet (waiting for room or for another
     * stage), to be offered again on a later duty cycle. A stage that returns false must be able to take the
     * same event again.
     */
    boolean onEvent(IngressEvent event);

    /**
     * A slot an earlier stage (or this one) failed on: skip its work, keep only what must happen whatever went
     * wrong (end a session, close a connection).
     */
    default void onFailed(final IngressEvent event)
    {
    }

    /**
     * After each batch that handled events, before the stages after this one may see them: the persistence stage's
     * group commit. A throw marks nothing by itself: the stage marks the events it could not commit failed.
     */
    default void commitBatch()
    {
    }

    /**
     * After each batch that handled events (a turn may run several): the moment to flush.
     */
    default void onBatchEnd()
    {
    }

    /**
     * Work that does not come from a slot (retries, timers), once per duty cycle of the stage's agent.
     *
     * @return the work done, 0 when there was none.
     */
    default int doDutyCycle()
    {
        return 0;
    }

    /**
     * @return true when {@link #doDutyCycle()} has work waiting (for an idle strategy's last look).
     */
    default boolean hasPendingWork()
    {
        return false;
    }

    /**
     * @return true when work waits for room another thread frees (a delivery shard's backlog for a full outbound
     * ring): the stage's thread then naps only briefly, in case the wake-up from that thread is missed.
     */
    default boolean waitsForRoom()
    {
        return false;
    }

    /**
     * @return how long the stage's thread may sleep before {@link #doDutyCycle()} has work due on the stage's own
     * clock (the parts of retained messages the routing stage paces), {@link Long#MAX_VALUE} when none is.
     */
    default long wakeWithinMs()
    {
        return Long.MAX_VALUE;
    }

    /**
     * @return a short name for logs and thread names.
     */
    String name();
}
