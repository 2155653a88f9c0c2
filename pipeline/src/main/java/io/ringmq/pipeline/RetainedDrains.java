package io.ringmq.pipeline;

import org.agrona.collections.IntArrayQueue;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * What the connections that retained parts go to still owe their sockets, so that the routing stage sends a session
 * its next part once its client has read most of the last ({@link RetainedLine}), not on the clock alone: a client
 * that reads slower than the parts come would have the rest shed, and one that reads faster waits for nothing.
 * <p>
 * A fixed table of {@value #SLOTS} slots. Routing takes one for a session's parts while they last and names it in
 * each part; the I/O agent of the part's connection claims it as it takes the part, and writes what the connection
 * owes then and after each flush of it. Each slot is one long, a tag of the connection id above 40 bits of bytes:
 * routing reads a slot written for another connection (the one that held it before, or nothing yet) as unknown,
 * never as its own connection's, and a connection that finds another's tag in its slot writes it no more. Ordered
 * writes and volatile reads, as {@link SessionWindows}. Sessions whose parts find no slot free are paced by the
 * clock alone, as before this table.
 */
public final class RetainedDrains
{
    /** No slot: the part's connection is not watched. */
    public static final int NONE = -1;
    /** Sessions watched at once at most (8 KB). */
    static final int SLOTS = 1024;
    private static final int TAG_SHIFT = 40;
    private static final long BYTES_MASK = (1L << TAG_SHIFT) - 1;

    private final UnsafeBuffer slots = new UnsafeBuffer(new byte[SLOTS * Long.BYTES]);
    /** The routing stage's: slots not taken, the longest free first (a stale writer has long seen it was left). */
    private final IntArrayQueue free = new IntArrayQueue(SLOTS, NONE);

    public RetainedDrains()
    {
        for (int i = 0; i < SLOTS; i++)
        {
            free.addInt(i);
        }
    }

    /**
     * Routing's side: a slot for a session's parts.
     *
     * @return the slot, or {@link #NONE} when every slot is taken.
     */
    int take()
    {
        return free.isEmpty() ? NONE : free.pollInt();
    }

    /**
     * Routing's side: the session's parts ended; its connection may still write the slot until it sees another's tag.
     */
    void give(final int slot)
    {
        if (slot != NONE)
        {
            free.addInt(slot);
        }
    }

    /**
     * Routing's side.
     *
     * @return what the connection owed at its agent's last write, or -1 when the slot holds no write of it.
     */
    long owed(final int slot, final long connectionId)
    {
        final long word = slots.getLongVolatile(slot * Long.BYTES);
        return word >>> TAG_SHIFT == tag(connectionId) ? word & BYTES_MASK : -1;
    }

    /**
     * The I/O agent's side: what a connection owes, as a part comes ({@code claim}: the slot is its own from now) or
     * after a flush.
     *
     * @return false when another connection holds the slot: this one writes it no more.
     */
    public boolean report(final int slot, final long connectionId, final long owedBytes, final boolean claim)
    {
        final int index = slot * Long.BYTES;
        final long tag = tag(connectionId);
        if (!claim)
        {
            final long holder = slots.getLongVolatile(index) >>> TAG_SHIFT;
            if (holder != tag && holder != 0)
            {
                return false;
            }
        }
        slots.putLongOrdered(index, tag << TAG_SHIFT | Math.min(Math.max(0, owedBytes), BYTES_MASK));
        return true;
    }

    /**
     * @return whether {@code slot} is one of the table's (a part's slot from the ring is checked before use).
     */
    public static boolean valid(final int slot)
    {
        return slot >= 0 && slot < SLOTS;
    }

    /**
     * @return 24 bits of the connection id, the highest set (never 0, which an unwritten slot holds).
     */
    private static long tag(final long connectionId)
    {
        return (connectionId * 0x9E3779B97F4A7C15L) >>> (Long.SIZE - 23) | 1L << 23;
    }
}
