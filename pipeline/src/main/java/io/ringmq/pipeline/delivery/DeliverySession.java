package io.ringmq.pipeline.delivery;

/**
 * A delivery shard's half of one session: the connection it is bound to, packet identifiers, the outbound
 * in-flight window (parallel arrays, no object per message) and the bounded queue behind it. Owned by one shard
 * at a time; it moves, whole, to another shard when its client reconnects through another I/O agent.
 */
final class DeliverySession
{
    /** Outbound QoS states of an in-flight message. */
    static final int AWAIT_PUBACK = 1;
    static final int AWAIT_PUBREC = 2;
    static final int AWAIT_PUBCOMP = 3;

    final int id;
    final boolean persistent;
    long connectionId = -1;
    int version;
    /** The client's limits toward it (MQTT 5.0 CONNECT): Maximum Packet Size, Topic Alias Maximum. */
    int maxPacketSize = Integer.MAX_VALUE;
    /** The in-flight window: the broker's --max-inflight, or the client's smaller Receive Maximum [MQTT-3.3.4-7]. */
    private int windowLimit;
    /** Outbound topic aliases of the current connection (5.0), assigned by the broker per topic. */
    final OutboundTopicAliases aliases = new OutboundTopicAliases();
    /** Its key in the store, when it is persistent and persistence is on; else 0. */
    long persistenceKey;
    /** While moving between shards: the connection id of the CONNECT that moves it. */
    long handoverTag = -1;

    // the in-flight window, slot by slot; a free slot has no message
    private final SharedMessage[] inflightMessage;
    private final int[] inflightPacketId;
    private final byte[] inflightQos;
    private final byte[] inflightState;
    private final boolean[] inflightRetain;
    private final long[] inflightOrder;
    private final int[][] inflightSubscriptionIds;
    private final boolean[] inflightUnsent;
    private final int[] inflightGroup;
    private int unsentCount;
    private int inflightCount;
    private int nextPacketId = 1;
    private long sendOrder;

    // the queue, a growing circular buffer of parallel arrays
    private SharedMessage[] queueMessage = new SharedMessage[4];
    private byte[] queueQos = new byte[4];
    private boolean[] queueRetain = new boolean[4];
    private int[][] queueSubscriptionIds = new int[4][];
    private int[] queueGroup = new int[4];
    private int queueHead;
    private int queueSize;
    private long queuedBytes;

    /** Where its free window is published for routing's least-loaded shared subscriptions. */
    private final io.ringmq.pipeline.SessionWindows windows;

    DeliverySession(final int id, final boolean persistent, final int maxInflight,
        final io.ringmq.pipeline.SessionWindows windows)
    {
        this.id = id;
        this.windows = windows;
        this.persistent = persistent;
        inflightMessage = new SharedMessage[maxInflight];
        inflightPacketId = new int[maxInflight];
        inflightQos = new byte[maxInflight];
        inflightState = new byte[maxInflight];
        inflightRetain = new boolean[maxInflight];
        inflightOrder = new long[maxInflight];
        inflightSubscriptionIds = new int[maxInflight][];
        inflightUnsent = new boolean[maxInflight];
        inflightGroup = new int[maxInflight];
        windowLimit = maxInflight;
        windows.free(id, maxInflight);
    }

    /**
     * Applies the client's Receive Maximum of a new connection (65,535 when it sent none): the broker never has more
     * QoS 1 and 2 PUBLISHes unacknowledged toward it [MQTT-3.3.4-9]. Messages already in flight stay.
     */
    void receiveMaximum(final int receiveMaximum)
    {
        windowLimit = Math.min(inflightMessage.length, receiveMaximum);
        windows.free(id, freeWindow());
    }

    boolean isOnline()
    {
        return connectionId >= 0;
    }

    boolean canSendNow()
    {
        return isOnline() && inflightCount < windowLimit && queueSize == 0 && unsentCount == 0;
    }

    boolean hasInflightRoom()
    {
        return inflightCount < windowLimit && unsentCount == 0;
    }

    int windowLimit()
    {
        return windowLimit;
    }

    /**
     * Marks an in-flight message as not sent on the current connection (or as sent again).
     */
    void inflightUnsent(final int slot, final boolean unsent)
    {
        if (inflightUnsent[slot] != unsent)
        {
            inflightUnsent[slot] = unsent;
            unsentCount += unsent ? 1 : -1;
        }
    }

