package io.ringmq.loadtest;

import java.util.Arrays;

/**
 * A binary min-heap of slots (a paced publisher's index in its driver) ordered by when each is next due, in
 * {@link System#nanoTime()} terms: finding who is due is O(1), taking the next message is O(log n), and nothing is
 * allocated once the heap has room for every slot. Times are compared as {@code a - b < 0}, so a nanoTime that wraps
 * (or is negative) orders correctly. Slots with equal due times come out in no particular order.
 *
 * <pre>
 *   index:   0    1    2    3    4  ...      parent(i) = (i - 1) / 2, children 2i + 1 and 2i + 2
 *   dueNs: [ 10 | 40 | 20 | 50 | 45 ]        dueNs[parent] <= dueNs[child]; slots[] moves with dueNs[]
 * </pre>
 *
 * Owned by one driver thread.
 */
final class DueQueue
{
    private int[] slots;
    private long[] dueNs;
    private int size;

    /**
     * @param capacity slots expected; the heap grows past it if need be.
     */
    DueQueue(final int capacity)
    {
        slots = new int[Math.max(1, capacity)];
        dueNs = new long[slots.length];
    }

    int size()
    {
        return size;
    }

    boolean isEmpty()
    {
        return 0 == size;
    }

    void clear()
    {
        size = 0;
    }

    /**
     * @return the slot due first; meaningless when {@link #isEmpty()}.
     */
    int peekSlot()
    {
        return slots[0];
    }

    /**
     * @return when the slot due first is due; meaningless when {@link #isEmpty()}.
     */
    long peekDueNs()
    {
        return dueNs[0];
    }

    void add(final int slot, final long slotDueNs)
    {
        if (size == slots.length)
        {
            slots = Arrays.copyOf(slots, size * 2);
            dueNs = Arrays.copyOf(dueNs, size * 2);
        }
        siftUp(size++, slot, slotDueNs);
    }

    /**
     * Takes the first slot out.
     */
    void poll()
    {
        final int last = --size;
        if (last > 0)
        {
            siftDown(0, slots[last], dueNs[last]);
        }
    }

    /**
     * Gives the first slot a new, later due time (it sent one message and the next is due then): one sift down, no
     * poll and add.
     */
    void rescheduleFirst(final long nextDueNs)
    {
        siftDown(0, slots[0], nextDueNs);
    }

    private void siftUp(final int from, final int slot, final long slotDueNs)
    {
        int i = from;
        while (i > 0)
        {
            final int parent = (i - 1) >>> 1;
            if (dueNs[parent] - slotDueNs <= 0)
            {
                break;
            }
            slots[i] = slots[parent];
            dueNs[i] = dueNs[parent];
            i = parent;
        }
        slots[i] = slot;
        dueNs[i] = slotDueNs;
    }

    private void siftDown(final int from, final int slot, final long slotDueNs)
    {
        int i = from;
        final int half = size >>> 1;
        while (i < half)
        {
            int child = 2 * i + 1;
            final int right = child + 1;
            if (right < size && dueNs[right] - dueNs[child] < 0)
            {
                child = right;
            }
            if (slotDueNs - dueNs[child] <= 0)
            {
                break;
            }
            slots[i] = slots[child];
            dueNs[i] = dueNs[child];
            i = child;
        }
        slots[i] = slot;
        dueNs[i] = slotDueNs;
    }
}
