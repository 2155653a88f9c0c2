package io.ringmq.pipeline;

import io.ringmq.pipeline.session.Session;
import org.agrona.ExpandableArrayBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One slot of the ingress ring: what an I/O agent saw (a packet, or a connection that ended) and what each stage
 * decided about it. Preallocated and reused; it holds primitives, a copy of the packet bytes, and references to
 * long-lived sessions and messages. The I/O agent fills the first block, the auth stage {@link #connectCode},
 * the routing stage the rest; the delivery stage reads everything and, as the last stage, clears it.
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
    public final ExpandableArrayBuffer packet = new ExpandableArrayBuffer(256);
    public int packetLength;

    // ---- auth stage
    public int connectCode;

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
    public int grantedCount;
    public final List<Message> retained = new ArrayList<>();
    public final List<Integer> retainedQos = new ArrayList<>();

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
        connectCode = 0;
        qos = 0;
        packetId = 0;
        for (int i = 0; i < targetCount; i++)
        {
            targets[i] = null;
        }
        targetCount = 0;
        grantedCount = 0;
        if (!retained.isEmpty())
        {
            retained.clear();
            retainedQos.clear();
        }
    }
}
