package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionMemory;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.subscription.SharedSubscriptions;
import io.ringmq.pipeline.subscription.SubscriptionIndex;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscriptionOptions;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteOrder;

/**
 * The routing stage's fan-out: turns a PUBLISH from a client or the broker ($SYS), a will and a shared subscriber's
 * message handed back for re-dispatch into targets in the routing output (session id, granted QoS, subscription
 * identifiers, delivery shard), one per matching session [MQTT-3.3.4-2] and one per chosen member of each matching
 * shared subscription group (5.0 section 4.8.2), each read-checked against its subscriber's ACL when the
 * subscription is wider than what it may read ({@link RoutingAccess}). It is also what writes messages into the
 * retained store: a retained PUBLISH [MQTT-3.3.1-5], a retained will, and the retained messages recovery restores
 * (its limits are set by {@link RouteEpochs} on a reload).
 * <p>
 * What a routed PUBLISH changes (a QoS 2 packet id awaiting PUBREL, the retained store) is applied only once its
 * output is committed ({@link #applyPending}), so a failed slot changes nothing. The match state lives here, in
 * fields the index and the shared groups call back into through method references held once: nothing is allocated
 * per message. Routing stage only (its thread; recovery's before any stage runs).
 */
final class PublishFanOut
{
    private final SubscriptionIndex<Subscription> index;
    private final SharedSubscriptions<Subscription> shared;
    private final RetainedStore retained;
    private final RouteOutput.Writer output;
    private final RoutingAccess access;
    private final BrokerCounters counters;
    /** Shard 0's counters for what happens to sessions; muted on the other routing shards. */
    private final BrokerCounters sessionCounters;
    private final SessionMemory memory;
    private final PublishFlyweight publish = new PublishFlyweight();
    private final UnsafeBuffer willTopic = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willPayload = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willProperties = new UnsafeBuffer(0, 0);
    private final ExpandableArrayBuffer propertyScratch = new ExpandableArrayBuffer(256);
    private final SubscriptionIndex.Matcher<Subscription> matcher = this::onMatch;
    private final SharedSubscriptions.Matcher<Subscription> sharedMatcher = this::onSharedMatch;
    private final SharedSubscriptions.Chooser<Subscription> chooser;
    /** A routing shard above 0 replaying a slot shard 0 routes: no will goes out from here. */
    private boolean replaying;
    private long publishesRouted;
    private DirectBuffer matchTopic;
    private int matchOffset;
    private int matchLength;
    private RoutingSession publishSession;
    private RoutingSession publisher;
    private boolean publishRetain;
    /** Whether the retained store took the last retained message offered (the persistence stage keeps only those). */
    private boolean retainKept;
    private boolean publishPending;
    private int generation;
    private int publishQos;

    /**
     * @param windows the delivery shards' in-flight room per session, for the least-loaded shared strategy.
     */
    PublishFanOut(final SubscriptionIndex<Subscription> index, final SharedSubscriptions<Subscription> shared,
        final RetainedStore retained, final RouteOutput.Writer output, final RoutingAccess access,
        final BrokerCounters counters, final BrokerCounters sessionCounters, final SessionMemory memory,
        final SessionWindows windows)
    {
        this.index = index;
        this.shared = shared;
        this.retained = retained;
        this.output = output;
        this.access = access;
        this.counters = counters;
        this.sessionCounters = sessionCounters;
        this.memory = memory;
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
    }

    /**
     * A new slot, or one that failed: nothing routed yet, nothing to apply (a failed slot's changes never are).
     */
    void clear()
    {
        publisher = null;
        publishSession = null;
        publishRetain = false;
        publishPending = false;
    }

    /**
     * A routing shard above 0 replays the slots shard 0 routes: while it does, wills are shard 0's to publish.
     */
    void replaying(final boolean replaying)
    {
        this.replaying = replaying;
    }

    /**
     * @return the PUBLISHes this shard has routed (for tests: the shards share the work).
     */
    long publishesRouted()
    {
        return publishesRouted;
    }

