package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.collections.Long2LongHashMap;

import java.util.ArrayDeque;
import java.util.Iterator;

/**
 * How many connections of one I/O agent may be in their TLS handshake at once. The JDK's engine keeps a handshake's
 * state on the heap (about 15 KB once a ClientHello is in, up to 32 KB more for a handshake message sent in
 * fragments, {@code jdk.tls.maxHandshakeMessageSize}), counted nowhere else; 2,500 sockets each sending two 16 KB
 * records of an unfinished ClientHello ran a 64 MiB heap out and ended the broker
 * ({@code -XX:+ExitOnOutOfMemoryError}). A connection past the slots is not read (its bytes wait in the socket) until
 * a handshake under way ends, first come first served; the connect timeout ends it meanwhile as any other. One
 * address ({@link AddressKeys}; loopback only with {@code --limit-loopback}) holds at most a sixteenth of the slots,
 * so one host's sockets cannot make every other client wait for the connect timeout. Sized so that the slots'
 * handshakes at their largest take an eighth of the maximum heap. The agent's thread only.
 */
final class HandshakeSlots
{
    /** {@link Connection#handshake}: none held or awaited (no handshake, or it ended). */
    static final byte NONE = 0;
    /** Waiting, unread, for a slot. */
    static final byte WAITING = 1;
    /** Holding a slot, counted for no address (exempt, or behind a PROXY listener whose header is still unread). */
    static final byte HELD = 2;
    /** Holding a slot counted for its address ({@link InboundConnects#limitedAddressKey}, which then stays). */
    static final byte HELD_FOR_ADDRESS = 3;
    /** What one handshake may hold on the heap at most: the engine's state and a fragmented message. */
    static final int HANDSHAKE_BYTES = 48 * 1024;

    private final int capacity;
    /** The most slots one limited address holds. */
    private final int addressShare;
    private int taken;
    private final ArrayDeque<Connection> waiting = new ArrayDeque<>();
    /** Slots taken per limited address; only addresses holding one. */
    private final Long2LongHashMap byAddress = new Long2LongHashMap(0);

    HandshakeSlots(final int capacity)
    {
        this.capacity = Math.max(1, capacity);
        this.addressShare = Math.max(1, this.capacity / AddressKeys.SHARES);
    }

    /**
     * @return the slots of one of {@code agents} agents for a heap of {@code maxHeapBytes}.
     */
    static int forHeap(final long maxHeapBytes, final int agents)
    {
        return (int)Math.min(Integer.MAX_VALUE, maxHeapBytes / 8 / HANDSHAKE_BYTES / Math.max(1, agents));
    }

    /**
     * Before a connection is read: one whose layer is in its handshake needs a slot.
     *
     * @return false when none is free for it: the connection waits, unread, until {@link #release} hands it one.
     */
    boolean admit(final Connection connection)
    {
        if (connection.handshake >= HELD || !connection.layer.handshaking())
        {
            return true;
        }
        if (fits(connection))
        {
            take(connection);
            return true;
        }
        if (connection.handshake != WAITING)
        {
            connection.handshake = WAITING;
            connection.updateInterest(); // not read, nor woken for, until a slot is its
            waiting.add(connection);
        }
        return false;
    }

    /**
     * After a read, or at close: a connection whose handshake ended (or that closed) gives its slot to the first
     * connection in line whose address is under its share, which is read again; a closed one leaves the line.
     */
    void release(final Connection connection)
    {
        if (connection.handshake == WAITING)
        {
            if (connection.closed)
            {
                connection.handshake = NONE;
                waiting.remove(connection);
            }
            return;
        }
        if (connection.handshake < HELD || (!connection.closed && connection.layer.handshaking()))
        {
            return;
        }
        if (connection.handshake == HELD_FOR_ADDRESS)
        {
            final long key = InboundConnects.limitedAddressKey(connection);
            final long held = byAddress.get(key) - 1;
            if (held > 0)
            {
                byAddress.put(key, held);
            }
            else
            {
                byAddress.remove(key);
            }
        }
        connection.handshake = NONE;
        taken--;
        for (final Iterator<Connection> line = waiting.iterator(); line.hasNext(); )
        {
            final Connection next = line.next();
            if (fits(next))
            {
                line.remove();
                take(next);
                next.updateInterest();
                return;
            }
        }
    }

    private boolean fits(final Connection connection)
    {
        final long key = InboundConnects.limitedAddressKey(connection);
        return taken < capacity && (key == AddressKeys.NONE || byAddress.get(key) < addressShare);
    }

    private void take(final Connection connection)
    {
        taken++;
        final long key = InboundConnects.limitedAddressKey(connection);
        if (key == AddressKeys.NONE)
        {
            connection.handshake = HELD;
            return;
        }
        connection.handshake = HELD_FOR_ADDRESS;
        byAddress.put(key, byAddress.get(key) + 1);
    }

    /**
     * @return slots taken and connections waiting for one (tests).
     */
    int taken()
    {
        return taken;
    }

    int waiting()
    {
        return waiting.size();
    }
}
