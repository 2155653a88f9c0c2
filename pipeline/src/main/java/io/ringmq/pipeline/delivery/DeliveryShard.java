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
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;

/**
 * A delivery shard, one per I/O agent (its {@link #index}): owns the delivery half of the sessions whose
 * clients that agent serves ({@link DeliverySession}: binding, packet ids, in-flight window, queue, the client's
 * 5.0 limits) and writes only to that agent's outbound ring. Every shard sees every event, after routing, and acts
 * only on its part: replies to packets its agent read, fan-out targets routing placed in this shard, sessions moving
 * in or out.
 * <pre>
 *   DeliveryShard      the event: dispatched to the pieces below; PUBLISH acknowledged, SUBSCRIBE answered, failures
 *     ShardConnections CONNECT, AUTH and connection ends: sessions bound, unbound and forgotten
 *     ShardAcks        PUBACK, PUBREC, PUBREL and PUBCOMP against the in-flight windows
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
    /** The limits this shard took last (what {@link LiveLimits#changed} compares); restored sessions get its window. */
    private BrokerContext context;
    private LiveLimits live;
    private final BrokerCounters counters;
    private final MessageLog[] routeLogs;
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
    /** Ends the connections and sessions of clients that acknowledge nothing they hold, when others find no room. */
    private final StalledClients stalled;
    private final ShardAcks acks;
    private final ShardConnections connections;
    private final ShardJournal journal;

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
        this.shardCount = handover.shardCount();
        this.output = new ShardOutput(index, outbound, counters,
            ShardOutput.capFor(Runtime.getRuntime().maxMemory(), shardCount));
        this.pool = new SharedMessage.Pool(index, 1_024, context.memory().messageMemoryBytes() / shardCount);
        // a message on an Agrona ring is at most an eighth of it, here with the connection id before the packet
        final int ringBytes = context.memory().outboundRingBytes();
        final PublishWriter writer = new PublishWriter(ringBytes > 0 ? ringBytes / 8 - Long.BYTES : Integer.MAX_VALUE);
        this.upkeep = new WindowUpkeep(pool, writer, output, clock, counters, redispatch, journal);
        this.control = new ControlPackets(context);
        this.stalled = new StalledClients(sessions, output, counters, context.limits().stalledClientTimeoutMs());
        this.messages = new MessageDelivery(index, sessions, output, counters, pool, writer, clock, upkeep, journal,
            stalled);
        messages.queueLimits(context.limits().maxQueued(), context.limits().maxQueuedBytes(),
            context.limits().queueQos0Messages());
        this.restoring = new RestoredCopies(pool, counters, journal);
        this.moves = new ShardMoves(index, handover, sessions, counters, context.limits().maxInflight(), windows,
            new MovedMessages(pool, upkeep, counters, journal));
        this.acks = new ShardAcks(sessions, output, control, upkeep, journal);
        this.connections = new ShardConnections(index, shardCount, context, windows, route, sessions, output, moves,
            control, messages, upkeep, acks);
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
            connections.forget(route.discarded(i));
        }
        if (event.kind == IngressEvent.TICK)
        {
            // the routing stage's wake-up: only its message (a will, a re-dispatch) or a part of a SUBSCRIBE's
            // retained messages, if any, is for the shards
            if (mine && event.retainedCount > 0)
            {
                final DeliverySession session = sessions.get(event.sessionId);
                if (null != session && session.connectionId == event.connectionId)
                {
                    messages.retained(event, session); // to the connection that subscribed, while it lasts
                }
            }
        }
        else if (mine && event.packetType == PacketType.AUTH)
        {
            connections.onAuth(event);
        }
        else if (event.kind == IngressEvent.PACKET)
        {
            if (event.packetType == PacketType.CONNECT)
            {
                connections.onConnect(event, mine);
            }
            else if (mine && event.sessionId != IngressEvent.NONE)
            {
                onPacket(event);
            }
        }
        else if (mine)
        {
            connections.onConnectionEnd(event);
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
                // routing reused nothing yet: these ids must still be forgotten here
                connections.forget(route.discarded(i));
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
                // refused, whatever was decided
                output.sendControl(event.connectionId, control, control.serverUnavailable(event.version));
            }
            output.sendControl(event.connectionId, control, control.disconnect(event.version,
                ReasonCode.UNSPECIFIED_ERROR));
            output.close(event.connectionId);
        }
        else if (event.kind == IngressEvent.TICK)
        {
            if (event.retainedCount > 0)
            {
                // a part of a SUBSCRIBE's retained messages, lost with its slot (a tick is no connection's end)
                counters.increment(BrokerCounters.RETAINED_NOT_SENT);
            }
        }
        else
        {
            connections.onConnectionEnd(event);
        }
    }

    public void onBatchEnd()
    {
        output.endOfBatch();
        final long memoryChange = pool.takeKeptBytesChange();
        if (0 != memoryChange)
        {
            counters.add(BrokerCounters.MESSAGE_MEMORY, memoryChange); // every shard's share, in one gauge
        }
        // last, as in the duty cycle: a store failure throws, and the batch's packets must be on their way by then
        // (nothing flushes them later if no other event comes). The ends written here order nothing that was sent:
        // a QoS 2 exchange is written before its packet goes, by the journal itself
        journal.commitDue();
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
        final DeliverySession session = new DeliverySession(sessionId, true,
            Math.max(context.limits().maxInflight(), inflightCount), windows);
        if (exchangePacketIds.length > 0)
        {
            session.packetIds().reserve(exchangePacketIds); // before any of its messages is restored [MQTT-4.3.3]
        }
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
     * @param group     the shared subscription group it came through, as restored; 0 for none.
     */
    public void restoreMessage(final int sessionId, final io.ringmq.pipeline.Message message, final long number,
        final int qos, final boolean retain, final int publishedQos, final int[] ids, final boolean inflight,
        final int packetId, final int state, final int group)
    {
        final DeliverySession session = sessions.get(sessionId);
        if (null != session)
        {
            restoring.restore(session, message, number, qos, retain && session.version == MqttVersion.V5,
                publishedQos, ids, inflight, packetId, state == DeliverySession.AWAIT_PUBCOMP ? state :
                DeliverySession.AWAIT_PUBREC, group);
            if (session.queueSize() > 0)
            {
                sessions.queuedAway(session); // its client is away: what recovery queued for it may be taken back
            }
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

    @Override
    public boolean waitsForRoom()
    {
        return output.backlogged();
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
        final int drained = output.drain();
        // the ends of messages batched while no event came: no work either; last, since a store failure (the agent
        // records it) skips the rest of this duty cycle
        journal.commitDue();
        return drained;
    }

    /**
     * Takes reloaded limits on this shard's thread: a session made from now on gets the new in-flight window (a
     * connected one keeps the window it has), queues are judged by the new bounds from the next message on, and a
     * new CONNACK announces the new maximum packet size and keep-alive.
     */
    private void applyLimits(final BrokerContext next)
    {
        context = next;
        connections.limits(next);
        moves.maxInflight(next.limits().maxInflight());
        messages.queueLimits(next.limits().maxQueued(), next.limits().maxQueuedBytes(),
            next.limits().queueQos0Messages());
        pool.budgetBytes(next.memory().messageMemoryBytes() / shardCount);
        stalled.timeoutMs(next.limits().stalledClientTimeoutMs());
        control.limits(next);
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
                    output.sendControl(event.connectionId, control, control.ack(event.qos == 1 ? PacketType.PUBACK :
                        PacketType.PUBREC, event.packetId, event.version, reason));
                }
                break;
            case PacketType.SUBSCRIBE:
                final DeliverySession session = sessions.get(event.sessionId);
                if (null != session && event.packetId != 0)
                {
                    final int length = control.suback(event, route, PacketType.SUBACK);
                    if (length > session.maxPacketSize)
                    {
                        // never sent [MQTT-3.1.2-24]: DISCONNECT 0x95, the subscriptions stay
                        output.endTooLarge(event.connectionId, control,
                            control.disconnect(event.version, ReasonCode.PACKET_TOO_LARGE), session.maxPacketSize);
                        break;
                    }
                    output.sendControl(event.connectionId, control, length);
                    messages.retained(event, session);
                }
                break;
            case PacketType.UNSUBSCRIBE:
                if (event.packetId != 0)
                {
                    final DeliverySession unsubscriber = sessions.get(event.sessionId);
                    final int length = control.suback(event, route, PacketType.UNSUBACK);
                    if (null != unsubscriber && length > unsubscriber.maxPacketSize)
                    {
                        output.endTooLarge(event.connectionId, control,
                            control.disconnect(event.version, ReasonCode.PACKET_TOO_LARGE),
                            unsubscriber.maxPacketSize);
                        break;
                    }
                    output.sendControl(event.connectionId, control, length);
                }
                break;
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
                acks.onAck(event);
                break;
            default:
                break;
        }
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
