package io.ringmq.pipeline.delivery;

import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.ArrayDeque;

/**
 * A copy of an application message that must outlive its slot (QoS 1 and 2 in flight or queued, for one or
 * more sessions of a shard): topic and payload in one reused buffer, counted references, and a pool, so the
 * QoS 1 and 2 paths allocate nothing per message in steady state. Owned by one delivery shard: its references
 * are counted without atomics, so a session moving to another shard takes private copies along
 * ({@link #copyFor}), never a copy other sessions of its old shard still hold; the pool asserts it (with -ea).
 */
final class SharedMessage
{
    private static final int SHRINK_ABOVE = 4 * 1024; // a pool of 1,024 holds at most 4 MiB after a burst

    /** The shard whose pool it belongs to, the only thread that counts its references. */
    private final int shard;
    private ExpandableArrayBuffer bytes = new ExpandableArrayBuffer(256);
    private int topicLength;
    private int propertiesLength;
    private int payloadLength;
    private long expiresAtMs;
    private int publishedQos;
    private int references;
    /** Its number in the store, when the persistence stage stored it for persistent sessions; else 0. */
    private long messageNumber;
    /**
     * Brought back from the store after a restart: it may have gone out before (the store records no send of a QoS 1
     * message), so it goes out with DUP, "might be re-delivery" [MQTT-3.3.1-1].
     */
    private boolean restored;
    /** What it counts against --max-message-memory while it has references: its buffer and the allowance. */
    private long cost;
    /**
     * The copy it was made from, as first made by a pool: the shard's number in the top 16 bits, a sequence below.
     * Copies a moving session takes along keep it, so the shard they arrive in keeps one of them however many
     * sessions bring it.
     */
    private long origin;
    /** Whether its pool knows it by {@link #origin} (it arrived with a moving session). */
    private boolean arrived;
    /**
     * The first client address whose connected sessions' entries name it ({@link AddressHolds.Hold}), and how many
     * those entries are; null while none. Other addresses count theirs in tables of their own.
     */
    AddressHolds.Hold holder;
    int holderEntries;
    /** How many client addresses hold it ({@link AddressHolds}): their total counts it once. */
    int addresses;
    /**
     * How many queue entries of sessions whose client is away name it ({@link DeliverySession}'s queue entries, counted
     * as they come and go and as their session's client leaves and comes back): when that is all its references, the
     * sessions away hold it alone, and dropping it from each of their queues frees it ({@link AwayRoom}).
     */
    int awayQueued;
    /** The {@link AwayRoom} plan that found it cannot be freed: skipped for the rest of that plan. */
    long blockedInPlan;
    /**
     * The {@link AwayRoom} plan that counted {@link #offeredBy} (how many window queues offer it, as the next they
     * would give) and linked them from {@link #firstOfferer}.
     */
    long offeredInPlan;
    int offeredBy;
    int firstOfferer;

    SharedMessage(final int shard)
    {
        this.shard = shard;
    }

    /**
     * @return a copy owned by another shard, with no reference yet: what a session moving there takes along.
     * Called on this message's own shard, before the hand-over publishes the copy to the other.
     */
    SharedMessage copyFor(final int toShard)
    {
        final SharedMessage copy = new SharedMessage(toShard);
        final int length = length();
        copy.bytes = new ExpandableArrayBuffer(Math.max(256, length));
        copy.bytes.putBytes(0, bytes, 0, length);
        copy.topicLength = topicLength;
        copy.propertiesLength = propertiesLength;
        copy.payloadLength = payloadLength;
        copy.expiresAtMs = expiresAtMs;
        copy.publishedQos = publishedQos;
        copy.messageNumber = messageNumber;
        copy.restored = restored;
        copy.origin = origin;
        return copy;
    }

    long messageNumber()
    {
        return messageNumber;
    }

    void messageNumber(final long messageNumber)
    {
        this.messageNumber = messageNumber;
    }

    boolean restored()
    {
        return restored;
    }

    void restored(final boolean restored)
    {
        this.restored = restored;
    }

