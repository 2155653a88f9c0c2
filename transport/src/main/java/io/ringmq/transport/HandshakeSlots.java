package io.ringmq.transport;

import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Object2LongHashMap;


/**
 * How many connections of one I/O agent may be in their TLS handshake at once. The JDK's engine keeps a handshake's
 * state on the heap (about 15 KB once a ClientHello is in, up to 32 KB more for a handshake message sent in
 * fragments, {@code jdk.tls.maxHandshakeMessageSize}), counted nowhere else; 2,500 sockets each sending two 16 KB
 * records of an unfinished ClientHello ran a 64 MiB heap out and ended the broker
 * ({@code -XX:+ExitOnOutOfMemoryError}). A connection past the slots is not read (its bytes wait in the socket) until
 * a handshake under way ends; the connect timeout ends it meanwhile as any other. One address ({@link AddressKeys};
 * loopback only with {@code --limit-loopback}) holds at most a sixteenth of the slots, so one host's sockets cannot
 * hold them all. Sized so that the slots' handshakes at their largest take an eighth of the maximum heap. The agent's
 * thread only.
 * <p>
 * Sixteen addresses (or loopback, or an IPv6 /60) could still hold every slot with handshakes that never end, and
 * make every other TLS client wait until the connect timeout ended them. So the slots are shared by address while
 * connections wait:
 * <ul>
 *   <li>a slot given back goes to the waiting connection whose address holds the fewest (first in line among
 *   equals);</li>
 *   <li>a handshake not read for {@value #STALL_MS} ms (its client sent nothing the socket had for it) ends
 *   ({@link #yielding}) while a connection waits whose address holds at least two slots fewer than its own, and its
 *   slot goes to that one. A client that goes on sending keeps its slot however slow its handshake, and an address
 *   holding one slot never gives it up: it is the address holding many that yields, one stalled handshake at a
 *   time.</li>
 * </ul>
 * Connections counted for no address (loopback without {@code --limit-loopback}, a PROXY header not read yet) are
 * one group in that reckoning, so a flood from loopback gives way to a remote client, though not to another of its
 * own. Behind a PROXY listener the header is read before a slot is asked for, so the client it names is the one
 * counted.
 */
final class HandshakeSlots
{
    /** {@link Connection#handshake}: none held or awaited (no handshake, or it ended). */
    static final byte NONE = 0;
    /** Waiting, unread, for a slot. */
    static final byte WAITING = 1;
    /** Holding a slot, counted for no address (exempt: loopback, or a PROXY header of LOCAL or UNKNOWN). */
    static final byte HELD = 2;
    /** Holding a slot counted for its address ({@link InboundConnects#limitedAddressKey}, which then stays). */
    static final byte HELD_FOR_ADDRESS = 3;
    /** What one handshake may hold on the heap at most: the engine's state and a fragmented message. */
    static final int HANDSHAKE_BYTES = 48 * 1024;
    /** How long a handshake goes unread before it may end for a connection that waits ({@link #yielding}). */
    static final long STALL_MS = 3_000;
    /** While connections wait, how often the holders are looked over for one to end. */
    static final long LOOK_EVERY_MS = 250;
    /** The most handshakes one look ends: a look's cost stays bounded, whatever the line and the slots. */
    static final int MOST_YIELDS_A_LOOK = 16;

