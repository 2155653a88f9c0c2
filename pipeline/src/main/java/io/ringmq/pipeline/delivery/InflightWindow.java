package io.ringmq.pipeline.delivery;

import java.util.Arrays;

/**
 * The slots of one session's outbound in-flight window: parallel arrays, no object per message. A session holds
 * one only while it has (or lately had) QoS 1 and 2 messages in flight: it starts at {@link #INITIAL_SLOTS} slots
 * and doubles, up to the session's limit, when every slot is taken; a slot keeps its index when it grows, so a
 * caller's slot number stays good. {@link DeliverySession} makes it on first use and drops it once it is empty
 * and quiet. Owned by the shard that holds the session.
 * <pre>
 *   slot:  message | packet id | flags (qos 2 bits, state 2 bits, retain, unsent) | send order | ids | group
 *   index: packet id -> slot, open addressing at twice the slots (every acknowledgement, every new packet id)
 * </pre>
 */
final class InflightWindow
{
    /** Slots of a new window: most sessions never have more than a few messages in flight. */
    static final int INITIAL_SLOTS = 4;

    private static final int QOS_MASK = 0x3;
    private static final int STATE_SHIFT = 2;
    private static final int STATE_MASK = 0x3 << STATE_SHIFT;
    private static final int RETAIN = 0x10;
    private static final int UNSENT = 0x20;
    private static final int UNKNOWN = -2;

    private SharedMessage[] messages;
    private int[] packetIds;
    private byte[] flags;
    private long[] order;
    private int[][] subscriptionIds;
    private int[] groups;
    /**
     * The taken slots by packet identifier: {@code packetId << 16 | slot}, 0 where empty (a packet identifier is
     * never 0); linear probing from {@code packetId & mask}. Sequential identifiers land in sequential cells, so a
     * lookup is one probe, or a few where identifiers left in flight out of order (a QoS 2 message awaiting
     * PUBCOMP, ones restored after a restart) share a cell. A scan of the slots per acknowledgement was 2 % of the
     * broker's thread in a QoS 1 fan-out with 32 slots, and grows with --max-inflight (up to 65,535).
     */
    private int[] index;
    /** No slot below this is free: where {@link #freeSlot} starts looking. */
    private int lowestFree;
    private int count;
    /** The bytes of the messages its slots hold ({@link SharedMessage#length()}). */
    private long bytes;
    private int unsentCount;
    private long sendOrder;
    /**
     * The slot first sent the earliest, -1 while none is taken, {@link #UNKNOWN} once it left: found again when next
     * asked, so a look for stalled clients costs one read per window that kept its oldest (a window may have 65,535
     * slots).
     */
    private int earliest = -1;

    /**
     * @param slots its first size (at least 1).
     */
    InflightWindow(final int slots)
    {
        messages = new SharedMessage[slots];
        packetIds = new int[slots];
        flags = new byte[slots];
        order = new long[slots];
        subscriptionIds = new int[slots][];
        groups = new int[slots];
        index = new int[indexLength(slots)];
    }

    /**
     * @return its slots, free or not.
     */
    int capacity()
    {
        return messages.length;
    }

    int count()
    {
        return count;
    }

    long bytes()
    {
        return bytes;
    }

    int unsentCount()
    {
        return unsentCount;
    }

    boolean isEmpty()
    {
        return count == 0;
    }

    /**
     * Puts a message in the first free slot, growing (up to {@code maxSlots}) when there is none.
     *
     * @return the slot.
     */
    int add(final SharedMessage message, final int packetId, final int qos, final int state, final boolean retain,
        final int[] ids, final int group, final int maxSlots)
    {
        int slot = freeSlot();
        if (slot < 0)
        {
            if (messages.length >= maxSlots)
            {
                throw new IllegalStateException("in-flight window full");
            }
            slot = messages.length;
            grow(Math.min(maxSlots, messages.length * 2));
        }
        messages[slot] = message;
        bytes += message.length();
        packetIds[slot] = packetId;
        flags[slot] = (byte)((qos & QOS_MASK) | (state << STATE_SHIFT) | (retain ? RETAIN : 0));
        subscriptionIds[slot] = ids;
        groups[slot] = group;
        order[slot] = ++sendOrder;
        if (0 == count++)
        {
            earliest = slot; // sent after any other it holds: the earliest only of an empty window
        }
        indexPut(packetId, slot);
        return slot;
    }

    /**
     * Puts another copy of the same message in an occupied slot (the caller moves the references).
     */
    void replaceMessage(final int slot, final SharedMessage message)
    {
        bytes += message.length() - messages[slot].length();
        messages[slot] = message;
    }

    /**
     * @return the message the slot held, which the caller releases.
     */
    SharedMessage remove(final int slot)
    {
        final SharedMessage message = messages[slot];
        bytes -= message.length();
        indexRemove(packetIds[slot], slot);
        unsent(slot, false);
        messages[slot] = null;
        if (slot == earliest)
        {
            earliest = 0 == count - 1 ? -1 : UNKNOWN;
        }
        lowestFree = Math.min(lowestFree, slot);
        subscriptionIds[slot] = null;
        flags[slot] = 0;
        count--;
        return message;
    }

    /**
     * @return the slot of a packet identifier, or -1.
     */
    int find(final int packetId)
    {
        final int mask = index.length - 1;
        for (int cell = packetId & mask; ; cell = (cell + 1) & mask)
        {
            final int entry = index[cell];
            if (0 == entry)
            {
                return -1;
            }
            if (entry >>> 16 == packetId)
            {
                return entry & 0xFFFF;
            }
        }
    }

