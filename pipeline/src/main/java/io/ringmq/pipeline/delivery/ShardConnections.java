package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.protocol.AuthFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;

/**
 * The connections a delivery shard serves as they start and end, and the delivery halves of their sessions: a
 * CONNECT closes the connection it takes over, hands the session to the shard of a client that came back through
 * another agent (or takes it in from there), binds the session (a new one, or the one resumed) with the client's 5.0
 * limits, answers CONNACK and resends what was in flight; an AUTH after CONNECT is answered; a connection's end
 * unbinds its session, and a session that ends, expires or whose id is reused is forgotten. Owned by its shard's
 * thread.
 */
final class ShardConnections
{
    private final int index;
    private final int shardCount;
    /** The limits in force: new sessions get the in-flight window and session expiry they say. */
    private BrokerContext context;
    private final OutboundAliasBudget aliasBudget;
    private final SessionWindows windows;
    private final RouteOutput route;
    private final ShardSessions sessions;
    private final ShardOutput output;
    private final ShardMoves moves;
    private final ControlPackets control;
    private final MessageDelivery messages;
    private final WindowUpkeep upkeep;
    private final ShardAcks acks;
    /** What the connected sessions of each limited client address hold of the shard's share. */
    private final AddressHolds holds = new AddressHolds();
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final AuthFlyweight auth = new AuthFlyweight();

    /**
     * @param index   the shard's number, that of the I/O agent it serves.
     * @param windows where its sessions' free in-flight room is published for the routing stage.
     * @param route   the routing output of the event being handled (the client id a CONNACK assigns).
     * @param acks    what sends PUBREL again when a client comes back.
     */
    ShardConnections(final int index, final int shardCount, final BrokerContext context, final SessionWindows windows,
        final RouteOutput route, final ShardSessions sessions, final ShardOutput output, final ShardMoves moves,
        final ControlPackets control, final MessageDelivery messages, final WindowUpkeep upkeep, final ShardAcks acks)
    {
        this.index = index;
        this.shardCount = shardCount;
        this.context = context;
        this.aliasBudget = new OutboundAliasBudget(OutboundAliasBudget.maxBytesFor(context, shardCount));
        this.windows = windows;
        this.route = route;
        this.sessions = sessions;
        this.output = output;
        this.moves = moves;
        this.control = control;
        this.messages = messages;
        this.upkeep = upkeep;
        this.acks = acks;
    }

    /**
     * Takes reloaded limits (the shard's thread): a session made from now on gets the new in-flight window (a
     * connected one keeps the window it has), and outbound aliases are bounded by the new share.
     */
    void limits(final BrokerContext next)
    {
        context = next;
        aliasBudget.maxBytes(OutboundAliasBudget.maxBytesFor(next, shardCount));
    }

    void onConnect(final IngressEvent event, final boolean mine)
    {
        final DeliverySession current = event.sessionId != IngressEvent.NONE ? sessions.get(event.sessionId) : null;
        if (event.takeoverAgent == index)
        {
            if (null != current && current.connectionId == event.takeoverConnectionId)
            {
                current.unbind();
            }
            // whether the session is resumed here or discarded by a clean start, the old 5.0 connection hears why
            output.sendControl(event.takeoverConnectionId, control, control.disconnect(event.takeoverVersion,
                ReasonCode.SESSION_TAKEN_OVER));
            output.close(event.takeoverConnectionId); // [MQTT-3.1.4-2]
        }
        if (event.movedFromShard == index)
        {
            moves.handOver(event, current);
        }
        if (!mine)
        {
            return;
        }
        final boolean v5 = event.version == MqttVersion.V5;
        if (event.authCode == IngressEvent.AUTH_CONTINUE && v5 && connect.wrap(event.packet, 0, event.packetLength) > 0)
        {
            // enhanced authentication goes on: AUTH 0x18 with the method and the server's data [MQTT-4.12.0-2]
            output.sendControl(event.connectionId, control, control.auth(event, ReasonCode.CONTINUE_AUTHENTICATION,
                connect.properties()));
            return;
        }
        if (event.authCode != IngressEvent.AUTH_ACCEPTED || event.sessionId == IngressEvent.NONE ||
            connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            output.sendControl(event.connectionId, control, control.refusal(event));
            output.close(event.connectionId); // [MQTT-3.2.2-5]
            return;
        }
        DeliverySession session = event.movedFromShard != IngressEvent.NONE && event.movedFromShard != index ?
            moves.take(event.connectionId) : sessions.get(event.sessionId);
        if (event.sessionNew || null == session)
        {
            forget(event.sessionId);
            session = new DeliverySession(event.sessionId, context.limits().sessionExpiryFor(connect) > 0,
                context.limits().maxInflight(), windows);
        }
        sessions.put(session);
        if (event.sessionKey != 0)
        {
            session.persistenceKey = event.sessionKey; // the persistence stage's key for it
        }
        session.bind(event.connectionId, holds, event.addressKey);
        session.version = event.version;
        session.bridge = event.bridge ? DeliverySession.OWN_BRIDGE :
            connect.isBridge() ? DeliverySession.REMOTE_BRIDGE : 0;
        session.mountPoint = event.mountPoint;
        if (event.bridge)
        {
            // a bridge's messages wait for the remote broker's acknowledgement: its window is what it asks for
            session.widen(connect.properties().intValue(PropertyId.RECEIVE_MAXIMUM, 65_535));
        }
        clientLimits(session, v5);
        final int connack = control.connack(event, connect, route.assignedClientId());
        if (connack > session.maxPacketSize)
        {
            // never sent [MQTT-3.1.2-24], and nothing may come before it [MQTT-3.2.0-1]: the connection ends, as a
            // lost one (Mosquitto does not send it either)
            output.endTooLarge(event.connectionId, control, 0, session.maxPacketSize);
            return;
        }
        output.sendControl(event.connectionId, control, connack);
        if (event.sessionPresent)
        {
            upkeep.resend(session, acks.pubrelTo(event.connectionId));
        }
        upkeep.drainQueue(session);
    }