    /**
     * @return the earliest in-flight slot not yet sent on this connection, when the client's Receive Maximum has
     * room for it; -1 otherwise.
     */
    int nextUnsent()
    {
        if (unsentCount == 0 || inflightCount - unsentCount >= windowLimit)
        {
            return -1;
        }
        int earliest = -1;
        for (int slot = 0; slot < inflightMessage.length; slot++)
        {
            if (inflightUnsent[slot] && (earliest < 0 || inflightOrder[slot] < inflightOrder[earliest]))
            {
                earliest = slot;
            }
        }
        return earliest;
    }

    /**
     * @return room left in its in-flight window.
     */
    int freeWindow()
    {
        return Math.max(0, windowLimit - inflightCount);
    }

    /**
     * Takes a free packet identifier and records the message as in flight (the caller has retained it).
     *
     * @return the window slot.
     */
    int addInflight(final SharedMessage message, final int qos, final boolean retain,
        final int[] subscriptionIds, final int group)
    {
        int packetId = nextPacketId;
        while (findInflight(packetId) >= 0)
        {
            packetId = packetId == 65_535 ? 1 : packetId + 1;
        }
        nextPacketId = packetId == 65_535 ? 1 : packetId + 1;
        for (int slot = 0; slot < inflightMessage.length; slot++)
        {
            if (null == inflightMessage[slot])
            {
                inflightMessage[slot] = message;
                inflightPacketId[slot] = packetId;
                inflightQos[slot] = (byte)qos;
                inflightState[slot] = (byte)(qos == 1 ? AWAIT_PUBACK : AWAIT_PUBREC);
                inflightRetain[slot] = retain;
                inflightSubscriptionIds[slot] = subscriptionIds;
                inflightGroup[slot] = group;
                inflightOrder[slot] = ++sendOrder;
                inflightCount++;
                windows.free(id, freeWindow());
                return slot;
            }
        }
        throw new IllegalStateException("in-flight window full");
    }

    /**
     * Recovery: puts a message back in flight, with the packet id and state it had before the restart, or (0) a new
     * packet id. The window was made large enough for every restored message ({@link DeliveryShard#restoreSession}).
     *
     * @return its slot.
     */
    int restoreInflight(final SharedMessage message, final int qos, final boolean retain,
        final int[] subscriptionIds, final int packetId, final int state)
    {
        if (packetId == 0 || findInflight(packetId) >= 0)
        {
            return addInflight(message, qos, retain, subscriptionIds, 0);
        }
        final int at = nextPacketId;
        nextPacketId = packetId;
        final int slot = addInflight(message, qos, retain, subscriptionIds, 0);
        inflightState[slot] = (byte)state;
        nextPacketId = Math.max(at, packetId == 65_535 ? 1 : packetId + 1);
        return slot;
    }

    /**
     * @return the window slot of a packet identifier, or -1.
     */
    int findInflight(final int packetId)
    {
        for (int slot = 0; slot < inflightMessage.length; slot++)
        {
            if (null != inflightMessage[slot] && inflightPacketId[slot] == packetId)
            {
                return slot;
            }
        }
        return -1;
    }

    SharedMessage inflightMessage(final int slot)
    {
        return inflightMessage[slot];
    }

    int inflightPacketId(final int slot)
    {
        return inflightPacketId[slot];
    }

    int inflightQos(final int slot)
    {
        return inflightQos[slot];
    }

    int inflightState(final int slot)
    {
        return inflightState[slot];
    }

    void inflightState(final int slot, final int state)
    {
        inflightState[slot] = (byte)state;
    }

    boolean inflightRetain(final int slot)
    {
        return inflightRetain[slot];
    }

    /**
     * @return the shared subscription group it came through, 0 for none.
     */
    int inflightGroup(final int slot)
    {
        return inflightGroup[slot];
    }

    /**
     * @return the in-flight window's slots (free or not), for a walk over them.
     */
    int windowCapacity()
    {
        return inflightMessage.length;
    }

    /**
     * @return the message queued {@code i}th from the oldest.
     */
    SharedMessage queuedMessage(final int i)
    {
        return queueMessage[(queueHead + i) & (queueMessage.length - 1)];
    }

    int queuedQos(final int i)
    {
        return queueQos[(queueHead + i) & (queueMessage.length - 1)];
    }

