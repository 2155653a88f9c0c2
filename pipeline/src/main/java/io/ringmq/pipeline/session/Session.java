package io.ringmq.pipeline.session;

import io.ringmq.pipeline.Message;
import org.agrona.collections.IntHashSet;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;

/**
 * One client's session. Its fields are split between two single-writer owners, as the comments say: the
 * routing stage (identity, subscriptions, will, inbound QoS 2 state) and the delivery stage (the connection it
 * is bound to, the outbound in-flight window and queue). Each event reaches delivery after routing, through the
 * ring's sequence barrier, so each owner sees the other's writes of earlier events.
 */
public final class Session
{
    /** Outbound QoS states of an in-flight message. */
    public static final int AWAIT_PUBACK = 1;
    public static final int AWAIT_PUBREC = 2;
    public static final int AWAIT_PUBCOMP = 3;
    /** No expiry timer is set. */
    public static final long NO_TIMER = -1;

    private final String clientId;
    private final boolean persistent;

    // ---- routing stage
    private final Map<String, Integer> subscriptions = new HashMap<>();
    private final IntHashSet awaitingPubrel = new IntHashSet();
    private long routingConnectionId = -1;
    private int routingAgentIndex = -1;
    private Message will;
    private int matchGeneration;
    private int matchQos;
    private long expiryTimerId = NO_TIMER;

    // ---- delivery stage
    private final Outgoing[] inflight;
    private final ArrayDeque<Outgoing> queue = new ArrayDeque<>();
    private int inflightCount;
    private long queuedBytes;
    private int nextPacketId = 1;
    private int agentIndex = -1;
    private long connectionId = -1;
    private int version;

    /**
     * @param persistent clean session 0: the session outlives its connection.
     * @param maxInflight the outbound in-flight window.
     */
    public Session(final String clientId, final boolean persistent, final int maxInflight)
    {
        this.clientId = clientId;
        this.persistent = persistent;
        this.inflight = new Outgoing[maxInflight];
    }

    public String clientId()
    {
        return clientId;
    }

    public boolean isPersistent()
    {
        return persistent;
    }

    // ---- routing stage -------------------------------------------------------------------------------------

    /**
     * @return filter to options byte; routing stage only.
     */
    public Map<String, Integer> subscriptions()
    {
        return subscriptions;
    }

    public IntHashSet awaitingPubrel()
    {
        return awaitingPubrel;
    }

    public long routingConnectionId()
    {
        return routingConnectionId;
    }

    public int routingAgentIndex()
    {
        return routingAgentIndex;
    }

    /**
     * Binds (or with -1, unbinds) the session to a connection as the routing stage sees it.
     */
    public void routingConnection(final int agentIndex, final long connectionId)
    {
        this.routingAgentIndex = agentIndex;
        this.routingConnectionId = connectionId;
    }

    public Message will()
    {
        return will;
    }

    public void will(final Message will)
    {
        this.will = will;
    }

    /**
     * Folds overlapping subscriptions into one delivery at the highest QoS [MQTT-3.3.5-1].
     *
     * @return true the first time this session matches in a given match generation.
     */
    public boolean markMatched(final int generation, final int qos)
    {
        if (matchGeneration == generation)
        {
            matchQos = Math.max(matchQos, qos);
            return false;
        }
        matchGeneration = generation;
        matchQos = qos;
        return true;
    }

    public int matchQos()
    {
        return matchQos;
    }

    /**
     * @return the routing stage's expiry timer for this offline persistent session, or {@link #NO_TIMER}.
     */
    public long expiryTimerId()
    {
        return expiryTimerId;
    }

    public void expiryTimerId(final long timerId)
    {
        this.expiryTimerId = timerId;
    }

    // ---- delivery stage ------------------------------------------------------------------------------------

    public boolean isOnline()
    {
        return connectionId >= 0;
    }

    public void bind(final int agentIndex, final long connectionId, final int version)
    {
        this.agentIndex = agentIndex;
        this.connectionId = connectionId;
        this.version = version;
    }