    /**
     * Takes the client's limits from a 5.0 CONNECT (Receive Maximum, Maximum Packet Size, Topic Alias Maximum);
     * a 3.1.1 client has none, whatever an earlier 5.0 connection of its session had.
     */
    private void clientLimits(final DeliverySession session, final boolean v5)
    {
        final MqttProperties requested = connect.properties();
        session.receiveMaximum(v5 ? requested.intValue(PropertyId.RECEIVE_MAXIMUM, 65_535) : 65_535);
        session.maxInflightBytes(context.limits().maxInflightBytes());
        session.maxPacketSize = v5 ? (int)Math.min(Integer.MAX_VALUE,
            requested.longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE)) : Integer.MAX_VALUE;
        session.topicAliasMaximum(v5 ? requested.intValue(PropertyId.TOPIC_ALIAS_MAXIMUM, 0) : 0, aliasBudget);
    }

    /**
     * An AUTH after CONNECT (a re-authentication, or one out of place): the next step (AUTH 0x18), its success
     * (AUTH 0x00), or its refusal: DISCONNECT with the reason, and the connection closes [MQTT-4.12.1-2].
     */
    void onAuth(final IngressEvent event)
    {
        if (event.authCode >= ReasonCode.UNSPECIFIED_ERROR || auth.wrap(event.packet, 0, event.packetLength,
            event.version) < 0)
        {
            output.sendControl(event.connectionId, control, control.disconnect(event.version,
                Math.max(event.authCode, ReasonCode.UNSPECIFIED_ERROR)));
            output.close(event.connectionId);
            return;
        }
        output.sendControl(event.connectionId, control, control.auth(event,
            event.authCode == IngressEvent.AUTH_CONTINUE ? ReasonCode.CONTINUE_AUTHENTICATION : ReasonCode.SUCCESS,
            auth.properties()));
    }

    void onConnectionEnd(final IngressEvent event)
    {
        final DeliverySession session = event.sessionId != IngressEvent.NONE ? sessions.get(event.sessionId) : null;
        if (null != session && session.connectionId == event.connectionId)
        {
            if (session.persistent)
            {
                session.goAway(); // what it has in flight stays its address's, until it is resumed or ends
            }
            else
            {
                session.unbind();
            }
            session.releaseAliases(); // they live as long as the connection [MQTT-3.3.2-7]
            if (!session.persistent)
            {
                forget(session.id); // a clean session ends with its connection
            }
            else
            {
                session.trim(false); // offline: an empty window or queue waits for no one
                messages.wentAway(session);
            }
        }
    }

    /**
     * Drops a session's delivery half, if this shard holds it: it ended, expired, or its id is reused.
     */
    void forget(final int sessionId)
    {
        final DeliverySession session = sessions.get(sessionId);
        if (null != session)
        {
            session.releaseAliases();
            upkeep.forget(session);
            sessions.remove(sessionId);
        }
        moves.onForget(sessionId);
    }
}
