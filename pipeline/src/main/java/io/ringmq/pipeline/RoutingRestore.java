package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.subscription.SharedGroup;

/**
 * What recovery puts back into a routing stage before any stage runs: persistent sessions (offline, their expiry and
 * delayed wills counting from when their clients went away), their subscriptions and inbound QoS 2 packet ids
 * awaiting PUBREL, and the retained messages. On routing shard 0 it fills the other shards alike, session id by
 * session id. Runs on recovery's thread; {@link #restored} hands the structures to the routing thread.
 */
final class RoutingRestore
{
    private final SessionRegistry sessions;
    private final SubscriptionChanges subscriptions;
    private final PublishFanOut publishes;
    private final SessionExpiry expiry;
    private final RoutingAccess access;
    private final int maxSessions;
    /** Publishes the routing stage's gauges. */
    private final Runnable gauges;
    /** Shard 0: the other shards, which recovery fills as it fills this one. */
    private RoutingRestore[] replicas = new RoutingRestore[0];

    /**
     * @param gauges publishes the routing stage's gauges, once recovery is over.
     */
    RoutingRestore(final SessionRegistry sessions, final SubscriptionChanges subscriptions,
        final PublishFanOut publishes, final SessionExpiry expiry, final RoutingAccess access, final int maxSessions,
        final Runnable gauges)
    {
        this.sessions = sessions;
        this.subscriptions = subscriptions;
        this.publishes = publishes;
        this.expiry = expiry;
        this.access = access;
        this.maxSessions = maxSessions;
        this.gauges = gauges;
    }

    /**
     * Shard 0 only, before any stage runs: the other routing shards' restores.
     */
    void replicas(final RoutingRestore[] replicas)
    {
        this.replicas = replicas;
    }

    /**
     * Recovery, before any stage runs: a persistent session as it was stored, offline, its expiry counted from when
     * its client went away (or from now, for one that was connected when the broker stopped), its will pending when
     * it was (or when its connection ended with the broker).
     *
     * @param disconnectedAtMs when its client went away; 0 when it was connected.
     * @return its session id, or {@link IngressEvent#NONE} past {@code --max-sessions}.
     */
    int restoreSession(final String clientId, final int version, final long expirySeconds, final Message will,
        final long willDelaySeconds, final long disconnectedAtMs, final boolean willPending, final long nowMs)
    {
        if (sessions.size() >= maxSessions || null != sessions.find(clientId))
        {
            return IngressEvent.NONE;
        }
        final RoutingSession session = sessions.create(clientId, expirySeconds, 0); // its shard: shard 0's
        for (final RoutingRestore replica : replicas)
        {
            final int same = replica.restoreSession(clientId, version, expirySeconds, will, willDelaySeconds,
                disconnectedAtMs, willPending, nowMs);
            if (same != session.id())
            {
                throw new IllegalStateException("routing shards restored " + clientId + " as " + session.id() +
                    " and " + same);
            }
        }
        session.version(version);
        access.restored(session);
        final long awayMs = disconnectedAtMs == 0 ? nowMs : disconnectedAtMs;
        if (null != will && (willPending || disconnectedAtMs == 0))
        {
            session.will(will);
            session.willDelaySeconds(willDelaySeconds);
            expiry.scheduleWill(session, awayMs + Math.min(willDelaySeconds, expirySeconds) * 1000);
        }
        expiry.schedule(session, awayMs);
        return session.id();
    }

    /**
     * Recovery: the user a restored session's client was admitted as, and the client id its rules were compiled
     * with, as stored at its last CONNECT: it is judged by its rules from now on, as if its client had just gone.
     */
    void restoreOwner(final int sessionId, final String userName, final String aclClientId)
    {
        access.restored(sessions.get(sessionId), userName, aclClientId);
        for (final RoutingRestore replica : replicas)
        {
            replica.restoreOwner(sessionId, userName, aclClientId);
        }
    }

    void restoreSubscription(final int sessionId, final String filter, final int options, final int subscriptionId)
    {
        subscriptions.restore(sessions.get(sessionId), filter, options, subscriptionId);
        access.restored(sessions.get(sessionId).subscription(filter));
        for (final RoutingRestore replica : replicas)
        {
            replica.restoreSubscription(sessionId, filter, options, subscriptionId);
        }
    }

    /**
     * Recovery: the groups of a session's restored shared subscriptions by their keys, so that its stored messages
     * are tied again to the groups they came through (group ids are made anew at every start; the key,
     * {@link SharedGroup#key()}, is not).
     *
     * @return key to group id; a key it does not hold maps to 0.
     */
    org.agrona.collections.Long2LongHashMap restoredGroups(final int sessionId)
    {
        final org.agrona.collections.Long2LongHashMap groups = new org.agrona.collections.Long2LongHashMap(0);
        for (final Subscription subscription : sessions.get(sessionId).subscriptions())
        {
            final int groupId = null == subscription.shareName() ? 0 : subscriptions.sharedGroupId(subscription);
            if (groupId != 0) // 0 is the map's missing value: it cannot be put
            {
                groups.put(SharedGroup.key(subscription.shareName(), subscription.filter()), groupId);
            }
        }
        return groups;
    }

    void restoreAwaitingPubrel(final int sessionId, final int packetId)
    {
        sessions.get(sessionId).awaitPubrel(packetId);
    }

    /**
     * @return whether the retained store kept it (false: past --max-retained).
     */
    boolean restoreRetained(final Message message)
    {
        return publishes.restoreRetained(message);
    }

    /**
     * Recovery is over: the routing thread takes the structures it filled.
     */
    void restored()
    {
        for (final RoutingRestore replica : replicas)
        {
            replica.restored();
        }
        sessions.releaseOwner();
        gauges.run(); // the gauges show what was restored
    }
}
