package io.ringmq.pipeline;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.util.Util;

/**
 * Polls the ingress ring for one stage, as the Disruptor's {@code EventPoller} does, with two differences a stage
 * needs: a batch limit per poll, and an event a stage cannot finish yet (a delivery shard waiting for a session
 * handed over by another shard, the routing stage waiting for room in its output log) stays unconsumed and is
 * offered again on the next poll, so the stage never blocks its thread and never skips an event.
 * <pre>
 *   upstream (the ring's cursor, or the stages before) ─▶ [ next … available ] ─▶ sequence (consumed)
 * </pre>
 */
final class StagePoller
{
    /** What a poller hands events to. */
    interface Handler
    {
        /**
         * @return true when the event is done; false to stop here and be offered the same event again later.
         */
        boolean onEvent(IngressEvent event, long sequence);

        /**
         * After the events of a poll, before later stages may see them.
         */
        default void endOfBatch()
        {
        }
    }

    private final RingBuffer<IngressEvent> ring;
    private final Sequence[] upstream;
    /** The first stage of a single producer's ring: every slot up to the cursor is published. */
    private final boolean publishedInOrder;
    private final Sequence sequence = new Sequence(-1);

    /**
     * @param upstream the sequences of the stages this one follows; none for the first stage (it reads what the
     *                 I/O agents published).
     */
    StagePoller(final RingBuffer<IngressEvent> ring, final Sequence... upstream)
    {
        this.ring = ring;
        this.upstream = upstream;
        this.publishedInOrder = false;
    }

    /**
     * The first stage of a ring with one producer ({@code RingBuffer.createSingleProducer}): its cursor moves only
     * when slots are published, so the slots up to it are not checked one by one.
     */
    static StagePoller firstOfSingleProducer(final RingBuffer<IngressEvent> ring)
    {
        return new StagePoller(ring, true);
    }

    private StagePoller(final RingBuffer<IngressEvent> ring, final boolean publishedInOrder)
    {
        this.ring = ring;
        this.upstream = new Sequence[0];
        this.publishedInOrder = publishedInOrder;
    }

    Sequence sequence()
    {
        return sequence;
    }

    /**
     * @return true when an event is waiting for this stage.
     */
    boolean hasAvailable()
    {
        final long next = sequence.get() + 1;
        return upstream.length == 0 ? next <= ring.getCursor() && ring.isAvailable(next) :
            Util.getMinimumSequence(upstream) >= next;
    }

    /**
     * @return the highest sequence this stage may handle now, at most {@code last}.
     */
    private long available(final long next, final long last)
    {
        if (upstream.length > 0)
        {
            return Math.min(last, Util.getMinimumSequence(upstream));
        }
        final long end = Math.min(last, ring.getCursor());
        if (publishedInOrder)
        {
            return end;
        }
        // producers claim in order but may publish out of order: stop at the first slot not yet published
        long s = next;
        while (s <= end && ring.isAvailable(s))
        {
            s++;
        }
        return s - 1;
    }

    /**
     * @return how many events were consumed.
     */
    int poll(final Handler handler, final int limit)
    {
        final long next = sequence.get() + 1;
        final long end = available(next, next + limit - 1);
        long consumed = next - 1;
        for (long s = next; s <= end; s++)
        {
            if (!handler.onEvent(ring.get(s), s))
            {
                break;
            }
            consumed = s;
        }
        if (consumed >= next)
        {
            handler.endOfBatch(); // e.g. the group commit: what later stages do with these events depends on it
            sequence.set(consumed); // release: later stages see every field this stage wrote into these slots
        }
        return (int)(consumed - next + 1);
    }
}