    int queuedGroup(final int i)
    {
        return queueGroup[(queueHead + i) & (queueMessage.length - 1)];
    }

    /**
     * @return the Subscription Identifiers it goes with, or null for none.
     */
    int[] inflightSubscriptionIds(final int slot)
    {
        return inflightSubscriptionIds[slot];
    }

    /**
     * @return the message the slot held, which the caller releases.
     */
    SharedMessage removeInflight(final int slot)
    {
        final SharedMessage message = inflightMessage[slot];
        inflightMessage[slot] = null;
        inflightSubscriptionIds[slot] = null;
        inflightUnsent(slot, false);
        inflightCount--;
        windows.free(id, freeWindow());
        return message;
    }

    /**
     * @return the window's slots in the order their messages were first sent, for a resend on reconnect
     * [MQTT-4.4.0-1]; one array per reconnect.
     */
    int[] inflightInOrder()
    {
        final int[] slots = new int[inflightCount];
        int n = 0;
        for (int slot = 0; slot < inflightMessage.length; slot++)
        {
            if (null != inflightMessage[slot])
            {
                slots[n++] = slot;
            }
        }
        for (int i = 1; i < n; i++) // insertion sort by first send: a window is small, and nothing is boxed
        {
            final int slot = slots[i];
            int j = i - 1;
            while (j >= 0 && inflightOrder[slots[j]] > inflightOrder[slot])
            {
                slots[j + 1] = slots[j];
                j--;
            }
            slots[j + 1] = slot;
        }
        return slots;
    }

    int queueSize()
    {
        return queueSize;
    }

    long queuedBytes()
    {
        return queuedBytes;
    }

    /**
     * Queues a message (the caller has retained it).
     */
    void enqueue(final SharedMessage message, final int qos, final boolean retain, final int[] subscriptionIds,
        final int group)
    {
        if (queueSize == queueMessage.length)
        {
            grow();
        }
        final int at = (queueHead + queueSize) & (queueMessage.length - 1);
        queueMessage[at] = message;
        queueQos[at] = (byte)qos;
        queueRetain[at] = retain;
        queueSubscriptionIds[at] = subscriptionIds;
        queueGroup[at] = group;
        queueSize++;
        queuedBytes += message.length();
    }

    SharedMessage peekMessage()
    {
        return queueMessage[queueHead];
    }

    int peekQos()
    {
        return queueQos[queueHead];
    }

    boolean peekRetain()
    {
        return queueRetain[queueHead];
    }

    int[] peekSubscriptionIds()
    {
        return queueSubscriptionIds[queueHead];
    }

    int peekGroup()
    {
        return queueGroup[queueHead];
    }

    /**
     * Removes the oldest queued message; its reference passes to the caller.
     */
    void dequeue()
    {
        queuedBytes -= queueMessage[queueHead].length();
        queueMessage[queueHead] = null;
        queueSubscriptionIds[queueHead] = null;
        queueHead = (queueHead + 1) & (queueMessage.length - 1);
        queueSize--;
    }

    /**
     * Drops every outbound message: the session ends, or its id is reused.
     */
    void clear(final SharedMessage.Pool pool)
    {
        for (int slot = 0; slot < inflightMessage.length; slot++)
        {
            if (null != inflightMessage[slot])
            {
                pool.release(removeInflight(slot));
            }
        }
        while (queueSize > 0)
        {
            final SharedMessage message = peekMessage();
            dequeue();
            pool.release(message);
        }
    }

    private void grow()
    {
        final int capacity = queueMessage.length * 2;
        final SharedMessage[] messages = new SharedMessage[capacity];
        final byte[] qos = new byte[capacity];
        final boolean[] retain = new boolean[capacity];
        final int[][] ids = new int[capacity][];
        final int[] groups = new int[capacity];
        for (int i = 0; i < queueSize; i++)
        {
            final int from = (queueHead + i) & (queueMessage.length - 1);
            messages[i] = queueMessage[from];
            qos[i] = queueQos[from];
            retain[i] = queueRetain[from];
            ids[i] = queueSubscriptionIds[from];
            groups[i] = queueGroup[from];
        }
        queueGroup = groups;
        queueMessage = messages;
        queueQos = qos;
        queueRetain = retain;
        queueSubscriptionIds = ids;
        queueHead = 0;
    }
}
