package io.ringmq.pipeline;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import io.ringmq.protocol.MqttVersion;

import java.util.ArrayDeque;

/**
 * Messages the routing stage sends on its own clock, with no packet to carry them: delayed wills whose time came
 * (or whose session ended) [MQTT-3.1.3-9], shared subscribers' unacknowledged messages handed back by the
 * shards (5.0 section 4.8.2), and the parts of SUBSCRIBEs' retained messages whose turn came ({@link RetainedLine}). A slot for each is a {@link IngressEvent#TICK} routing puts on the ingress ring
 * itself ({@code tryNext}, never blocking: this stage gates the ring too); the stages after routing see it as any
 * routed message. One message per tick, taken off only once its output is committed; one routing failed on is
 * dropped (its error is logged), not retried forever. Routing stage only.
 */
final class RoutingTicks
{
    private static final int TAKEN_PER_CYCLE = 1_024;

    private final RingBuffer<IngressEvent> ring;
    private final SharedRedispatch redispatch;
    /** The SUBSCRIBEs whose retained messages go out in parts, or null (a shard that sends none). */
    private final RetainedLine retained;
    private final ArrayDeque<Message> dueWills = new ArrayDeque<>();
    private final org.agrona.collections.IntArrayQueue dueWillSessions = new org.agrona.collections.IntArrayQueue();
    private final ArrayDeque<SharedRedispatch.Entry> dueRedispatch = new ArrayDeque<>();
    private boolean tickPending;
    /** Wakes the ring's first stage where it sleeps on a thread of its own (dedicated threading). */
    private Runnable wakeRing = () ->
    {
    };
    /** A tick is wanted for no message: a sharded expiry poll, or sessions that ended between events. */
    private boolean tickWanted;
    private boolean tickWill;
    private boolean tickRedispatch;

    /**
     * @param ring the ingress ring, or null (tests of the stage alone: nothing is ever sent).
     */
    RoutingTicks(final RingBuffer<IngressEvent> ring, final SharedRedispatch redispatch, final RetainedLine retained)
    {
        this.ring = ring;
        this.redispatch = redispatch;
        this.retained = retained;
    }

    /**
     * @param sessionId the session whose will it is (the persistence stage marks it published).
     */
    void willDue(final Message will, final int sessionId)
    {
        dueWills.add(will);
        dueWillSessions.addInt(sessionId);
    }

    /**
     * With routing shards: a tick is wanted so that every shard polls its session expiry at the same slot.
     */
    void expiryDue()
    {
        tickWanted = true;
    }

    /**
     * Sessions expired between events: a tick carries their ids to the delivery shards, which forget them (and hand
     * what they took through shared subscriptions to another member) now, not with whatever event comes next, which
     * in an idle broker may be long.
     */
    void sessionsEnded()
    {
        tickWanted = true;
    }

    /**
     * @return the session of the will {@link #takeWill()} returned.
     */
    int takeWillSession()
    {
        return dueWillSessions.isEmpty() ? IngressEvent.NONE : dueWillSessions.peekInt();
    }

    /**
     * Takes what the shards handed back and asks for a tick when something waits.
     *
     * @return messages taken.
     */
    int doDutyCycle()
    {
        int taken = 0;
        SharedRedispatch.Entry entry;
        while (taken < TAKEN_PER_CYCLE && null != (entry = redispatch.poll()))
        {
            dueRedispatch.add(entry);
            taken++;
        }
        if ((!dueWills.isEmpty() || !dueRedispatch.isEmpty() || tickWanted || retainedDue()) && !tickPending)
        {
            requestTick();
        }
        return taken;
    }

    boolean hasPendingWork()
    {
        return null != ring && !tickPending &&
            (!dueWills.isEmpty() || !dueRedispatch.isEmpty() || !redispatch.isEmpty() || tickWanted || retainedDue());
    }

    private boolean retainedDue()
    {
        // no clock read on the PUBLISH path while nothing waits
        return null != retained && !retained.isEmpty() && retained.due(System.nanoTime() / 1_000_000);
    }

    /**
     * @return how long the stage's thread may sleep before a part of retained messages is due,
     * {@link Long#MAX_VALUE} when none waits or a tick is on its way (it wakes the stage as it comes).
     */
    long dueInMs()
    {
        return null == retained || null == ring || tickPending || retained.isEmpty() ? Long.MAX_VALUE :
            retained.dueInMs(System.nanoTime() / 1_000_000);
    }

    /**
     * @param wakeRing wakes the ring's first stage (before the threads start).
     */
    void wakeRingWith(final Runnable wakeRing)
    {
        this.wakeRing = wakeRing;
    }

    private void requestTick()
    {
        if (null == ring)
        {
            return;
        }
        final long sequence;
        try
        {
            sequence = ring.tryNext();
        }
        catch (final InsufficientCapacityException ex)
        {
            return; // the ring is full: next duty cycle
        }
        ring.get(sequence).end(IngressEvent.TICK, 0, IngressEvent.SYSTEM_CONNECTION, MqttVersion.V5);
        ring.publish(sequence);
        wakeRing.run(); // else a tick waits out the first stage's sleep, up to 100 ms
        tickPending = true;
        tickWanted = false;
    }

    /**
     * A tick arrived: the will it carries, if one is due (wills first).
     */
    Message takeWill()
    {
        tickPending = false;
        final Message will = dueWills.peek();
        tickWill = null != will;
        return will;
    }

    /**
     * A tick that carries no will: the re-dispatch it carries, if one waits.
     */
    SharedRedispatch.Entry takeRedispatch()
    {
        final SharedRedispatch.Entry entry = dueRedispatch.peek();
        tickRedispatch = null != entry;
        return entry;
    }

    /**
     * The tick's output is committed: its message is on its way. Also after a failed tick: dropped.
     */
    void done()
    {
        if (tickWill)
        {
            tickWill = false;
            dueWills.poll();
            dueWillSessions.pollInt();
        }
        if (tickRedispatch)
        {
            tickRedispatch = false;
            redispatch.done(dueRedispatch.poll());
        }
    }

    /**
     * Routing failed on a tick.
     */
    void failed()
    {
        tickPending = false;
        done();
    }
}
