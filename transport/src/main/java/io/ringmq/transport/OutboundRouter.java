package io.ringmq.transport;

import io.ringmq.pipeline.Outbound;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

/**
 * The delivery shards' {@link Outbound}: for an I/O agent on another thread, a claim and commit on that agent's
 * outbound ring ({@link OutboundFrame}), and one wake-up per batch; for an agent on the shard's own thread (the
 * shared modes), a direct call and a flush at the end of the batch. Each shard gets its own view
 * ({@link #forShard(int)}), whose "something to wake for" flag only that shard's thread touches: a flag shared by
 * shards on several threads could be cleared by one shard's end of batch between another's raising it and its
 * commit, and that agent would sleep through the message.
 */
final class OutboundRouter implements Outbound
{
    private final ManyToOneRingBuffer[] rings;
    private final IoAgent[] agents;
    private final boolean[] direct;
    private final ShardView[] views;
    private Wakeable[] wakes;

    OutboundRouter(final ManyToOneRingBuffer[] rings, final IoAgent[] agents, final boolean[] direct)
    {
        this.rings = rings;
        this.agents = agents;
        this.direct = direct;
        this.views = new ShardView[rings.length];
        for (int i = 0; i < views.length; i++)
        {
            views[i] = new ShardView(i);
        }
    }

    void wakes(final Wakeable[] wakes)
    {
        this.wakes = wakes;
    }

    public Outbound forShard(final int shard)
    {
        return views[shard];
    }

    public boolean send(
        final int agentIndex, final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        return views[agentIndex].send(agentIndex, connectionId, buffer, offset, length);
    }

    public boolean sendKept(
        final int agentIndex, final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        return views[agentIndex].sendKept(agentIndex, connectionId, buffer, offset, length);
    }

    public boolean sendWatched(final int agentIndex, final long connectionId, final int drainSlot,
        final DirectBuffer buffer, final int offset, final int length)
    {
        return views[agentIndex].sendWatched(agentIndex, connectionId, drainSlot, buffer, offset, length);
    }

    public boolean close(final int agentIndex, final long connectionId)
    {
        return views[agentIndex].close(agentIndex, connectionId);
    }

    public boolean closeEndingSession(final int agentIndex, final long connectionId)
    {
        return views[agentIndex].closeEndingSession(agentIndex, connectionId);
    }

    public void endOfBatch()
    {
        for (final ShardView view : views)
        {
            view.endOfBatch();
        }
    }

    /**
     * One shard's outbound: its own agent only, its own flag.
     */
    private final class ShardView implements Outbound
    {
        private final int agent;
        private boolean pending;

        ShardView(final int agent)
        {
            this.agent = agent;
        }

        public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            return send(agentIndex, OutboundFrame.SEND, connectionId, buffer, offset, length);
        }

        public boolean sendKept(final int agentIndex, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            return send(agentIndex, OutboundFrame.SEND_KEPT, connectionId, buffer, offset, length);
        }

        public boolean sendWatched(final int agentIndex, final long connectionId, final int drainSlot,
            final DirectBuffer buffer, final int offset, final int length)
        {
            if (direct[agentIndex])
            {
                agents[agentIndex].sendWatched(connectionId, drainSlot, buffer, offset, length);
                return sent(true);
            }
            return taken(agentIndex,
                OutboundFrame.sendWatched(rings[agentIndex], connectionId, drainSlot, buffer, offset, length));
        }

        private boolean send(final int agentIndex, final int type, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            if (direct[agentIndex])
            {
                agents[agentIndex].send(connectionId, buffer, offset, length, type == OutboundFrame.SEND);
                return sent(true);
            }
            return taken(agentIndex, OutboundFrame.send(rings[agentIndex], type, connectionId, buffer, offset, length));
        }

        /**
         * @param taken whether the agent's ring took a message: when not, the agent wakes this shard at its next
         *              read of the ring.
         */
        private boolean taken(final int agentIndex, final boolean taken)
        {
            if (!taken)
            {
                agents[agentIndex].wantOutboundRoom();
            }
            return sent(taken);
        }

        private boolean sent(final boolean taken)
        {
            pending |= taken; // after the commit: a wake-up then always finds the message
            return taken;
        }

        public boolean close(final int agentIndex, final long connectionId)
        {
            return close(agentIndex, connectionId, false);
        }

        public boolean closeEndingSession(final int agentIndex, final long connectionId)
        {
            return close(agentIndex, connectionId, true);
        }

        private boolean close(final int agentIndex, final long connectionId, final boolean endingSession)
        {
            if (direct[agentIndex])
            {
                agents[agentIndex].closeAfterFlush(connectionId, endingSession);
                return sent(true);
            }
            return taken(agentIndex, OutboundFrame.close(rings[agentIndex], connectionId, endingSession));
        }

        public void endOfBatch()
        {
            if (pending)
            {
                pending = false;
                if (direct[agent])
                {
                    agents[agent].flushTouched();
                }
                else
                {
                    wakes[agent].wake();
                }
            }
        }
    }
}
