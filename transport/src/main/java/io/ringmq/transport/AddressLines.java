package io.ringmq.transport;

import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.Object2LongHashMap;

import java.util.ArrayDeque;

/**
 * Connections waiting, unread, for what an I/O agent gives out a piece at a time (a TLS handshake slot,
 * {@link HandshakeSlots}; room for a partial packet, {@link PartialPacketRoom}): a line per group the piece would be
 * counted for (a limited address, or {@code AddressKeys#NONE} for those counted for none), each in the order they came.
 * The next is the first of the group holding the least, the first to come among equals, so one host's flood gives way
 * to another's connection; found by a look at each group's first, not at every waiter (a release walked 8,000 waiters
 * of 16 addresses in 375 µs, review of bed1f1c). A waiting connection is unread, so its group stays. The agent's
 * thread only.
 */
final class AddressLines
{
    /** {@link Holdings#of}: the group's waiters may not be given a piece now. */
    static final long NOT_SERVED = Long.MAX_VALUE;

    /**
     * What a group holds of what is given out.
     */
    interface Holdings
    {
        /**
         * @return what the group holds, or {@link #NOT_SERVED}.
         */
        long of(long key);
    }

    private final Long2ObjectHashMap<ArrayDeque<Connection>> lines = new Long2ObjectHashMap<>();
    /** The order the waiting connections came in (a count of arrivals). */
    private final Object2LongHashMap<Connection> arrivals = new Object2LongHashMap<>(-1);
    private long arrived;
    private int size;

    /**
     * A connection waits, at the back of its group's line.
     */
    void add(final long key, final Connection connection)
    {
        arrivals.put(connection, ++arrived);
        lines.computeIfAbsent(key, group -> new ArrayDeque<>()).addLast(connection);
        size++;
    }

    /**
     * A connection leaves its group's line: the first of it, given what it waited for, or any, closed.
     */
    void remove(final long key, final Connection connection)
    {
        final ArrayDeque<Connection> line = lines.get(key);
        if (null == line)
        {
            return;
        }
        if (line.peekFirst() == connection)
        {
            line.pollFirst();
        }
        else if (!line.remove(connection))
        {
            return;
        }
        arrivals.removeKey(connection);
        if (line.isEmpty())
        {
            lines.remove(key); // the table holds only groups with connections waiting
        }
        size--;
    }

    /**
     * @return the first waiter of the group holding the least, the first to come among equals; null when none waits
     * in a group that may be served.
     */
    Connection next(final Holdings holdings)
    {
        Connection next = null;
        long least = NOT_SERVED;
        for (final Long2ObjectHashMap<ArrayDeque<Connection>>.EntryIterator groups = lines.entrySet().iterator();
            groups.hasNext(); )
        {
            groups.next();
            final long holds = holdings.of(groups.getLongKey());
            final Connection first = groups.getValue().peekFirst();
            if (holds < least || (holds == least && null != next &&
                arrivals.getValue(first) < arrivals.getValue(next)))
            {
                next = first;
                least = holds;
            }
        }
        return next;
    }

    /**
     * @return the connections waiting.
     */
    int size()
    {
        return size;
    }
}
