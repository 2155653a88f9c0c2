package io.ringmq.pipeline;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.status.BrokerCounters;

/**
 * The last stage: once every delivery shard is done with a slot, gives back its log entries (the packet's, in its
 * I/O agent's message log, and the routing output's), in ring order, which is each log's append order. It
 * gates the ring's producers, so a slot is reused only after this.
 */
final class ReleaseStage implements Stage
{
    private final MessageLog[] packetLogs;
    private final MessageLog[] routeLogs;
    private final RingBuffer<IngressEvent> ring;
    private final Sequence released;
    private final BrokerCounters counters;

    /**
     * @param released this stage's own sequence, for the ring's occupancy gauge.
     */
    ReleaseStage(final MessageLog[] packetLogs, final MessageLog[] routeLogs, final RingBuffer<IngressEvent> ring,
        final Sequence released, final BrokerCounters counters)
    {
        this.packetLogs = packetLogs;
        this.routeLogs = routeLogs;
        this.ring = ring;
        this.released = released;
        this.counters = counters;
    }

    public void onBatchEnd()
    {
        counters.set(BrokerCounters.INGRESS_RING_OCCUPANCY, ring.getCursor() - released.get()); // once per batch
    }

    public boolean onEvent(final IngressEvent event)
    {
        release(event);
        return true;
    }

    public void onFailed(final IngressEvent event)
    {
        release(event);
    }

    private void release(final IngressEvent event)
    {
        if (event.logEnd >= 0)
        {
            packetLogs[event.agentIndex].release(event.logEnd);
        }
        if (event.routeLogEnd >= 0)
        {
            routeLogs[event.routeShard].release(event.routeLogEnd); // each routing log in its own append order
        }
    }

    public String name()
    {
        return "release";
    }
}
