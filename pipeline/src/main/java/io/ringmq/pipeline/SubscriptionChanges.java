package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionMemory;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.subscription.SharedGroup;
import io.ringmq.pipeline.subscription.SharedSubscriptions;
import io.ringmq.pipeline.subscription.SubscriptionIndex;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.SubscriptionOptions;
import io.ringmq.protocol.TopicFilterList;
import org.agrona.DirectBuffer;

/**
 * The routing stage's SUBSCRIBE and UNSUBSCRIBE: the limits on filters ({@code --max-topic-length},
 * {@code --max-topic-levels}, {@code --max-subscriptions-per-client}), the subscription options and identifier, the
 * index a subscription goes in (the subscription index, or a shared subscription group for
 * {@code $share/{name}/{filter}}, also from 3.1.1 clients as an extension), the per-filter codes, and the retained
 * messages a subscription brings (as its Retain Handling says, none on a shared subscription): what fits in the
 * SUBACK's slot goes with it, the rest a part at a time on the routing stage's ticks ({@link RetainedLine}). Routing
 * stage only.
 */
final class SubscriptionChanges
{
    /** Steps of the retained store's walks one SUBSCRIBE, or one part of them, may take (a few milliseconds). */
    private static final long RETAINED_STEPS_PER_SUBSCRIBE = 1_000_000;
    /**
     * Steps one session's SUBSCRIBEs may take together in a {@value #RETAINED_WINDOW_MS} ms window: a client that
     * sends SUBSCRIBE after SUBSCRIBE over a large retained store takes at most a few percent of the routing thread;
     * walks past it wait for a later window. Before, 20,000 SUBSCRIBEs of {@code +/+/+} over 88,846 retained messages
     * (1 MB of them, 200 KB of SUBSCRIBEs) each walked a full budget, 5-11 ms, and no other client was served for 40 s.
     */
    static final long RETAINED_STEPS_PER_WINDOW = 2 * RETAINED_STEPS_PER_SUBSCRIBE;
    /**
     * Steps the sessions of one client address ({@code AddressKeys}; loopback only with {@code --limit-loopback}) may
     * take together in a window: a host with many connections takes two sessions' windows' worth of the routing
     * thread, not one per connection. Before, ten sessions each walking their window's budget took 1.2 s of routing
     * in one second (review of 0620ece).
     */
    static final long RETAINED_STEPS_PER_ADDRESS_WINDOW = 2 * RETAINED_STEPS_PER_WINDOW;
    /**
     * Steps all sessions' walks may take together in a window, whoever they are (10-15 % of the routing thread): 100
     * addresses, each sending 20 SUBSCRIBEs of {@code +/+/+/+/+} a second over 80,000 retained messages within their
     * own windows, held the routing thread at a full core, and every other client's messages waited up to 3.4 s (review
     * of d2d8785). Past it, walks wait for a later window, in turn.
     */
    static final long RETAINED_STEPS_ALL_WINDOW = 16 * RETAINED_STEPS_PER_SUBSCRIBE;
    /**
     * Steps each session's walks may take in a window however many the others took: a SUBSCRIBE of a few topics brings
     * its retained messages at once even while wildcard walks have spent the window.
     */
    static final long RETAINED_STEPS_EACH_WINDOW = 1_000;
    static final long RETAINED_WINDOW_MS = 1_000;

