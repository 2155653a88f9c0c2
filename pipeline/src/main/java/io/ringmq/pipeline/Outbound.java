package io.ringmq.pipeline;

import org.agrona.DirectBuffer;

/**
 * The pipeline's port to the network edge: bytes for a connection, and commands to close one. The transport
 * implements it with one outbound ring per I/O agent, or with a direct call when the agent shares the
 * delivery stage's thread. {@link #endOfBatch()} wakes the agents that were given work, once per batch.
 */
public interface Outbound
{
    /**
     * Queues whole packets for a connection.
     *
     * @return false when the agent cannot take them now (its ring is full).
     */
    boolean send(int agentIndex, long connectionId, DirectBuffer buffer, int offset, int length);

    /**
     * Asks the owning agent to close a connection after writing what was sent to it before.
     *
     * @return false when the agent cannot take the command now.
     */
    boolean close(int agentIndex, long connectionId);

    /**
     * Called once at the end of each batch of events.
     */
    void endOfBatch();

    /**
     * @return the port one delivery shard uses (it writes to its own agent only); its end of batch must touch
     * nothing another shard's thread touches. By default this port itself, for ports used from one thread.
     */
    default Outbound forShard(final int shard)
    {
        return this;
    }
}
