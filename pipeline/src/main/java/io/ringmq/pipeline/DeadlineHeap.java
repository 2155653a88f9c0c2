package io.ringmq.pipeline;

import org.agrona.collections.Long2LongHashMap;

import java.util.Arrays;

/**
 * Timers by deadline in a binary min-heap that can remove any of them: scheduling and cancelling are O(log n), a poll
 * with nothing due is one comparison, and the memory is one entry per timer (two longs in the heap, one in the index)
 * however the deadlines fall. Session expiry and will delays use it: Agrona's {@code DeadlineTimerWheel}, used
 * before, grows every spoke's slot array to the largest number of timers ever set in one tick, so 5,000 persistent
 * sessions dropped in the same second (or restored, already due, at start) made a 16 MB array and then a 32 MB one:
 * a crash at {@code bin/ringmq}'s 64 MB heap, and one any client could cause with enough sessions.
 * <p>
 * Timers due at the same millisecond fire in the order they were set. One thread owns it.
 */
final class DeadlineHeap
{
    /** Called for each timer that fires. */
    @FunctionalInterface
    interface Handler
    {
        void onDeadline(long timerId);
    }

    private static final int INITIAL_CAPACITY = 16;
    private static final long NONE = -1;

    private long[] deadlines = new long[INITIAL_CAPACITY];
    /** Timer ids, increasing: among equal deadlines the older timer is the smaller id, and fires first. */
    private long[] ids = new long[INITIAL_CAPACITY];
    private int size;
    private long nextId;
    /** Timer id to its index in the heap. */
    private final Long2LongHashMap indexOf = new Long2LongHashMap(NONE);

    /**
     * @return the new timer's id, never negative; it fires at the first poll at or after {@code deadlineMs}.
     */
    long schedule(final long deadlineMs)
    {
        if (size == deadlines.length)
        {
            deadlines = Arrays.copyOf(deadlines, size * 2);
            ids = Arrays.copyOf(ids, size * 2);
        }
        final long id = nextId++;
        deadlines[size] = deadlineMs;
        ids[size] = id;
        indexOf.put(id, size);
        siftUp(size++);
        return id;
    }

    /**
     * @return whether the timer was set (and is cancelled now); false once it fired or was cancelled.
     */
    boolean cancel(final long timerId)
    {
        final long index = indexOf.remove(timerId);
        if (index == NONE)
        {
            return false;
        }
        removeAt((int)index);
        shrinkWhenSparse();
        return true;
    }

    /**
     * Fires the timers due at {@code nowMs}, earliest first, at most {@code limit} of them; each is gone before its
     * handler runs (which may set or cancel timers).
     *
     * @return how many fired.
     */
    int poll(final long nowMs, final Handler handler, final int limit)
    {
        int fired = 0;
        while (fired < limit && size > 0 && deadlines[0] <= nowMs)
        {
            final long id = ids[0];
            indexOf.remove(id);
            removeAt(0);
            fired++;
            handler.onDeadline(id);
        }
        if (fired > 0)
        {
            shrinkWhenSparse();
        }
        return fired;
    }

    /**
     * @return the earliest deadline set, or {@link Long#MAX_VALUE} when none is.
     */
    long earliestDeadline()
    {
        return size == 0 ? Long.MAX_VALUE : deadlines[0];
    }

    /**
     * @return when the timer fires, or {@link Long#MAX_VALUE} once it fired or was cancelled.
     */
    long deadlineOf(final long timerId)
    {
        final long index = indexOf.get(timerId);
        return index == NONE ? Long.MAX_VALUE : deadlines[(int)index];
    }

    int size()
    {
        return size;
    }

    private void removeAt(final int index)
    {
        final int last = --size;
        if (index != last)
        {
            move(last, index);
            if (!siftUp(index))
            {
                siftDown(index);
            }
        }
    }

    /**
     * After a burst, the arrays go back toward what is set (never below the initial capacity).
     */
    private void shrinkWhenSparse()
    {
        if (deadlines.length > INITIAL_CAPACITY && size < deadlines.length / 4)
        {
            final int capacity = Math.max(INITIAL_CAPACITY, deadlines.length / 2);
            deadlines = Arrays.copyOf(deadlines, capacity);
            ids = Arrays.copyOf(ids, capacity);
        }
    }

    /**
     * @return whether the entry moved.
     */
    private boolean siftUp(final int start)
    {
        int index = start;
        while (index > 0)
        {
            final int parent = (index - 1) >>> 1;
            if (!before(index, parent))
            {
                break;
            }
            swap(index, parent);
            index = parent;
        }
        return index != start;
    }

    private void siftDown(final int start)
    {
        int index = start;
        while (true)
        {
            final int left = 2 * index + 1;
            if (left >= size)
            {
                return;
            }
            final int right = left + 1;
            final int child = right < size && before(right, left) ? right : left;
            if (!before(child, index))
            {
                return;
            }
            swap(index, child);
            index = child;
        }
    }

    private boolean before(final int a, final int b)
    {
        return deadlines[a] < deadlines[b] || deadlines[a] == deadlines[b] && ids[a] < ids[b];
    }

    private void swap(final int a, final int b)
    {
        final long deadline = deadlines[a];
        final long id = ids[a];
        deadlines[a] = deadlines[b];
        ids[a] = ids[b];
        deadlines[b] = deadline;
        ids[b] = id;
        indexOf.put(ids[a], a);
        indexOf.put(ids[b], b);
    }

    private void move(final int from, final int to)
    {
        deadlines[to] = deadlines[from];
        ids[to] = ids[from];
        indexOf.put(ids[to], to);
    }
}