    /**
     * A PUBLISH: its coordinates in the slot, then, unless it is refused or a resend, its targets.
     *
     * @param session its publisher's session; null for the broker's own ($SYS).
     */
    void onPublish(final IngressEvent event, final RoutingSession session)
    {
        final UnsafeBuffer packet = event.packet;
        if (!event.located)
        {
            // not laid out by the I/O agent (the broker's own $SYS messages, a topic alias resolved): validated
            // all the same, by the I/O agent or the broker
            publish.wrapValidated(packet, 0, event.packetLength, event.version);
            final Slice topic = publish.topic();
            final Slice payload = publish.payload();
            event.topicOffset = topic.offset();
            event.topicLength = topic.length();
            event.payloadOffset = payload.offset();
            event.payloadLength = payload.length();
        }
        // the packet identifier and properties lie between the topic and the payload
        final int first = packet.getByte(0);
        event.qos = PublishFlyweight.qosOf(first);
        event.retain = PublishFlyweight.isRetainOf(first);
        int pos = event.topicOffset + event.topicLength;
        if (event.qos > 0)
        {
            event.packetId = packet.getShort(pos, ByteOrder.BIG_ENDIAN) & 0xFFFF;
            pos += 2;
        }
        if (event.payloadOffset > pos) // 5.0: the property section, from its length
        {
            event.propertiesOffset = MessageProperties.sectionStart(packet, pos);
            event.propertiesLength = MessageProperties.sectionLength(packet, pos);
        }
        if (null != session && event.aclVerdict != IngressEvent.ACL_ALLOWED)
        {
            return; // the ACL (or $SYS, the broker's) refused it: acknowledged as the protocol says, routed nowhere
        }
        if (event.qos == 2 && null != session && session.awaitsPubrel(event.packetId))
        {
            return; // a resent QoS 2 PUBLISH before PUBREL: answered with PUBREC again, not delivered twice
        }
        final int refusal = event.qos == 2 && null != session ? memory.awaitedRefusal(session,
            SessionMemory.PUBREL_ID_LENGTH + SessionMemory.PUBREL_SET_LENGTH) : SessionMemory.ROOM;
        if (refusal != SessionMemory.ROOM)
        {
            // its packet id would be kept until PUBREL: 65,535 per session, in every session, without this
            event.overQuota = true;
            sessionCounters.increment(refusal);
            return;
        }
        event.routed = true;
        publishesRouted++;
        publisher = session;
        fanOut(packet, event.topicOffset, event.topicLength, event.qos);
        // what the PUBLISH changes is applied only once its output is committed: a failed slot changes nothing
        publishSession = session;
        publishRetain = event.retain;
        publishPending = true;
    }

    /**
     * Applies a routed PUBLISH's changes to routing state, after its output is committed (nothing when the slot
     * routed no PUBLISH).
     */
    void applyPending(final IngressEvent event)
    {
        if (!publishPending)
        {
            return;
        }
        if (event.qos == 2 && null != publishSession)
        {
            publishSession.awaitPubrel(event.packetId);
        }
        if (publishRetain)
        {
            // [MQTT-3.3.1-5] store, replace, or with an empty payload clear [MQTT-3.3.1-10]; with the properties
            // that travel with it and when it expires [MQTT-3.3.2-5]
            final int propertiesLength = event.propertiesLength == 0 ? 0 : MessageProperties.copyForwardable(
                event.packet, event.propertiesOffset, event.propertiesLength, scratch(event.propertiesLength), 0);
            final long expirySeconds = event.propertiesLength == 0 ? -1 :
                MessageProperties.messageExpiry(event.packet, event.propertiesOffset, event.propertiesLength);
            final MessageSource source = null == publishSession ? null : RoutingAccess.sourceOf(publishSession);
            retain(retained.put(event.packet, event.topicOffset, event.topicLength, event.packet,
                event.payloadOffset, event.payloadLength, event.qos, null == publishSession, // $SYS: exempt
                propertyScratch, 0, propertiesLength,
                expirySeconds < 0 ? Message.NEVER : System.currentTimeMillis() + expirySeconds * 1000, source));
            event.retainKept = retainKept;
            event.retainedSource = source;
        }
        publishSession = null;
        publishRetain = false;
        publishPending = false;
    }