    private final int capacity;
    /** The most slots one limited address holds. */
    private final int addressShare;
    private int taken;
    /** The waiting connections, a line per group their slot would be counted for. */
    private final AddressLines line = new AddressLines();
    private final AddressLines.Holdings holdings = this::holdings;
    /** Slots taken per limited address; only addresses holding one. */
    private final Long2LongHashMap byAddress = new Long2LongHashMap(0);
    /** Slots taken counted for no address ({@link #HELD}). */
    private int heldForNone;
    /** When each holder was last read, or took its slot. */
    private final Object2LongHashMap<Connection> readMs = new Object2LongHashMap<>(-1);
    private long nowMs;
    private final StallLooks looks = new StallLooks(LOOK_EVERY_MS, MOST_YIELDS_A_LOOK);

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
     * The agent's clock, once per duty cycle.
     */
    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
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
            line.add(InboundConnects.limitedAddressKey(connection), connection);
        }
        return false;
    }

    /**
     * After a read, or at close: a connection whose handshake ended (or that closed) gives its slot to the next in
     * line (the waiting connection whose address holds the fewest slots), which is read again; a closed one leaves
     * the line.
     *
     * @return the connection given the slot, or null.
     */
    Connection release(final Connection connection)
    {
        if (connection.handshake == WAITING)
        {
            if (connection.closed)
            {
                connection.handshake = NONE;
                leaveLine(connection);
            }
            return null;
        }
        if (connection.handshake < HELD || (!connection.closed && connection.layer.handshaking()))
        {
            return null;
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
        else
        {
            heldForNone--;
        }
        readMs.removeKey(connection);
        connection.handshake = NONE;
        taken--;
        final Connection next = nextInLine();
        if (null == next || !fits(next))
        {
            return null;
        }
        leaveLine(next);
        take(next);
        next.updateInterest();
        return next;
    }

    /**
     * While connections wait, at most every {@value #LOOK_EVERY_MS} ms and {@value #MOST_YIELDS_A_LOOK} times a
     * look: a handshake to end, whose slot then goes to the next in line ({@link #release}). One not read for
     * {@value #STALL_MS} ms or more, whose address holds at least two slots more than the next in line's, the most
     * such (the longest unread among equals).
     *
     * @param looking true for the first call of a duty cycle (it may look, or wait for the next look); false for the
     *                calls after one that returned a connection, which go on with the same look.
     * @return the connection to end (the caller closes it, which releases its slot), or null.
     */
    Connection yielding(final boolean looking)
    {
        if (!looks.open(looking, line.size() > 0, nowMs))
        {
            return null;
        }
        final Connection next = nextInLine();
        if (null == next)
        {
            return null; // none could take a slot given back
        }
        // a yield must leave the two addresses nearer even: the holder's address keeps more than the next in line
        // then holds, so that one (not a waiter of the holder's address, tied with it) takes the slot
        final long nextHolds = heldBy(next);
        Connection yielding = null;
        long mostHeld = nextHolds + 1;
        long oldestMs = Long.MAX_VALUE;
        for (final Object2LongHashMap<Connection>.EntryIterator holders = readMs.entrySet().iterator();
            holders.hasNext(); )
        {
            holders.next();
            final long readAtMs = holders.getLongValue();
            final Connection holder = holders.getKey();
            if (nowMs - readAtMs < STALL_MS || holder.closed) // a closed one is on its way out: never twice
            {
                continue;
            }
            final long holds = heldBy(holder);
            if (holds > mostHeld || (holds == mostHeld && null != yielding && readAtMs < oldestMs))
            {
                yielding = holder;
                mostHeld = holds;
                oldestMs = readAtMs;
            }
        }
        if (null != yielding)
        {
            looks.ended();
        }
        return yielding;
    }

    /**
     * Before a connection holding a slot is read: its handshake goes on, so its stall starts again.
     */
    void reading(final Connection connection)
    {
        if (connection.handshake >= HELD)
        {
            readMs.put(connection, nowMs);
        }
    }

    /**
     * @return the waiting connection whose address holds the fewest slots, the first in line among equals; of those
     * whose address is under its share, so null when none is.
     */
    private Connection nextInLine()
    {
        return line.next(holdings);
    }

    /**
     * @return the slots a group holds, for the next in line: only one under its address's share may take a slot.
     */
    private long holdings(final long key)
    {
        final long holds = key == AddressKeys.NONE ? heldForNone : byAddress.get(key);
        return key == AddressKeys.NONE || holds < addressShare ? holds : AddressLines.NOT_SERVED;
    }

    private void leaveLine(final Connection connection)
    {
        line.remove(InboundConnects.limitedAddressKey(connection), connection);
    }

    /**
     * @return the slots held by the group a connection's slot is (or would be) counted for: its limited address, or
     * those counted for none.
     */
    private long heldBy(final Connection connection)
    {
        if (connection.handshake == HELD)
        {
            return heldForNone;
        }
        final long key = InboundConnects.limitedAddressKey(connection);
        return key == AddressKeys.NONE ? heldForNone : byAddress.get(key);
    }

    private boolean fits(final Connection connection)
    {
        return taken < capacity && fitsOnceOneEnds(connection);
    }

    /**
     * @return whether its address is under its share (or it is counted for none).
     */
    private boolean fitsOnceOneEnds(final Connection connection)
    {
        final long key = InboundConnects.limitedAddressKey(connection);
        return key == AddressKeys.NONE || byAddress.get(key) < addressShare;
    }

    private void take(final Connection connection)
    {
        taken++;
        readMs.put(connection, nowMs);
        final long key = InboundConnects.limitedAddressKey(connection);
        if (key == AddressKeys.NONE)
        {
            connection.handshake = HELD;
            heldForNone++;
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
        return line.size();
    }
}
