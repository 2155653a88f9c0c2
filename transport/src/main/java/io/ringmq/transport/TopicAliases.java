package io.ringmq.transport;

import org.agrona.DirectBuffer;

/**
 * One MQTT 5.0 connection's inbound topic aliases [MQTT-3.3.2-10]: alias 1..maximum to the bytes of a topic name.
 * Bounded by the maximum the broker announced, and by the topic length limit per entry. A slot keeps its array
 * and reuses it for the next topic that fits, so a client that churns through its aliases stops allocating once
 * every slot has held its longest topic.
 * <pre>
 *   alias:    1        2        3     …   (at most --topic-alias-maximum)
 *   topics: [bytes] [bytes]   null
 *   lengths:  n1       n2      -1         (-1: never set)
 * </pre>
 * I/O agent only.
 */
final class TopicAliases
{
    private static final int INITIAL_SLOTS = 16;
    private static final int MIN_TOPIC_CAPACITY = 32;
    /**
     * The most bytes one connection's aliases may keep, whatever the topics' lengths: their topics and their table,
     * whose slots go as far as the highest alias used (with {@code --topic-alias-maximum} 65,535, alias 65,535
     * alone would take 786 KB of slots: refused).
     */
    static final int MAX_BYTES = 64 * 1024;
    /** A slot of the table: a reference (counted wide) and a length. */
    static final int SLOT_LENGTH = 12;

    private final int maximum;
    private byte[][] topics;
    private int[] lengths;
    private int bytes;

    /**
     * @param maximum the highest alias the client may use.
     */
    TopicAliases(final int maximum)
    {
        this.maximum = maximum;
        final int slots = Math.min(maximum, INITIAL_SLOTS);
        topics = new byte[slots][];
        lengths = new int[slots];
        java.util.Arrays.fill(lengths, -1);
        bytes = slots * SLOT_LENGTH;
    }

    /**
     * Maps an alias to a topic name [MQTT-3.3.2-12]; a later mapping of the same alias replaces it [MQTT-3.3.2-11].
     *
     * @param alias 1..maximum (the caller checked it).
     * @return the bytes its topics hold more than before (0 when the slot's array was long enough).
     */
    int set(final int alias, final DirectBuffer buffer, final int offset, final int length)
    {
        final int before = bytes;
        final int index = alias - 1;
        if (index >= topics.length)
        {
            grow(index);
        }
        byte[] topic = topics[index];
        if (null == topic || topic.length < length)
        {
            bytes -= null == topic ? 0 : topic.length;
            topic = new byte[capacityFor(length)];
            bytes += topic.length;
            topics[index] = topic;
        }
        buffer.getBytes(offset, topic, 0, length);
        lengths[index] = length;
        return bytes - before;
    }

    /**
     * @return the bytes mapping the alias to a topic of {@code length} bytes would add to what its topics hold.
     */
    int growth(final int alias, final int length)
    {
        final int index = alias - 1;
        final byte[] topic = index < topics.length ? topics[index] : null;
        if (null != topic && topic.length >= length)
        {
            return 0;
        }
        final int slots = index < topics.length ? 0 : (slotsFor(index) - topics.length) * SLOT_LENGTH;
        return slots + capacityFor(length) - (null == topic ? 0 : topic.length);
    }

    /**
     * @return the bytes its topics hold.
     */
    int bytes()
    {
        return bytes;
    }

    /**
     * @return whether mapping the alias to a topic of {@code length} bytes keeps the connection's aliases within
     * {@link #MAX_BYTES}.
     */
    boolean fits(final int alias, final int length)
    {
        return bytes + growth(alias, length) <= MAX_BYTES;
    }

    static int capacityFor(final int length)
    {
        return Math.max(MIN_TOPIC_CAPACITY, Integer.highestOneBit(Math.max(1, length - 1)) << 1);
    }

    /**
     * @return the length of the topic the alias stands for, or -1 when it stands for none yet.
     */
    int length(final int alias)
    {
        final int index = alias - 1;
        return index >= 0 && index < lengths.length ? lengths[index] : -1;
    }

    /**
     * @return the bytes of the alias's topic, valid for {@link #length(int)} bytes; only for a known alias.
     */
    byte[] bytes(final int alias)
    {
        return topics[alias - 1];
    }

    private int slotsFor(final int index)
    {
        return Math.min(maximum, Math.max(index + 1, topics.length * 2));
    }

    private void grow(final int index)
    {
        final int slots = slotsFor(index);
        final int old = lengths.length;
        bytes += (slots - old) * SLOT_LENGTH;
        topics = java.util.Arrays.copyOf(topics, slots);
        lengths = java.util.Arrays.copyOf(lengths, slots);
        java.util.Arrays.fill(lengths, old, slots, -1);
    }
}
