package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionMemory;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import org.agrona.ExpandableArrayBuffer;

/**
 * The routing stage's CONNECT: binds an admitted connection to a session, new or resumed (a clean start discards the
 * old one), taking over a live one's connection [MQTT-3.1.4-2] (its will goes out as the connection ends), within
 * {@code --max-sessions} and {@code --max-session-memory}; announces a client id the auth stage assigned
 * [MQTT-3.2.2-16], keeps the will the ACL allows, and moves a resumed session's delivery half to the connection's
 * delivery shard (undone when the slot fails). Routing stage only.
 */
final class SessionConnects
{
    private final ByConnection<RoutingSession> connections;
    private final SessionRegistry sessions;
    private final RoutingAccess access;
    private final RouteOutput.Writer output;
    private final SessionEnds ends;
    private final SessionExpiry expiry;
    private final PublishFanOut publishes;
    /** Shard 0's counters for what happens to sessions; muted on the other routing shards. */
    private final BrokerCounters sessionCounters;
    private final int maxSessions;
    /** What a remote broker's 3.1.1 bridge subscribes with: it never gets back what it sent, retain as sent. */
    private static final int BRIDGE_OPTIONS = io.ringmq.protocol.SubscriptionOptions.of(0, true, true, 0);
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final ExpandableArrayBuffer willScratch = new ExpandableArrayBuffer(256);
    private RoutingSession moved;
    private int movedFrom;

    /**
     * @param connections the routing stage's sessions by connection id.
     */
    SessionConnects(final ByConnection<RoutingSession> connections, final SessionRegistry sessions,
        final RoutingAccess access, final RouteOutput.Writer output,
        final SessionEnds ends, final PublishFanOut publishes, final BrokerCounters sessionCounters,
        final int maxSessions)
    {
        this.connections = connections;
        this.sessions = sessions;
        this.access = access;
        this.output = output;
        this.ends = ends;
        this.expiry = ends.expiry();
        this.publishes = publishes;
        this.sessionCounters = sessionCounters;
        this.maxSessions = maxSessions;
    }

    /**
     * The move of a session's delivery half this slot made, if any, stands: a later failed slot must not undo it.
     */
    void moveStands()
    {
        moved = null;
    }

    /**
     * The slot failed: a move of a session's delivery half it made is undone.
     */
    void undoMove()
    {
        if (null != moved) // set only while this event was being processed
        {
            moved.shard(movedFrom); // the move did not happen: its delivery half is still where it was
        }
        moved = null;
    }

