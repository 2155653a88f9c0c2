package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.subscription.SubscriptionIndex;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.SubscriptionOptions;
import io.ringmq.protocol.TopicFilterList;
import org.agrona.DirectBuffer;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The routing stage: owns the {@link SessionRegistry} (client id to session id, subscriptions, wills, expiry),
 * the subscription index and the retained store. It binds CONNECTs to sessions (taking over a live one
 * [MQTT-3.1.4-2]), applies SUBSCRIBE and UNSUBSCRIBE, stores retained messages, turns a PUBLISH or a will into
 * fan-out targets, and ends sessions with their connections.
 * <p>
 * Its verdict leaves as ids in the slot and, for anything of variable size (targets, return codes, discarded
 * sessions, a will, retained messages), one entry in its own {@link MessageLog}, written once per event through
 * {@link RouteOutput.Writer}. When the log has no room the event stays unconsumed and only its output is written
 * again on the next duty cycle; the stage never blocks.
 */
public final class RoutingStage implements Stage
{
    private final SessionRegistry sessions = new SessionRegistry();
    private final Long2ObjectHashMap<RoutingSession> connections = new Long2ObjectHashMap<>();
    private final SubscriptionIndex<RoutingSession> index = new SubscriptionIndex<>();
    private final RetainedStore retained;
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer willTopic = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willPayload = new UnsafeBuffer(0, 0);
    private final SubscriptionIndex.Matcher<RoutingSession> matcher = this::onMatch;
    private final RouteOutput.Writer output = new RouteOutput.Writer();
    private final MessageLog log;
    private final BrokerCounters counters;
    private final int maxSubscriptions;
    private final int maxTopicLevels;
    private final int maxTopicLength;
    private final int retainedBytesPerSubscribe;
    private final int maxSessions;
    private final SessionExpiry expiry;
    private final java.util.function.Predicate<Message> retainedVisitor = this::onRetained;
    /** Steps of the retained store's walks one SUBSCRIBE may take (a few milliseconds), whatever its filters. */
    private static final long RETAINED_STEPS_PER_SUBSCRIBE = 1_000_000;

    private java.util.Set<String> subscribeFilters = new java.util.HashSet<>();
    private long retainedSteps;
    private boolean retainedBudgetSpent;
    private int retainedGranted;
    private IngressEvent pending;
    private RoutingSession moved;
    private RoutingSession publishSession;
    private boolean publishRetain;
    private boolean publishPending;
    private int movedFrom;
    private int generation;
    private int publishQos;
    private long assignedIds;

    /**
     * @param log the routing stage's output log (this stage appends, the last stage releases).
     */
    public RoutingStage(final BrokerContext context, final BrokerCounters counters, final MessageLog log)
    {
        this.counters = counters;
        this.log = log;
        this.maxSubscriptions = context.maxSubscriptionsPerClient();
        this.maxTopicLevels = context.maxTopicLevels();
        this.maxTopicLength = context.maxTopicLength();
        this.retainedBytesPerSubscribe = BrokerContext.RETAINED_BYTES_PER_SUBSCRIBE;
        this.maxSessions = context.maxSessions();
        this.retained = new RetainedStore(context.maxRetainedMessages(), context.maxRetainedBytes());
        this.expiry = new SessionExpiry(context.persistentClientExpirationMs(), this::expire);
    }

    /**
     * Publishes the routing stage's levels as gauges, once per batch, so that $SYS, Prometheus and
     * {@code ringmq stat} read them without touching this stage's structures.
     */
    public void onBatchEnd()
    {
        counters.set(BrokerCounters.CLIENTS_CONNECTED, connections.size());
        counters.set(BrokerCounters.SESSIONS_CURRENT, sessions.size());
        counters.set(BrokerCounters.SUBSCRIPTIONS_CURRENT, index.size());
        counters.set(BrokerCounters.RETAINED_CURRENT, retained.size());
    }

    public int doDutyCycle()
    {
        final int expired = expiry.poll(System.currentTimeMillis());
        if (expired > 0)
        {
            onBatchEnd(); // the gauges move with expiry too, events or not
        }
        return expired;
    }

    public boolean onEvent(final IngressEvent event)
    {
        if (pending == event)
        {
            return commit(event); // processed already: only its output waits for room in the log
        }
        event.resetRouting();
        output.reset();
        moved = null;
        publishSession = null;
        publishRetain = false;
        publishPending = false;
        switch (event.kind)
        {
            case IngressEvent.PACKET:
                onPacket(event);
                break;
            case IngressEvent.CONNECTION_LOST:
                onConnectionEnd(event, true);
                break;
            default:
                onConnectionEnd(event, false);
        }
        return commit(event);
    }

