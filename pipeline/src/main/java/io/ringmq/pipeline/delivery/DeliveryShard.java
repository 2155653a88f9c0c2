package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.pipeline.Stage;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnackEncoder;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.DisconnectEncoder;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubackEncoder;
import io.ringmq.pipeline.Message;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.LongHashSet;

import java.util.Arrays;

/**
 * A delivery shard, one per I/O agent (its {@link #index}): owns the delivery half of the sessions whose
 * clients that agent serves ({@link DeliverySession}: binding, packet ids, in-flight window, queue) and writes
 * only to that agent's outbound ring. Every shard sees every event, after routing, and acts only on its part:
 * replies to packets its agent read, fan-out targets routing placed in this shard, sessions moving in or out.
 * <p>
 * A PUBLISH is encoded once per (protocol version, QoS, RETAIN) variant per event and shared by every subscriber
 * of the shard that needs nothing of its own; only the packet identifier is patched per subscriber
 * ({@link PublishWriter}). QoS 1 and 2 messages are copied once per event
 * into a pooled {@link SharedMessage} held by reference. It never parks its thread: what the full outbound ring
 * cannot take now waits in order in an {@link OutboundBacklog}, QoS 0 for that agent is dropped meanwhile.
 */
public final class DeliveryShard implements Stage
{
    private final int index;
    private final Outbound outbound;
    private final BrokerCounters counters;
    private final MessageLog routeLog;
    private final ShardHandover handover;
    private final int maxInflight;
    private final int maxQueued;
    private final long maxQueuedBytes;
    private final OutboundBacklog backlog;
    private final SharedMessage.Pool pool = new SharedMessage.Pool(1_024);
    private final RouteOutput route = new RouteOutput();
    /** Sessions handed over by other shards, by the connection id of the CONNECT that moved them. */
    private final Long2ObjectHashMap<DeliverySession> arrived = new Long2ObjectHashMap<>();
    /** Moves into this shard whose CONNECT failed here before the session arrived: connection id to session id. */
    private final Long2LongHashMap orphans = new Long2LongHashMap(-1);
    /** Hand-overs to drop on arrival: their session ended while they were on their way. */
    private final LongHashSet stale = new LongHashSet();
    private final ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(4096);
    private final PublishWriter writer = new PublishWriter();
    private final AckFlyweight ack = new AckFlyweight();
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final io.ringmq.protocol.AuthFlyweight auth = new io.ringmq.protocol.AuthFlyweight();
    private final MqttProperties connackProperties = new MqttProperties();
    private final BrokerContext context;
    private final io.ringmq.pipeline.SessionWindows windows;
    private final io.ringmq.pipeline.SharedRedispatch redispatch;
    /** One-identifier arrays, shared by the messages they go with (bounded: past it, a message gets its own). */
    private final Int2ObjectHashMap<int[]> singleIds = new Int2ObjectHashMap<>();
    private int[] targetIds = new int[4];
    private long nowMs;
    private final int[] noCodes = new int[0];
    private int[] codes = new int[16];
    private DeliverySession[] sessions = new DeliverySession[1024];
    private long lastHandedOver = IngressEvent.NONE;
    private SharedMessage eventMessage;

    /**
     * @param index    the shard's number, that of the I/O agent it serves.
     * @param routeLog the routing stage's output log, read here.
     */
    public DeliveryShard(final int index, final BrokerContext context, final Outbound outbound,
        final BrokerCounters counters, final MessageLog routeLog, final ShardHandover handover)
    {
        this(index, context, outbound, counters, routeLog, handover, new io.ringmq.pipeline.SessionWindows(1),
            new io.ringmq.pipeline.SharedRedispatch());
    }

    /**
     * @param windows    where its sessions' free in-flight room is published for the routing stage.
     * @param redispatch where a shared subscriber's unacknowledged messages go back when its session ends.
     */
    public DeliveryShard(final int index, final BrokerContext context, final Outbound outbound,
        final BrokerCounters counters, final MessageLog routeLog, final ShardHandover handover,
        final io.ringmq.pipeline.SessionWindows windows, final io.ringmq.pipeline.SharedRedispatch redispatch)
    {
        this.redispatch = redispatch;
        this.windows = windows;
        this.index = index;
        this.context = context;
        this.outbound = outbound;
        this.counters = counters;
        this.routeLog = routeLog;
        this.handover = handover;
        this.maxInflight = context.maxInflight();
        this.maxQueued = context.maxQueued();
        this.maxQueuedBytes = context.maxQueuedBytes();
        this.backlog = new OutboundBacklog(index + 1);
    }

