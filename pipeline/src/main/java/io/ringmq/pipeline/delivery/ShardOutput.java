package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.DirectBuffer;
import org.agrona.collections.LongHashSet;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A delivery shard's way to its I/O agent's outbound ring (another thread's: with the agent on the shard's own thread
 * the port is a direct call, never full). What the full ring cannot take now waits in order in an
 * {@link OutboundBacklog}, drained on the shard's next duty cycles; QoS 0 for that agent is dropped meanwhile
 * (counted), since nothing in the protocol needs it.
 * <p>
 * The backlog is heap, and running the heap out ends the broker ({@code -XX:+ExitOnOutOfMemoryError}): 32 QoS 1
 * PUBLISHes of 250 KB to 8 subscribers that read every one, or one to 100, did that to a {@code bin/ringmq} broker
 * in {@code shared-network} threading (its agent busy writing, the ring full, each subscriber's copy backlogged). So
 * past its share of the heap ({@link #capBytes}) the shard waits for its agent to take what waits, which is the
 * backpressure the stages otherwise get from full rings: the agent always drains its ring, whatever its clients do.
 * An agent that takes nothing for {@value #MAX_WAIT_MS} ms (stopping, or stuck) is not waited for again until its
 * backlog drains: meanwhile a connection whose packets would pass the share is closed instead (its session keeps
 * what it was owed, sent again when it comes back), counted as having no buffer memory left, once: its later packets
 * are dropped, not backlogged behind its close, so what a stuck agent's backlog holds past its share is one close
 * (16 bytes) for each of its connections at most.
 */
final class ShardOutput
{
    /** How long the shard waits for its agent to take some of a backlog at its share. */
    static final long MAX_WAIT_MS = 2_000;
    private static final long MAX_WAIT_NS = MAX_WAIT_MS * 1_000_000;
    private static final long NAP_NS = 50_000;
    private static final UnsafeBuffer NOTHING = new UnsafeBuffer(new byte[0]);

    private final int index;
    private final Outbound outbound;
    private final BrokerCounters counters;
    private final OutboundBacklog backlog;
    /** The most the backlog holds before the shard waits (a single larger entry waits for it to be empty). */
    private final int capBytes;
    /** The agent took nothing for {@link #MAX_WAIT_MS}: not waited for again until the backlog drains. */
    private boolean agentStuck;
    /** Connections closed past the share while their agent was stuck, until the backlog drains. */
    private final LongHashSet closing = new LongHashSet();

    /**
     * @param capBytes the most the backlog holds before the shard waits for its agent.
     */
    ShardOutput(final int index, final Outbound outbound, final BrokerCounters counters, final int capBytes)
    {
        this.index = index;
        this.outbound = outbound;
        this.counters = counters;
        this.backlog = new OutboundBacklog(index + 1);
        this.capBytes = capBytes;
    }

    /**
     * @return one shard's share: a sixteenth of the maximum heap split between the shards, at least 1 MiB (the
     * backlog's buffer may double past it, and copy itself once as it grows).
     */
    static int capFor(final long maxHeapBytes, final int shardCount)
    {
        return (int)Math.min(Integer.MAX_VALUE / 2, Math.max(1 << 20, maxHeapBytes / 16 / Math.max(1, shardCount)));
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
        backlogged(OutboundBacklog.SEND, connectionId, buffer, length);
    }

    /**
     * Adds to the backlog, once it has room under its share: the shard waits for its agent meanwhile.
     */
    private void backlogged(final int kind, final long connectionId, final DirectBuffer buffer, final int length)
    {
        if (!closing.isEmpty() && closing.contains(connectionId))
        {
            return; // its close waits in the backlog: its session keeps what it is owed
        }
        if (!roomFor(OutboundBacklog.entryLength(length)))
        {
            counters.increment(BrokerCounters.BUFFER_MEMORY_CLOSED);
            closing.add(connectionId);
            backlog.add(index, OutboundBacklog.CLOSE, connectionId, NOTHING, 0, 0); // its session keeps what it is owed
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_BACKLOGGED);
        backlog.add(index, kind, connectionId, buffer, 0, length);
    }

    /**
     * @return whether the backlog has room for an entry of {@code entryLength} bytes under its share, or is empty;
     * waits for the agent to take what waits until it has, unless the agent took nothing for {@link #MAX_WAIT_MS}.
     */
    private boolean roomFor(final int entryLength)
    {
        if (backlog.bytes(index) + entryLength <= capBytes || backlog.isEmpty(index))
        {
            agentStuck = false;
            return true;
        }
        if (agentStuck)
        {
            return false;
        }
        outbound.endOfBatch(); // the agent may be asleep with its ring full: woken before the first nap
        long lastTookNs = System.nanoTime();
        while (backlog.bytes(index) + entryLength > capBytes && !backlog.isEmpty(index))
        {
            if (backlog.drain(outbound) > 0)
            {
                outbound.endOfBatch(); // wakes the agent for what it was given
                lastTookNs = System.nanoTime();
            }
            else if (System.nanoTime() - lastTookNs > MAX_WAIT_NS)
            {
                agentStuck = true;
                return false;
            }
            else
            {
                java.util.concurrent.locks.LockSupport.parkNanos(NAP_NS);
            }
        }
        return true;
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
        backlogged(OutboundBacklog.SEND_KEPT, connectionId, writer.scratch(), length);
        return true;
    }

    /**
     * Sends a QoS 0 PUBLISH of a part of a SUBSCRIBE's retained messages, which the routing stage paces by what the
     * connection owes ({@code RetainedLine}): never shed past the high-water mark, and its agent writes what the
     * connection owes to the part's {@code drainSlot}. Backlogged rather than dropped (the slot is then not named:
     * the routing stage waits a little longer for the next part).
     *
     * @return false when it was too large for the client, or outside its mount point (dropped and counted).
     */
    boolean sendWatchedEncoded(final long connectionId, final PublishWriter writer, final int length,
        final int drainSlot)
    {
        if (length == PublishWriter.TOO_LARGE || length == PublishWriter.NOT_MOUNTED)
        {
            return sendEncoded(connectionId, writer, length, false); // counted there
        }
        if (backlog.isEmpty(index) && outbound.sendWatched(index, connectionId, drainSlot, writer.scratch(), 0, length))
        {
            return true;
        }
        counters.increment(BrokerCounters.OUTBOUND_RING_FULL);
        backlogged(OutboundBacklog.SEND_KEPT, connectionId, writer.scratch(), length);
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
        if (closing.isEmpty() || !closing.contains(connectionId))
        {
            backlog.add(index, OutboundBacklog.CLOSE, connectionId, NOTHING, 0, 0);
        }
    }

    /**
     * As {@link #close}, and its session ends with the connection, whatever its Session Expiry Interval
     * ({@link StalledClients}).
     */
    void closeEndingSession(final long connectionId)
    {
        if (backlog.isEmpty(index) && outbound.closeEndingSession(index, connectionId))
        {
            return;
        }
        // after a close the backlog holds already (its buffer memory spent) all the same: that one only closes, and
        // this one ends the session too while the connection is still open when the agent takes it
        backlog.add(index, OutboundBacklog.CLOSE_ENDING_SESSION, connectionId, NOTHING, 0, 0);
    }

    void endOfBatch()
    {
        outbound.endOfBatch();
    }

    /**
     * @return the bytes the backlog holds (tests).
     */
    long backlogBytes()
    {
        return backlog.bytes(index);
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
        final int work = backlog.isEmpty() ? 0 : backlog.drain(outbound);
        if (work > 0)
        {
            outbound.endOfBatch();
        }
        if (!closing.isEmpty() && backlog.isEmpty())
        {
            closing.clear(); // their closes went to the agent: what comes for them now follows those
        }
        return work;
    }
}