    /**
     * A slot an earlier stage failed on: a CONNECT is not admitted, but the end of a connection still ends its
     * session, so nothing stays bound to a dead connection.
     */
    public void onFailed(final IngressEvent event)
    {
        if (pending == event)
        {
            pending = null;
        }
        if (null != moved) // set only while this event was being processed
        {
            moved.shard(movedFrom); // the move did not happen: its delivery half is still where it was
        }
        moved = null;
        publishSession = null; // its changes were never applied
        publishRetain = false;
        publishPending = false;
        event.resetRouting();
        if (event.kind != IngressEvent.PACKET)
        {
            final RoutingSession session = connections.remove(event.connectionId);
            if (null != session)
            {
                event.sessionId = session.id();
                endSession(session, event.connectionId);
            }
        }
    }

    private boolean commit(final IngressEvent event)
    {
        if (!writeOutput(event))
        {
            return false;
        }
        if (publishPending)
        {
            applyPublish(event);
        }
        return true;
    }

    private boolean writeOutput(final IngressEvent event)
    {
        final IntArrayList discarded = sessions.takeDiscarded();
        final int discardedCount = Math.min(discarded.size(), BrokerContext.DISCARDED_PER_ENTRY); // the rest: next
        final int length = output.length(discardedCount);
        if (length == 0)
        {
            pending = null;
            return true;
        }
        final long end = log.claim(length); // throws for an output larger than the log can ever hold: failed slot
        if (end < 0)
        {
            if (pending != event)
            {
                counters.increment(BrokerCounters.ROUTE_LOG_FULL);
            }
            pending = event;
            return false; // no room until the last stage releases older entries: try again next duty cycle
        }
        output.write(log.buffer(), log.indexOf(end, length), discarded, discardedCount, event);
        event.routeLogLength = length;
        event.routeLogEnd = end;
        sessions.releaseDiscarded(discardedCount); // the shards learn of them in this entry: their ids may be reused
        pending = null;
        return true;
    }

    private void onPacket(final IngressEvent event)
    {
        if (event.packetType == PacketType.CONNECT)
        {
            onConnect(event);
            return;
        }
        if (event.connectionId == IngressEvent.SYSTEM_CONNECTION)
        {
            if (event.packetType == PacketType.PUBLISH)
            {
                onPublish(event, null); // the broker's own ($SYS): no session, nobody to acknowledge
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
            case PacketType.PUBLISH: onPublish(event, session); break;
            case PacketType.SUBSCRIBE: onSubscribe(event, session); break;
            case PacketType.UNSUBSCRIBE: onUnsubscribe(event, session); break;
            case PacketType.PUBREL:
                if (ack.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                {
                    session.awaitingPubrel().remove(ack.packetId()); // the inbound QoS 2 exchange ends
                }
                break;
            default:
                break;
        }
    }

    private void onConnect(final IngressEvent event)
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
        String clientId = connect.clientId().asString();
        if (clientId.isEmpty())
        {
            clientId = "ringmq-" + Long.toHexString(System.nanoTime()) + "-" + (++assignedIds); // [MQTT-3.1.3-6]
        }
        final RoutingSession existing = sessions.find(clientId);
        Message takenOverWill = null;
        if (null != existing && existing.isOnline())
        {
            event.takeoverAgent = existing.agentIndex();
            event.takeoverConnectionId = existing.connectionId();
            connections.remove(existing.connectionId());
            counters.increment(BrokerCounters.CONNECTIONS_TAKEN_OVER);
            takenOverWill = existing.will(); // it ends without DISCONNECT: its will goes out, as Mosquitto does
            existing.will(null);
            existing.connection(IngressEvent.NONE, IngressEvent.NONE);
        }
        final RoutingSession session;
        if (null != existing && existing.isPersistent() && !clean)
        {
            session = existing;
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
                discard(existing);
            }
            else if (sessions.size() >= maxSessions)
            {
                counters.increment(BrokerCounters.SESSIONS_REFUSED_LIMIT); // its shard refuses it: no session
                return;
            }
            session = sessions.create(clientId, !clean, event.agentIndex);
            event.sessionNew = true;
        }
        session.connection(event.agentIndex, event.connectionId);
        session.will(connect.hasWill() ? new Message(connect.willTopic().toByteArray(),
            connect.willPayload().toByteArray(), connect.willQos(), connect.isWillRetain()) : null);
        connections.put(event.connectionId, session);
        event.sessionId = session.id();
        if (null != takenOverWill)
        {
            publishWill(event, takenOverWill); // its shard sends it after the new client's CONNACK
        }
    }