    public boolean onEvent(final IngressEvent event)
    {
        final boolean mine = event.agentIndex == index;
        if (mine && event.packetType == PacketType.CONNECT && event.kind == IngressEvent.PACKET &&
            event.movedFromShard != IngressEvent.NONE && event.movedFromShard != index &&
            event.sessionId != IngressEvent.NONE && !arrived(event.connectionId))
        {
            return false; // the session's delivery half is still on its way from the shard that held it
        }
        route.wrap(routeLog, event);
        nowMs = System.currentTimeMillis();
        for (int i = 0; i < event.discardedCount; i++)
        {
            forget(route.discarded(i));
        }
        if (event.kind == IngressEvent.TICK)
        {
            // the routing stage's wake-up: only its will, if any, is for the shards
        }
        else if (mine && event.packetType == PacketType.AUTH)
        {
            onAuth(event);
        }
        else if (event.kind == IngressEvent.PACKET)
        {
            if (event.packetType == PacketType.CONNECT)
            {
                onConnect(event, mine);
            }
            else if (mine && event.sessionId != IngressEvent.NONE)
            {
                onPacket(event);
            }
        }
        else if (mine)
        {
            onConnectionEnd(event);
        }
        if (event.routed && event.targetCount > 0)
        {
            fanOut(event);
        }
        return true;
    }

