package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A delivery shard's way to its I/O agent's outbound ring. It never parks the shard: what the full ring cannot take
 * now waits in order in an {@link OutboundBacklog} and is drained on the shard's next duty cycles; QoS 0 for that
 * agent is dropped meanwhile (counted), since nothing in the protocol needs it.
 */
final class ShardOutput
{
    private static final UnsafeBuffer NOTHING = new UnsafeBuffer(new byte[0]);

    private final int index;
    private final Outbound outbound;
    private final BrokerCounters counters;
    private final OutboundBacklog backlog;

    ShardOutput(final int index, final Outbound outbound, final BrokerCounters counters)
    {
        this.index = index;
        this.outbound = outbound;
        this.counters = counters;
        this.backlog = new OutboundBacklog(index + 1);
    }

    /**
     * Hands whole packets to the agent, or to the backlog behind what waits already.
     *
     * @param droppable a QoS 0 PUBLISH: dropped rather than backlogged.
     */
    void send(final long connectionId, final DirectBuffer buffer, final int length, final boolean droppable)
    {
        if (backlog.isEmpty(index) && outbound.send(index, connectionId, buffer, 0, length))
        {
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_RING_FULL);
        if (droppable)
        {
            counters.increment(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER);
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_BACKLOGGED);
        backlog.add(index, OutboundBacklog.SEND, connectionId, buffer, 0, length);
    }

    /**
     * Sends the PUBLISH a {@link PublishWriter} encoded into its scratch buffer.
     *
     * @param length what the writer returned.
     * @return false when it was too large for the client (dropped and counted [MQTT-3.1.2-25]), or outside its
     * mount point (dropped and counted).
     */
    boolean sendEncoded(final long connectionId, final PublishWriter writer, final int length,
        final boolean droppable)
    {
        if (length == PublishWriter.TOO_LARGE)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT);
            return false;
        }
        if (length == PublishWriter.NOT_MOUNTED)
        {
            counters.increment(BrokerCounters.OUTSIDE_MOUNT_POINT);
            return false;
        }
        send(connectionId, writer.scratch(), length, droppable);
        return true;
    }

    /**
     * Sends the QoS 0 PUBLISH a {@link PublishWriter} encoded from a session's queue ({@code --queue-qos0-messages}):
     * never shed by the agent past the connection's high-water mark, backlogged rather than dropped.
     *
     * @return false when it was too large for the client, or outside its mount point (dropped and counted).
     */
    boolean sendKeptEncoded(final long connectionId, final PublishWriter writer, final int length)
    {
        if (length == PublishWriter.TOO_LARGE || length == PublishWriter.NOT_MOUNTED)
        {
            return sendEncoded(connectionId, writer, length, false); // counted there
        }
        if (backlog.isEmpty(index) && outbound.sendKept(index, connectionId, writer.scratch(), 0, length))
        {
            return true;
        }
        counters.increment(BrokerCounters.OUTBOUND_RING_FULL);
        counters.increment(BrokerCounters.OUTBOUND_BACKLOGGED);
        backlog.add(index, OutboundBacklog.SEND_KEPT, connectionId, writer.scratch(), 0, length);
        return true;
    }

    /**
     * Sends what {@link ControlPackets} just wrote (nothing when it wrote nothing).
     */
    void sendControl(final long connectionId, final ControlPackets control, final int length)
    {
        if (length > 0)
        {
            send(connectionId, control.buffer(), length, false);
        }
    }

    /**
     * A packet larger than the client's Maximum Packet Size is never sent [MQTT-3.1.2-24]: counted, and the
     * connection ends, with the DISCONNECT of {@code disconnectLength} bytes in {@code control} where there is one
     * (0: none, as before a CONNACK) and it fits.
     */
    void endTooLarge(final long connectionId, final ControlPackets control, final int disconnectLength,
        final int maxPacketSize)
    {
        counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT);
        if (disconnectLength <= maxPacketSize)
        {
            sendControl(connectionId, control, disconnectLength);
        }
        close(connectionId);
    }

    /**
     * Asks the agent to close a connection once what it was sent is written, in order with the sends.
     */
    void close(final long connectionId)
    {
        if (backlog.isEmpty(index) && outbound.close(index, connectionId))
        {
            return;
        }
        backlog.add(index, OutboundBacklog.CLOSE, connectionId, NOTHING, 0, 0);
    }

    void endOfBatch()
    {
        outbound.endOfBatch();
    }

    /**
     * @return whether packets wait for room in the agent's outbound ring.
     */
    boolean backlogged()
    {
        return !backlog.isEmpty();
    }

    /**
     * @return backlogged entries the ring took now.
     */
    int drain()
    {
        if (backlog.isEmpty())
        {
            return 0;
        }
        final int work = backlog.drain(outbound);
        if (work > 0)
        {
            outbound.endOfBatch();
        }
        return work;
    }
}
