package io.ringmq.pipeline;

/**
 * One step of the pipeline, called for every ingress event in ring order on the stage's single thread.
 */
public interface Stage
{
    /**
     * @param event      the slot, filled by the I/O agent and earlier stages.
     * @param endOfBatch true for the last event available in this poll: the moment to flush.
     */
    void onEvent(IngressEvent event, boolean endOfBatch);

    /**
     * A slot an earlier stage (or this one) failed on: skip its work, keep only what must happen whatever went
     * wrong (the last stage closes the connection and lets go of the slot).
     */
    default void onFailed(final IngressEvent event, final boolean endOfBatch)
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
     * @return a short name for logs and thread names.
     */
    String name();
}
