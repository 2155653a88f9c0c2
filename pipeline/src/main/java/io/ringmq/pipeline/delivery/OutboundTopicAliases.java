package io.ringmq.pipeline.delivery;

import org.agrona.DirectBuffer;
import org.agrona.collections.Long2LongHashMap;

/**
 * The broker's outbound topic aliases toward one MQTT 5.0 connection [MQTT-3.3.2-7]: the first PUBLISH of a topic
 * carries the topic and a new alias, later ones an empty topic and that alias, until the client's Topic Alias
 * Maximum (at most {@link #MAX_KEPT} here) is used up; topics past it go in full. Mappings live as long as the
 * connection [MQTT-3.3.2-7]: {@link #reset} on every CONNECT, {@link #release} when it ends. Found by a 64-bit hash
 * of the topic bytes, checked against the topic kept for the alias, so a lookup allocates nothing and a hash
 * collision only costs an alias. The topics kept are bounded per connection ({@link #MAX_BYTES}) and, with every
 * connection of the shard, by its {@link OutboundAliasBudget}: past either a topic goes in full.
 */
final class OutboundTopicAliases
{
    /** The most aliases kept per connection, whatever the client allows: the memory is the broker's. */
    static final int MAX_KEPT = 1_024;
    /** The most bytes of topics kept per connection. */
    static final int MAX_BYTES = 64 * 1024;
    /** What a kept topic costs besides its bytes: its array's header and its map entry. */
    static final int TOPIC_ALLOWANCE = 48;
    /** What a slot of the table costs (a reference, counted wide), and how many the table starts with. */
    static final int SLOT_LENGTH = 8;
    private static final int INITIAL_SLOTS = 16;

    private final OutboundAliasBudget budget;
    private long keptBytes;

    private Long2LongHashMap byHash;
    private byte[][] topics;
    private int maximum;
    private int next = 1;
    private long lastHash;
    private long lastCost;

    /**
     * @param budget where the topics kept are counted with the shard's other connections'.
     */
    OutboundTopicAliases(final OutboundAliasBudget budget)
    {
        this.budget = budget;
    }

    /**
     * A new connection: no mappings, and the client's Topic Alias Maximum (0: no aliases).
     */
    void reset(final int clientMaximum)
    {
        release();
        maximum = Math.min(clientMaximum, MAX_KEPT);
    }

    /**
     * Its connection ended (or moves to another shard): the mappings go, and what they kept is given back.
     */
    void release()
    {
        maximum = 0;
        next = 1;
        budget.give(keptBytes);
        keptBytes = 0;
        if (null != byHash)
        {
            byHash = null; // a reconnecting client's mappings go with its old connection
            topics = null;
        }
    }

    boolean isEnabled()
    {
        return maximum > 0;
    }

    /**
     * @return the alias of a topic already sent (send an empty topic), minus a new alias just assigned to it (send
     * the topic and the alias), or 0 when none is left (send the topic alone).
     */
    int aliasFor(final DirectBuffer topic, final int offset, final int length)
    {
        if (maximum == 0)
        {
            return 0;
        }
        final long hash = hash(topic, offset, length);
        if (null != byHash)
        {
            final int alias = (int)byHash.get(hash);
            if (alias > 0)
            {
                return sameTopic(topics[alias], topic, offset, length) ? alias : 0;
            }
        }
        if (next > maximum)
        {
            return 0;
        }
        final int slots = null == topics ? Math.min(maximum + 1, INITIAL_SLOTS) :
            next < topics.length ? topics.length : Math.min(maximum + 1, topics.length * 2);
        final long growth = null == topics || slots > topics.length ?
            (long)(slots - (null == topics ? 0 : topics.length)) * SLOT_LENGTH : 0;
        final long cost = length + TOPIC_ALLOWANCE;
        if (keptBytes + growth + cost > MAX_BYTES || !budget.take(growth + cost))
        {
            return 0; // sent in full
        }
        keptBytes += growth + cost;
        lastCost = cost; // the table keeps its slots: only the topic goes back with undoLast
        if (null == byHash)
        {
            byHash = new Long2LongHashMap(0);
            topics = new byte[slots][];
        }
        else if (slots > topics.length)
        {
            topics = java.util.Arrays.copyOf(topics, slots);
        }
        final int alias = next++;
        final byte[] bytes = new byte[length];
        topic.getBytes(offset, bytes);
        topics[alias] = bytes;
        byHash.put(hash, alias);
        lastHash = hash;
        return -alias;
    }

    /**
     * Takes back the alias {@link #aliasFor} just assigned: the packet that would have told the client was not
     * sent.
     */
    void undoLast()
    {
        final int alias = next - 1;
        if (alias >= 1 && null != byHash)
        {
            byHash.remove(lastHash);
            topics[alias] = null;
            next = alias;
            keptBytes -= lastCost;
            budget.give(lastCost);
            lastCost = 0;
        }
    }

    private static boolean sameTopic(final byte[] kept, final DirectBuffer topic, final int offset, final int length)
    {
        if (kept.length != length)
        {
            return false;
        }
        for (int i = 0; i < length; i++)
        {
            if (kept[i] != topic.getByte(offset + i))
            {
                return false;
            }
        }
        return true;
    }

    private static long hash(final DirectBuffer topic, final int offset, final int length)
    {
        long hash = 0xCBF2_9CE4_8422_2325L; // FNV-1a
        for (int i = 0; i < length; i++)
        {
            hash ^= topic.getByte(offset + i) & 0xFF;
            hash *= 0x100_0000_01B3L;
        }
        return hash;
    }
}
