package io.ringmq.transport;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.IngressEvent;
import org.agrona.DirectBuffer;

import java.util.ArrayDeque;

/**
 * An I/O agent's side of the ingress ring. A packet claims a slot without blocking: a full ring answers "not now"
 * and the agent stops reading that connection until there is room (backpressure; nothing is dropped). The end of
 * a connection must always reach the pipeline, so an end that finds the ring full waits here and is retried every
 * duty cycle, in order.
 */
final class IngressProxy
{
    private final RingBuffer<IngressEvent> ring;
    private final int agentIndex;
    private final ArrayDeque<long[]> pendingEnds = new ArrayDeque<>();
    private boolean published;

    IngressProxy(final RingBuffer<IngressEvent> ring, final int agentIndex)
    {
        this.ring = ring;
        this.agentIndex = agentIndex;
    }

    /**
     * Copies one validated packet into a slot.
     *
     * @return false when the ring is full.
     */
    boolean packet(final long connectionId, final int version, final boolean loopback, final int packetType,
        final DirectBuffer bytes, final int length)
    {
        final long sequence = claim();
        if (sequence < 0)
        {
            return false;
        }
        final IngressEvent event = slot(sequence, IngressEvent.PACKET, connectionId, version);
        event.loopback = loopback;
        event.packetType = packetType;
        event.packetLength = length;
        event.packet.putBytes(0, bytes, 0, length);
        ring.publish(sequence); // the slot is visible to the stages only once every field is written
        published = true;
        return true;
    }

    /**
     * Tells the pipeline a connection ended: {@link IngressEvent#CONNECTION_LOST} or
     * {@link IngressEvent#DISCONNECTED}. Never lost: kept and retried while the ring is full.
     */
    void end(final long connectionId, final int kind, final int version)
    {
        if (!pendingEnds.isEmpty() || !tryEnd(connectionId, kind, version))
        {
            pendingEnds.addLast(new long[]{connectionId, kind, version}); // behind earlier ends, in order
        }
    }

    /**
     * @return how many waiting ends went out.
     */
    int retryEnds()
    {
        int work = 0;
        while (!pendingEnds.isEmpty())
        {
            final long[] end = pendingEnds.peekFirst();
            if (!tryEnd(end[0], (int)end[1], (int)end[2]))
            {
                break;
            }
            pendingEnds.pollFirst();
            work++;
        }
        return work;
    }

    /**
     * @return whether anything was published since the last call (to wake the stages once per duty cycle).
     */
    boolean takePublished()
    {
        final boolean result = published;
        published = false;
        return result;
    }

    private boolean tryEnd(final long connectionId, final int kind, final int version)
    {
        final long sequence = claim();
        if (sequence < 0)
        {
            return false;
        }
        final IngressEvent event = slot(sequence, kind, connectionId, version);
        event.packetType = 0;
        event.packetLength = 0;
        ring.publish(sequence);
        published = true;
        return true;
    }

    /**
     * @return the claimed sequence, or -1 when the ring is full (never blocks).
     */
    private long claim()
    {
        try
        {
            return ring.tryNext();
        }
        catch (final InsufficientCapacityException ex)
        {
            return -1;
        }
    }

    private IngressEvent slot(final long sequence, final int kind, final long connectionId, final int version)
    {
        final IngressEvent event = ring.get(sequence);
        event.kind = kind;
        event.agentIndex = agentIndex;
        event.connectionId = connectionId;
        event.version = version;
        return event;
    }
}
