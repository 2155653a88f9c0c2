package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.Session;
import io.ringmq.pipeline.session.SessionStore;
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
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;


/**
 * The routing stage: owns the session registry, the subscription index and the retained store. It binds CONNECTs
 * to sessions (taking over a live one [MQTT-3.1.4-2]), applies SUBSCRIBE and UNSUBSCRIBE, stores retained
 * messages, turns a PUBLISH or a will into fan-out targets, and ends sessions with their connections.
 */
public final class RoutingStage implements Stage
{
    private final SessionStore sessions;
    private final Long2ObjectHashMap<Session> connections = new Long2ObjectHashMap<>();
    private final SubscriptionIndex<Session> index = new SubscriptionIndex<>();
    private final RetainedStore retained;
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer willTopic = new UnsafeBuffer(new byte[0]);
    private final SubscriptionIndex.Matcher<Session> matcher = this::onMatch;
    private final BrokerCounters counters;
    private final int maxInflight;
    private final int maxSubscriptions;
    private final SessionExpiry expiry;
    private IngressEvent current;
    private int generation;
    private int publishQos;
    private long assignedIds;

    public RoutingStage(final BrokerContext context, final BrokerCounters counters, final SessionStore sessions)
    {
        this.sessions = sessions;
        this.counters = counters;
        this.maxInflight = context.maxInflight();
        this.maxSubscriptions = context.maxSubscriptionsPerClient();
        this.retained = new RetainedStore(context.maxRetainedMessages(), context.maxRetainedBytes());
        this.expiry = new SessionExpiry(context.persistentClientExpirationMs(), this::expire);
    }

    public int doDutyCycle()
    {
        return expiry.poll(System.currentTimeMillis());
    }

    /**
     * A slot an earlier stage failed on: a CONNECT is not admitted, but the end of a connection still ends its
     * session, so nothing stays bound to a dead connection.
     */
    public void onFailed(final IngressEvent event, final boolean endOfBatch)
    {
        if (event.kind != IngressEvent.PACKET)
        {
            final Session session = connections.remove(event.connectionId);
            if (null != session)
            {
                endSession(session, event.connectionId);
            }
        }
        event.session = null;
        event.routed = false;
        event.targetCount = 0;
    }