    DirectBuffer buffer()
    {
        return bytes;
    }

    int topicLength()
    {
        return topicLength;
    }

    /**
     * @return where the MQTT 5.0 properties that travel with it start: raw, after the topic.
     */
    int propertiesOffset()
    {
        return topicLength;
    }

    int propertiesLength()
    {
        return propertiesLength;
    }

    int payloadOffset()
    {
        return topicLength + propertiesLength;
    }

    /**
     * @return the QoS it was published with (a subscriber may have it at a lower one).
     */
    int publishedQos()
    {
        return publishedQos;
    }

    /**
     * @return when its Message Expiry Interval runs out, or {@link io.ringmq.pipeline.Message#NEVER}.
     */
    long expiresAtMs()
    {
        return expiresAtMs;
    }

    int payloadLength()
    {
        return payloadLength;
    }

    /**
     * @return topic and payload bytes, what the per-client byte limits count.
     */
    int length()
    {
        return topicLength + propertiesLength + payloadLength;
    }

    /**
     * @return what it counts against --max-message-memory: what its last release gives back.
     */
    long cost()
    {
        return cost;
    }

    /**
     * @return which copy it is: the shard that first made it, and a sequence never reused there.
     */
    long origin()
    {
        return origin;
    }

    void retain()
    {
        references++;
    }

    /**
     * @return whether more than one holder (a window, a queue, the event routing it) keeps it.
     */
    boolean isShared()
    {
        return references > 1;
    }

    /**
     * @return whether every reference to it is a queue entry of a session whose client is away: no window (what is in
     * flight stays [MQTT-4.4.0-1]), no connected client's queue, and not the event being delivered.
     */
    boolean heldOnlyAway()
    {
        return awayQueued > 0 && awayQueued == references;
    }

    /**
     * The pool of one shard, and what its copies may take of the shard's share of --max-message-memory.
     */
    static final class Pool
    {
        /**
         * What a kept copy costs beyond its buffer, counted against --max-message-memory: the object and its buffer's
         * header (about 80 bytes), and room for the window and queue entries that name it.
         */
        static final int COPY_ALLOWANCE = 128;

        private final ArrayDeque<SharedMessage> free = new ArrayDeque<>();
        private final int shard;
        private final int maxFree;
        /** Bytes of the copies with references (made here, or brought by sessions that moved here), allowance included. */
        private long keptBytes;
        /** The shard's share of --max-message-memory, as last set. */
        private long budgetBytes;
        private long reportedBytes;
        private long nextOrigin;
        /** Copies that arrived with moving sessions, by their {@link SharedMessage#origin}, while referenced. */
        private final Long2ObjectHashMap<SharedMessage> arrivedByOrigin = new Long2ObjectHashMap<>();

        /**
         * @param shard       the shard it serves: every copy it makes is that shard's.
         * @param budgetBytes the shard's share of --max-message-memory.
         */
        Pool(final int shard, final int maxFree, final long budgetBytes)
        {
            this.shard = shard;
            this.maxFree = maxFree;
            this.budgetBytes = budgetBytes;
        }

        /**
         * A new share of --max-message-memory (a reload), judged from the next copy on: what is kept beyond it stays.
         */
        void budgetBytes(final long budgetBytes)
        {
            this.budgetBytes = budgetBytes;
        }

        /**
         * @return the shard's share of --max-message-memory, as last set.
         */
        long budgetBytes()
        {
            return budgetBytes;
        }

        /**
         * @return what the share has free: less than 0 past it (a bound lowered by a reload).
         */
        long freeBytes()
        {
            return budgetBytes - keptBytes;
        }

