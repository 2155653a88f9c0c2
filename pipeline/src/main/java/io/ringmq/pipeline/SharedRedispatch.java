package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Messages a shared subscription member took and never acknowledged before its session ended: its delivery shard
 * hands them here and the routing stage sends each to another member of the same group (5.0 section 4.8.2: "If the
 * Client's Session terminates before the Client reconnects, the Server SHOULD send the Application Message to
 * another Client that is subscribed to the same Shared Subscription"). Many shards offer, routing polls; a rare
 * path, so one small object per message is fine. What waits is bounded by count and by bytes (a quarter of
 * {@code --max-message-memory}): the shards counted these copies against their share until they handed them here,
 * and clients that join a group, take messages and leave, again and again, hand them back faster than routing sends
 * them on (one per tick), so without a bound of its own the heap would hold them.
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
        /**
         * @return what it holds of the heap, roughly: its arrays and an allowance for the objects around them.
         */
        long bytes()
        {
            return message.topic().length + message.payload().length + message.properties().length + OVERHEAD_LENGTH;
        }
    }

    /** The most messages waiting here and in routing for re-dispatch; more are dropped and counted. */
    public static final int MAX_WAITING = 100_000;
    /** Counted per message besides its arrays: the entry, the message, three array headers, a queue node. */
    static final int OVERHEAD_LENGTH = 128;

    private final ManyToOneConcurrentLinkedQueue<Entry> queue = new ManyToOneConcurrentLinkedQueue<>();
    private final AtomicInteger waiting = new AtomicInteger();
    private final AtomicLong waitingBytes = new AtomicLong();
    private final BrokerCounters counters;
    private final LongSupplier maxBytes;

    /**
     * @param maxBytes the most bytes that may wait ({@link Entry#bytes()}), read at each offer (a reload may change
     *                 it; messages past a lowered bound stay and go on).
     */
    public SharedRedispatch(final BrokerCounters counters, final LongSupplier maxBytes)
    {
        this.counters = counters;
        this.maxBytes = maxBytes;
    }

    /**
     * Counters of its own and no bound but the count, for tests of one stage.
     */
    public SharedRedispatch()
    {
        this(new BrokerCounters(), () -> Long.MAX_VALUE);
    }

    /**
     * @return the bound on bytes waiting for a broker with these limits: a quarter of its message memory.
     */
    public static long maxBytesFor(final BrokerContext limits)
    {
        return limits.memory().messageMemoryBytes() / 4;
    }

    /**
     * A delivery shard's side: the message waits for routing, or is dropped and counted when as many messages or
     * bytes wait already.
     */
    public void offer(final int groupId, final Message message)
    {
        final Entry entry = new Entry(groupId, message);
        final long bytes = entry.bytes();
        final boolean counted = waiting.incrementAndGet() <= MAX_WAITING;
        final long nowWaiting = waitingBytes.addAndGet(bytes); // added before judged: shards offer at once
        if (!counted || nowWaiting > maxBytes.getAsLong())
        {
            waiting.decrementAndGet();
            waitingBytes.addAndGet(-bytes);
            counters.increment(BrokerCounters.SHARED_REDISPATCH_DROPPED);
            return;
        }
        queue.offer(entry);
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
    public void done(final Entry entry)
    {
        waitingBytes.addAndGet(-entry.bytes());
        waiting.decrementAndGet();
    }

    /**
     * @return the bytes waiting (for tests and the reviewer's eye: zero once routing took everything).
     */
    public long waitingBytes()
    {
        return waitingBytes.get();
    }

    public boolean isEmpty()
    {
        return queue.isEmpty();
    }
}