    public void onEvent(final IngressEvent event, final boolean endOfBatch)
    {
        event.session = null; // routing's fields of the slot start empty: nothing of an earlier use survives
        event.routed = false;
        event.message = null;
        event.takeoverConnectionId = -1;
        event.sessionPresent = false;
        event.targetCount = 0;
        event.grantedCount = 0;
        switch (event.kind)
        {
            case IngressEvent.PACKET:
                if (event.packetType == PacketType.CONNECT)
                {
                    onConnect(event);
                    return;
                }
                event.session = connections.get(event.connectionId);
                if (null == event.session)
                {
                    return; // refused or already ended: the I/O agent is closing it
                }
                switch (event.packetType)
                {
                    case PacketType.PUBLISH: onPublish(event); break;
                    case PacketType.SUBSCRIBE: onSubscribe(event); break;
                    case PacketType.UNSUBSCRIBE: onUnsubscribe(event); break;
                    case PacketType.PUBREL:
                        if (ack.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                        {
                            event.session.awaitingPubrel().remove(ack.packetId());
                        } // the inbound QoS 2 exchange ends
                        break;
                    default:
                        break;
                }
                return;
            case IngressEvent.CONNECTION_LOST:
                onConnectionEnd(event, true);
                return;
            default:
                onConnectionEnd(event, false);
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
            return; // the I/O agent validated it; a corrupt slot is ignored, never thrown on
        }
        final boolean clean = connect.isCleanStart();
        String clientId = connect.clientId().asString();
        if (clientId.isEmpty())
        {
            clientId = "ringmq-" + Long.toHexString(System.nanoTime()) + "-" + (++assignedIds); // [MQTT-3.1.3-6]
        }
        final Session existing = sessions.find(clientId);
        Message takenOverWill = null;
        if (null != existing && existing.routingConnectionId() >= 0)
        {
            event.takeoverAgent = existing.routingAgentIndex();
            event.takeoverConnectionId = existing.routingConnectionId();
            connections.remove(existing.routingConnectionId());
            counters.increment(BrokerCounters.CONNECTIONS_TAKEN_OVER);
            takenOverWill = existing.will(); // its connection ends without DISCONNECT: the will goes out, as Mosquitto does
            existing.will(null);
            existing.routingConnection(-1, -1);
        }
        if (null != existing)
        {
            expiry.cancel(existing);
        }
        final Session session;
        if (null != existing && existing.isPersistent() && !clean)
        {
            session = existing;
            event.sessionPresent = true; // [MQTT-3.2.2-2]
        }
        else
        {
            if (null != existing)
            {
                discard(existing);
            }
            session = new Session(clientId, !clean, maxInflight);
            sessions.save(session);
        }
        session.routingConnection(event.agentIndex, event.connectionId);
        session.will(connect.hasWill() ? new Message(connect.willTopic().toByteArray(),
            connect.willPayload().toByteArray(), connect.willQos(), connect.isWillRetain()) : null);
        connections.put(event.connectionId, session);
        event.session = session;
        if (null != takenOverWill)
        {
            publishWill(event, takenOverWill); // delivery sends it after the new client's CONNACK
        }
    }

    private void onPublish(final IngressEvent event)
    {
        if (publish.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        final Session session = event.session;
        event.qos = publish.qos();
        event.packetId = publish.packetId();
        final Slice topic = publish.topic();
        final Slice payload = publish.payload();
        event.topicOffset = topic.offset();
        event.topicLength = topic.length();
        event.payloadOffset = payload.offset();
        event.payloadLength = payload.length();
        if (event.qos == 2 && !session.awaitingPubrel().add(event.packetId))
        {
            return; // a resent QoS 2 PUBLISH before PUBREL: answered with PUBREC again, not delivered twice
        }
        event.routed = true;
        if (publish.isRetain())
        {
            // [MQTT-3.3.1-5] store, replace, or with an empty payload clear [MQTT-3.3.1-10]
            retain(retained.put(topic.buffer(), topic.offset(), topic.length(),
                payload.buffer(), payload.offset(), payload.length(), event.qos));
        }
        fanOut(event, topic.buffer(), topic.offset(), topic.length(), event.qos);
        if (needsCopy(event))
        {
            event.message = new Message(topic.toByteArray(), payload.toByteArray(), event.qos, publish.isRetain());
        }
    }

    private void onSubscribe(final IngressEvent event)
    {
        if (subscribe.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.packetId = subscribe.packetId();
        final Session session = event.session;
        final TopicFilterList filters = subscribe.filters();
        for (int i = 0; i < filters.count(); i++)
        {
            final String filter = filters.filter(i).asString();
            final int granted = SubscriptionOptions.qos(filters.options(i));
            if (session.subscriptions().size() >= maxSubscriptions && !session.subscriptions().containsKey(filter))
            {
                counters.increment(BrokerCounters.SUBSCRIPTIONS_REFUSED_LIMIT);
                event.addGranted(ReasonCode.V3_SUBACK_FAILURE); // this filter only [MQTT-3.9.3-1]
                continue;
            }
            index.subscribe(filter, session, granted);
            session.subscriptions().put(filter, granted);
            event.addGranted(granted);
            // retained messages are sent for every new or replaced subscription [MQTT-3.3.1-6] [MQTT-3.8.4-3]
            retained.match(filter, message ->
            {
                event.retained.add(message);
                event.retainedQos.add(Math.min(message.qos(), granted));
            });
        }
    }

    private void onUnsubscribe(final IngressEvent event)
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
            index.unsubscribe(filter, event.session);
            event.session.subscriptions().remove(filter);
        }
    }

    private void onConnectionEnd(final IngressEvent event, final boolean lost)
    {
        final Session session = connections.remove(event.connectionId);
        if (null == session)
        {
            return;
        }
        event.session = session;
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
    private void endSession(final Session session, final long connectionId)
    {
        if (session.routingConnectionId() == connectionId)
        {
            session.routingConnection(-1, -1);
        }
        if (!session.isPersistent())
        {
            discard(session);
        }
        else if (session.routingConnectionId() < 0)
        {
            expiry.schedule(session, System.currentTimeMillis());
        }
    }

    private void expire(final Session session)
    {
        if (session.routingConnectionId() < 0 && sessions.find(session.clientId()) == session)
        {
            counters.increment(BrokerCounters.SESSIONS_EXPIRED);
            discard(session);
        }
    }

    private void retain(final int result)
    {
        if (result == RetainedStore.REFUSED_COUNT || result == RetainedStore.REFUSED_BYTES)
        {
            counters.increment(BrokerCounters.RETAINED_REFUSED_LIMIT); // still delivered live, just not kept
        }
    }

    private void publishWill(final IngressEvent event, final Message will)
    {
        willTopic.wrap(will.topic());
        if (will.retain())
        {
            final UnsafeBuffer payload = new UnsafeBuffer(will.payload());
            retain(retained.put(willTopic, 0, will.topic().length, payload, 0, will.payload().length, will.qos()));
        }
        event.routed = true;
        event.qos = will.qos();
        event.message = will;
        fanOut(event, willTopic, 0, will.topic().length, will.qos());
    }

    private void fanOut(final IngressEvent event, final DirectBuffer topic, final int offset, final int length,
        final int qos)
    {
        current = event;
        publishQos = qos;
        generation++;
        index.match(topic, offset, length, matcher);
        for (int i = 0; i < event.targetCount; i++)
        {
            event.targetQos[i] = event.targets[i].matchQos();
        }
        current = null;
    }

    private void onMatch(final Session session, final int options)
    {
        final int qos = Math.min(publishQos, SubscriptionOptions.qos(options));
        if (session.markMatched(generation, qos))
        {
            current.addTarget(session, qos);
        }
    }

    private static boolean needsCopy(final IngressEvent event)
    {
        for (int i = 0; i < event.targetCount; i++)
        {
            if (event.targetQos[i] > 0)
            {
                return true;
            }
        }
        return false;
    }

    private void discard(final Session session)
    {
        for (final String filter : session.subscriptions().keySet())
        {
            index.unsubscribe(filter, session);
        }
        session.subscriptions().clear();
        sessions.remove(session);
    }

    /**
     * @return the number of sessions known, online or not.
     */
    public int sessionCount()
    {
        return sessions.size();
    }

    public SubscriptionIndex<Session> index()
    {
        return index;
    }

    public String name()
    {
        return "route";
    }
}
