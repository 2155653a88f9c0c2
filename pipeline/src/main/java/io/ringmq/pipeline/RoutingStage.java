package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.subscription.SharedSubscriptions;
import io.ringmq.pipeline.subscription.SubscriptionIndex;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.SubscriptionOptions;
import io.ringmq.protocol.TopicFilterList;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import com.lmax.disruptor.RingBuffer;

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
    private final SubscriptionIndex<Subscription> index = new SubscriptionIndex<>();
    private final RetainedStore retained;
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer willTopic = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willPayload = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willProperties = new UnsafeBuffer(0, 0);
    private final ExpandableArrayBuffer propertyScratch = new ExpandableArrayBuffer(256);
    private final SubscriptionIndex.Matcher<Subscription> matcher = this::onMatch;
    private final SharedSubscriptions<Subscription> shared;
    private final SharedSubscriptions.Matcher<Subscription> sharedMatcher = this::onSharedMatch;
    private final SharedSubscriptions.Chooser<Subscription> chooser;
    private final java.util.ArrayDeque<Message> dueWills = new java.util.ArrayDeque<>();
    private final java.util.ArrayDeque<SharedRedispatch.Entry> dueRedispatch = new java.util.ArrayDeque<>();
    private final SharedRedispatch redispatch;
    private final RingBuffer<IngressEvent> ring;
    private final BrokerContext context;
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
    private long retainedNowMs;
    private IngressEvent pending;
    private RoutingSession moved;
    private RoutingSession publishSession;
    private RoutingSession publisher;
    private boolean tickPending;
    private boolean tickWill;
    private boolean tickRedispatch;
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
        this(context, counters, log, null, new SessionWindows(1), new SharedRedispatch());
    }

    /**
     * @param ring the ingress ring, where this stage puts a {@link IngressEvent#TICK} when a delayed will is due
     *             (null, for tests of the stage alone: delayed wills are never published).
     * @param windows    the delivery shards' in-flight room per session, for the least-loaded shared strategy.
     * @param redispatch where the shards hand back a leaving shared subscriber's unacknowledged messages.
     */
    public RoutingStage(final BrokerContext context, final BrokerCounters counters, final MessageLog log,
        final RingBuffer<IngressEvent> ring, final SessionWindows windows, final SharedRedispatch redispatch)
    {
        this.redispatch = redispatch;
        this.shared = new SharedSubscriptions<>(context.sharedSubscriptionStrategy());
        this.chooser = new SharedSubscriptions.Chooser<>()
        {
            public boolean isOnline(final Subscription member)
            {
                return member.session().isOnline();
            }

            public int freeWindow(final Subscription member)
            {
                return windows.free(member.session().id());
            }

            public int clientHash(final Subscription member)
            {
                return member.session().clientId().hashCode();
            }
        };
        this.context = context;
        this.ring = ring;
        this.counters = counters;
        this.log = log;
        this.maxSubscriptions = context.maxSubscriptionsPerClient();
        this.maxTopicLevels = context.maxTopicLevels();
        this.maxTopicLength = context.maxTopicLength();
        this.retainedBytesPerSubscribe = BrokerContext.RETAINED_BYTES_PER_SUBSCRIBE;
        this.maxSessions = context.maxSessions();
        this.retained = new RetainedStore(context.maxRetainedMessages(), context.maxRetainedBytes());
        output.maxTargets(context.maxSessions()); // the routing log holds a target per session, no more
        this.expiry = new SessionExpiry(this::expire, this::willDue);
    }

    /**
     * Publishes the routing stage's levels as gauges, once per batch, so that $SYS, Prometheus and
     * {@code ringmq stat} read them without touching this stage's structures.
     */
    public void onBatchEnd()
    {
        counters.set(BrokerCounters.CLIENTS_CONNECTED, connections.size());
        counters.set(BrokerCounters.SESSIONS_CURRENT, sessions.size());
        counters.set(BrokerCounters.SUBSCRIPTIONS_CURRENT, index.size() + shared.size());
        counters.set(BrokerCounters.RETAINED_CURRENT, retained.size());
    }

    public int doDutyCycle()
    {
        final int expired = expiry.poll(System.currentTimeMillis());
        if (expired > 0)
        {
            onBatchEnd(); // the gauges move with expiry too, events or not
        }
        int taken = 0;
        SharedRedispatch.Entry entry;
        while (taken < 1_024 && null != (entry = redispatch.poll()))
        {
            dueRedispatch.add(entry);
            taken++;
        }
        if ((!dueWills.isEmpty() || !dueRedispatch.isEmpty()) && !tickPending)
        {
            requestTick();
        }
        return expired + taken;
    }

    /**
     * Puts a {@link IngressEvent#TICK} on the ingress ring, which carries a due will through the stages after this
     * one; when the ring is full it is tried again next duty cycle (never blocks: this stage gates the ring too).
     */
    private void requestTick()
    {
        if (null == ring)
        {
            return;
        }
        final long sequence;
        try
        {
            sequence = ring.tryNext();
        }
        catch (final com.lmax.disruptor.InsufficientCapacityException ex)
        {
            return;
        }
        ring.get(sequence).end(IngressEvent.TICK, 0, IngressEvent.SYSTEM_CONNECTION, MqttVersion.V5);
        ring.publish(sequence);
        tickPending = true;
    }

    public boolean hasPendingWork()
    {
        return null != ring && !tickPending &&
            (!dueWills.isEmpty() || !dueRedispatch.isEmpty() || !redispatch.isEmpty());
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
        publisher = null;
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
            case IngressEvent.TICK:
                onTick(event);
                break;
            default:
                // only a DISCONNECT with reason 0x00 discards the will [MQTT-3.14.4-3]; 0x04 asks for it
                onConnectionEnd(event, event.reasonCode != ReasonCode.NORMAL_DISCONNECTION);
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
        publisher = null;
        publishSession = null; // its changes were never applied
        publishRetain = false;
        publishPending = false;
        event.resetRouting();
        if (event.kind == IngressEvent.TICK)
        {
            tickPending = false;
            if (tickWill)
            {
                tickWill = false;
                dueWills.poll(); // a will routing failed on is dropped (its error is logged), not retried forever
            }
            if (tickRedispatch)
            {
                tickRedispatch = false;
                dueRedispatch.poll();
            }
            return;
        }
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
        if (tickWill)
        {
            tickWill = false;
            dueWills.poll(); // the will is on its way
        }
        if (tickRedispatch)
        {
            tickRedispatch = false;
            dueRedispatch.poll();
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
        final long expirySeconds = context.sessionExpiryFor(connect);
        String clientId = connect.clientId().asString();
        if (clientId.isEmpty())
        {
            clientId = "ringmq-" + Long.toHexString(System.nanoTime()) + "-" + (++assignedIds); // [MQTT-3.1.3-6]
            if (event.version == MqttVersion.V5)
            {
                output.assignedClientId(clientId.getBytes(java.nio.charset.StandardCharsets.UTF_8)); // [MQTT-3.2.2-16]
            }
        }
        final RoutingSession existing = sessions.find(clientId);
        Message endedWill = null;
        if (null != existing && existing.isOnline())
        {
            event.takeoverAgent = existing.agentIndex();
            event.takeoverConnectionId = existing.connectionId();
            event.takeoverVersion = existing.version(); // its shard may no longer hold its session to ask
            connections.remove(existing.connectionId());
            counters.increment(BrokerCounters.CONNECTIONS_TAKEN_OVER);
            // it ends without DISCONNECT: its will goes out, as Mosquitto does, unless it is delayed and its session
            // is resumed right here, within the delay [MQTT-3.1.3-9]
            if (null != existing.will() && (existing.willDelaySeconds() == 0 || clean || !existing.isPersistent()))
            {
                endedWill = willToPublish(existing);
            }
            existing.will(null);
            existing.connection(IngressEvent.NONE, IngressEvent.NONE);
        }
        else if (null != existing && null != existing.will())
        {
            // a delayed will of an offline session: a reconnect within the delay cancels it [MQTT-3.1.3-9], a
            // clean start ends the session, which publishes it
            expiry.cancelWill(existing);
            endedWill = clean || !existing.isPersistent() ? willToPublish(existing) : null;
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
                discard(existing);
            }
            else if (sessions.size() >= maxSessions)
            {
                counters.increment(BrokerCounters.SESSIONS_REFUSED_LIMIT); // its shard refuses it: no session
                return;
            }
            session = sessions.create(clientId, expirySeconds, event.agentIndex);
            event.sessionNew = true;
        }
        session.connection(event.agentIndex, event.connectionId);
        session.version(event.version);
        setWill(session);
        connections.put(event.connectionId, session);
        event.sessionId = session.id();
        if (null != endedWill)
        {
            publishWill(event, endedWill); // its shard sends it after the new client's CONNACK
        }
    }

    /**
     * Keeps the CONNECT's will with its session: topic, payload, the properties that travel with it, its delay
     * and expiry interval.
     */
    private void setWill(final RoutingSession session)
    {
        if (!connect.hasWill())
        {
            session.will(null);
            session.willDelaySeconds(0);
            return;
        }
        byte[] properties = NO_BYTES;
        long expirySeconds = -1;
        long delaySeconds = 0;
        if (connect.protocolLevel() == MqttVersion.V5 && !connect.willProperties().isEmpty())
        {
            final io.ringmq.protocol.MqttProperties will = connect.willProperties();
            expirySeconds = will.longValue(PropertyId.MESSAGE_EXPIRY_INTERVAL, -1);
            delaySeconds = will.longValue(PropertyId.WILL_DELAY_INTERVAL, 0);
            propertyScratch.checkLimit(will.sectionLength());
            will.encode(propertyScratch, 0);
            final int start = MessageProperties.sectionStart(propertyScratch, 0);
            final int length = MessageProperties.sectionLength(propertyScratch, 0);
            properties = new byte[MessageProperties.forwardableLength(propertyScratch, start, length)];
            MessageProperties.copyForwardable(propertyScratch, start, length, new UnsafeBuffer(properties), 0);
        }
        // the expiry interval counts from publication: kept relative here (negative), made absolute when published
        session.will(new Message(connect.willTopic().toByteArray(), connect.willPayload().toByteArray(),
            connect.willQos(), connect.isWillRetain(), properties, expirySeconds < 0 ? Message.NEVER :
            -expirySeconds - 1));
        session.willDelaySeconds(delaySeconds);
    }

    /**
     * @return the session's will as it is published now: its expiry interval starts counting [MQTT-3.3.2-5].
     */
    private static Message willToPublish(final RoutingSession session)
    {
        final Message will = session.will();
        if (will.expiresAtMs() >= 0)
        {
            return will;
        }
        final long seconds = -will.expiresAtMs() - 1;
        return new Message(will.topic(), will.payload(), will.qos(), will.retain(), will.properties(),
            System.currentTimeMillis() + seconds * 1000);
    }

    private static final byte[] NO_BYTES = new byte[0];

    private void onPublish(final IngressEvent event, final RoutingSession session)
    {
        if (publish.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.qos = publish.qos();
        event.packetId = publish.packetId();
        event.retain = publish.isRetain();
        final Slice topic = publish.topic();
        final Slice payload = publish.payload();
        event.topicOffset = topic.offset();
        event.topicLength = topic.length();
        event.payloadOffset = payload.offset();
        event.payloadLength = payload.length();
        if (publish.propertiesLength() > 0)
        {
            event.propertiesOffset = MessageProperties.sectionStart(event.packet, publish.propertiesOffset());
            event.propertiesLength = MessageProperties.sectionLength(event.packet, publish.propertiesOffset());
        }
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
        publisher = session;
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
            // [MQTT-3.3.1-5] store, replace, or with an empty payload clear [MQTT-3.3.1-10]; with the properties
            // that travel with it and when it expires [MQTT-3.3.2-5]
            final int propertiesLength = event.propertiesLength == 0 ? 0 : MessageProperties.copyForwardable(
                event.packet, event.propertiesOffset, event.propertiesLength, scratch(event.propertiesLength), 0);
            final long expirySeconds = event.propertiesLength == 0 ? -1 :
                MessageProperties.messageExpiry(event.packet, event.propertiesOffset, event.propertiesLength);
            retain(retained.put(event.packet, event.topicOffset, event.topicLength, event.packet,
                event.payloadOffset, event.payloadLength, event.qos, null == publishSession, // $SYS: exempt
                propertyScratch, 0, propertiesLength,
                expirySeconds < 0 ? Message.NEVER : System.currentTimeMillis() + expirySeconds * 1000));
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
        final boolean v5 = event.version == MqttVersion.V5;
        event.packetId = subscribe.packetId();
        if (v5 && subscribe.properties().subscriptionIdentifierCount() > 0)
        {
            event.subscriptionId = subscribe.properties().subscriptionIdentifier(0); // one per SUBSCRIBE
        }
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
                // as deep as a topic may be, and no deeper
                output.addGranted(v5 ? ReasonCode.TOPIC_FILTER_INVALID : ReasonCode.V3_SUBACK_FAILURE);
                continue;
            }
            final String written = filterBytes.asString();
            final int options = filters.options(i);
            final int granted = SubscriptionOptions.qos(options);
            Subscription subscription = session.subscriptions().get(written);
            if (null == subscription && session.subscriptions().size() >= maxSubscriptions)
            {
                counters.increment(BrokerCounters.SUBSCRIPTIONS_REFUSED_LIMIT);
                // this filter only [MQTT-3.9.3-1]
                output.addGranted(v5 ? ReasonCode.QUOTA_EXCEEDED : ReasonCode.V3_SUBACK_FAILURE);
                continue;
            }
            final boolean isNew = null == subscription;
            if (isNew)
            {
                subscription = newSubscription(session, written);
                session.subscriptions().put(written, subscription);
            }
            subscription.update(options, event.subscriptionId);
            if (null == subscription.shareName())
            {
                index.subscribe(subscription.filter(), subscription, options);
            }
            else
            {
                subscribeShared(subscription);
            }
            output.addGranted(granted);
            if (null != subscription.shareName())
            {
                continue; // retained messages are not sent on a shared subscription (5.0 section 4.8.2)
            }
            // retained messages are sent for every new or replaced subscription [MQTT-3.3.1-6] [MQTT-3.8.4-3],
            // as its Retain Handling says [MQTT-3.3.1-9] [MQTT-3.3.1-10] [MQTT-3.3.1-11], once per distinct
            // filter of this SUBSCRIBE, and only as far as its budget goes: past it the walk stops
            final int handling = SubscriptionOptions.retainHandling(options);
            if (handling == SubscriptionOptions.DO_NOT_SEND_RETAINED ||
                (handling == SubscriptionOptions.SEND_RETAINED_IF_NEW && !isNew))
            {
                continue;
            }
            if (!retainedBudgetSpent && subscribeFilters.add(written))
            {
                retainedGranted = granted;
                retainedNowMs = System.currentTimeMillis();
                retainedSteps -= retained.matchWhile(written, retainedVisitor, retainedSteps);
                if (retainedSteps < 0 && !retainedBudgetSpent)
                {
                    counters.increment(BrokerCounters.RETAINED_NOT_SENT); // the walk's budget is spent
                    retainedBudgetSpent = true;
                }
            }
        }
    }

    /**
     * @return a subscription of the session to a filter as the client wrote it: a {@code $share/{name}/{filter}}
     * is shared, in 5.0 and, as an extension, in 3.1.1.
     */
    private static Subscription newSubscription(final RoutingSession session, final String written)
    {
        if (written.startsWith(io.ringmq.protocol.Topics.SHARE_PREFIX))
        {
            final int nameEnd = written.indexOf('/', io.ringmq.protocol.Topics.SHARE_PREFIX.length());
            if (nameEnd > io.ringmq.protocol.Topics.SHARE_PREFIX.length() && nameEnd < written.length() - 1)
            {
                return new Subscription(session, written.substring(nameEnd + 1),
                    written.substring(io.ringmq.protocol.Topics.SHARE_PREFIX.length(), nameEnd));
            }
        }
        return new Subscription(session, written, null);
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
        if (message.isExpired(retainedNowMs))
        {
            return true; // an expired message is not sent [MQTT-3.3.2-5]
        }
        if (output.addRetained(message, Math.min(message.qos(), retainedGranted), retainedBytesPerSubscribe))
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
            final Subscription subscription = session.subscriptions().remove(filters.filter(i).asString());
            if (null != subscription)
            {
                unindex(subscription);
            }
            // one reason code per filter in 5.0 [MQTT-3.11.3-1]
            output.addGranted(null != subscription ? ReasonCode.SUCCESS : ReasonCode.NO_SUBSCRIPTION_EXISTED);
        }
    }

    private void unindex(final Subscription subscription)
    {
        if (null == subscription.shareName())
        {
            index.unsubscribe(subscription.filter(), subscription);
        }
        else
        {
            unsubscribeShared(subscription);
        }
    }

    private void onConnectionEnd(final IngressEvent event, final boolean publishWill)
    {
        final RoutingSession session = connections.remove(event.connectionId);
        if (null == session)
        {
            return;
        }
        event.sessionId = session.id();
        if (event.sessionExpiryInterval >= 0)
        {
            session.expirySeconds(context.sessionExpiryFor(event.sessionExpiryInterval)); // [MQTT-3.14.2-2]
        }
        final Message will = session.will();
        if (!publishWill || null == will)
        {
            session.will(null); // never after a DISCONNECT [MQTT-3.1.2-10]
        }
        else if (session.willDelaySeconds() == 0 || !session.isPersistent())
        {
            final Message now = willToPublish(session);
            session.will(null); // a will is published once: now, or when the session ends, if that comes first
            publishWill(event, now);
        }
        else
        {
            // published when the delay has passed or the session ends, whichever comes first [MQTT-3.1.3-9]
            expiry.scheduleWill(session, System.currentTimeMillis() +
                Math.min(session.willDelaySeconds(), session.expirySeconds()) * 1000);
        }
        endSession(session, event.connectionId);
    }

    /**
     * A delayed will is due: it goes out with the next {@link IngressEvent#TICK}.
     */
    private void willDue(final RoutingSession session)
    {
        if (null != session.will() && !session.isOnline())
        {
            dueWills.add(willToPublish(session));
            session.will(null);
        }
    }

    private void subscribeShared(final Subscription subscription)
    {
        shared.subscribe(subscription.shareName(), subscription.filter(), subscription, subscription.options(),
            subscription.subscriptionId());
    }

    private void unsubscribeShared(final Subscription subscription)
    {
        shared.unsubscribe(subscription.shareName(), subscription.filter(), subscription);
    }

    /**
     * One member of a shared subscription group was chosen for the message (5.0 section 4.8.2): a target of its
     * own, not folded with the session's other matches.
     */
    private void onSharedMatch(final Subscription subscription, final int options, final int subscriptionId)
    {
        final RoutingSession session = subscription.session();
        if (!output.addTarget(session.id(), Math.min(publishQos, SubscriptionOptions.qos(options)),
            SubscriptionOptions.retainAsPublished(options), session.shard(), subscriptionId, shared.matchingGroupId()))
        {
            counters.increment(BrokerCounters.FANOUT_TRUNCATED);
        }
    }

    private void onTick(final IngressEvent event)
    {
        tickPending = false;
        final Message will = dueWills.peek(); // taken off only once its output is committed
        if (null != will)
        {
            tickWill = true;
            publishWill(event, will);
            return;
        }
        final SharedRedispatch.Entry entry = dueRedispatch.peek();
        if (null != entry)
        {
            tickRedispatch = true;
            redispatch(event, entry);
        }
    }

    /**
     * Sends a message a leaving shared subscriber never acknowledged to another member of its group (5.0 section
     * 4.8.2), unless it has expired or the group is gone.
     */
    private void redispatch(final IngressEvent event, final SharedRedispatch.Entry entry)
    {
        final Message message = entry.message();
        if (message.isExpired(System.currentTimeMillis()))
        {
            counters.increment(BrokerCounters.MESSAGES_EXPIRED);
            return;
        }
        willTopic.wrap(message.topic());
        event.routed = true;
        event.qos = message.qos();
        output.message(message);
        publishQos = message.qos();
        publisher = null;
        if (shared.dispatch(entry.groupId(), willTopic, 0, message.topic().length, 0, chooser, sharedMatcher))
        {
            counters.increment(BrokerCounters.SHARED_REDISPATCHED);
        }
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
            willDue(session); // the session ends: its delayed will goes now [MQTT-3.1.3-9]
            discard(session); // its shard forgets it with the next event's output
        }
    }

    private void publishWill(final IngressEvent event, final Message will)
    {
        willTopic.wrap(will.topic());
        willPayload.wrap(will.payload());
        willProperties.wrap(will.properties());
        if (will.retain())
        {
            retain(retained.put(willTopic, 0, will.topic().length, willPayload, 0, will.payload().length,
                will.qos(), false, willProperties, 0, will.properties().length, will.expiresAtMs()));
        }
        event.routed = true;
        event.qos = will.qos();
        event.retain = will.retain();
        output.message(will);
        publisher = null; // no local concerns the publisher's own PUBLISHes, not its will
        fanOut(willTopic, 0, will.topic().length, will.qos());
    }

    private ExpandableArrayBuffer scratch(final int length)
    {
        propertyScratch.checkLimit(length);
        return propertyScratch;
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
        shared.match(topic, offset, length, null == publisher ? 0 : publisher.clientId().hashCode(), chooser,
            sharedMatcher);
    }

    private void onMatch(final Subscription subscription, final int indexedOptions)
    {
        final RoutingSession session = subscription.session();
        final int options = subscription.options();
        if (session == publisher && SubscriptionOptions.noLocal(options))
        {
            return; // not to the connection that published it [MQTT-3.8.3-3]
        }
        final int qos = Math.min(publishQos, SubscriptionOptions.qos(options));
        final boolean retainAsPublished = SubscriptionOptions.retainAsPublished(options);
        if (session.markMatched(generation, qos, output.targetCount()))
        {
            if (!output.addTarget(session.id(), qos, retainAsPublished, session.shard(),
                subscription.subscriptionId()))
            {
                session.markMatched(generation - 1, 0, 0); // left out: a later match must not point at it
                counters.increment(BrokerCounters.FANOUT_TRUNCATED);
            }
        }
        else
        {
            // once, at the highest QoS of its filters [MQTT-3.3.4-2], with each identifier [MQTT-3.3.4-3]
            output.targetFlags(session.matchIndex(), session.matchQos(), retainAsPublished);
            if (subscription.subscriptionId() > 0)
            {
                output.addTargetSubscriptionId(session.matchIndex(), subscription.subscriptionId());
            }
        }
    }

    private void discard(final RoutingSession session)
    {
        expiry.cancel(session);
        expiry.cancelWill(session);
        for (final Subscription subscription : session.subscriptions().values())
        {
            unindex(subscription);
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

    public SubscriptionIndex<Subscription> index()
    {
        return index;
    }

    public String name()
    {
        return "route";
    }
}