    /**
     * Marks a message as not sent on the current connection (or as sent again).
     */
    void unsent(final int slot, final boolean unsent)
    {
        final boolean was = (flags[slot] & UNSENT) != 0;
        if (was != unsent)
        {
            flags[slot] = (byte)(unsent ? flags[slot] | UNSENT : flags[slot] & ~UNSENT);
            unsentCount += unsent ? 1 : -1;
        }
    }

    /**
     * @return the slot whose message was first sent the earliest, or -1 while none is in flight.
     */
    int earliest()
    {
        if (UNKNOWN == earliest)
        {
            int found = -1;
            for (int slot = 0; slot < messages.length; slot++)
            {
                if (null != messages[slot] && (found < 0 || order[slot] < order[found]))
                {
                    found = slot;
                }
            }
            earliest = found;
        }
        return earliest;
    }

    /**
     * @return the earliest slot not yet sent on this connection, or -1.
     */
    int earliestUnsent()
    {
        int earliest = -1;
        for (int slot = 0; slot < messages.length; slot++)
        {
            if ((flags[slot] & UNSENT) != 0 && (earliest < 0 || order[slot] < order[earliest]))
            {
                earliest = slot;
            }
        }
        return earliest;
    }

    /**
     * @return the taken slots in the order their messages were first sent; one array per call (a reconnect).
     */
    int[] inOrder()
    {
        final int[] slots = new int[count];
        int n = 0;
        for (int slot = 0; slot < messages.length; slot++)
        {
            if (null != messages[slot])
            {
                slots[n++] = slot;
            }
        }
        for (int i = 1; i < n; i++) // insertion sort by first send: a window is small, and nothing is boxed
        {
            final int slot = slots[i];
            int j = i - 1;
            while (j >= 0 && order[slots[j]] > order[slot])
            {
                slots[j + 1] = slots[j];
                j--;
            }
            slots[j + 1] = slot;
        }
        return slots;
    }

    SharedMessage message(final int slot)
    {
        return messages[slot];
    }

    int packetId(final int slot)
    {
        return packetIds[slot];
    }

    int qos(final int slot)
    {
        return flags[slot] & QOS_MASK;
    }

    int state(final int slot)
    {
        return (flags[slot] & STATE_MASK) >> STATE_SHIFT;
    }

    void state(final int slot, final int state)
    {
        flags[slot] = (byte)((flags[slot] & ~STATE_MASK) | (state << STATE_SHIFT));
    }

    boolean retain(final int slot)
    {
        return (flags[slot] & RETAIN) != 0;
    }

    int[] subscriptionIds(final int slot)
    {
        return subscriptionIds[slot];
    }

    int group(final int slot)
    {
        return groups[slot];
    }

    private int freeSlot()
    {
        if (count < messages.length)
        {
            for (int slot = lowestFree; slot < messages.length; slot++)
            {
                if (null == messages[slot])
                {
                    lowestFree = slot + 1; // the caller takes it
                    return slot;
                }
            }
        }
        lowestFree = messages.length; // full: a grown window's first new slot is next
        return -1;
    }

    private void grow(final int slots)
    {
        messages = Arrays.copyOf(messages, slots);
        packetIds = Arrays.copyOf(packetIds, slots);
        flags = Arrays.copyOf(flags, slots);
        order = Arrays.copyOf(order, slots);
        subscriptionIds = Arrays.copyOf(subscriptionIds, slots);
        groups = Arrays.copyOf(groups, slots);
        index = new int[indexLength(slots)];
        for (int slot = 0; slot < slots; slot++)
        {
            if (null != messages[slot])
            {
                indexPut(packetIds[slot], slot);
            }
        }
    }

    /**
     * @return a power of two at least twice {@code slots}: the index stays at most half full.
     */
    private static int indexLength(final int slots)
    {
        return Math.max(8, Integer.highestOneBit(Math.max(1, slots) * 4 - 1));
    }

    /**
     * Notes a taken slot's packet identifier; one already noted (which its callers never hand in) moves to
     * {@code slot}.
     */
    private void indexPut(final int packetId, final int slot)
    {
        final int mask = index.length - 1;
        int cell = packetId & mask;
        while (0 != index[cell] && index[cell] >>> 16 != packetId)
        {
            cell = (cell + 1) & mask;
        }
        index[cell] = packetId << 16 | slot;
    }

    /**
     * Forgets a slot's packet identifier, moving back the entries after it that probed past its cell (no markers
     * left behind: a lookup stops at the first empty cell).
     */
    private void indexRemove(final int packetId, final int slot)
    {
        final int mask = index.length - 1;
        int hole = packetId & mask;
        while (index[hole] != (packetId << 16 | slot))
        {
            if (0 == index[hole])
            {
                return; // not noted for this slot
            }
            hole = (hole + 1) & mask;
        }
        for (int cell = (hole + 1) & mask; 0 != index[cell]; cell = (cell + 1) & mask)
        {
            final int home = (index[cell] >>> 16) & mask;
            // the entry may fill the hole unless its home lies after the hole, up to its cell (cyclically)
            final boolean stays = hole <= cell ? hole < home && home <= cell : hole < home || home <= cell;
            if (!stays)
            {
                index[hole] = index[cell];
                hole = cell;
            }
        }
        index[hole] = 0;
    }
}