    /**
     * Publishes a will in the slot's output (and keeps it, when retained).
     */
    void publishWill(final IngressEvent event, final Message will)
    {
        if (replaying)
        {
            return; // shard 0 publishes it (and keeps it when retained)
        }
        willTopic.wrap(will.topic());
        willPayload.wrap(will.payload());
        willProperties.wrap(will.properties());
        if (will.retain())
        {
            retain(retained.put(willTopic, 0, will.topic().length, willPayload, 0, will.payload().length,
                will.qos(), false, willProperties, 0, will.properties().length, will.expiresAtMs(), will.source()));
            event.retainKept = retainKept;
            event.retainedSource = will.source();
        }
        event.routed = true;
        event.qos = will.qos();
        event.retain = will.retain();
        output.message(will);
        publisher = null; // no local concerns the publisher's own PUBLISHes, not its will
        fanOut(willTopic, 0, will.topic().length, will.qos());
    }

    /**
     * Sends a message a leaving shared subscriber never acknowledged to another member of its group (5.0 section
     * 4.8.2), unless it has expired or the group is gone.
     */
    void redispatch(final IngressEvent event, final SharedRedispatch.Entry entry)
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
        matchTopic = willTopic;
        matchOffset = 0;
        matchLength = message.topic().length;
        if (shared.dispatch(entry.groupId(), willTopic, 0, message.topic().length, 0, chooser, sharedMatcher))
        {
            counters.increment(BrokerCounters.SHARED_REDISPATCHED);
        }
    }

    /**
     * Recovery, before any stage runs: a retained message as it was stored.
     *
     * @return whether the store kept it (false: past --max-retained, counted as refused).
     */
    boolean restoreRetained(final Message message)
    {
        final UnsafeBuffer topic = new UnsafeBuffer(message.topic());
        retain(retained.put(topic, 0, message.topic().length, new UnsafeBuffer(message.payload()), 0,
            message.payload().length, message.qos(), false, new UnsafeBuffer(message.properties()), 0,
            message.properties().length, message.expiresAtMs(), message.source()));
        return retainKept;
    }

    private ExpandableArrayBuffer scratch(final int length)
    {
        propertyScratch.checkLimit(length);
        return propertyScratch;
    }

    private void retain(final int result)
    {
        retainKept = result != RetainedStore.REFUSED_COUNT && result != RetainedStore.REFUSED_BYTES;
        if (result == RetainedStore.REFUSED_COUNT || result == RetainedStore.REFUSED_BYTES)
        {
            counters.increment(BrokerCounters.RETAINED_REFUSED_LIMIT); // still delivered live, just not kept
        }
    }

    private void fanOut(final DirectBuffer topic, final int offset, final int length, final int qos)
    {
        publishQos = qos;
        matchTopic = topic;
        matchOffset = offset;
        matchLength = length;
        generation++;
        index.match(topic, offset, length, matcher);
        if (shared.hasGroups()) // most brokers have none: then not even the publisher's hash
        {
            shared.match(topic, offset, length, null == publisher ? 0 : publisher.clientId().hashCode(), chooser,
                sharedMatcher);
        }
    }

    private void onMatch(final Subscription subscription, final int indexedOptions)
    {
        final RoutingSession session = subscription.session();
        final int options = subscription.options();
        if (session == publisher && SubscriptionOptions.noLocal(options))
        {
            return; // not to the connection that published it [MQTT-3.8.3-3]
        }
        if (!mayRead(subscription))
        {
            return;
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

    /**
     * One member of a shared subscription group was chosen for the message (5.0 section 4.8.2): a target of its
     * own, not folded with the session's other matches.
     */
    private void onSharedMatch(final Subscription subscription, final int options, final int subscriptionId)
    {
        final RoutingSession session = subscription.session();
        if (!mayRead(subscription))
        {
            return;
        }
        if (!output.addTarget(session.id(), Math.min(publishQos, SubscriptionOptions.qos(options)),
            SubscriptionOptions.retainAsPublished(options), session.shard(), subscriptionId, shared.matchingGroupId(),
            shared.matchingGroupKey()))
        {
            counters.increment(BrokerCounters.FANOUT_TRUNCATED);
        }
    }

    private boolean mayRead(final Subscription subscription)
    {
        return access.mayRead(subscription, matchTopic, matchOffset, matchLength);
    }
}