        /**
         * @return a copy with no reference yet (the caller {@link SharedMessage#retain()}s it per holder).
         */
        SharedMessage copy(final DirectBuffer topic, final int topicOffset, final int topicLength,
            final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
            final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs,
            final int publishedQos)
        {
            final SharedMessage message = free.isEmpty() ? new SharedMessage(shard) : free.pollFirst();
            final int length = topicLength + propertiesLength + payloadLength;
            if (message.bytes.capacity() < length)
            {
                message.bytes = new ExpandableArrayBuffer(length); // exactly: grown by halves it would hold up to 50 % more
            }
            message.bytes.putBytes(0, topic, topicOffset, topicLength);
            if (propertiesLength > 0)
            {
                message.bytes.putBytes(topicLength, properties, propertiesOffset, propertiesLength);
            }
            message.bytes.putBytes(topicLength + propertiesLength, payload, payloadOffset, payloadLength);
            message.topicLength = topicLength;
            message.propertiesLength = propertiesLength;
            message.payloadLength = payloadLength;
            message.expiresAtMs = expiresAtMs;
            message.publishedQos = publishedQos;
            message.references = 0;
            message.messageNumber = 0;
            message.restored = false;
            message.holder = null;
            message.holderEntries = 0;
            message.addresses = 0;
            message.awayQueued = 0;
            message.blockedInPlan = 0;
            message.offeredInPlan = 0;
            message.origin = (long)shard << 48 | ++nextOrigin;
            count(message); // the buffer as it is: grown for this message, or larger from an earlier one
            return message;
        }

        /**
         * @return whether a copy of {@code length} bytes fits within the shard's share of --max-message-memory with
         * what is kept already; always when nothing is kept, so a share smaller than a packet still lets one message
         * through at a time.
         */
        boolean hasRoomFor(final int length)
        {
            return 0 == keptBytes || keptBytes + length + COPY_ALLOWANCE <= budgetBytes;
        }

        /**
         * @return whether a session whose window and queue hold {@code heldBytes} may hold {@code length} more: while
         * it holds nothing, or no more than the share has free. One session, whatever it holds, then leaves at least
         * half of what others do not hold to them: a connected client that never acknowledged took the whole share
         * (its window and queue may hold 17 MiB by default) and every other client's QoS 1 and 2 messages were
         * dropped for as long as it stayed (review of d2d8785). Each client that holds more keeps half of what is
         * left, so one that holds little (an honest subscriber that acknowledges) always finds room.
         */
        boolean fairFor(final long heldBytes, final int length)
        {
            return 0 == heldBytes || heldBytes + length + COPY_ALLOWANCE <= budgetBytes - keptBytes;
        }

        /**
         * @return whether the connected sessions of one client address, which hold {@code heldBytes} together
         * ({@link AddressHolds}), may hold {@code length} more: while they hold nothing, or no more than three times
         * what the share has free. Alone, an address so holds up to three quarters of the share, however many
         * connections it opens, and one of its sessions up to half ({@link #fairFor}): a subscriber that stopped
         * acknowledging leaves a quarter to the others behind the same address (a NAT), and any number of them
         * leave a quarter to every other address.
         */
        boolean fairForAddress(final long heldBytes, final int length)
        {
            return 0 == heldBytes || heldBytes + length + COPY_ALLOWANCE <= 3 * (budgetBytes - keptBytes);
        }

        /**
         * @return whether a copy of {@code length} bytes fits below the last eighth of the share: where a session that
         * holds nothing may take one whatever its address holds ({@link DeliverySession#fairIn}).
         */
        boolean hasRoomBelowReserve(final int length)
        {
            return keptBytes + length + COPY_ALLOWANCE <= budgetBytes - (budgetBytes >> 3);
        }

        /**
         * @return whether a copy of {@code length} bytes made for a session whose client is away fits: within three
         * quarters of the share, so that persistent sessions left offline (a subscriber to {@code #} gone for a week)
         * leave the last quarter to clients that are connected. Always when nothing is kept, as {@link #hasRoomFor}.
         */
        boolean hasRoomOffline(final int length)
        {
            return 0 == keptBytes || keptBytes + length + COPY_ALLOWANCE <= offlineBytes();
        }

        /**
         * @return whether a session whose client is away may hold a copy made already (for a connected client): only
         * while the shard holds no more than the three quarters, or the copy would keep the last quarter taken once
         * the connected clients acknowledge it.
         */
        boolean keepsOffline()
        {
            return keptBytes <= offlineBytes();
        }

