package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;

/**
 * Routes one slot by what it holds: a packet by its type (CONNECT to {@link SessionConnects}, PUBLISH to
 * {@link PublishFanOut}, SUBSCRIBE and UNSUBSCRIBE to {@link SubscriptionChanges}, a PUBREL ends an inbound QoS 2
 * exchange), a {@link IngressEvent#TICK} to the delayed will, re-dispatch or part of a SUBSCRIBE's retained messages
 * it carries, the end of a connection to {@link SessionEnds}; and what a slot's start, commit and failure mean for the
 * parts' per-slot state. The routing stage calls it for the slots it routes, {@link ShardReplay} for the copies a
 * shard above 0 replays. Routing stage only.
 */
final class SlotRouter
{
    private final ByConnection<RoutingSession> connections;
    private final RouteOutput.Writer output;
    private final SessionConnects connects;
    private final PublishFanOut publishes;
    private final SubscriptionChanges subscriptions;
    private final SessionEnds ends;
    private final SessionExpiry expiry;
    private final RoutingTicks ticks;
    private final RouteEpochs epochs;
    private final RoutingAccess access;
    private final RouteShards routeShards;
    /** Publishes the routing stage's gauges: they move with expiry too. */
    private final Runnable gauges;
    private final AckFlyweight ack = new AckFlyweight();

    /**
     * @param connections the routing stage's sessions by connection id.
     * @param gauges      publishes the routing stage's gauges.
     */
    SlotRouter(final ByConnection<RoutingSession> connections, final RouteOutput.Writer output,
        final SessionConnects connects, final PublishFanOut publishes, final SubscriptionChanges subscriptions,
        final SessionEnds ends, final RoutingTicks ticks, final RouteEpochs epochs, final RoutingAccess access,
        final RouteShards routeShards, final Runnable gauges)
    {
        this.connections = connections;
        this.output = output;
        this.connects = connects;
        this.publishes = publishes;
        this.subscriptions = subscriptions;
        this.ends = ends;
        this.expiry = ends.expiry();
        this.ticks = ticks;
        this.epochs = epochs;
        this.access = access;
        this.routeShards = routeShards;
        this.gauges = gauges;
    }

    /**
     * A slot starts: no output yet, nothing moved, nothing to apply.
     */
    void begin()
    {
        output.reset();
        connects.moveStands();
        publishes.clear();
    }

    /**
     * Routes a slot. A packet is handed straight to the part for its type (the PUBLISH path stays one call deep
     * here); a tick or the end of a connection goes by its kind.
     */
    void route(final IngressEvent event)
    {
        if (event.kind != IngressEvent.PACKET)
        {
            routeKind(event);
            return;
        }
        if (event.packetType == PacketType.CONNECT)
        {
            if (routeShards.replicated() && expiry.poll(event.routeTimeMs) > 0)
            {
                // sessions due by the slot's stamped time end before it, on every shard alike: a CONNECT never
                // resumes one that has expired (one restored already due waits for no tick) [MQTT-4.1.0-2]
                gauges.run();
            }
            connects.onConnect(event, epochs.limits());
            return;
        }
        if (event.connectionId == IngressEvent.SYSTEM_CONNECTION)
        {
            if (event.packetType == PacketType.PUBLISH)
            {
                publishes.onPublish(event, null); // the broker's own ($SYS): no session, nobody to acknowledge
            }
            return;
        }
        final RoutingSession session = connections.get(event.connectionId);
        if (null == session)
        {
            return; // refused or already ended: the I/O agent is closing it
        }
        event.sessionId = session.id();
        switch (event.packetType)
        {
            case PacketType.PUBLISH: publishes.onPublish(event, session); break;
            case PacketType.SUBSCRIBE: subscriptions.onSubscribe(event, session, access.generation()); break;
            case PacketType.UNSUBSCRIBE: subscriptions.onUnsubscribe(event, session); break;
            case PacketType.PUBREL:
                if (ack.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                {
                    session.releasePubrel(ack.packetId()); // the inbound QoS 2 exchange ends
                }
                break;
            default:
                break;
        }
    }

    private void routeKind(final IngressEvent event)
    {
        switch (event.kind)
        {
            case IngressEvent.CONNECTION_LOST:
                ends.onConnectionEnd(event, true, epochs.limits());
                break;
            case IngressEvent.TICK:
                onTick(event);
                break;
            default:
                // only a DISCONNECT with reason 0x00 discards the will [MQTT-3.14.4-3]; 0x04 asks for it
                ends.onConnectionEnd(event, event.reasonCode != ReasonCode.NORMAL_DISCONNECTION, epochs.limits());
        }
    }

    private void onTick(final IngressEvent event)
    {
        if (routeShards.replicated() && expiry.poll(event.routeTimeMs) > 0)
        {
            gauges.run(); // the gauges move with expiry too
        }
        final Message will = ticks.takeWill();
        if (null != will)
        {
            event.sessionId = ticks.takeWillSession(); // whose delayed will it is: no longer pending in the store
            publishes.publishWill(event, will);
            return;
        }
        final SharedRedispatch.Entry entry = ticks.takeRedispatch();
        if (null != entry)
        {
            publishes.redispatch(event, entry);
            return;
        }
        subscriptions.sendRetainedPart(event, connections); // a part of a SUBSCRIBE's retained messages, if one is due
    }

    /**
     * The slot's output is committed: what it changed stands.
     */
    void committed(final IngressEvent event)
    {
        connects.moveStands(); // the move stands: a later failed slot must not undo it
        publishes.applyPending(event);
        if (event.kind == IngressEvent.TICK)
        {
            ticks.done(); // its message is on its way
        }
    }

    /**
     * A slot failed while routed or before: a CONNECT is not admitted, but the end of a connection still ends its
     * session, so nothing stays bound to a dead connection.
     */
    void abandon(final IngressEvent event)
    {
        connects.undoMove();
        publishes.clear(); // its changes were never applied
        event.resetRouting();
        if (event.kind == IngressEvent.TICK)
        {
            ticks.failed();
            return;
        }
        if (event.kind != IngressEvent.PACKET)
        {
            ends.onFailedEnd(event, epochs.limits());
        }
    }
}
