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
     * Queues whole packets the agent must not shed: QoS 0 PUBLISHes a session queued while its client was away
     * ({@code --queue-qos0-messages}), which go out together when it comes back, past the connection's high-water
     * mark that sheds live QoS 0. By default {@link #send} (a port whose agent sheds nothing).
     *
     * @return false when the agent cannot take them now.
     */
    default boolean sendKept(final int agentIndex, final long connectionId, final DirectBuffer buffer,
        final int offset, final int length)
    {
        return send(agentIndex, connectionId, buffer, offset, length);
    }

    /**
     * Asks the owning agent to close a connection after writing what was sent to it before.
     *
     * @return false when the agent cannot take the command now.
     */
    boolean close(int agentIndex, long connectionId);

    /**
     * As {@link #close}, and the connection's end ends its session too, whatever its Session Expiry Interval: its
     * session state is discarded, as MQTT allows as an automated response to defined conditions (3.1.1, section 4.1).
     * By default the connection is closed only, for ports that carry no sessions (tests).
     *
     * @return false when the agent cannot take the command now.
     */
    default boolean closeEndingSession(final int agentIndex, final long connectionId)
    {
        return close(agentIndex, connectionId);
    }

    /**
     * As {@link #sendKept}, for a QoS 0 PUBLISH of a part of a SUBSCRIBE's retained messages: the agent also writes
     * what the connection owes to {@code drainSlot} of its {@link RetainedDrains}, now and after each flush, so the
     * routing stage sends the next part as the client reads.
     *
     * @return false when the ring has no room now.
     */
    default boolean sendWatched(final int agentIndex, final long connectionId, final int drainSlot,
        final DirectBuffer buffer, final int offset, final int length)
    {
        return sendKept(agentIndex, connectionId, buffer, offset, length);
    }

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