    private final SubscriptionIndex<Subscription> index;
    private final SharedSubscriptions<Subscription> shared;
    private final RetainedStore retained;
    private final RouteOutput.Writer output;
    private final BrokerCounters counters;
    private final SessionMemory memory;
    private final RoutingAccess access;
    /** The subscriptions whose retained messages go out in parts; null on a routing shard above 0 (it sends none). */
    private final RetainedLine line;
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final java.util.function.Predicate<Message> retainedVisitor = this::onRetained;
    private int maxSubscriptions;
    private int maxTopicLevels;
    private int maxTopicLength;
    /** --max-packet-size: what the routing log's entries have room for besides their retained messages. */
    private int maxPacketSize;
    /** --max-qos: a subscription asking more is granted this [MQTT-3.2.2-10]. */
    private int maxQos;
    private final int retainedBytesPerSubscribe;
    private java.util.Set<String> subscribeFilters = new java.util.HashSet<>();
    private long retainedSteps;
    /** Steps each session's walks took in the window under way; cleared as a window ends. */
    private final org.agrona.collections.Long2LongHashMap stepsThisWindow =
        new org.agrona.collections.Long2LongHashMap(0);
    /** Steps each limited address's sessions' walks took in the window under way; cleared as a window ends. */
    private final org.agrona.collections.Long2LongHashMap addressStepsThisWindow =
        new org.agrona.collections.Long2LongHashMap(0);
    /** Steps all sessions' walks took in the window under way. */
    private long allStepsThisWindow;
    /** When the window under way ends, by the monotonic clock ({@link System#nanoTime}, in ms). */
    private long windowEndMs = System.nanoTime() / 1_000_000;
    /** A walk that ended, for the next SUBSCRIBE to reuse. */
    private RetainedStore.Walk spareWalk;
    /** The bytes of retained messages the output under way may take: a SUBACK's, or a part's. */
    private int retainedLimit;
    /**
     * QoS 1 and 2 retained messages the output under way may still take: a SUBACK's, a quarter of its session's
     * queue; a part's, that and what its in-flight window has room for ({@link RetainedLine#reliableRoom}). The rest
     * go in later parts, as the client acknowledges, instead of passing {@code --max-queued} and being dropped.
     */
    private int reliableLeft;
    /** --max-queued-bytes: a quarter of it is what a QoS 1 or 2 SUBACK or part carries at most. */
    private long maxQueuedBytes;
    private int maxQueued;
    private int retainedGranted;
    private long retainedNowMs;
    private RoutingSession retainedFor;
    private final org.agrona.concurrent.UnsafeBuffer retainedTopic = new org.agrona.concurrent.UnsafeBuffer(0, 0);

    SubscriptionChanges(final BrokerContext context, final SubscriptionIndex<Subscription> index,
        final SharedSubscriptions<Subscription> shared, final RetainedStore retained, final RouteOutput.Writer output,
        final BrokerCounters counters, final SessionMemory memory, final RoutingAccess access, final RetainedLine line)
    {
        this.line = line;
        this.memory = memory;
        this.access = access;
        this.index = index;
        this.shared = shared;
        this.retained = retained;
        this.output = output;
        this.counters = counters;
        limits(context);
        this.retainedBytesPerSubscribe = BrokerContext.RETAINED_BYTES_PER_SUBSCRIBE;
    }

