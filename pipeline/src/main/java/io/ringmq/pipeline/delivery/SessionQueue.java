package io.ringmq.pipeline.delivery;

/**
 * The bounded queue behind one session's in-flight window: a circular buffer of parallel arrays (a power of two
 * long) that doubles when full; the caller bounds it by count and bytes. A session holds one only while it has
 * (or lately had) messages waiting: {@link DeliverySession} makes it on first use and drops it once it is empty
 * and quiet. Owned by the shard that holds the session.
 * <pre>
 *   entry: message | flags (qos 2 bits, retain) | ids | group      head ──▶ head + size
 * </pre>
 */
final class SessionQueue
{
    /** Entries of a new queue. */
    static final int INITIAL_CAPACITY = 4;

    private static final int QOS_MASK = 0x3;
    private static final int RETAIN = 0x4;

    private SharedMessage[] messages = new SharedMessage[INITIAL_CAPACITY];
    private byte[] flags = new byte[INITIAL_CAPACITY];
    private int[][] subscriptionIds = new int[INITIAL_CAPACITY][];
    private int[] groups = new int[INITIAL_CAPACITY];
    private int head;
    private int size;
    private long bytes;
    /** How many of its messages are QoS 0 ({@code --queue-qos0-messages}). */
    private int qos0;
    /** How many of its messages came through a shared subscription (a group other than 0). */
    private int grouped;

    int size()
    {
        return size;
    }

    /**
     * @return how many of its messages are QoS 0 ({@code --queue-qos0-messages}).
     */
    int qos0Count()
    {
        return qos0;
    }

    /**
     * @return how many of its messages came through a shared subscription.
     */
    int groupedCount()
    {
        return grouped;
    }

    /** Takes a QoS 0 entry out of the queue: its message (with the queue's reference), retain flag and ids. */
    interface Qos0Sink
    {
        void take(SharedMessage message, boolean retain, int[] subscriptionIds);
    }

    /**
     * Takes every QoS 0 entry out, oldest first; the others keep their order. QoS 0 needs no window slot, and the
     * order the protocol asks for is per topic and QoS [MQTT-4.6.0-6], so these need not wait behind QoS 1 and 2.
     */
    void removeQos0(final Qos0Sink sink)
    {
        int kept = 0;
        for (int i = 0; i < size; i++)
        {
            final int at = index(i);
            if ((flags[at] & QOS_MASK) == 0)
            {
                final SharedMessage message = messages[at];
                bytes -= message.length();
                qos0--;
                grouped -= 0 != groups[at] ? 1 : 0;
                sink.take(message, (flags[at] & RETAIN) != 0, subscriptionIds[at]);
            }
            else
            {
                final int to = index(kept++);
                messages[to] = messages[at];
                flags[to] = flags[at];
                subscriptionIds[to] = subscriptionIds[at];
                groups[to] = groups[at];
            }
        }
        for (int i = kept; i < size; i++)
        {
            final int at = index(i);
            messages[at] = null;
            subscriptionIds[at] = null;
        }
        size = kept;
    }

    /**
     * @return the bytes of the messages it holds.
     */
    long bytes()
    {
        return bytes;
    }

    /**
     * Adds a message at the tail (the caller has retained it).
     */
    void add(final SharedMessage message, final int qos, final boolean retain, final int[] ids, final int group)
    {
        if (size == messages.length)
        {
            grow();
        }
        final int at = (head + size) & (messages.length - 1);
        messages[at] = message;
        flags[at] = (byte)((qos & QOS_MASK) | (retain ? RETAIN : 0));
        subscriptionIds[at] = ids;
        groups[at] = group;
        size++;
        bytes += message.length();
        qos0 += qos == 0 ? 1 : 0;
        grouped += 0 != group ? 1 : 0;
    }

    /**
     * Removes the oldest message; its reference passes to the caller (who peeked at it first).
     */
    void remove()
    {
        bytes -= messages[head].length();
        qos0 -= (flags[head] & QOS_MASK) == 0 ? 1 : 0;
        grouped -= 0 != groups[head] ? 1 : 0;
        messages[head] = null;
        subscriptionIds[head] = null;
        head = (head + 1) & (messages.length - 1);
        size--;
    }

    /**
     * Removes the newest message; the caller takes its reference.
     */
    void removeNewest()
    {
        removeAt(size - 1);
    }

    /**
     * Removes the message {@code i}th from the oldest; those newer move down one place, in order. The caller takes
     * its reference.
     */
    void removeAt(final int i)
    {
        final int at = index(i);
        bytes -= messages[at].length();
        qos0 -= (flags[at] & QOS_MASK) == 0 ? 1 : 0;
        grouped -= 0 != groups[at] ? 1 : 0;
        for (int k = i + 1; k < size; k++)
        {
            final int to = index(k - 1);
            final int from = index(k);
            messages[to] = messages[from];
            flags[to] = flags[from];
            subscriptionIds[to] = subscriptionIds[from];
            groups[to] = groups[from];
        }
        final int last = index(size - 1);
        messages[last] = null;
        subscriptionIds[last] = null;
        size--;
    }

    /**
     * @return the message {@code i}th from the oldest.
     */
    SharedMessage message(final int i)
    {
        return messages[index(i)];
    }

    /**
     * Puts another copy of the same message {@code i}th from the oldest (the caller moves the references).
     */
    void replaceMessage(final int i, final SharedMessage message)
    {
        messages[index(i)] = message;
    }

    int qos(final int i)
    {
        return flags[index(i)] & QOS_MASK;
    }

    boolean retain(final int i)
    {
        return (flags[index(i)] & RETAIN) != 0;
    }

    int[] subscriptionIds(final int i)
    {
        return subscriptionIds[index(i)];
    }

    int group(final int i)
    {
        return groups[index(i)];
    }

    private int index(final int i)
    {
        return (head + i) & (messages.length - 1);
    }

    private void grow()
    {
        final int capacity = messages.length * 2;
        final SharedMessage[] newMessages = new SharedMessage[capacity];
        final byte[] newFlags = new byte[capacity];
        final int[][] newIds = new int[capacity][];
        final int[] newGroups = new int[capacity];
        for (int i = 0; i < size; i++)
        {
            final int from = index(i);
            newMessages[i] = messages[from];
            newFlags[i] = flags[from];
            newIds[i] = subscriptionIds[from];
            newGroups[i] = groups[from];
        }
        messages = newMessages;
        flags = newFlags;
        subscriptionIds = newIds;
        groups = newGroups;
        head = 0;
    }
}
