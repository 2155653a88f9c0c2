package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Messages a shared subscription member took and never acknowledged before its session ended: its delivery shard
 * hands them here and the routing stage sends each to another member of the same group (5.0 section 4.8.2: "If the
 * Client's Session terminates before the Client reconnects, the Server SHOULD send the Application Message to
 * another Client that is subscribed to the same Shared Subscription"). Many shards offer, routing polls; a rare
 * path, so one small object per message is fine.
 */
public final class SharedRedispatch
{
    /**
     * One message for a group.
     *
     * @param groupId the shared subscription group it came through.
     * @param message the message, with the properties that travel with it and when it expires.
     */
    public record Entry(int groupId, Message message)
    {
    }

    /** The most messages waiting here and in routing for re-dispatch; more are dropped and counted. */
    public static final int MAX_WAITING = 100_000;

    private final ManyToOneConcurrentLinkedQueue<Entry> queue = new ManyToOneConcurrentLinkedQueue<>();
    private final AtomicInteger waiting = new AtomicInteger();
    private final BrokerCounters counters;

    public SharedRedispatch(final BrokerCounters counters)
    {
        this.counters = counters;
    }

    /**
     * Counters of its own, for tests of one stage.
     */
    public SharedRedispatch()
    {
        this(new BrokerCounters());
    }

    /**
     * A delivery shard's side.
     */
    public void offer(final int groupId, final Message message)
    {
        if (waiting.incrementAndGet() > MAX_WAITING)
        {
            waiting.decrementAndGet();
            counters.increment(BrokerCounters.SHARED_REDISPATCH_DROPPED);
            return;
        }
        queue.offer(new Entry(groupId, message));
    }

    /**
     * The routing stage's side.
     *
     * @return the oldest entry, or null.
     */
    public Entry poll()
    {
        return queue.poll();
    }

    /**
     * The routing stage is done with an entry it polled (sent on, or dropped).
     */
    public void done()
    {
        waiting.decrementAndGet();
    }

    public boolean isEmpty()
    {
        return queue.isEmpty();
    }
}