        private long offlineBytes()
        {
            return budgetBytes - (budgetBytes >> 2);
        }

        /**
         * A copy brought by a session that moved here ({@link SharedMessage#copyFor}): counted here from now on, and
         * found by {@link #arrivedCopyOf} for the next session that brings a copy of the same message.
         */
        void adopt(final SharedMessage message)
        {
            assert message.shard == shard : "a copy of shard " + message.shard + " adopted in shard " + shard;
            count(message);
            message.arrived = true;
            arrivedByOrigin.put(message.origin, message);
        }

        /**
         * @return the copy of the same message another moving session brought here, still referenced, or null.
         */
        SharedMessage arrivedCopyOf(final SharedMessage message)
        {
            return arrivedByOrigin.get(message.origin);
        }

        /**
         * @return how much the bytes of kept copies changed since the last call (for the shared gauge, once per batch).
         */
        long takeKeptBytesChange()
        {
            final long change = keptBytes - reportedBytes;
            reportedBytes = keptBytes;
            return change;
        }

        /**
         * What a window or queue entry that names a copy holds of the heap besides it: its slots in the parallel
         * arrays (13 bytes a queue entry, about 33 a window entry, in arrays that double as they grow). Charged to the
         * copy for each holder, with no room asked for it (a copy that was let in is let into every entry; sessions
         * away take one only within three quarters of the share, so the entries they charge end there): 8,000
         * persistent sessions away, each queueing the same 1,000 QoS 1 messages, held 8 million queue entries that no
         * bound saw, and ran a 64 MiB heap out (review of d2d8785); each copy was counted once.
         */
        static final int ENTRY_ALLOWANCE = 32;

        /**
         * @return what a window or queue entry's own Subscription Identifier array holds of the heap, charged to its
         * copy: 0 for none or one (an array shared by every message, {@code MessageDelivery.subscriptionIds}).
         */
        static long idsCost(final int[] ids)
        {
            return null == ids || ids.length < 2 ? 0 : ids.length * 4L + IDS_ARRAY_HEADER;
        }

        /**
         * @return what one more entry charges its copy: {@link #ENTRY_ALLOWANCE} and its {@link #idsCost}.
         */
        static long entryCost(final int[] ids)
        {
            return ENTRY_ALLOWANCE + idsCost(ids);
        }

        /** What an int array costs beyond its elements (object header and length). */
        static final int IDS_ARRAY_HEADER = 16;

        /**
         * Counts {@code bytes} more against the copy (the Subscription Identifiers a window or queue entry keeps with
         * it): given back when the copy is, never sooner, so it is an upper bound of what its holders keep.
         */
        void charge(final SharedMessage message, final long bytes)
        {
            if (0 == bytes)
            {
                return;
            }
            message.cost += bytes;
            keptBytes += bytes;
        }

        private void count(final SharedMessage message)
        {
            message.cost = message.bytes.capacity() + COPY_ALLOWANCE;
            keptBytes += message.cost;
        }

        /**
         * Drops one reference; the last one gives the message back.
         */
        void release(final SharedMessage message)
        {
            assert message.shard == shard : "a copy of shard " + message.shard + " released in shard " + shard;
            if (--message.references == 0)
            {
                recycle(message);
            }
        }

        private void recycle(final SharedMessage message)
        {
            assert 0 == message.addresses && null == message.holder : "a copy recycled that an address still holds";
            assert 0 == message.awayQueued : "a copy recycled that " + message.awayQueued + " queues away still name";
            keptBytes -= message.cost; // what was counted for it, whatever its buffer is now
            if (message.arrived)
            {
                message.arrived = false;
                arrivedByOrigin.remove(message.origin);
            }
            if (free.size() < maxFree)
            {
                if (message.bytes.capacity() > SHRINK_ABOVE)
                {
                    message.bytes = new ExpandableArrayBuffer(256); // a large message's buffer is not kept
                }
                free.addLast(message);
            }
        }
    }
}