    /**
     * @param context the limits in force.
     */
    void onConnect(final IngressEvent event, final BrokerContext context)
    {
        if (event.authCode != IngressEvent.AUTH_ACCEPTED)
        {
            return; // refused, or no verdict: fail closed
        }
        if (connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            return; // the I/O agent validated it: a corrupt slot is refused by its shard, never thrown on
        }
        final boolean clean = connect.isCleanStart();
        final long expirySeconds = context.limits().sessionExpiryFor(connect);
        final String clientId = access.clientIdOf(connect, event); // one the auth stage assigned, if any
        if (clientId.isEmpty())
        {
            return; // the auth stage assigns one to every CONNECT it admits without: fail closed
        }
        if (null != event.assignedClientId && event.version == MqttVersion.V5)
        {
            output.assignedClientId(clientId.getBytes(java.nio.charset.StandardCharsets.UTF_8)); // [MQTT-3.2.2-16]
        }
        RoutingSession existing = sessions.find(clientId);
        if (null != existing && !existing.isOnline())
        {
            expiry.fireDue(existing, event.routeTimeMs); // what a poll had not reached yet: it ends, or its will goes
            existing = sessions.find(clientId);
        }
        if (!sessions.memory().hasRoomForConnect(sessionLength(existing, clientId), willLength()))
        {
            // before anything changes: a session taken over or resumed stays as it was
            sessionCounters.increment(BrokerCounters.SESSION_MEMORY_REFUSED); // its shard refuses it: no session
            return;
        }
        Message endedWill = null;
        if (null != existing && existing.isOnline())
        {
            event.takeoverAgent = existing.agentIndex();
            event.takeoverConnectionId = existing.connectionId();
            event.takeoverVersion = existing.version(); // its shard may no longer hold its session to ask
            connections.remove(existing.connectionId());
            sessionCounters.increment(BrokerCounters.CONNECTIONS_TAKEN_OVER);
            // it ends without DISCONNECT: its will goes out, as Mosquitto does, unless it is delayed and its session
            // is resumed right here, within the delay [MQTT-3.1.3-9]
            if (existing.willDelaySeconds() == 0 || clean || !existing.isPersistent())
            {
                endedWill = access.willOf(existing); // judged by the rules in force now
            }
            existing.will(null);
            existing.connection(IngressEvent.NONE, IngressEvent.NONE);
        }
        else if (null != existing && null != existing.will())
        {
            // a delayed will of an offline session: a reconnect within the delay cancels it [MQTT-3.1.3-9], a
            // clean start ends the session, which publishes it
            expiry.cancelWill(existing);
            endedWill = clean || !existing.isPersistent() ? access.willOf(existing) : null;
            existing.will(null);
        }
        final RoutingSession session;
        if (null != existing && existing.isPersistent() && !clean)
        {
            session = existing;
            session.expirySeconds(expirySeconds);
            expiry.cancel(session);
            event.sessionPresent = true; // [MQTT-3.2.2-2]
            if (session.shard() != event.agentIndex)
            {
                event.movedFromShard = session.shard(); // its delivery half moves to this connection's shard
                moved = session;
                movedFrom = session.shard();
                session.shard(event.agentIndex);
            }
        }
        else
        {
            if (null != existing)
            {
                ends.discard(existing);
            }
            else if (sessions.size() >= maxSessions)
            {
                sessionCounters.increment(BrokerCounters.SESSIONS_REFUSED_LIMIT); // its shard refuses it: no session
                return;
            }
            session = sessions.create(clientId, expirySeconds, event.agentIndex);
            event.sessionNew = true;
        }
        session.connection(event.agentIndex, event.connectionId);
        session.version(event.version);
        session.maxQos(event.maxQos); // its listener's max_qos; --max-qos caps it where it is used
        session.forcedOptions(connect.isBridge() ? BRIDGE_OPTIONS : 0); // as Mosquitto treats a bridge
        // a resumed session's client id as the CONNECT gave it is most often its own: one copy of it is kept
        access.bind(session, event, clientId.equals(session.clientId()) ? session.clientId() : clientId);
        setWill(session, event.aclVerdict == IngressEvent.ACL_ALLOWED); // a will the ACL refuses is not kept
        connections.put(event.connectionId, session);
        event.sessionId = session.id();
        if (null != endedWill)
        {
            publishes.publishWill(event, endedWill); // its shard sends it after the new client's CONNACK
        }
    }

    /**
     * @return what the CONNECT in {@link #connect} would add to {@code --max-session-memory} for a new session: its
     * client id and user name (0 for a session resumed).
     */
    private long sessionLength(final RoutingSession existing, final String clientId)
    {
        return null == existing || !existing.isPersistent() || connect.isCleanStart() ?
            SessionMemory.sessionLength(clientId, connect.userName().length()) : 0;
    }

    /**
     * @return what the CONNECT's will would add to {@code --max-session-memory} (the one it replaces is not taken
     * off: a client at the bound does not get in by swapping), 0 for none.
     */
    private long willLength()
    {
        return connect.hasWill() ? SessionMemory.WILL_LENGTH + connect.willTopic().length() +
            connect.willPayload().length() + connect.willProperties().sectionLength() : 0;
    }

    /**
     * Keeps the CONNECT's will with its session, when the client may publish it.
     */
    private void setWill(final RoutingSession session, final boolean allowed)
    {
        final boolean kept = allowed && connect.hasWill();
        session.will(kept ? Wills.fromConnect(connect, willScratch) : null);
        session.willDelaySeconds(kept ? Wills.delaySeconds(connect) : 0);
    }
}
