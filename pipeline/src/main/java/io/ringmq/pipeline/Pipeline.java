package io.ringmq.pipeline;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.YieldingWaitStrategy;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.session.InMemorySessionStore;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;

/**
 * The staged pipeline on one Disruptor ring:
 * <pre>
 *   I/O agents ──claim/publish──▶ [ ingress ring: IngressEvent slots ]
 *                                        │ poller 0
 *                                        ▼
 *                                   AuthStage      CONNECT credentials (CPU-heavy, off the I/O threads)
 *                                        │ poller 1, gated on poller 0
 *                                        ▼
 *                                   RoutingStage   sessions, subscription index, retained store, fan-out
 *                                        │ poller 2, gated on poller 1 (gates the ring's producers)
 *                                        ▼
 *                                   DeliveryStage  QoS state, encode once, Outbound ──▶ I/O agents' rings
 * </pre>
 * Each stage is polled through an {@link EventPoller}, so the transport decides which stages share a thread:
 * all three in one {@link StageAgent} (shared modes) or one agent each (dedicated).
 */
public final class Pipeline
{
    private final RingBuffer<IngressEvent> ring;
    private final Stage[] stages;
    private final EventPoller<IngressEvent>[] pollers;
    private final ErrorLog errors;
    private final RoutingStage routing;
    private final MessageLog[] logs;
    private final int batchLimit;

    @SuppressWarnings("unchecked")
    public Pipeline(final BrokerContext context, final Authenticator authenticator, final Outbound outbound,
        final BrokerCounters counters, final ErrorLog errors)
    {
        context.conclude(); // derived sizes (the message log's) are settled there; a second call changes nothing
        this.errors = errors;
        this.batchLimit = context.stageBatchLimit();
        final int inline = context.slotInlineBytes();
        this.ring = RingBuffer.createMultiProducer(() -> new IngressEvent(inline), context.ringSize(),
            new YieldingWaitStrategy());
        this.logs = new MessageLog[context.ioThreads()];
        for (int i = 0; i < logs.length; i++)
        {
            logs[i] = new MessageLog(context.messageLogBytes());
        }
        this.routing = new RoutingStage(context, counters, new InMemorySessionStore());
        this.stages = new Stage[]
        {
            new AuthStage(authenticator, counters, context.maxClientIdLength()),
            routing,
            new DeliveryStage(context, outbound, counters, logs)
        };
        this.pollers = new EventPoller[stages.length];
        Sequence[] gating = new Sequence[0];
        for (int i = 0; i < stages.length; i++)
        {
            pollers[i] = ring.newPoller(gating);
            gating = new Sequence[]{pollers[i].getSequence()};
        }
        ring.addGatingSequences(pollers[stages.length - 1].getSequence()); // producers wait for the last stage
    }

    /**
     * @return the message log of one I/O agent, where it puts packets too large for a slot.
     */
    public MessageLog messageLog(final int agentIndex)
    {
        return logs[agentIndex];
    }

    public RingBuffer<IngressEvent> ring()
    {
        return ring;
    }

    public int stageCount()
    {
        return stages.length;
    }

    public String stageName(final int index)
    {
        return stages[index].name();
    }

    public RoutingStage routing()
    {
        return routing;
    }

    /**
     * @param from first stage index, inclusive.
     * @param to   last stage index, exclusive.
     * @return an agent that runs those stages in order, each over every event available.
     */
    public StageAgent agent(final String roleName, final int from, final int to)
    {
        final StageAgent.Step[] steps = new StageAgent.Step[to - from];
        for (int i = from; i < to; i++)
        {
            steps[i - from] = new StageAgent.Step(stages[i], pollers[i], errors, batchLimit);
        }
        final Sequence upstream = from == 0 ? null : pollers[from - 1].getSequence();
        return new StageAgent(roleName, steps, upstream, pollers[to - 1].getSequence()).ring(ring);
    }
}