    private void onPublish(final IngressEvent event, final RoutingSession session)
    {
        if (publish.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.qos = publish.qos();
        event.packetId = publish.packetId();
        final Slice topic = publish.topic();
        final Slice payload = publish.payload();
        event.topicOffset = topic.offset();
        event.topicLength = topic.length();
        event.payloadOffset = payload.offset();
        event.payloadLength = payload.length();
        if (null != session && isSys(topic))
        {
            counters.increment(BrokerCounters.SYS_PUBLISH_REFUSED); // $SYS is the broker's: read-only for clients
            return; // acknowledged as usual, routed nowhere, stored nowhere
        }
        if (event.qos == 2 && null != session && session.awaitingPubrel().contains(event.packetId))
        {
            return; // a resent QoS 2 PUBLISH before PUBREL: answered with PUBREC again, not delivered twice
        }
        event.routed = true;
        fanOut(topic.buffer(), topic.offset(), topic.length(), event.qos);
        // what the PUBLISH changes is applied only once its output is committed: a failed slot changes nothing
        publishSession = session;
        publishRetain = publish.isRetain();
        publishPending = true;
    }

    /**
     * @return whether a topic name is in the broker's own tree, {@code $SYS} (as Mosquitto, read-only for clients).
     */
    private static boolean isSys(final Slice topic)
    {
        final DirectBuffer buffer = topic.buffer();
        final int at = topic.offset();
        return topic.length() >= 4 && buffer.getByte(at) == '$' && buffer.getByte(at + 1) == 'S' &&
            buffer.getByte(at + 2) == 'Y' && buffer.getByte(at + 3) == 'S' &&
            (topic.length() == 4 || buffer.getByte(at + 4) == '/');
    }

    /**
     * Applies a routed PUBLISH's changes to routing state, after its output is committed.
     */
    private void applyPublish(final IngressEvent event)
    {
        if (event.qos == 2 && null != publishSession)
        {
            publishSession.awaitingPubrel().add(event.packetId);
        }
        if (publishRetain)
        {
            // [MQTT-3.3.1-5] store, replace, or with an empty payload clear [MQTT-3.3.1-10]
            retain(retained.put(event.packet, event.topicOffset, event.topicLength, event.packet,
                event.payloadOffset, event.payloadLength, event.qos, null == publishSession)); // $SYS: exempt
        }
        publishSession = null;
        publishRetain = false;
        publishPending = false;
    }

    private void onSubscribe(final IngressEvent event, final RoutingSession session)
    {
        if (subscribe.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.packetId = subscribe.packetId();
        final TopicFilterList filters = subscribe.filters();
        retainedBudgetSpent = false;
        retainedSteps = RETAINED_STEPS_PER_SUBSCRIBE;
        if (subscribeFilters.size() > 1024)
        {
            subscribeFilters = new java.util.HashSet<>(); // a huge SUBSCRIBE's set is not kept
        }
        subscribeFilters.clear();
        for (int i = 0; i < filters.count(); i++)
        {
            final Slice filterBytes = filters.filter(i);
            if (filterBytes.length() > maxTopicLength || levels(filterBytes) > maxTopicLevels)
            {
                counters.increment(BrokerCounters.TOPIC_FILTERS_REFUSED);
                output.addGranted(ReasonCode.V3_SUBACK_FAILURE); // as deep as a topic may be, and no deeper
                continue;
            }
            final String filter = filterBytes.asString();
            final int granted = SubscriptionOptions.qos(filters.options(i));
            if (session.subscriptions().size() >= maxSubscriptions && !session.subscriptions().containsKey(filter))
            {
                counters.increment(BrokerCounters.SUBSCRIPTIONS_REFUSED_LIMIT);
                output.addGranted(ReasonCode.V3_SUBACK_FAILURE); // this filter only [MQTT-3.9.3-1]
                continue;
            }
            index.subscribe(filter, session, granted);
            session.subscriptions().put(filter, granted);
            output.addGranted(granted);
            // retained messages are sent for every new or replaced subscription [MQTT-3.3.1-6] [MQTT-3.8.4-3],
            // once per distinct filter of this SUBSCRIBE, and only as far as its budget goes: past it the walk stops
            if (!retainedBudgetSpent && subscribeFilters.add(filter))
            {
                retainedGranted = granted;
                retainedSteps -= retained.matchWhile(filter, retainedVisitor, retainedSteps);
                if (retainedSteps < 0 && !retainedBudgetSpent)
                {
                    counters.increment(BrokerCounters.RETAINED_NOT_SENT); // the walk's budget is spent
                    retainedBudgetSpent = true;
                }
            }
        }
    }

    private static int levels(final Slice topic)
    {
        int levels = 1;
        final DirectBuffer buffer = topic.buffer();
        for (int i = topic.offset(), end = topic.offset() + topic.length(); i < end; i++)
        {
            if (buffer.getByte(i) == '/')
            {
                levels++;
            }
        }
        return levels;
    }

    /**
     * Adds one retained message to the SUBSCRIBE's output.
     *
     * @return false, to stop the walk, once the SUBSCRIBE's retained budget is spent.
     */
    private boolean onRetained(final Message message)
    {
        willTopic.wrap(message.topic());
        willPayload.wrap(message.payload());
        if (output.addRetained(Math.min(message.qos(), retainedGranted), willTopic, 0, message.topic().length,
            willPayload, 0, message.payload().length, retainedBytesPerSubscribe))
        {
            return true;
        }
        counters.increment(BrokerCounters.RETAINED_NOT_SENT);
        retainedBudgetSpent = true;
        return false;
    }

    private void onUnsubscribe(final IngressEvent event, final RoutingSession session)
    {
        if (subscribe.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.packetId = subscribe.packetId();
        final TopicFilterList filters = subscribe.filters();
        for (int i = 0; i < filters.count(); i++)
        {
            final String filter = filters.filter(i).asString();
            index.unsubscribe(filter, session);
            session.subscriptions().remove(filter);
        }
    }

    private void onConnectionEnd(final IngressEvent event, final boolean lost)
    {
        final RoutingSession session = connections.remove(event.connectionId);
        if (null == session)
        {
            return;
        }
        event.sessionId = session.id();
        final Message will = session.will();
        session.will(null); // a will is published once, and never after DISCONNECT [MQTT-3.1.2-10]
        if (lost && null != will)
        {
            publishWill(event, will);
        }
        endSession(session, event.connectionId);
    }

    /**
     * The connection of a session ended: a clean session goes, a persistent one waits for its client until it
     * expires.
     */
    private void endSession(final RoutingSession session, final long connectionId)
    {
        if (session.connectionId() == connectionId)
        {
            session.connection(IngressEvent.NONE, IngressEvent.NONE);
        }
        if (!session.isPersistent())
        {
            discard(session);
        }
        else if (!session.isOnline())
        {
            expiry.schedule(session, System.currentTimeMillis());
        }
    }

    private void expire(final RoutingSession session)
    {
        if (!session.isOnline() && sessions.find(session.clientId()) == session)
        {
            counters.increment(BrokerCounters.SESSIONS_EXPIRED);
            discard(session); // its shard forgets it with the next event's output
        }
    }

    private void publishWill(final IngressEvent event, final Message will)
    {
        willTopic.wrap(will.topic());
        willPayload.wrap(will.payload());
        if (will.retain())
        {
            retain(retained.put(willTopic, 0, will.topic().length, willPayload, 0, will.payload().length,
                will.qos()));
        }
        event.routed = true;
        event.qos = will.qos();
        output.message(will.qos(), willTopic, 0, will.topic().length, willPayload, 0, will.payload().length);
        fanOut(willTopic, 0, will.topic().length, will.qos());
    }

    private void retain(final int result)
    {
        if (result == RetainedStore.REFUSED_COUNT || result == RetainedStore.REFUSED_BYTES)
        {
            counters.increment(BrokerCounters.RETAINED_REFUSED_LIMIT); // still delivered live, just not kept
        }
    }

    private void fanOut(final DirectBuffer topic, final int offset, final int length, final int qos)
    {
        publishQos = qos;
        generation++;
        index.match(topic, offset, length, matcher);
    }

    private void onMatch(final RoutingSession session, final int options)
    {
        final int qos = Math.min(publishQos, SubscriptionOptions.qos(options));
        if (session.markMatched(generation, qos, output.targetCount()))
        {
            output.addTarget(session.id(), qos, session.shard(), 0); // subscription identifiers come with MQTT 5
        }
        else
        {
            output.targetQos(session.matchIndex(), session.matchQos()); // the highest QoS of its filters
        }
    }

    private void discard(final RoutingSession session)
    {
        expiry.cancel(session);
        for (final String filter : session.subscriptions().keySet())
        {
            index.unsubscribe(filter, session);
        }
        session.subscriptions().clear();
        sessions.discard(session);
    }

    /**
     * @return the number of sessions known, online or not.
     */
    public int sessionCount()
    {
        return sessions.size();
    }

    public SubscriptionIndex<RoutingSession> index()
    {
        return index;
    }

    public String name()
    {
        return "route";
    }
}
