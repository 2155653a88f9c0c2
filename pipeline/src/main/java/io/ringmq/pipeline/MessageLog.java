package io.ringmq.pipeline;

import io.ringmq.protocol.SmallCopy;
import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Where an ingress slot keeps a packet too large for its inline space: one off-heap circular log per I/O agent,
 * addressed by position, so the ring's memory stays bounded (ring size × slot size, plus these logs) whatever
 * clients send.
 * <pre>
 *   released (head)                          appended (tail)
 *        │ entry │ entry │ entry │ … free …      │
 *   ─────┴───────┴───────┴───────┴──────────────┴───▶ position (wraps at capacity)
 * </pre>
 * Single producer: the I/O agent appends and, when it cannot claim a ring slot after all, rolls its append back.
 * Single releaser: the last stage releases entries in ring order, which is this agent's append order. An entry
 * never wraps: one that does not fit before the end of the buffer starts at its beginning, and the skipped bytes
 * are released with it. Positions only grow, so {@code tail - head} is the space in use.
 */
public final class MessageLog
{
    private final UnsafeBuffer buffer;
    private final int capacity;
    private final AtomicLong head = new AtomicLong();
    private long tail;

    /**
     * @param capacity bytes, a power of two.
     */
    public MessageLog(final int capacity)
    {
        if (!BitUtil.isPowerOfTwo(capacity))
        {
            throw new IllegalArgumentException("message log capacity must be a power of two: " + capacity);
        }
        this.capacity = capacity;
        this.buffer = new UnsafeBuffer(RingMemory.allocate(capacity)); // resident only where entries are written
    }

    /**
     * The largest entry that always fits once the log has drained: half the capacity, since an entry may have to
     * skip the end of the buffer.
     */
    public int maxEntryLength()
    {
        return capacity / 2;
    }

    public int capacity()
    {
        return capacity;
    }

    /**
     * Copies bytes in; producer thread only.
     *
     * @return the position just past the entry (what {@link #release(long)} takes), or -1 when there is no room
     * now (the caller pauses, as for a full ring).
     */
    public long append(final DirectBuffer src, final int offset, final int length)
    {
        final long end = claim(length);
        if (end >= 0)
        {
            SmallCopy.copy(buffer, indexOf(end, length), src, offset, length);
        }
        return end;
    }

    /**
     * Takes room for an entry the producer writes itself, at {@link #indexOf} in {@link #buffer()}; producer
     * thread only.
     *
     * @return the position just past the entry, or -1 when there is no room now.
     */
    public long claim(final int length)
    {
        if (length > maxEntryLength())
        {
            throw new IllegalArgumentException("entry of " + length + " bytes exceeds the message log's limit of " +
                maxEntryLength());
        }
        final int index = (int)(tail & (capacity - 1));
        final long start = index + length > capacity ? tail + (capacity - index) : tail; // never wrap an entry
        final long end = start + length;
        if (end - head.get() > capacity) // acquire: the releaser is done with the bytes it released
        {
            return -1;
        }
        tail = end;
        return end;
    }

    /**
     * @return where in {@link #buffer()} the entry ending at {@code end} starts.
     */
    public int indexOf(final long end, final int length)
    {
        return (int)((end - length) & (capacity - 1));
    }

    public UnsafeBuffer buffer()
    {
        return buffer;
    }

    /**
     * Undoes the last {@link #append}, when no ring slot could be claimed for it; producer thread only.
     *
     * @param previousTail {@link #tail()} as it was before that append.
     */
    public void rollback(final long previousTail)
    {
        tail = previousTail;
    }

    /**
     * @return the producer's position, for {@link #rollback(long)}.
     */
    public long tail()
    {
        return tail;
    }

    /**
     * Points a view at an entry; any thread that has seen the slot that names it.
     */
    public void wrap(final UnsafeBuffer view, final long end, final int length)
    {
        view.wrap(buffer, (int)((end - length) & (capacity - 1)), length);
    }

    /**
     * Gives the log's memory back now (RingMemory.release), once no thread will touch the log again.
     */
    public void releaseMemory()
    {
        RingMemory.release(buffer.byteBuffer());
    }

    /**
     * Gives back everything up to {@code end}; the last stage only, in ring order.
     */
    public void release(final long end)
    {
        head.lazySet(end); // release: the producer may overwrite these bytes once it sees the new head
    }

    /**
     * @return bytes in use (a racy read for counters).
     */
    public long used()
    {
        return tail - head.get();
    }
}
