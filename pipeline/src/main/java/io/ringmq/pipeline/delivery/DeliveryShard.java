package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.LiveLimits;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.Outbound;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.pipeline.SharedRedispatch;
import io.ringmq.pipeline.Stage;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.AuthFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;

import java.util.function.IntConsumer;

/**
 * A delivery shard, one per I/O agent (its {@link #index}): owns the delivery half of the sessions whose
 * clients that agent serves ({@link DeliverySession}: binding, packet ids, in-flight window, queue, the client's
 * 5.0 limits) and writes only to that agent's outbound ring. Every shard sees every event, after routing, and acts
 * only on its part: replies to packets its agent read, fan-out targets routing placed in this shard, sessions moving
 * in or out.
 * <pre>
 *   DeliveryShard      the event: CONNECT, acknowledgements, SUBSCRIBE, ends, failures
 *     MessageDelivery  application messages: the live fan-out of each event's message ({@link PublishWriter} encodes)
 *     WindowUpkeep     windows and queues: resends, acknowledged messages out, queues drained, shared ones handed back
 *     RestoredCopies   recovery's stored messages, one copy per message however many sessions had it
 *     ControlPackets   every other packet it answers with (CONNACK, AUTH, DISCONNECT, acks, SUBACK)
 *     ShardMoves       sessions handed between shards when a client comes back through another agent
 *     ShardOutput      the outbound ring, with a backlog so the shard never parks its thread
 * </pre>
 * The shard's copies ({@link SharedMessage.Pool}), encoder and event clock are shared by the pieces that need them.
 */
public final class DeliveryShard implements Stage
{
    private final int index;
    private final int shardCount;
    private final OutboundAliasBudget aliasBudget;
    /** The limits in force: new sessions get the in-flight window, new CONNACKs what they announce. */
    private BrokerContext context;
    private LiveLimits live;
    private final BrokerCounters counters;
    private final MessageLog[] routeLogs;
    private int maxInflight;
    private final SessionWindows windows;
    private final RouteOutput route = new RouteOutput();
    private final ShardSessions sessions = new ShardSessions();
    private final ShardOutput output;
    private final ShardMoves moves;
    /** The shard's QoS 1 and 2 copies, counted against its share of --max-message-memory. */
    private final SharedMessage.Pool pool;
    private final EventClock clock = new EventClock();
    private final MessageDelivery messages;
    private final WindowUpkeep upkeep;
    private final RestoredCopies restoring;
    private final ControlPackets control;
    private final ShardJournal journal;
    private final AckFlyweight ack = new AckFlyweight();
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final AuthFlyweight auth = new AuthFlyweight();
    private long connectionOfPubrel;
    private final IntConsumer pubrel = packetId -> sendAck(connectionOfPubrel, PacketType.PUBREL, packetId);

    /**
     * @param index    the shard's number, that of the I/O agent it serves.
     * @param routeLog the routing stage's output log, read here.
     */
    public DeliveryShard(final int index, final BrokerContext context, final Outbound outbound,
        final BrokerCounters counters, final MessageLog routeLog, final ShardHandover handover)
    {
        this(index, context, outbound, counters, new MessageLog[]{routeLog}, handover, new SessionWindows(1),
            new SharedRedispatch(), ShardJournal.none());
    }

    /**
     * @param windows    where its sessions' free in-flight room is published for the routing stage.
     * @param redispatch where a shared subscriber's unacknowledged messages go back when its session ends.
     * @param journal    where the life of a stored message goes on (its QoS 2 exchange, its end).
     * @param routeLogs  each routing shard's output log, read here.
     */
    public DeliveryShard(final int index, final BrokerContext context, final Outbound outbound,
        final BrokerCounters counters, final MessageLog[] routeLogs, final ShardHandover handover,
        final SessionWindows windows, final SharedRedispatch redispatch, final ShardJournal journal)
    {
        this.journal = journal;
        this.index = index;
        this.context = context;
        this.counters = counters;
        this.routeLogs = routeLogs;
        this.windows = windows;
        this.maxInflight = context.maxInflight();
        this.output = new ShardOutput(index, outbound, counters);
        this.shardCount = handover.shardCount();
        this.aliasBudget = new OutboundAliasBudget(OutboundAliasBudget.maxBytesFor(context, shardCount));
        this.pool = new SharedMessage.Pool(index, 1_024, context.messageMemoryBytes() / shardCount);
        final PublishWriter writer = new PublishWriter();
        this.upkeep = new WindowUpkeep(pool, writer, output, clock, counters, redispatch, journal);
        this.messages = new MessageDelivery(index, sessions, output, counters, pool, writer, clock, upkeep,
            context.maxQueued(), context.maxQueuedBytes(), journal);
        this.restoring = new RestoredCopies(pool, counters, journal);
        this.moves = new ShardMoves(index, handover, sessions, counters, maxInflight, windows,
            new MovedMessages(pool, upkeep, counters, journal));
        this.control = new ControlPackets(context);
    }