    public void unbind()
    {
        agentIndex = -1;
        connectionId = -1;
    }

    public int agentIndex()
    {
        return agentIndex;
    }

    public long connectionId()
    {
        return connectionId;
    }

    public int version()
    {
        return version;
    }

    public int inflightCount()
    {
        return inflightCount;
    }

    public boolean hasInflightRoom()
    {
        return inflightCount < inflight.length;
    }

    /**
     * Takes a free packet identifier and records the message as in flight.
     *
     * @return the packet identifier.
     */
    public int addInflight(final Outgoing outgoing)
    {
        int packetId = nextPacketId;
        while (null != findInflight(packetId))
        {
            packetId = packetId == 65_535 ? 1 : packetId + 1;
        }
        nextPacketId = packetId == 65_535 ? 1 : packetId + 1;
        outgoing.packetId = packetId;
        for (int i = 0; i < inflight.length; i++)
        {
            if (null == inflight[i])
            {
                inflight[i] = outgoing;
                inflightCount++;
                return packetId;
            }
        }
        throw new IllegalStateException("in-flight window full");
    }

    public Outgoing findInflight(final int packetId)
    {
        for (final Outgoing outgoing : inflight)
        {
            if (null != outgoing && outgoing.packetId == packetId)
            {
                return outgoing;
            }
        }
        return null;
    }

    public void removeInflight(final Outgoing outgoing)
    {
        for (int i = 0; i < inflight.length; i++)
        {
            if (inflight[i] == outgoing)
            {
                inflight[i] = null;
                inflightCount--;
                return;
            }
        }
    }

    /**
     * @return the in-flight messages in the order they were first sent, for a resend on reconnect.
     */
    public Outgoing[] inflightInOrder()
    {
        final Outgoing[] ordered = new Outgoing[inflightCount];
        int n = 0;
        for (final Outgoing outgoing : inflight)
        {
            if (null != outgoing)
            {
                ordered[n++] = outgoing;
            }
        }
        java.util.Arrays.sort(ordered, (a, b) -> Long.compare(a.sequence, b.sequence));
        return ordered;
    }

    /**
     * @return the queue, to look at; change it with {@link #enqueue} and {@link #dequeue}, which keep the byte count.
     */
    public ArrayDeque<Outgoing> queue()
    {
        return queue;
    }

    /**
     * @return topic and payload bytes of the queued messages.
     */
    public long queuedBytes()
    {
        return queuedBytes;
    }

    public void enqueue(final Outgoing outgoing, final int bytes)
    {
        queue.addLast(outgoing);
        queuedBytes += bytes;
    }

    /**
     * @return the oldest queued message, or null.
     */
    public Outgoing dequeue()
    {
        final Outgoing outgoing = queue.pollFirst();
        if (null != outgoing)
        {
            queuedBytes -= outgoing.message.payload().length + outgoing.message.topic().length;
        }
        return outgoing;
    }

    /**
     * Drops every outbound message: a clean session ends with its connection.
     */
    public void clearDeliveryState()
    {
        java.util.Arrays.fill(inflight, null);
        inflightCount = 0;
        queue.clear();
        queuedBytes = 0;
    }

    public String toString()
    {
        return "Session[" + clientId + (persistent ? ", persistent" : "") + "]";
    }

    /**
     * A message on its way to this session at a QoS of 1 or 2.
     */
    public static final class Outgoing
    {
        final Message message;
        final int qos;
        final boolean retain;
        final long sequence;
        int packetId;
        int state;

        public Outgoing(final Message message, final int qos, final boolean retain, final long sequence)
        {
            this.message = message;
            this.qos = qos;
            this.retain = retain;
            this.sequence = sequence;
        }

        public Message message()
        {
            return message;
        }

        public int qos()
        {
            return qos;
        }

        public boolean retain()
        {
            return retain;
        }

        public int packetId()
        {
            return packetId;
        }

        public int state()
        {
            return state;
        }

        public void state(final int state)
        {
            this.state = state;
        }
    }
}