    /**
     * A stage failed on this slot: its connection is closed (a CONNECT refused first, never admitted), and an
     * end still unbinds the session.
     */
    public void onFailed(final IngressEvent event)
    {
        if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.CONNECT)
        {
            if (event.takeoverAgent == index)
            {
                close(event.takeoverConnectionId); // routing let go of it: it must not live on unanswered
            }
            if (event.movedFromShard == index)
            {
                handOver(event, session(event.sessionId)); // whatever failed, the new shard must not wait forever
            }
            else if (event.movedFromShard != IngressEvent.NONE && event.agentIndex == index)
            {
                adoptWhenArrived(event.connectionId, event.sessionId); // the move happened; its CONNECT did not
            }
        }
        if (event.routeLogEnd >= 0)
        {
            route.wrap(routeLog, event);
            for (int i = 0; i < event.discardedCount; i++)
            {
                forget(route.discarded(i)); // routing reused nothing yet: these ids must still be forgotten here
            }
        }
        if (event.agentIndex != index)
        {
            return;
        }
        if (event.kind == IngressEvent.PACKET)
        {
            if (event.packetType == PacketType.CONNECT)
            {
                final int length = ConnackEncoder.encode(scratch, 0, event.version, false,
                    event.version == MqttVersion.V5 ? ReasonCode.SERVER_UNAVAILABLE : ReasonCode.V3_SERVER_UNAVAILABLE,
                    null);
                send(event.connectionId, scratch, length, false);
            }
            disconnect(event.connectionId, event.version, ReasonCode.UNSPECIFIED_ERROR);
            close(event.connectionId);
        }
        else
        {
            onConnectionEnd(event);
        }
    }

    public void onBatchEnd()
    {
        outbound.endOfBatch();
    }

    public int doDutyCycle()
    {
        if (!orphans.isEmpty())
        {
            drainHandovers();
        }
        if (backlog.isEmpty())
        {
            return 0;
        }
        final int work = backlog.drain(outbound);
        if (work > 0)
        {
            outbound.endOfBatch();
        }
        return work;
    }

    /**
     * Gives a session's delivery half to the shard of its client's new connection, which waits for it on the same
     * CONNECT; an empty one when this shard has none, so that shard never waits forever.
     */
    private void handOver(final IngressEvent event, final DeliverySession current)
    {
        if (event.connectionId == lastHandedOver)
        {
            return; // done already, before this shard failed on the same CONNECT
        }
        lastHandedOver = event.connectionId;
        final DeliverySession moving = null != current ? current :
            new DeliverySession(event.sessionId, true, maxInflight, windows);
        if (null != current)
        {
            sessions[event.sessionId] = null;
        }
        moving.connectionId = -1;
        moving.handoverTag = event.connectionId;
        counters.increment(BrokerCounters.SESSIONS_MOVED);
        handover.send(event.agentIndex, moving); // the new shard sees this CONNECT too and takes it there
    }

    /**
     * @return whether the session moved by the CONNECT of this connection has arrived from its old shard.
     */
    private boolean arrived(final long connectionId)
    {
        drainHandovers();
        return arrived.containsKey(connectionId);
    }

    private void drainHandovers()
    {
        DeliverySession session;
        while (null != (session = handover.poll(index)))
        {
            final long tag = session.handoverTag;
            final long orphanOf = orphans.remove(tag);
            if (orphanOf != orphans.missingValue())
            {
                adopt(session);
            }
            else if (!stale.remove(tag))
            {
                arrived.put(tag, session); // its CONNECT is still to come here: it waits in arrived
            }
        }
    }

    /**
     * A move into this shard whose CONNECT failed here: keep the session (offline) when it arrives.
     */
    private void adoptWhenArrived(final long connectionId, final int sessionId)
    {
        drainHandovers();
        final DeliverySession session = arrived.remove(connectionId);
        if (null != session)
        {
            adopt(session);
        }
        else
        {
            orphans.put(connectionId, sessionId);
        }
    }

    private void adopt(final DeliverySession session)
    {
        if (null == session(session.id))
        {
            ensureCapacity(session.id);
            sessions[session.id] = session;
        }
    }

    private void onConnect(final IngressEvent event, final boolean mine)
    {
        final DeliverySession current = event.sessionId != IngressEvent.NONE ? session(event.sessionId) : null;
        if (event.takeoverAgent == index)
        {
            if (null != current && current.connectionId == event.takeoverConnectionId)
            {
                current.connectionId = -1;
            }
            // whether the session is resumed here or discarded by a clean start, the old 5.0 connection hears why
            disconnect(event.takeoverConnectionId, event.takeoverVersion, ReasonCode.SESSION_TAKEN_OVER);
            close(event.takeoverConnectionId); // [MQTT-3.1.4-2]
        }
        if (event.movedFromShard == index)
        {
            handOver(event, current);
        }
        if (!mine)
        {
            return;
        }
        final boolean v5 = event.version == MqttVersion.V5;
        if (event.authCode == IngressEvent.AUTH_CONTINUE && v5 && connect.wrap(event.packet, 0, event.packetLength) > 0)
        {
            // enhanced authentication goes on: AUTH 0x18 with the method and the server's data [MQTT-4.12.0-2]
            sendAuth(event, ReasonCode.CONTINUE_AUTHENTICATION, connect.properties());
            return;
        }
        if (event.authCode != IngressEvent.AUTH_ACCEPTED || event.sessionId == IngressEvent.NONE ||
            connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            int code = event.authCode > 0 ? event.authCode : v5 ? ReasonCode.SERVER_UNAVAILABLE :
                ReasonCode.V3_SERVER_UNAVAILABLE; // fail closed
            if (event.authCode == IngressEvent.AUTH_ACCEPTED && v5)
            {
                code = ReasonCode.QUOTA_EXCEEDED; // admitted, but no session: --max-sessions
            }
            final int length = ConnackEncoder.encode(scratch, 0, event.version, false, code, null);
            send(event.connectionId, scratch, length, false);
            close(event.connectionId); // [MQTT-3.2.2-5]
            return;
        }
        DeliverySession session = event.movedFromShard != IngressEvent.NONE && event.movedFromShard != index ?
            arrived.remove(event.connectionId) : session(event.sessionId);
        if (event.sessionNew || null == session)
        {
            forget(event.sessionId);
            session = new DeliverySession(event.sessionId, context.sessionExpiryFor(connect) > 0, maxInflight,
                windows);
        }
        ensureCapacity(event.sessionId);
        sessions[event.sessionId] = session;
        session.connectionId = event.connectionId;
        session.version = event.version;
        if (!v5)
        {
            session.receiveMaximum(65_535); // a 3.1.1 client: no limits of an earlier 5.0 connection hold
            session.maxPacketSize = Integer.MAX_VALUE;
            session.aliases.reset(0);
        }
        final MqttProperties properties = v5 ? connackProperties(session, event) : null;
        final int length = ConnackEncoder.encode(scratch(ConnackEncoder.encodedLength(event.version, properties)), 0,
            event.version, event.sessionPresent, 0, properties);
        send(event.connectionId, scratch, length, false);
        if (event.sessionPresent)
        {
            // resend what was in flight, in order, with DUP [MQTT-4.4.0-1]; past the client's Receive Maximum the
            // rest waits, unsent, until acknowledgements make room [MQTT-3.3.4-9]
            int sent = 0;
            for (final int slot : session.inflightInOrder())
            {
                if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
                {
                    sendAck(event.connectionId, PacketType.PUBREL, session.inflightPacketId(slot));
                }
                else if (sent < session.windowLimit())
                {
                    sent++;
                    session.inflightUnsent(slot, false);
                    if (!sendPublish(session, slot, true))
                    {
                        pool.release(session.removeInflight(slot)); // too large for this client now
                    }
                }
                else
                {
                    session.inflightUnsent(slot, true);
                }
            }
        }
        drainQueue(session);
    }

    /**
     * Takes the client's limits of a 5.0 CONNECT (Receive Maximum, Maximum Packet Size, Topic Alias Maximum) and
     * writes the CONNACK's properties: what the broker allows and assigned, where it differs from the defaults.
     */
    private MqttProperties connackProperties(final DeliverySession session, final IngressEvent event)
    {
        final MqttProperties requested = connect.properties();
        session.receiveMaximum(requested.intValue(PropertyId.RECEIVE_MAXIMUM, 65_535));
        session.maxPacketSize = (int)Math.min(Integer.MAX_VALUE,
            requested.longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE));
        session.aliases.reset(requested.intValue(PropertyId.TOPIC_ALIAS_MAXIMUM, 0));

        final MqttProperties properties = connackProperties.clear();
        final long asked = requested.longValue(PropertyId.SESSION_EXPIRY_INTERVAL, 0);
        final long applied = context.sessionExpiryFor(asked);
        if (applied != asked)
        {
            properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, (int)applied); // (5.0 section 3.2.2.3.2)
        }
        final String assigned = route.assignedClientId();
        if (null != assigned)
        {
            properties.set(PropertyId.ASSIGNED_CLIENT_IDENTIFIER, assigned); // [MQTT-3.2.2-16]
        }
        final int keepAlive = context.keepAliveFor(connect.keepAlive());
        if (keepAlive != connect.keepAlive())
        {
            properties.setInt(PropertyId.SERVER_KEEP_ALIVE, keepAlive); // [MQTT-3.2.2-21]
        }
        if (context.receiveMaximum() < 65_535)
        {
            properties.setInt(PropertyId.RECEIVE_MAXIMUM, context.receiveMaximum());
        }
        if (context.topicAliasMaximum() > 0)
        {
            properties.setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, context.topicAliasMaximum());
        }
        properties.setInt(PropertyId.MAXIMUM_PACKET_SIZE, context.maxPacketSize());
        return authProperties(properties, event, requested);
    }

    /**
     * An AUTH after CONNECT (a re-authentication, or one out of place): the next step (AUTH 0x18), its success
     * (AUTH 0x00), or its refusal: DISCONNECT with the reason, and the connection closes [MQTT-4.12.1-2].
     */
    private void onAuth(final IngressEvent event)
    {
        if (event.authCode >= ReasonCode.UNSPECIFIED_ERROR || auth.wrap(event.packet, 0, event.packetLength,
            event.version) < 0)
        {
            final int code = Math.max(event.authCode, ReasonCode.UNSPECIFIED_ERROR);
            // a refusal DISCONNECT cannot carry (0x86 is a CONNACK's) is said as Not authorized
            disconnect(event.connectionId, event.version,
                ReasonCode.isAllowed(PacketType.DISCONNECT, MqttVersion.V5, code) ? code : ReasonCode.NOT_AUTHORIZED);
            close(event.connectionId);
            return;
        }
        sendAuth(event, event.authCode == IngressEvent.AUTH_CONTINUE ? ReasonCode.CONTINUE_AUTHENTICATION :
            ReasonCode.SUCCESS, auth.properties());
    }

    /**
     * Sends an AUTH with the method the client named (in {@code requested}) and the server's data.
     */
    private void sendAuth(final IngressEvent event, final int reasonCode, final MqttProperties requested)
    {
        final MqttProperties properties = authProperties(connackProperties.clear(), event, requested);
        final int length = DisconnectEncoder.encode(scratch(DisconnectEncoder.encodedLength(PacketType.AUTH,
            MqttVersion.V5, reasonCode, properties)), 0, PacketType.AUTH, MqttVersion.V5, reasonCode, properties);
        send(event.connectionId, scratch, length, false);
    }

    /**
     * Adds the Authentication Method of an enhanced authentication and the server's data of its last step
     * [MQTT-4.12.0-5].
     */
    private MqttProperties authProperties(final MqttProperties properties, final IngressEvent event,
        final MqttProperties requested)
    {
        if (requested.has(PropertyId.AUTHENTICATION_METHOD))
        {
            final io.ringmq.protocol.Slice method = requested.slice(PropertyId.AUTHENTICATION_METHOD);
            properties.set(PropertyId.AUTHENTICATION_METHOD, method.buffer(), method.offset(), method.length());
            if (event.authDataLength > 0)
            {
                properties.set(PropertyId.AUTHENTICATION_DATA, event.authData, 0, event.authDataLength);
            }
        }
        return properties;
    }

    private void onPacket(final IngressEvent event)
    {
        switch (event.packetType)
        {
            case PacketType.PUBLISH:
                if (event.qos > 0 && event.packetId != 0)
                {
                    // 5.0: a message no subscription matched is acknowledged as such (0x10)
                    final int reason = event.version == MqttVersion.V5 && event.routed && event.targetCount == 0 ?
                        ReasonCode.NO_MATCHING_SUBSCRIBERS : ReasonCode.SUCCESS;
                    final int length = AckEncoder.encode(scratch, 0,
                        event.qos == 1 ? PacketType.PUBACK : PacketType.PUBREC, event.packetId, event.version,
                        reason, null);
                    send(event.connectionId, scratch, length, false);
                }
                break;
            case PacketType.SUBSCRIBE:
                onSubscribe(event);
                break;
            case PacketType.UNSUBSCRIBE:
                if (event.packetId != 0)
                {
                    final int count = event.version == MqttVersion.V5 ? event.grantedCount : 0; // [MQTT-3.11.3-1]
                    final int length = SubackEncoder.encode(scratch(SubackEncoder.encodedLength(PacketType.UNSUBACK,
                        event.version, null, count)), 0, PacketType.UNSUBACK, event.version, event.packetId, null,
                        grantedCodes(event), count);
                    send(event.connectionId, scratch, length, false);
                }
                break;
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
                onAck(event);
                break;
            default:
                break;
        }
    }

    private void onSubscribe(final IngressEvent event)
    {
        final DeliverySession session = session(event.sessionId);
        if (null == session || event.packetId == 0)
        {
            return;
        }
        final int length = SubackEncoder.encode(scratch(SubackEncoder.encodedLength(PacketType.SUBACK,
            event.version, null, event.grantedCount)), 0, PacketType.SUBACK, event.version, event.packetId, null,
            grantedCodes(event), event.grantedCount);
        send(event.connectionId, scratch, length, false);
        if (codes.length > 1024)
        {
            codes = new int[16]; // a SUBSCRIBE with very many filters does not keep its array
        }
        final int[] ids = event.subscriptionId > 0 ? subscriptionIds(event.subscriptionId) : null;
        int at = event.retainedOffset;
        for (int i = 0; i < event.retainedCount; i++, at = route.next(at))
        {
            storedMessage(at);
            if (writer.isExpired())
            {
                counters.increment(BrokerCounters.MESSAGES_EXPIRED);
                continue;
            }
            final int qos = route.qosAt(at);
            if (qos == 0)
            {
                final int written = writer.encodeEvent(session, 0, true, 0, ids, null == ids ? 0 : 1);
                sendEncoded(session, written, !writer.assignedAlias());
            }
            else
            {
                deliverReliably(session, qos, true, ids, 0); // [MQTT-3.3.1-8]
            }
        }
        releaseEventMessage();
    }

    /**
     * @return the event's return or reason codes from the routing output, in a reused array.
     */
    private int[] grantedCodes(final IngressEvent event)
    {
        if (codes.length < event.grantedCount)
        {
            codes = new int[event.grantedCount];
        }
        for (int i = 0; i < event.grantedCount; i++)
        {
            codes[i] = route.granted(i);
        }
        return codes;
    }

    /**
     * Sets a message of the routing output (a will, a retained message) as the one being delivered.
     */
    private void storedMessage(final int at)
    {
        message(route.buffer(), route.topicOffsetAt(at), route.topicLengthAt(at), route.buffer(),
            route.propertiesOffsetAt(at), route.propertiesLengthAt(at), route.buffer(), route.payloadOffsetAt(at),
            route.payloadLengthAt(at), route.expiresAtMsAt(at));
    }

    private void onAck(final IngressEvent event)
    {
        if (ack.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        final int packetId = ack.packetId();
        if (event.packetType == PacketType.PUBREL)
        {
            sendAck(event.connectionId, PacketType.PUBCOMP, packetId);
            return;
        }
        if (event.version == MqttVersion.V5 && event.packetType == PacketType.PUBREC &&
            ack.reasonCode() >= ReasonCode.UNSPECIFIED_ERROR)
        {
            // the client refused a QoS 2 message: its exchange ends here [MQTT-4.3.3-4]
            final DeliverySession refusing = session(event.sessionId);
            final int slot = null == refusing ? -1 : refusing.findInflight(packetId);
            if (slot >= 0)
            {
                pool.release(refusing.removeInflight(slot));
                drainQueue(refusing);
            }
            return;
        }
        final DeliverySession session = session(event.sessionId);
        if (null == session)
        {
            return;
        }
        final int slot = session.findInflight(packetId);
        if (slot < 0)
        {
            return;
        }
        switch (event.packetType)
        {
            case PacketType.PUBREC:
                // only a QoS 2 message awaits PUBREC; a repeated PUBREC gets its PUBREL again [MQTT-4.3.3-3]
                if (session.inflightQos(slot) == 2)
                {
                    session.inflightState(slot, DeliverySession.AWAIT_PUBCOMP);
                    sendAck(event.connectionId, PacketType.PUBREL, packetId);
                }
                return;
            case PacketType.PUBACK:
                if (session.inflightQos(slot) == 1)
                {
                    pool.release(session.removeInflight(slot));
                    drainQueue(session);
                }
                return;
            default:
                // PUBCOMP ends a QoS 2 message only after its PUBREC [MQTT-4.3.3-1]
                if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
                {
                    pool.release(session.removeInflight(slot));
                    drainQueue(session);
                }
        }
    }

    private void onConnectionEnd(final IngressEvent event)
    {
        final DeliverySession session = event.sessionId != IngressEvent.NONE ? session(event.sessionId) : null;
        if (null != session && session.connectionId == event.connectionId)
        {
            session.connectionId = -1;
            if (!session.persistent)
            {
                forget(session.id); // a clean session ends with its connection
            }
        }
    }

    private void fanOut(final IngressEvent event)
    {
        if (event.messageOffset != IngressEvent.NONE)
        {
            storedMessage(event.messageOffset); // a will, from the routing output
        }
        else
        {
            final long expiry = event.propertiesLength == 0 ? -1 :
                MessageProperties.messageExpiry(event.packet, event.propertiesOffset, event.propertiesLength);
            message(event.packet, event.topicOffset, event.topicLength, event.packet, event.propertiesOffset,
                event.propertiesLength, event.packet, event.payloadOffset, event.payloadLength,
                expiry < 0 ? Message.NEVER : nowMs + expiry * 1000);
        }
        for (int i = 0; i < event.targetCount; i++)
        {
            if (route.targetShard(i) != index)
            {
                continue;
            }
            final DeliverySession session = session(route.targetSession(i));
            if (null == session)
            {
                continue;
            }
            final int qos = route.targetQos(i);
            // live, RETAIN is 0 unless the subscription keeps it as published [MQTT-3.3.1-12] (5.0 only)
            final boolean retain = event.retain && session.version == MqttVersion.V5 &&
                route.targetRetainAsPublished(i);
            final int[] ids = targetSubscriptionIds(i);
            final int group = route.targetGroup(i);
            if (qos == 0)
            {
                if (session.isOnline())
                {
                    sendLive(session, 0, retain, 0, ids);
                }
            }
            else if (session.canSendNow())
            {
                final int slot = session.addInflight(retainedCopy(), qos, retain, ids, group);
                if (!sendLive(session, qos, retain, session.inflightPacketId(slot), ids))
                {
                    pool.release(session.removeInflight(slot)); // too large for this client: never in flight
                }
            }
            else
            {
                deliverReliably(session, qos, retain, ids, group);
            }
        }
        releaseEventMessage();
    }

    /**
     * Sends the event's message to an online session: the shared variant, or an encoding of its own.
     *
     * @return false when it is larger than the client accepts (dropped and counted).
     */
    private boolean sendLive(final DeliverySession session, final int qos, final boolean retain, final int packetId,
        final int[] ids)
    {
        if (PublishWriter.needsOwnEncoding(session, null == ids ? 0 : ids.length))
        {
            final int length = writer.encodeEvent(session, qos, retain, packetId, ids, null == ids ? 0 : ids.length);
            return sendEncoded(session, length, qos == 0 && !writer.assignedAlias());
        }
        final int variant = writer.variant(session.version, qos, retain);
        if (writer.variantLength(variant) > session.maxPacketSize)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT); // [MQTT-3.1.2-25]
            return false;
        }
        if (qos > 0)
        {
            writer.patchPacketId(variant, packetId);
        }
        send(session.connectionId, writer.variant(variant), writer.variantLength(variant), qos == 0);
        return true;
    }

    /**
     * Sends what {@link PublishWriter} encoded into its scratch buffer.
     *
     * @return false when it was too large for the client (dropped and counted [MQTT-3.1.2-25]).
     */
    private boolean sendEncoded(final DeliverySession session, final int length, final boolean droppable)
    {
        if (length == PublishWriter.TOO_LARGE)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT);
            return false;
        }
        send(session.connectionId, writer.scratch(), length, droppable);
        return true;
    }

    /**
     * @return the Subscription Identifiers of target {@code i} as an array kept with its message, or null.
     */
    private int[] targetSubscriptionIds(final int i)
    {
        final int count = route.targetSubscriptionIdCount(i);
        if (count == 0)
        {
            return null;
        }
        if (count == 1)
        {
            return subscriptionIds(route.targetSubscriptionId(i, 0));
        }
        final int[] ids = new int[count]; // several subscriptions with identifiers matched: rare, its own array
        for (int n = 0; n < count; n++)
        {
            ids[n] = route.targetSubscriptionId(i, n);
        }
        return ids;
    }

    private int[] subscriptionIds(final int id)
    {
        int[] ids = singleIds.get(id);
        if (null == ids)
        {
            ids = new int[]{id};
            if (singleIds.size() < 65_536)
            {
                singleIds.put(id, ids);
            }
        }
        return ids;
    }

    /**
     * The message of the event being delivered: a view, copied only when a QoS 1 or 2 target needs it kept.
     */
    private void message(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs)
    {
        releaseEventMessage();
        writer.message(topic, topicOffset, topicLength, properties, propertiesOffset, propertiesLength, payload,
            payloadOffset, payloadLength, expiresAtMs, nowMs);
    }

    /**
     * @return the event's message as a kept copy with one more reference (copied once per event).
     */
    private SharedMessage retainedCopy()
    {
        if (null == eventMessage)
        {
            eventMessage = writer.copy(pool);
            eventMessage.retain(); // the event's own reference: a holder that lets go never recycles it mid-event
        }
        eventMessage.retain();
        return eventMessage;
    }

    /**
     * Drops the event's own reference to its copy: recycled unless a window or queue holds it.
     */
    private void releaseEventMessage()
    {
        if (null != eventMessage)
        {
            pool.release(eventMessage);
            eventMessage = null;
        }
    }

    private void deliverReliably(final DeliverySession session, final int qos, final boolean retain,
        final int[] ids, final int group)
    {
        if (session.canSendNow()) // sent now, or behind the backlog in order: either way it is in flight
        {
            final int slot = session.addInflight(retainedCopy(), qos, retain, ids, group);
            if (!sendPublish(session, slot, false))
            {
                pool.release(session.removeInflight(slot));
            }
            return;
        }
        if (!session.isOnline() && !session.persistent)
        {
            return; // a clean session ends with its connection
        }
        if (session.queueSize() >= maxQueued)
        {
            counters.increment(BrokerCounters.QUEUE_FULL_DROPPED);
            return;
        }
        final SharedMessage message = retainedCopy();
        if (session.queuedBytes() + message.length() > maxQueuedBytes)
        {
            pool.release(message);
            counters.increment(BrokerCounters.QUEUED_BYTES_DROPPED);
            return;
        }
        if (session.isOnline())
        {
            counters.increment(BrokerCounters.INFLIGHT_FULL_QUEUED);
        }
        session.enqueue(message, qos, retain, ids, group);
    }

    private void drainQueue(final DeliverySession session)
    {
        int unsent;
        while (session.isOnline() && (unsent = session.nextUnsent()) >= 0)
        {
            session.inflightUnsent(unsent, false); // held back at a reconnect by a smaller Receive Maximum
            if (!sendPublish(session, unsent, true))
            {
                pool.release(session.removeInflight(unsent));
            }
        }
        while (session.isOnline() && session.hasInflightRoom() && session.queueSize() > 0)
        {
            final SharedMessage message = session.peekMessage();
            final int qos = session.peekQos();
            final boolean retain = session.peekRetain();
            final int[] ids = session.peekSubscriptionIds();
            final int group = session.peekGroup();
            session.dequeue(); // its reference passes to the window
            if (message.expiresAtMs() != Message.NEVER && nowMs >= message.expiresAtMs())
            {
                counters.increment(BrokerCounters.MESSAGES_EXPIRED); // not sent once expired [MQTT-3.3.2-5]
                pool.release(message);
                continue;
            }
            final int slot = session.addInflight(message, qos, retain, ids, group);
            if (!sendPublish(session, slot, false))
            {
                pool.release(session.removeInflight(slot));
            }
        }
    }

    /**
     * Sends (or resends, with DUP) the message in a window slot.
     *
     * @return false when it is larger than the client accepts (the caller drops it).
     */
    private boolean sendPublish(final DeliverySession session, final int slot, final boolean dup)
    {
        final int length = writer.encodeKept(session, session.inflightMessage(slot), session.inflightQos(slot), dup,
            session.inflightRetain(slot), session.inflightPacketId(slot), session.inflightSubscriptionIds(slot),
            nowMs);
        return sendEncoded(session, length, false);
    }

    /**
     * Sends a 5.0 client a DISCONNECT with a reason before the broker closes its connection [MQTT-4.13.2-1];
     * nothing for 3.1.1.
     */
    private void disconnect(final long connectionId, final int version, final int reasonCode)
    {
        if (version == MqttVersion.V5)
        {
            final int length = DisconnectEncoder.encode(scratch, 0, PacketType.DISCONNECT, version, reasonCode, null);
            send(connectionId, scratch, length, false);
        }
    }

    private ExpandableArrayBuffer scratch(final int length)
    {
        scratch.checkLimit(length);
        return scratch;
    }

    private void sendAck(final long connectionId, final int packetType, final int packetId)
    {
        final int length = AckEncoder.encode(scratch, 0, packetType, packetId);
        send(connectionId, scratch, length, false);
    }

    /**
     * Hands bytes to this shard's I/O agent. What its full ring cannot take now waits in the backlog, in order;
     * QoS 0 is dropped instead (counted), since nothing in the protocol needs it.
     */
    private void send(final long connectionId, final DirectBuffer buffer, final int length, final boolean droppable)
    {
        if (backlog.isEmpty(index) && outbound.send(index, connectionId, buffer, 0, length))
        {
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_RING_FULL);
        if (droppable)
        {
            counters.increment(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER);
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_BACKLOGGED);
        backlog.add(index, OutboundBacklog.SEND, connectionId, buffer, 0, length);
    }

    private void close(final long connectionId)
    {
        if (backlog.isEmpty(index) && outbound.close(index, connectionId))
        {
            return;
        }
        backlog.add(index, OutboundBacklog.CLOSE, connectionId, scratch, 0, 0);
    }

    private DeliverySession session(final int sessionId)
    {
        return sessionId >= 0 && sessionId < sessions.length ? sessions[sessionId] : null;
    }

    /**
     * Drops a session's delivery half, if this shard holds it: it ended, expired, or its id is reused.
     */
    private void forget(final int sessionId)
    {
        final DeliverySession session = session(sessionId);
        if (null != session)
        {
            handBackShared(session);
            session.clear(pool);
            sessions[sessionId] = null;
        }
        if (!orphans.isEmpty())
        {
            final Long2LongHashMap.KeyIterator tags = orphans.keySet().iterator();
            while (tags.hasNext())
            {
                final long tag = tags.nextValue();
                if (orphans.get(tag) == sessionId)
                {
                    tags.remove();
                    stale.add(tag); // that session ended: drop its hand-over when it arrives
                }
            }
        }
    }

    /**
     * A session ends: what it took through shared subscriptions and the client never acknowledged (not yet
     * PUBRECed) goes back to routing for another member of the group (5.0 section 4.8.2).
     */
    private void handBackShared(final DeliverySession session)
    {
        for (int slot = 0; slot < session.windowCapacity(); slot++)
        {
            final SharedMessage message = session.inflightMessage(slot);
            if (null != message && session.inflightGroup(slot) != 0 &&
                session.inflightState(slot) != DeliverySession.AWAIT_PUBCOMP)
            {
                redispatch.offer(session.inflightGroup(slot), kept(message, session.inflightQos(slot)));
            }
        }
        for (int i = 0; i < session.queueSize(); i++)
        {
            if (session.queuedGroup(i) != 0)
            {
                redispatch.offer(session.queuedGroup(i), kept(session.queuedMessage(i), session.queuedQos(i)));
            }
        }
    }

    private static Message kept(final SharedMessage message, final int qos)
    {
        final byte[] topic = new byte[message.topicLength()];
        message.buffer().getBytes(0, topic);
        final byte[] properties = new byte[message.propertiesLength()];
        message.buffer().getBytes(message.propertiesOffset(), properties);
        final byte[] payload = new byte[message.payloadLength()];
        message.buffer().getBytes(message.payloadOffset(), payload);
        return new Message(topic, payload, qos, false, properties, message.expiresAtMs());
    }

    private void ensureCapacity(final int sessionId)
    {
        if (sessionId >= sessions.length)
        {
            sessions = Arrays.copyOf(sessions, Math.max(sessions.length * 2, sessionId + 1));
        }
    }

    /**
     * @return this shard's number, that of the I/O agent it serves.
     */
    public int index()
    {
        return index;
    }

    public String name()
    {
        return "deliver-" + index;
    }
}
