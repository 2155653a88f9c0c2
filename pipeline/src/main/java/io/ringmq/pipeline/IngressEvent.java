package io.ringmq.pipeline;

import io.ringmq.pipeline.session.Session;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One slot of the ingress ring: what an I/O agent saw (a packet, or a connection that ended) and what each stage
 * decided about it. Preallocated and reused. The I/O agent writes the first block through
 * {@link #packet(int, long, int, boolean, int, DirectBuffer, int, MessageLog, long)} or
 * {@link #end(int, int, long, int)} (the one place that lays a slot out); the auth stage writes
 * {@link #authCode}, the routing stage the rest; the delivery stage reads everything and, as the last stage,
 * releases the packet's log entry and clears the slot.
 * <p>
 * The packet's bytes are inline when they fit {@link #inlineCapacity()}, else in the I/O agent's
 * {@link MessageLog}; either way {@link #packet} views them, so a slot's memory is fixed whatever clients send.
 * <p>
 * Fail closed: a slot whose stage threw is marked {@link #failed}; later stages skip it and the last one closes
 * its connection. A CONNECT is admitted only on an explicit {@link #AUTH_ACCEPTED} verdict.
 */
public final class IngressEvent
{
    /** A complete, validated packet. */
    public static final int PACKET = 1;
    /** The connection ended without DISCONNECT: socket error, protocol error, keep-alive or connect timeout. */
    public static final int CONNECTION_LOST = 2;
    /** The connection ended with DISCONNECT. */
    public static final int DISCONNECTED = 3;

    // ---- I/O agent
    public int kind;
    public int agentIndex;
    public long connectionId;
    public int version;
    public boolean loopback;
    public int packetType;
    /** A view of the packet's bytes (inline or in the message log); read-only for the stages. */
    public final UnsafeBuffer packet = new UnsafeBuffer(0, 0);
    public int packetLength;
    /** The end position of the packet's {@link MessageLog} entry, or -1 when it is inline. */
    public long logEnd = -1;
    private final UnsafeBuffer inline;

    // ---- any stage
    /** A stage threw on this slot: later stages skip it and the last one closes the connection. */
    public boolean failed;

    // ---- auth stage
    /** No verdict yet: refused, as is any value but {@link #AUTH_ACCEPTED}. */
    public static final int AUTH_UNDECIDED = -1;
    /** The CONNECT is admitted (the 3.1.1 return code 0). */
    public static final int AUTH_ACCEPTED = 0;
    /** The CONNECT verdict: {@link #AUTH_UNDECIDED}, {@link #AUTH_ACCEPTED} or a refusing CONNACK code. */
    public int authCode = AUTH_UNDECIDED;

    // ---- routing stage
    public Session session;
    public boolean sessionPresent;
    public int takeoverAgent;
    public long takeoverConnectionId = -1;
    /** PUBLISH: the message goes to {@link #targets}; false for a duplicate QoS 2 PUBLISH. */
    public boolean routed;
    public int topicOffset;
    public int topicLength;
    public int payloadOffset;
    public int payloadLength;
    public int qos;
    public int packetId;
    /** A kept copy, when some target needs one (QoS &gt; 0) or for a will; otherwise null. */
    public Message message;
    public Session[] targets = new Session[16];
    public int[] targetQos = new int[16];
    public int targetCount;
    /** SUBSCRIBE: the return code per filter, and retained messages to send. */
    public int[] grantedCodes = new int[8];
    private static final int SHRINK_ABOVE = 1024;
    public int grantedCount;
    public final List<Message> retained = new ArrayList<>();
    public final List<Integer> retainedQos = new ArrayList<>();

    /**
     * @param inlineCapacity bytes a packet may take inside the slot; larger ones go to a {@link MessageLog}.
     */
    public IngressEvent(final int inlineCapacity)
    {
        inline = new UnsafeBuffer(new byte[inlineCapacity]);
    }

    public int inlineCapacity()
    {
        return inline.capacity();
    }

    /**
     * Lays out a slot for a validated packet; the I/O agent's thread, before it publishes the slot.
     *
     * @param log      the agent's message log, for a packet larger than the inline space.
     * @param logEnd   where {@link MessageLog#append} put it, when it did (-1 otherwise).
     */
    public void packet(final int agentIndex, final long connectionId, final int version, final boolean loopback,
        final int packetType, final DirectBuffer bytes, final int length, final MessageLog log, final long logEnd)
    {
        start(IngressEvent.PACKET, agentIndex, connectionId, version);
        this.loopback = loopback;
        this.packetType = packetType;
        this.packetLength = length;
        this.logEnd = logEnd;
        if (logEnd < 0)
        {
            inline.putBytes(0, bytes, 0, length);
            packet.wrap(inline, 0, length);
        }
        else
        {
            log.wrap(packet, logEnd, length);
        }
    }

    /**
     * Lays out a slot for the end of a connection: {@link #CONNECTION_LOST} or {@link #DISCONNECTED}.
     */
    public void end(final int kind, final int agentIndex, final long connectionId, final int version)
    {
        start(kind, agentIndex, connectionId, version);
        loopback = false;
        packetType = 0;
        packetLength = 0;
        logEnd = -1;
        packet.wrap(inline, 0, 0);
    }

    private void start(final int kind, final int agentIndex, final long connectionId, final int version)
    {
        this.kind = kind;
        this.agentIndex = agentIndex;
        this.connectionId = connectionId;
        this.version = version;
        this.failed = false;
        this.authCode = AUTH_UNDECIDED;
    }

    /**
     * Adds one fan-out target.
     */
    public void addTarget(final Session session, final int qos)
    {
        if (targetCount == targets.length)
        {
            targets = Arrays.copyOf(targets, targetCount * 2);
            targetQos = Arrays.copyOf(targetQos, targetCount * 2);
        }
        targets[targetCount] = session;
        targetQos[targetCount++] = qos;
    }

    public void addGranted(final int code)
    {
        if (grantedCount == grantedCodes.length)
        {
            grantedCodes = Arrays.copyOf(grantedCodes, grantedCount * 2);
        }
        grantedCodes[grantedCount++] = code;
    }

    /**
     * Drops every reference so sessions and messages are not kept alive by the ring; the last stage calls it.
     */
    public void clear()
    {
        session = null;
        message = null;
        sessionPresent = false;
        takeoverConnectionId = -1;
        routed = false;
        qos = 0;
        packetId = 0;
        for (int i = 0; i < targetCount; i++)
        {
            targets[i] = null;
        }
        targetCount = 0;
        if (targets.length > SHRINK_ABOVE) // a burst's fan-out is not kept pinned in the ring
        {
            targets = new Session[16];
            targetQos = new int[16];
        }
        grantedCount = 0;
        if (grantedCodes.length > SHRINK_ABOVE)
        {
            grantedCodes = new int[8];
        }
        if (!retained.isEmpty())
        {
            retained.clear();
            retainedQos.clear();
        }
    }
}
