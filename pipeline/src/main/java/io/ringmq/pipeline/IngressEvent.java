package io.ringmq.pipeline;

import io.ringmq.protocol.SmallCopy;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * One slot of the ingress ring: what an I/O agent saw (a packet, or a connection that ended) and what each stage
 * decided about it. Preallocated and reused; it holds only primitives and views of memory the pipeline owns,
 * never a reference to a session or a message, so only ids and coordinates cross stages.
 * <pre>
 *   I/O agent   kind, agent, connection id, version, loopback, packet type, packet bytes (inline or log entry)
 *   any stage   failed
 *   auth        authCode; the ACL verdict (aclVerdict, per SUBSCRIBE filter in aclFilter(i), the rules' generation)
 *   routing     session id (new? present? which shard, moved from which), takeover, the PUBLISH's coordinates,
 *               and the position and shape of its output in the routing log (targets, return codes, discarded
 *               sessions, a will, retained messages: see {@link RouteOutput})
 * </pre>
 * The I/O agent lays a slot out through {@link #packet} or {@link #end}, the one place that writes its first
 * block, which also resets every verdict; the last stage releases the packet's and the routing output's log
 * entries. A packet's bytes are inline when they fit {@link #inlineCapacity()}, else in the I/O agent's
 * {@link MessageLog}; either way {@link #packet} views them, so a slot's memory is fixed whatever clients send.
 * <p>
 * Fail closed: a slot whose stage threw is marked {@link #failed}; later stages skip it and the delivery shard
 * of its connection closes that connection. A CONNECT is admitted only on an explicit {@link #AUTH_ACCEPTED}.
 */
public final class IngressEvent
{
    /** A complete, validated packet. */
    public static final int PACKET = 1;
    /** The connection ended without DISCONNECT: socket error, protocol error, keep-alive or connect timeout. */
    public static final int CONNECTION_LOST = 2;
    /** The connection ended with DISCONNECT. */
    public static final int DISCONNECTED = 3;
    /**
     * The routing stage's own wake-up: put on the ring by routing when a delayed will is due, so the will has a slot
     * to travel in; the stages before routing let it pass.
     */
    public static final int TICK = 4;

    /** No verdict yet: refused, as is any value but {@link #AUTH_ACCEPTED}. */
    public static final int AUTH_UNDECIDED = -1;
    /** The CONNECT is admitted (the 3.1.1 return code 0). */
    public static final int AUTH_ACCEPTED = 0;
    /**
     * Enhanced authentication goes on (MQTT 5.0 section 4.12): the client gets an AUTH 0x18 with
     * {@link #authData()}, nothing is admitted yet.
     */
    public static final int AUTH_CONTINUE = -2;
    /** The most Authentication Data the auth stage sends in one step. */
    public static final int AUTH_DATA_CAPACITY = 1024;
    /** The ACL verdict: none yet, refused as is anything but {@link #ACL_ALLOWED} (or, for a SUBSCRIBE, per filter). */
    public static final int ACL_UNDECIDED = -1;
    /** PUBLISH: it may be published; SUBSCRIBE: every filter fully readable; CONNECT: its will may be published. */
    public static final int ACL_ALLOWED = 0;
    /** PUBLISH: refused (3.1.1: acknowledged and dropped; 5.0: 0x87); CONNECT: its will is not kept. */
    public static final int ACL_DENIED = 1;
    /** SUBSCRIBE: each filter's verdict is {@link #aclFilter(int)}. */
    public static final int ACL_PER_FILTER = 2;
    /** No session, shard or log entry. */
    public static final int NONE = -1;
    /**
     * The connection id of the broker's own messages ({@code $SYS}): a PUBLISH from it is routed without a session
     * and acknowledged to nobody.
     */
    public static final long SYSTEM_CONNECTION = -2;

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
    public long logEnd = NONE;
    /** {@link System#nanoTime()} of the I/O agent's duty cycle that read the packet, for the stage latencies. */
    public long ingressNs;
    /**
     * An end: for {@link #DISCONNECTED}, the reason code of the client's DISCONNECT (0x00, or 0x04: publish my will
     * [MQTT-3.14.4-3]); for {@link #CONNECTION_LOST}, the reason the server ended it (a DISCONNECT reason code such
     * as 0x8D keep alive timeout, or 0 for a socket that closed).
     */
    public int reasonCode;
    /**
     * An end by a 5.0 DISCONNECT that carried a Session Expiry Interval: that interval in seconds, which replaces
     * the one of the CONNECT [MQTT-3.14.2-2]; {@link #NONE} when it carried none.
     */
    public long sessionExpiryInterval = NONE;
    /**
     * A PUBLISH the I/O agent validated: true when it also wrote where the topic and payload lie in {@link #packet}
     * ({@link #topicOffset}, {@link #topicLength}, {@link #payloadOffset}, {@link #payloadLength}), so no stage
     * parses the packet again; false for every other slot, where a stage that needs them finds them itself.
     */
    public boolean located;
    /**
     * A QoS 2 PUBLISH the routing stage did not take because its packet id would take the sessions past
     * {@code --max-session-memory}: acknowledged with Quota exceeded (0x97; 3.1.1 has no way to say it: PUBREC,
     * dropped), routed nowhere.
     */
    public boolean overQuota;
    private final UnsafeBuffer inline;

    // ---- any stage
    /** A stage threw on this slot: later stages skip it and the connection is closed. */
    public boolean failed;

    // ---- auth stage
    /**
     * The CONNECT verdict: {@link #AUTH_UNDECIDED}, {@link #AUTH_ACCEPTED}, {@link #AUTH_CONTINUE} or a refusing
     * CONNACK code. An AUTH that ends an enhanced authentication is turned into its CONNECT by the auth stage
     * ({@link #packet} then views the CONNECT the stage kept), so later stages see one CONNECT with one verdict.
     */
    public int authCode = AUTH_UNDECIDED;
    /** PUBLISH, SUBSCRIBE, CONNECT: the access control verdict, {@link #ACL_UNDECIDED} until the auth stage decides. */
    public int aclVerdict = ACL_UNDECIDED;
    /** The generation of the ACL rules the verdict was made under (a reload makes a new one). */
    public int aclGeneration;
    /**
     * CONNECT: the user the auth stage admitted the client as (its CONNECT's User Name, or the user an enhanced
     * authentication proved; null: anonymous). Routing takes the session's rules from it, and with
     * {@code --use-username-as-clientid} routing and the store take the client id from it ({@link ClientIds}).
     */
    public String aclUser;
    /**
     * CONNECT without a client id: the one the auth stage assigned [MQTT-3.1.3-6] (null: none), which its rules'
     * {@code %c} stands for, its session is found by and a 5.0 CONNACK announces [MQTT-3.2.2-16].
     */
    public String assignedClientId;
    /**
     * CONNECT: the client id the auth stage admitted it under (its own, its user's or an assigned one; null: not
     * admitted by the auth stage). Decoded once: routing and the store take this string ({@link ClientIds}), so a
     * connection's stages hold one copy of it.
     */
    public String clientId;
    /** SUBSCRIBE with {@link #ACL_PER_FILTER}: how many filters have a verdict in {@link #aclFilters}. */
    public int aclFilterCount;
    /** Per filter: {@link io.ringmq.pipeline.auth.ClientAcl#FULL}, PARTIAL or DENIED; made on a first need. */
    private byte[] aclFilters;
    /**
     * A CONNECT's credential verdict from a credential worker ({@link io.ringmq.pipeline.auth.Authenticator#verify}),
     * set by the I/O agent before it publishes the slot; {@link io.ringmq.pipeline.auth.CredentialRequest#NO_VERDICT}
     * when none was asked for. Reset with every slot: a verdict never outlives its CONNECT.
     */
    public long credentialVerdict = io.ringmq.pipeline.auth.CredentialRequest.NO_VERDICT;
    /**
     * A CONNECT or a SUBSCRIBE: what its client's address counts as ({@link io.ringmq.pipeline.auth.AddressKeys}) for
     * the share of the kept CONNECTs one address may hold (enhanced authentication), of the message memory its
     * connected sessions may hold, or of the retained walks its sessions may take, set by the I/O agent;
     * {@link io.ringmq.pipeline.auth.AddressKeys#NONE} when its address is not limited (loopback without
     * {@code --limit-loopback}) or not known.
     */
    public long addressKey = io.ringmq.pipeline.auth.AddressKeys.NONE;
    /**
     * A CONNECT of one of the broker's own bridges, from its loopback listener (only the I/O agent sets it): admitted
     * as {@link AccessRules#BRIDGE_USER}, which no other connection may be.
     */
    public boolean bridge;
    /**
     * CONNECT: the highest QoS its connection may use, as its listener allows (its CONNACK's Maximum QoS, its
     * subscriptions' cap); the stages cap it with {@code --max-qos} besides.
     */
    public int maxQos = 2;
    /** CONNECT: its listener's mount point in UTF-8 (null: none): the delivery stage takes it off every topic sent. */
    public byte[] mountPoint;
    /** Enhanced authentication: the server's Authentication Data for the AUTH or CONNACK, its length (or -1). */
    private UnsafeBuffer authData;
    public int authDataLength = NONE;

    // ---- routing stage
    /**
     * With {@code --route-shards} above 1: the routing shard that routes this slot and writes its output (0 for
     * everything but a PUBLISH whose topic hashes to another shard), its routing log's index. Written by shard 0
     * before any other shard reads the slot; kept by {@link #resetRouting()}.
     */
    public int routeShard;
    /** The wall time shard 0 judged the slot by: the other shards replay its session changes at the same time. */
    public long routeTimeMs;
    /** The limits shard 0 judged the slot by (the number of reloads it has taken), for the other shards. */
    public int routeEpoch;
    /** The session of the connection, or {@link #NONE} (refused, unknown, already ended). */
    public int sessionId = NONE;
    /** CONNECT: the session is new, so its shard starts its delivery half afresh. */
    public boolean sessionNew;
    /** CONNECT: the session was resumed [MQTT-3.2.2-2]. */
    public boolean sessionPresent;
    /** CONNECT: the shard that held the session's delivery half until now, when it is another; or NONE. */
    public int movedFromShard = NONE;
    /** CONNECT: the agent and connection of a taken-over connection, or NONE, and its protocol version. */
    public int takeoverAgent = NONE;
    public long takeoverConnectionId = NONE;
    public int takeoverVersion;
    /** PUBLISH, or the will of a lost or taken-over connection: the message goes to the targets. */
    public boolean routed;
    /**
     * PUBLISH: its QoS and packet id, and its topic and payload within {@link #packet} (the topic and payload
     * written by the I/O agent when {@link #located}, else by the routing stage; kept by {@link #resetRouting()}).
     */
    public int qos;
    public int packetId;
    public int topicOffset;
    public int topicLength;
    public int payloadOffset;
    public int payloadLength;
    /** PUBLISH: its RETAIN flag, and its MQTT 5.0 properties within {@link #packet} (without the length prefix). */
    public boolean retain;
    public int propertiesOffset;
    public int propertiesLength;
    /** A retained PUBLISH or will: the retained store took it (stored, replaced or cleared), not refused at a limit. */
    public boolean retainKept;
    /** A retained PUBLISH or will the store took: who published it, as the routing stage keeps it (null: none). */
    public MessageSource retainedSource;
    /** SUBSCRIBE: its Subscription Identifier, sent with the retained messages it brings (0: none). */
    public int subscriptionId;
    /** CONNECT: the length of the client identifier the broker assigned, in the routing output; 0 for none. */
    public int assignedClientIdLength;
    /** Ints of the routing output's subscription identifier lists. */
    public int idsCount;
    // ---- persistence stage
    /** CONNECT: the stored key of a persistent session (0: a clean session, or persistence is off). */
    public long sessionKey;
    /**
     * A routed QoS 1 or 2 message stored for persistent targets: its number, the key of its records with each
     * target's session key (0: stored for none).
     */
    public long messageNumber;
    /** The routing output's log entry ({@link RouteOutput}), or NONE when there is none. */
    public long routeLogEnd = NONE;
    public int routeLogLength;
    public int targetCount;
    public int grantedCount;
    public int discardedCount;
    /** Offset of the message (a will) in the routing output, or NONE: the PUBLISH in {@link #packet} is it. */
    public int messageOffset = NONE;
    public int retainedCount;
    public int retainedOffset;
    /**
     * A TICK's part of a SUBSCRIBE's retained messages: the {@link RetainedDrains} slot its connection's agent writes
     * what it owes to, or {@link RetainedDrains#NONE}.
     */
    public int drainSlot = RetainedDrains.NONE;
    /** Offset of the group keys of its shared subscription targets in the routing output ({@link RouteOutput}). */
    public int groupKeysOffset;

    /**
     * @return the slot's Authentication Data buffer, made on its first enhanced authentication: a slot stays small
     * (the stages walk the ring, so its memory is their cache's), whatever few clients use the method.
     */
    public UnsafeBuffer authData()
    {
        if (null == authData)
        {
            authData = new UnsafeBuffer(new byte[AUTH_DATA_CAPACITY]);
        }
        return authData;
    }

    /**
     * @return room for {@code count} per-filter ACL verdicts: the slot's, grown to the largest SUBSCRIBE it carried.
     */
    public byte[] aclFilters(final int count)
    {
        if (null == aclFilters || aclFilters.length < count)
        {
            aclFilters = new byte[Math.max(count, 16)];
        }
        return aclFilters;
    }

    /**
     * @return the ACL verdict of a SUBSCRIBE's filter {@code i}: a ClientAcl class; DENIED when none was made.
     */
    public int aclFilter(final int i)
    {
        if (aclVerdict == ACL_ALLOWED)
        {
            return io.ringmq.pipeline.auth.ClientAcl.FULL;
        }
        return aclVerdict == ACL_PER_FILTER && i < aclFilterCount ? aclFilters[i] :
            io.ringmq.pipeline.auth.ClientAcl.DENIED; // fail closed
    }

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
     * @param log    the agent's message log, for a packet larger than the inline space.
     * @param logEnd where {@link MessageLog#append} put it, when it did (-1 otherwise).
     */
    public void packet(final int agentIndex, final long connectionId, final int version, final boolean loopback,
        final int packetType, final DirectBuffer bytes, final int length, final MessageLog log, final long logEnd)
    {
        start(IngressEvent.PACKET, agentIndex, connectionId, version);
        reasonCode = 0;
        sessionExpiryInterval = NONE;
        this.loopback = loopback;
        this.packetType = packetType;
        this.packetLength = length;
        this.logEnd = logEnd;
        if (logEnd < 0)
        {
            SmallCopy.copy(inline, 0, bytes, 0, length);
            packet.wrap(inline, 0, length);
        }
        else
        {
            log.wrap(packet, logEnd, length);
        }
    }

    /**
     * Notes where a validated PUBLISH's topic and payload lie in {@link #packet} (after {@link #packet}, before the
     * slot is published): its fixed header, packet identifier and properties lie around them.
     */
    public void located(final int topicOffset, final int topicLength, final int payloadOffset,
        final int payloadLength)
    {
        this.topicOffset = topicOffset;
        this.topicLength = topicLength;
        this.payloadOffset = payloadOffset;
        this.payloadLength = payloadLength;
        located = true;
    }

    /**
     * Lays out a slot for the end of a connection: {@link #CONNECTION_LOST} or {@link #DISCONNECTED}.
     */
    public void end(final int kind, final int agentIndex, final long connectionId, final int version)
    {
        end(kind, agentIndex, connectionId, version, 0, NONE);
    }

    /**
     * Lays out a slot for the end of a connection, with its reason and, for a 5.0 DISCONNECT, its session expiry
     * interval ({@link #NONE} when absent).
     */
    public void end(final int kind, final int agentIndex, final long connectionId, final int version,
        final int reasonCode, final long sessionExpiryInterval)
    {
        start(kind, agentIndex, connectionId, version);
        this.reasonCode = reasonCode;
        this.sessionExpiryInterval = sessionExpiryInterval;
        loopback = false;
        packetType = 0;
        packetLength = 0;
        logEnd = NONE;
        packet.wrap(inline, 0, 0);
    }

    private void start(final int kind, final int agentIndex, final long connectionId, final int version)
    {
        this.kind = kind;
        this.agentIndex = agentIndex;
        this.connectionId = connectionId;
        this.version = version;
        failed = false;
        located = false;
        authCode = AUTH_UNDECIDED;
        credentialVerdict = io.ringmq.pipeline.auth.CredentialRequest.NO_VERDICT; // fail closed on slot reuse
        addressKey = io.ringmq.pipeline.auth.AddressKeys.NONE;
        bridge = false;
        authDataLength = NONE;
        aclVerdict = ACL_UNDECIDED;
        aclGeneration = 0;
        aclFilterCount = 0;
        aclUser = null;
        assignedClientId = null;
        clientId = null;
        routeShard = 0;
        routeTimeMs = 0;
        routeEpoch = 0;
        resetRouting();
    }

    /**
     * Copies what the I/O agent, the auth stage and routing shard 0 wrote into {@code copy}, whose routing verdict
     * starts empty: a routing shard replays a slot another shard routes on its own copy, never writing the slot.
     * The packet is shared, not copied (no stage writes it).
     */
    void copyInputsTo(final IngressEvent copy)
    {
        copy.kind = kind;
        copy.agentIndex = agentIndex;
        copy.connectionId = connectionId;
        copy.version = version;
        copy.loopback = loopback;
        copy.packetType = packetType;
        copy.packet.wrap(packet, 0, packetLength);
        copy.packetLength = packetLength;
        copy.logEnd = logEnd;
        copy.ingressNs = ingressNs;
        copy.reasonCode = reasonCode;
        copy.sessionExpiryInterval = sessionExpiryInterval;
        copy.located = located;
        if (located)
        {
            // the I/O agent's, never written by a stage (shard 0 writes them only where it was not located)
            copy.topicOffset = topicOffset;
            copy.topicLength = topicLength;
            copy.payloadOffset = payloadOffset;
            copy.payloadLength = payloadLength;
        }
        copy.failed = failed;
        copy.authCode = authCode;
        copy.aclVerdict = aclVerdict;
        copy.aclGeneration = aclGeneration;
        copy.aclUser = aclUser;
        copy.assignedClientId = assignedClientId;
        copy.clientId = clientId;
        copy.aclFilterCount = aclFilterCount;
        if (aclFilterCount > 0)
        {
            System.arraycopy(aclFilters, 0, copy.aclFilters(aclFilterCount), 0, aclFilterCount);
        }
        copy.credentialVerdict = credentialVerdict;
        copy.bridge = bridge;
        copy.addressKey = addressKey; // a SUBSCRIBE's, for the retained walks of every routing shard
        copy.maxQos = maxQos;
        copy.mountPoint = mountPoint;
        copy.authDataLength = NONE;
        copy.routeShard = routeShard;
        copy.routeTimeMs = routeTimeMs;
        copy.routeEpoch = routeEpoch;
        copy.resetRouting();
    }

    /**
     * @return whether the routing stage's verdict is as {@link #resetRouting} leaves it (for assertions).
     */
    boolean routingCleared()
    {
        return sessionId == NONE && !sessionNew && !sessionPresent && movedFromShard == NONE &&
            takeoverAgent == NONE && takeoverConnectionId == NONE && takeoverVersion == 0 && !routed && !overQuota &&
            qos == 0 && packetId == 0 && !retain && !retainKept && null == retainedSource && propertiesOffset == 0 &&
            propertiesLength == 0 && subscriptionId == 0 && assignedClientIdLength == 0 && idsCount == 0 &&
            sessionKey == 0 && messageNumber == 0 && routeLogEnd == NONE && routeLogLength == 0 && targetCount == 0 &&
            grantedCount == 0 && discardedCount == 0 && messageOffset == NONE && retainedCount == 0 &&
            retainedOffset == 0 && groupKeysOffset == 0 && drainSlot == RetainedDrains.NONE;
    }

    /**
     * Clears the routing stage's verdict: nothing of an earlier use of the slot survives.
     */
    void resetRouting()
    {
        sessionId = NONE;
        sessionNew = false;
        sessionPresent = false;
        movedFromShard = NONE;
        takeoverAgent = NONE;
        takeoverConnectionId = NONE;
        takeoverVersion = 0;
        routed = false;
        overQuota = false;
        qos = 0;
        packetId = 0;
        retain = false;
        retainKept = false;
        retainedSource = null;
        propertiesOffset = 0;
        propertiesLength = 0;
        subscriptionId = 0;
        assignedClientIdLength = 0;
        idsCount = 0;
        sessionKey = 0;
        messageNumber = 0;
        routeLogEnd = NONE;
        routeLogLength = 0;
        targetCount = 0;
        grantedCount = 0;
        discardedCount = 0;
        messageOffset = NONE;
        retainedCount = 0;
        retainedOffset = 0;
        groupKeysOffset = 0;
        drainSlot = RetainedDrains.NONE;
    }
}
