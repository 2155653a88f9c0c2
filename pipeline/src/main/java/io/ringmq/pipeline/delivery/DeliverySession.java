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
    /** While moving between shards: the connection id of the CONNECT that moves it. */
    long handoverTag = -1;

    // the in-flight window, slot by slot; a free slot has no message
    private final SharedMessage[] inflightMessage;
    private final int[] inflightPacketId;
    private final byte[] inflightQos;
    private final byte[] inflightState;
    private final boolean[] inflightRetain;
    private final long[] inflightOrder;
    private int inflightCount;
    private int nextPacketId = 1;
    private long sendOrder;

    // the queue, a growing circular buffer of parallel arrays
    private SharedMessage[] queueMessage = new SharedMessage[4];
    private byte[] queueQos = new byte[4];
    private boolean[] queueRetain = new boolean[4];
    private int queueHead;
    private int queueSize;
    private long queuedBytes;

    DeliverySession(final int id, final boolean persistent, final int maxInflight)
    {
        this.id = id;
        this.persistent = persistent;
        inflightMessage = new SharedMessage[maxInflight];
        inflightPacketId = new int[maxInflight];
        inflightQos = new byte[maxInflight];
        inflightState = new byte[maxInflight];
        inflightRetain = new boolean[maxInflight];
        inflightOrder = new long[maxInflight];
    }

    boolean isOnline()
    {
        return connectionId >= 0;
    }

    boolean canSendNow()
    {
        return isOnline() && inflightCount < inflightMessage.length && queueSize == 0;
    }

    boolean hasInflightRoom()
    {
        return inflightCount < inflightMessage.length;
    }

    /**
     * Takes a free packet identifier and records the message as in flight (the caller has retained it).
     *
     * @return the window slot.
     */
    int addInflight(final SharedMessage message, final int qos, final boolean retain)
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
                inflightOrder[slot] = ++sendOrder;
                inflightCount++;
                return slot;
            }
        }
        throw new IllegalStateException("in-flight window full");
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
     * @return the message the slot held, which the caller releases.
     */
    SharedMessage removeInflight(final int slot)
    {
        final SharedMessage message = inflightMessage[slot];
        inflightMessage[slot] = null;
        inflightCount--;
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
    void enqueue(final SharedMessage message, final int qos, final boolean retain)
    {
        if (queueSize == queueMessage.length)
        {
            grow();
        }
        final int at = (queueHead + queueSize) & (queueMessage.length - 1);
        queueMessage[at] = message;
        queueQos[at] = (byte)qos;
        queueRetain[at] = retain;
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

    /**
     * Removes the oldest queued message; its reference passes to the caller.
     */
    void dequeue()
    {
        queuedBytes -= queueMessage[queueHead].length();
        queueMessage[queueHead] = null;
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
        for (int i = 0; i < queueSize; i++)
        {
            final int from = (queueHead + i) & (queueMessage.length - 1);
            messages[i] = queueMessage[from];
            qos[i] = queueQos[from];
            retain[i] = queueRetain[from];
        }
        queueMessage = messages;
        queueQos = qos;
        queueRetain = retain;
        queueHead = 0;
    }
}