    /**
     * A SUBSCRIBE: each filter subscribed (or refused with its code), the retained messages it brings put in the
     * routing output.
     *
     * @param rulesGeneration the generation of the ACL rules routing holds: a verdict made under others is made
     *                        again with the session's rules.
     */
    void onSubscribe(final IngressEvent event, final RoutingSession session, final int rulesGeneration)
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
        final long address = event.addressKey;
        final long budget = null == line ? 0 : retainedBudget(session, address);
        retainedSteps = budget;
        retainedLimit = retainedBytesPerSubscribe;
        // a quarter of its queue, whatever delivery holds for it now: the SUBACK's messages depend on the SUBSCRIBE
        // alone, however far delivery is behind (the parts, on ticks, look at its window)
        reliableLeft = null == line ? Integer.MAX_VALUE : Math.max(1, maxQueued / 4);
        // the session's retained messages still going out in parts: this SUBSCRIBE's go behind them
        RetainedLine.Pending pending = null == line ? null : line.of(session.id(), event.connectionId);
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
            final int acl = event.aclGeneration == rulesGeneration || event.aclVerdict == IngressEvent.ACL_UNDECIDED ?
                event.aclFilter(i) : session.acl().classify(AccessControl.unshared(written));
            if (acl == io.ringmq.pipeline.auth.ClientAcl.DENIED)
            {
                // nothing it matches may be read: this filter only [MQTT-3.9.3-1]
                output.addGranted(v5 ? ReasonCode.NOT_AUTHORIZED : ReasonCode.V3_SUBACK_FAILURE);
                continue;
            }
            // a 3.1.1 bridge's No Local and Retain As Published, never on a shared subscription [MQTT-3.8.3-4]
            final int forced = session.forcedOptions() == 0 || io.ringmq.protocol.Topics.shareNameEnd(written) >= 0 ?
                0 : session.forcedOptions();
            final int options = granted(filters.options(i) | forced, session.maxQos());
            final int granted = SubscriptionOptions.qos(options);
            Subscription subscription = session.subscription(written);
            if (null == subscription && session.subscriptionCount() >= maxSubscriptions)
            {
                counters.increment(BrokerCounters.SUBSCRIPTIONS_REFUSED_LIMIT);
                // this filter only [MQTT-3.9.3-1]
                output.addGranted(v5 ? ReasonCode.QUOTA_EXCEEDED : ReasonCode.V3_SUBACK_FAILURE);
                continue;
            }
            final int refusal = null == subscription ? memory.filterRefusal(session, SessionMemory.subscriptionLength(
                written)) : SessionMemory.ROOM;
            if (refusal != SessionMemory.ROOM)
            {
                counters.increment(refusal);
                // it, or the sessions together, hold what they may: this filter only [MQTT-3.9.3-1]
                output.addGranted(v5 ? ReasonCode.QUOTA_EXCEEDED : ReasonCode.V3_SUBACK_FAILURE);
                continue;
            }
            final boolean isNew = null == subscription;
            if (isNew)
            {
                subscription = newSubscription(session, written);
                session.addSubscription(written, subscription);
            }
            subscription.update(options, event.subscriptionId);
            subscription.readChecked(acl != io.ringmq.pipeline.auth.ClientAcl.FULL); // only these pay per message
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
            // filter of this SUBSCRIBE (by shard 0 alone: the other shards' output is dropped)
            final int handling = SubscriptionOptions.retainHandling(options);
            if (null == line || handling == SubscriptionOptions.DO_NOT_SEND_RETAINED ||
                (handling == SubscriptionOptions.SEND_RETAINED_IF_NEW && !isNew) || !subscribeFilters.add(written))
            {
                continue; // what an earlier SUBSCRIBE of it still has to send goes on
            }
            if (null != pending)
            {
                line.forget(pending, subscription); // sent anew from the start: the rest of before not besides
            }
            if (null == pending && retainedSteps > 0)
            {
                final RetainedStore.Walk walk = retained.walk(written, spareWalk);
                spareWalk = null;
                walkRetained(session, subscription, walk);
                if (walk.done())
                {
                    spareWalk = walk; // the next SUBSCRIBE's
                    continue;
                }
                pending = line.open(session.id(), event.connectionId, address, monotonicMs());
                pending.walking = subscription;
                pending.walk = walk;
                counters.increment(BrokerCounters.RETAINED_IN_PARTS);
                continue;
            }
            if (null == pending)
            {
                pending = line.open(session.id(), event.connectionId, address, monotonicMs()); // the window is spent
            }
            pending.waiting.add(subscription); // in turn, behind what is still to go
            counters.increment(BrokerCounters.RETAINED_IN_PARTS);
        }
        countSteps(session, address, budget - retainedSteps);
    }

    /**
     * A tick: the next part of the retained messages of the first session in line whose turn it is, put in the
     * tick's output for its connection (the delivery shard sends them as a SUBSCRIBE's, RETAIN set
     * [MQTT-3.3.1-8]), each part from one subscription's walk, with that subscription's identifier. A subscription
     * gone since is not walked on [MQTT-3.10.4-2]; a session whose windows are spent waits for the next.
     *
     * @param connections the routing stage's sessions by connection: a record whose connection ended is dropped.
     */
    void sendRetainedPart(final IngressEvent event, final ByConnection<RoutingSession> connections)
    {
        if (null == line)
        {
            return;
        }
        final long nowMs = monotonicMs();
        final RetainedLine.Pending pending = line.next(nowMs, p ->
        {
            final RoutingSession bound = connections.get(p.connectionId);
            return null != bound && bound.id() == p.sessionId;
        });
        if (null == pending)
        {
            return;
        }
        final RoutingSession session = connections.get(pending.connectionId);
        final long budget = retainedBudget(session, pending.addressKey);
        retainedSteps = budget;
        retainedLimit = RetainedLine.PART_BYTES;
        reliableLeft = line.reliableRoom(session.id(), maxQueued);
        boolean served = false;
        try
        {
            sendPart(event, session, pending);
            served = true;
        }
        finally
        {
            countSteps(session, pending.addressKey, budget - retainedSteps);
            if (served)
            {
                line.sent(pending, output.retainedLength(), nowMs);
                line.served(pending, nowMs);
            }
            else
            {
                counters.increment(BrokerCounters.RETAINED_NOT_SENT); // a walk that threw is not gone on with
                line.drop(pending);
            }
        }
    }

    /**
     * Walks on within the part's steps until the part holds a subscription's messages, or nothing is left.
     */
    private void sendPart(final IngressEvent event, final RoutingSession session, final RetainedLine.Pending pending)
    {
        while (retainedSteps > 0)
        {
            if (null != pending.walk && session.subscription(pending.walking.filter()) != pending.walking)
            {
                line.endWalk(pending); // unsubscribed since [MQTT-3.10.4-2]
            }
            if (null == pending.walk)
            {
                final Subscription next = line.nextWaiting(pending);
                if (null == next)
                {
                    return;
                }
                if (session.subscription(next.filter()) != next)
                {
                    continue; // unsubscribed since [MQTT-3.10.4-2]
                }
                pending.walking = next;
                pending.walk = retained.walk(next.filter());
            }
            final Subscription subscription = pending.walking;
            final RetainedStore.Walk walk = pending.walk;
            event.sessionId = session.id();
            event.connectionId = pending.connectionId;
            event.agentIndex = session.agentIndex();
            event.subscriptionId = subscription.subscriptionId();
            event.drainSlot = pending.drainSlot;
            walkRetained(session, subscription, walk);
            if (walk.done())
            {
                line.endWalk(pending);
            }
            if (output.retainedCount() > 0)
            {
                return; // one subscription's part per tick: the tick carries one subscription identifier
            }
        }
    }

    /**
     * Walks a subscription's retained messages into the output, within {@link #retainedSteps} and
     * {@link #retainedLimit}.
     */
    private void walkRetained(final RoutingSession session, final Subscription subscription,
        final RetainedStore.Walk walk)
    {
        retainedGranted = SubscriptionOptions.qos(subscription.options());
        retainedFor = subscription.readChecked() ? session : null;
        retainedNowMs = System.currentTimeMillis();
        retainedSteps -= retained.resume(walk, retainedVisitor, retainedSteps);
    }

    private void countSteps(final RoutingSession session, final long address, final long steps)
    {
        if (steps > 0)
        {
            allStepsThisWindow += steps;
            stepsThisWindow.put(session.id(), stepsThisWindow.get(session.id()) + steps);
            if (address != io.ringmq.pipeline.auth.AddressKeys.NONE)
            {
                addressStepsThisWindow.put(address, addressStepsThisWindow.get(address) + steps);
            }
        }
    }

    private static long monotonicMs()
    {
        return System.nanoTime() / 1_000_000;
    }

    /**
     * @return the steps a SUBSCRIBE of {@code session} may walk: {@link #RETAINED_STEPS_PER_SUBSCRIBE}, or what its
     * window, its address's, or all sessions' (at least {@link #RETAINED_STEPS_EACH_WINDOW} of its own) has left, when
     * less.
     */
    private long retainedBudget(final RoutingSession session, final long address)
    {
        final long nowMs = monotonicMs(); // a wall clock set back cannot stretch a window
        if (nowMs - windowEndMs >= 0)
        {
            stepsThisWindow.clear(); // a window's counts go at its end: the map holds only sessions that walked since
            addressStepsThisWindow.clear();
            allStepsThisWindow = 0;
            windowEndMs = nowMs + RETAINED_WINDOW_MS;
        }
        final long addressLeft = address == io.ringmq.pipeline.auth.AddressKeys.NONE ? Long.MAX_VALUE :
            RETAINED_STEPS_PER_ADDRESS_WINDOW - addressStepsThisWindow.get(address);
        final long sessionSteps = stepsThisWindow.get(session.id());
        final long allLeft = Math.max(RETAINED_STEPS_ALL_WINDOW - allStepsThisWindow,
            RETAINED_STEPS_EACH_WINDOW - sessionSteps);
        return Math.min(Math.min(RETAINED_STEPS_PER_SUBSCRIBE, addressLeft),
            Math.min(RETAINED_STEPS_PER_WINDOW - sessionSteps, allLeft));
    }

    /**
     * Recovery: a stored subscription, indexed as its SUBSCRIBE indexed it (its limits were checked then).
     */
    void restore(final RoutingSession session, final String written, final int stored, final int subscriptionId)
    {
        final int options = granted(stored, 2); // kept under a larger --max-qos
        final Subscription subscription = newSubscription(session, written);
        session.addSubscription(written, subscription);
        subscription.update(options, subscriptionId);
        if (null == subscription.shareName())
        {
            index.subscribe(subscription.filter(), subscription, options);
        }
        else
        {
            subscribeShared(subscription);
        }
    }

    /**
     * @return the id of the group a shared subscription is a member of, or 0 when it is in none.
     */
    int sharedGroupId(final Subscription subscription)
    {
        final SharedGroup<Subscription> group = shared.group(subscription.shareName(), subscription.filter());
        return null == group ? 0 : group.id();
    }

    /**
     * @return a subscription of the session to a filter as the client wrote it: a {@code $share/{name}/{filter}}
     * is shared, in 5.0 and, as an extension, in 3.1.1.
     */
    private static Subscription newSubscription(final RoutingSession session, final String written)
    {
        final int nameEnd = io.ringmq.protocol.Topics.shareNameEnd(written);
        if (nameEnd < 0)
        {
            return new Subscription(session, written, null);
        }
        return new Subscription(session, written.substring(nameEnd + 1),
            written.substring(io.ringmq.protocol.Topics.SHARE_PREFIX.length(), nameEnd));
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
     * Adds one retained message to the output under way (a SUBACK's, or a part's).
     *
     * @return false, to stop the walk on this message (the first of the next part), once the output is full.
     */
    private boolean onRetained(final Message message)
    {
        if (message.isExpired(retainedNowMs))
        {
            return true; // an expired message is not sent [MQTT-3.3.2-5]
        }
        if (null != retainedFor && !retainedFor.acl().canRead(topicOf(message), 0, message.topic().length))
        {
            counters.increment(BrokerCounters.ACL_READ_FILTERED); // as a live message would be
            return true;
        }
        if (!access.sourceMayWrite(message))
        {
            counters.increment(BrokerCounters.RETAINED_SOURCE_REFUSED); // its publisher's right to it is gone
            return true;
        }
        final int qos = Math.min(message.qos(), retainedGranted);
        if (qos > 0 && reliableLeft <= 0 && output.retainedCount() > 0)
        {
            return false; // as much as its window and queue take: the rest in later parts, as the client acknowledges
        }
        if (output.addRetained(message, qos, qos == 0 ? retainedLimit :
            (int)Math.min(retainedLimit, Math.max(1, maxQueuedBytes / 4))))
        {
            reliableLeft -= qos > 0 ? 1 : 0;
            return true;
        }
        if (output.retainedCount() > 0)
        {
            return false; // the output is full: the walk stops on this message, the first of the next part
        }
        // an output that holds none takes one message over its limit: the routing log's entries have room for a
        // packet besides their retained messages
        if (output.addRetained(message, qos, retainedBytesPerSubscribe + maxPacketSize))
        {
            return true;
        }
        counters.increment(BrokerCounters.RETAINED_NOT_SENT); // larger than any packet now: passed over
        return true;
    }

    private org.agrona.concurrent.UnsafeBuffer topicOf(final Message message)
    {
        retainedTopic.wrap(message.topic());
        return retainedTopic;
    }

    /**
     * An UNSUBSCRIBE: each filter's subscription removed, with a reason code per filter for 5.0.
     */
    void onUnsubscribe(final IngressEvent event, final RoutingSession session)
    {
        if (subscribe.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        event.packetId = subscribe.packetId();
        final TopicFilterList filters = subscribe.filters();
        for (int i = 0; i < filters.count(); i++)
        {
            final Subscription subscription = session.removeSubscription(filters.filter(i).asString());
            if (null != subscription)
            {
                unindex(subscription);
                if (null != line)
                {
                    // none of the rest of its retained messages after the UNSUBACK [MQTT-3.10.4-2]
                    line.forget(line.of(session.id(), event.connectionId), subscription);
                }
            }
            // one reason code per filter in 5.0 [MQTT-3.11.3-1]
            output.addGranted(null != subscription ? ReasonCode.SUCCESS : ReasonCode.NO_SUBSCRIPTION_EXISTED);
        }
    }

    /**
     * Takes a subscription out of the index it is in (its session is discarded, or it unsubscribed).
     */
    void unindex(final Subscription subscription)
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
     * Takes the subscription and topic limits (at start and on a reload; the routing stage's thread): the next
     * SUBSCRIBE is judged by them, subscriptions held beyond them stay.
     */
    void limits(final BrokerContext context)
    {
        this.maxSubscriptions = context.limits().maxSubscriptionsPerClient();
        this.maxTopicLevels = context.limits().maxTopicLevels();
        this.maxTopicLength = context.limits().maxTopicLength();
        this.maxPacketSize = context.limits().maxPacketSize();
        this.maxQos = context.limits().maxQos();
        this.maxQueued = context.limits().maxQueued();
        this.maxQueuedBytes = context.limits().maxQueuedBytes();
    }

    /**
     * @param connectionMaxQos what its subscriber's listener allows ({@code max_qos}).
     * @return the subscription options with their QoS at most --max-qos and {@code connectionMaxQos}: what is
     * granted, kept and delivered at.
     */
    private int granted(final int options, final int connectionMaxQos)
    {
        final int max = Math.min(maxQos, connectionMaxQos);
        return SubscriptionOptions.qos(options) <= max ? options : (options & ~0x3) | max;
    }
}