    public boolean onEvent(final IngressEvent event)
    {
        final boolean mine = event.agentIndex == index;
        if (mine && event.packetType == PacketType.CONNECT && event.kind == IngressEvent.PACKET &&
            moves.mustWait(event))
        {
            return false; // the session's delivery half is still on its way from the shard that held it
        }
        route.wrap(routeLogs, event);
        clock.reset(); // read when first needed (most events need none)
        messages.event(route);
        for (int i = 0; i < event.discardedCount; i++)
        {
            forget(route.discarded(i));
        }
        if (event.kind == IngressEvent.TICK)
        {
            // the routing stage's wake-up: only its message (a will, a re-dispatch), if any, is for the shards
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
            messages.fanOut(event);
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
                output.close(event.takeoverConnectionId); // routing let go of it: it must not live on unanswered
            }
            if (event.movedFromShard == index)
            {
                moves.handOver(event, sessions.get(event.sessionId)); // the new shard must not wait forever
            }
            else if (event.movedFromShard != IngressEvent.NONE && event.agentIndex == index)
            {
                moves.adoptWhenArrived(event.connectionId, event.sessionId); // the move happened; its CONNECT did not
            }
        }
        if (event.routeLogEnd >= 0)
        {
            route.wrap(routeLogs, event);
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
                reply(event.connectionId, control.serverUnavailable(event.version)); // refused, whatever was decided
            }
            reply(event.connectionId, control.disconnect(event.version, ReasonCode.UNSPECIFIED_ERROR));
            output.close(event.connectionId);
        }
        else
        {
            onConnectionEnd(event);
        }
    }

    public void onBatchEnd()
    {
        journal.commit();
        output.endOfBatch();
        final long memoryChange = pool.takeKeptBytesChange();
        if (0 != memoryChange)
        {
            counters.add(BrokerCounters.MESSAGE_MEMORY, memoryChange); // every shard's share, in one gauge
        }
    }

    /**
     * Recovery, before any stage runs: a persistent session's delivery half, offline, with its stored key.
     *
     * @param inflightCount     messages it will restore in flight: its window holds them all, whatever
     *                          --max-inflight is now (a QoS 2 message awaiting PUBCOMP can never go back to the
     *                          queue).
     * @param exchangePacketIds the packet ids of its stored QoS 2 exchanges, kept for them while the messages
     *                          before them are restored.
     */
    public void restoreSession(final int sessionId, final long persistenceKey, final int version,
        final int inflightCount, final int[] exchangePacketIds)
    {
        final DeliverySession session = new DeliverySession(sessionId, true, Math.max(maxInflight, inflightCount),
            windows);
        session.reservePacketIds(exchangePacketIds);
        session.persistenceKey = persistenceKey;
        session.version = version;
        sessions.put(session);
    }

    /**
     * Recovery: one stored message of a restored session, in the order they were routed.
     *
     * @param inflight  it goes back in flight (it was, or a later message was), else into the queue.
     * @param packetId  its packet id when it was in flight as QoS 2, else 0.
     * @param state     its QoS 2 state then ({@code 2}: PUBREC awaited, {@code 3}: PUBCOMP awaited).
     */
    public void restoreMessage(final int sessionId, final io.ringmq.pipeline.Message message, final long number,
        final int qos, final boolean retain, final int publishedQos, final int[] ids, final boolean inflight,
        final int packetId, final int state)
    {
        final DeliverySession session = sessions.get(sessionId);
        if (null != session)
        {
            restoring.restore(session, message, number, qos, retain && session.version == MqttVersion.V5,
                publishedQos, ids, inflight, packetId, state == DeliverySession.AWAIT_PUBCOMP ? state :
                DeliverySession.AWAIT_PUBREC);
        }
    }

    /**
     * Recovery is over (before the shard runs).
     *
     * @return the distinct messages it restored, each one copy however many sessions it was stored for.
     */
    public int restored()
    {
        return restoring.restored();
    }

    /**
     * Follows the limits a reload changes (before the shard runs); they are taken at the next duty cycle.
     */
    public void follow(final LiveLimits live)
    {
        this.live = live;
        live.follow();
    }

    public boolean hasPendingWork()
    {
        return null != live && live.current() != context;
    }

    public int doDutyCycle()
    {
        if (null != live)
        {
            final BrokerContext next = live.changed(context);
            if (null != next)
            {
                applyLimits(next);
                live.took(next);
            }
        }
        moves.poll();
        sessions.sweep(System.currentTimeMillis()); // housekeeping: it wakes nothing, so it counts as no work
        return output.drain();
    }

    /**
     * Takes reloaded limits on this shard's thread: a session made from now on gets the new in-flight window (a
     * connected one keeps the window it has), queues are judged by the new bounds from the next message on, and a
     * new CONNACK announces the new maximum packet size and keep-alive.
     */
    private void applyLimits(final BrokerContext next)
    {
        context = next;
        maxInflight = next.maxInflight();
        moves.maxInflight(maxInflight);
        messages.queueLimits(next.maxQueued(), next.maxQueuedBytes());
        pool.budgetBytes(next.messageMemoryBytes() / shardCount);
        aliasBudget.maxBytes(OutboundAliasBudget.maxBytesFor(next, shardCount));
        control.limits(next);
    }

    private void onConnect(final IngressEvent event, final boolean mine)
    {
        final DeliverySession current = event.sessionId != IngressEvent.NONE ? sessions.get(event.sessionId) : null;
        if (event.takeoverAgent == index)
        {
            if (null != current && current.connectionId == event.takeoverConnectionId)
            {
                current.connectionId = -1;
            }
            // whether the session is resumed here or discarded by a clean start, the old 5.0 connection hears why
            reply(event.takeoverConnectionId, control.disconnect(event.takeoverVersion, ReasonCode.SESSION_TAKEN_OVER));
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
            reply(event.connectionId, control.auth(event, ReasonCode.CONTINUE_AUTHENTICATION, connect.properties()));
            return;
        }
        if (event.authCode != IngressEvent.AUTH_ACCEPTED || event.sessionId == IngressEvent.NONE ||
            connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            reply(event.connectionId, control.refusal(event));
            output.close(event.connectionId); // [MQTT-3.2.2-5]
            return;
        }
        DeliverySession session = event.movedFromShard != IngressEvent.NONE && event.movedFromShard != index ?
            moves.take(event.connectionId) : sessions.get(event.sessionId);
        if (event.sessionNew || null == session)
        {
            forget(event.sessionId);
            session = new DeliverySession(event.sessionId, context.sessionExpiryFor(connect) > 0, maxInflight,
                windows);
        }
        sessions.put(session);
        if (event.sessionKey != 0)
        {
            session.persistenceKey = event.sessionKey; // the persistence stage's key for it
        }
        session.connectionId = event.connectionId;
        session.version = event.version;
        clientLimits(session, v5);
        reply(event.connectionId, control.connack(event, connect, route.assignedClientId()));
        if (event.sessionPresent)
        {
            connectionOfPubrel = event.connectionId;
            upkeep.resend(session, pubrel);
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
        session.maxPacketSize = v5 ? (int)Math.min(Integer.MAX_VALUE,
            requested.longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE)) : Integer.MAX_VALUE;
        session.topicAliasMaximum(v5 ? requested.intValue(PropertyId.TOPIC_ALIAS_MAXIMUM, 0) : 0, aliasBudget);
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
            reply(event.connectionId, control.disconnect(event.version,
                Math.max(event.authCode, ReasonCode.UNSPECIFIED_ERROR)));
            output.close(event.connectionId);
            return;
        }
        reply(event.connectionId, control.auth(event, event.authCode == IngressEvent.AUTH_CONTINUE ?
            ReasonCode.CONTINUE_AUTHENTICATION : ReasonCode.SUCCESS, auth.properties()));
    }

    private void onPacket(final IngressEvent event)
    {
        switch (event.packetType)
        {
            case PacketType.PUBLISH:
                if (event.qos > 0 && event.packetId != 0)
                {
                    // 5.0: a message no subscription matched is acknowledged as such (0x10), one the ACL refused
                    // with 0x87 (3.1.1 has no way to say it: acknowledged and dropped, as Mosquitto does)
                    final int reason = event.version != MqttVersion.V5 ? ReasonCode.SUCCESS :
                        event.aclVerdict != IngressEvent.ACL_ALLOWED ? ReasonCode.NOT_AUTHORIZED :
                        event.overQuota ? ReasonCode.QUOTA_EXCEEDED :
                        event.routed && event.targetCount == 0 ? ReasonCode.NO_MATCHING_SUBSCRIBERS : ReasonCode.SUCCESS;
                    reply(event.connectionId, control.ack(event.qos == 1 ? PacketType.PUBACK : PacketType.PUBREC,
                        event.packetId, event.version, reason));
                }
                break;
            case PacketType.SUBSCRIBE:
                final DeliverySession session = sessions.get(event.sessionId);
                if (null != session && event.packetId != 0)
                {
                    reply(event.connectionId, control.suback(event, route, PacketType.SUBACK));
                    messages.retained(event, session);
                }
                break;
            case PacketType.UNSUBSCRIBE:
                if (event.packetId != 0)
                {
                    reply(event.connectionId, control.suback(event, route, PacketType.UNSUBACK));
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

    /**
     * One acknowledgement, or a run of them of one type: the I/O agent hands the PUBACKs, PUBRECs or PUBCOMPs it
     * read back to back from one connection in one slot, each validated; a PUBREL always comes alone.
     */
    private void onAck(final IngressEvent event)
    {
        final DeliverySession session = event.packetType == PacketType.PUBREL ? null : sessions.get(event.sessionId);
        final int end = event.packetLength;
        for (int offset = 0, length; offset < end; offset += length)
        {
            length = ack.wrapNext(event.packet, offset, end, event.version);
            if (length < 0)
            {
                return;
            }
            acknowledge(event, session, ack.packetId());
        }
    }

    /**
     * One acknowledgement of the slot's type, the one {@link #ack} holds; {@code session} null when not this shard's.
     */
    private void acknowledge(final IngressEvent event, final DeliverySession session, final int packetId)
    {
        if (event.packetType == PacketType.PUBREL)
        {
            sendAck(event.connectionId, PacketType.PUBCOMP, packetId);
            return;
        }
        final int slot = null == session ? -1 : session.findInflight(packetId);
        if (slot < 0)
        {
            return;
        }
        switch (event.packetType)
        {
            case PacketType.PUBREC:
                if (event.version == MqttVersion.V5 && ack.reasonCode() >= ReasonCode.UNSPECIFIED_ERROR)
                {
                    upkeep.completed(session, slot); // the client refused a QoS 2 message [MQTT-4.3.3-4]
                }
                // only a QoS 2 message awaits PUBREC; a repeated PUBREC gets its PUBREL again [MQTT-4.3.3-3]
                else if (session.inflightQos(slot) == 2)
                {
                    session.inflightState(slot, DeliverySession.AWAIT_PUBCOMP);
                    // one held back at a resume the client had from before: never its PUBLISH after the PUBREL
                    session.inflightUnsent(slot, false);
                    // kept before PUBREL leaves: after a restart the broker sends PUBREL, never the PUBLISH again
                    journal.exchange(session.persistenceKey, session.inflightMessage(slot).messageNumber(), packetId,
                        DeliverySession.AWAIT_PUBCOMP);
                    sendAck(event.connectionId, PacketType.PUBREL, packetId);
                }
                return;
            case PacketType.PUBACK:
                if (session.inflightQos(slot) == 1)
                {
                    upkeep.completed(session, slot);
                }
                return;
            default:
                // PUBCOMP ends a QoS 2 message only after its PUBREC [MQTT-4.3.3-1]
                if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
                {
                    upkeep.completed(session, slot);
                }
        }
    }

    private void onConnectionEnd(final IngressEvent event)
    {
        final DeliverySession session = event.sessionId != IngressEvent.NONE ? sessions.get(event.sessionId) : null;
        if (null != session && session.connectionId == event.connectionId)
        {
            session.connectionId = -1;
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

    private void sendAck(final long connectionId, final int packetType, final int packetId)
    {
        reply(connectionId, control.ack(packetType, packetId, MqttVersion.V3_1_1, ReasonCode.SUCCESS));
    }

    /**
     * Sends what {@link ControlPackets} just wrote (nothing when it wrote nothing).
     */
    private void reply(final long connectionId, final int length)
    {
        if (length > 0)
        {
            output.send(connectionId, control.buffer(), length, false);
        }
    }

    /**
     * Drops a session's delivery half, if this shard holds it: it ended, expired, or its id is reused.
     */
    private void forget(final int sessionId)
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

    /**
     * @return whether this shard holds the delivery half of a session (for tests and diagnostics).
     */
    public boolean holds(final int sessionId)
    {
        return null != sessions.get(sessionId);
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
