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
     * @return a short name for logs and thread names.
     */
    String name();
}
