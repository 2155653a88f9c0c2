package io.ringmq.pipeline;

/**
 * The pipeline's port for rare commands to the network edge that do not follow a slot (a connection revoked by a
 * reload). The transport implements it with a queue per I/O agent, drained on that agent's thread.
 */
@FunctionalInterface
public interface ConnectionControl
{
    /** Does nothing: for pipelines without a network edge (tests). */
    ConnectionControl NONE = (agentIndex, connectionId) ->
    {
    };

    /**
     * Closes a connection whose client may no longer be connected (any thread).
     */
    void revoke(int agentIndex, long connectionId);
}
