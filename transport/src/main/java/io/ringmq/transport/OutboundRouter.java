package io.ringmq.transport;

import io.ringmq.pipeline.Outbound;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

/**
 * The delivery stage's {@link Outbound}: for an I/O agent on another thread, a claim and commit on that agent's
 * outbound ring ({@code [connection id][packet bytes]}), and one wake-up per batch; for an agent on the delivery
 * stage's own thread (the shared mode), a direct call and a flush at the end of the batch.
 */
final class OutboundRouter implements Outbound
{
    private final ManyToOneRingBuffer[] rings;
    private final IoAgent[] agents;
    private final boolean[] direct;
    private final boolean[] pending;
    private Wakeable[] wakes;

    OutboundRouter(final ManyToOneRingBuffer[] rings, final IoAgent[] agents, final boolean[] direct)
    {
        this.rings = rings;
        this.agents = agents;
        this.direct = direct;
        this.pending = new boolean[rings.length];
    }

    void wakes(final Wakeable[] wakes)
    {
        this.wakes = wakes;
    }

    public boolean send(
        final int agentIndex, final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        pending[agentIndex] = true;
        if (direct[agentIndex])
        {
            agents[agentIndex].send(connectionId, buffer, offset, length);
            return true;
        }
        return OutboundFrame.send(rings[agentIndex], connectionId, buffer, offset, length);
    }

    public boolean close(final int agentIndex, final long connectionId)
    {
        pending[agentIndex] = true;
        if (direct[agentIndex])
        {
            agents[agentIndex].closeAfterFlush(connectionId);
            return true;
        }
        return OutboundFrame.close(rings[agentIndex], connectionId);
    }

    public void endOfBatch()
    {
        for (int i = 0; i < pending.length; i++)
        {
            if (pending[i])
            {
                pending[i] = false;
                if (direct[i])
                {
                    agents[i].flushTouched();
                }
                else
                {
                    wakes[i].wake();
                }
            }
        }
    }
}
