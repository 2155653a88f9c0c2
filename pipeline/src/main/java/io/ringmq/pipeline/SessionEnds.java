package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;

/**
 * How sessions end in the routing stage: the end of a connection (lost, or a DISCONNECT) unbinds its session, which
 * goes if it is clean and otherwise waits offline for its client until it expires; its will goes out now, after its
 * delay, or when its session ends, whichever comes first [MQTT-3.1.3-9], and never after a DISCONNECT with reason
 * 0x00 [MQTT-3.14.4-3]. Holds the {@link SessionExpiry} timers (the CONNECT path, the slot router and recovery
 * reach them through {@link #expiry()}), and is where a session is discarded (its
 * subscriptions unindexed, its id freed for the next output). Routing stage only (its thread; recovery's before any
 * stage runs).
 */
final class SessionEnds
{
    private final ByConnection<RoutingSession> connections;
    private final SessionRegistry sessions;
    private final SubscriptionChanges subscriptions;
    private final RoutingTicks ticks;
    private final PublishFanOut publishes;
    /** Judges each will by the rules in force when it goes out. */
    private final RoutingAccess access;
    /** Shard 0's counters for what happens to sessions; muted on the other routing shards. */
    private final BrokerCounters sessionCounters;
    /** Only routing shard 0 publishes delayed wills; the others drop them as it does. */
    private final boolean publishesWills;
    private final SessionExpiry expiry = new SessionExpiry(this::expire, this::willDue);

    /**
     * @param connections the routing stage's sessions by connection id.
     */
    SessionEnds(final ByConnection<RoutingSession> connections, final SessionRegistry sessions,
        final SubscriptionChanges subscriptions, final RoutingTicks ticks, final PublishFanOut publishes,
        final RoutingAccess access, final BrokerCounters sessionCounters, final boolean publishesWills)
    {
        this.access = access;
        this.connections = connections;
        this.sessions = sessions;
        this.subscriptions = subscriptions;
        this.ticks = ticks;
        this.publishes = publishes;
        this.sessionCounters = sessionCounters;
        this.publishesWills = publishesWills;
    }

    /**
     * @return the timers of offline sessions and delayed wills.
     */
    SessionExpiry expiry()
    {
        return expiry;
    }

    /**
     * A connection ended, lost or with a DISCONNECT.
     *
     * @param publishWill whether its will goes out (not after a DISCONNECT with reason 0x00 [MQTT-3.14.4-3]).
     * @param context     the limits in force.
     */
    void onConnectionEnd(final IngressEvent event, final boolean publishWill, final BrokerContext context)
    {
        end(event, publishWill, context, false);
    }

    /**
     * The end of a connection in a slot an earlier stage (or this one) failed on: its session still ends, as it
     * would have, so nothing stays bound to a dead connection and its will is neither lost nor stranded; only what
     * would have gone into the slot's output (a will due now) waits for a tick instead.
     */
    void onFailedEnd(final IngressEvent event, final BrokerContext context)
    {
        // only a DISCONNECT with reason 0x00 discards the will [MQTT-3.14.4-3]
        end(event, event.kind == IngressEvent.CONNECTION_LOST ||
            event.reasonCode != io.ringmq.protocol.ReasonCode.NORMAL_DISCONNECTION, context, true);
    }

    private void end(final IngressEvent event, final boolean publishWill, final BrokerContext context,
        final boolean failed)
    {
        final RoutingSession session = connections.remove(event.connectionId);
        if (null == session)
        {
            return;
        }
        event.sessionId = session.id();
        boolean dueOnTick = true; // stays so if what follows throws: a will not yet published goes out on a tick
        try
        {
            dueOnTick = willAtEnd(event, session, publishWill, context, failed);
        }
        finally
        {
            // whatever threw above, the session is no longer bound to the connection it just left, and its will
            // is not lost: the stage's failed-slot path finds the connection gone and could do neither [MQTT-3.1.2-8]
            endSession(session, event.connectionId, event.routeTimeMs);
            if (dueOnTick)
            {
                willDue(session);
            }
        }
    }

    /**
     * What a connection's end does to its session's expiry and will.
     *
     * @return whether its will is due on the next tick (a failed slot carries no output).
     */
    private boolean willAtEnd(final IngressEvent event, final RoutingSession session, final boolean publishWill,
        final BrokerContext context, final boolean failed)
    {
        if (event.sessionExpiryInterval >= 0 && session.isPersistent())
        {
            // never from 0: a protocol error the edge refuses, and a clean session has nothing kept [MQTT-3.14.2-2]
            session.expirySeconds(context.limits().sessionExpiryFor(event.sessionExpiryInterval));
        }
        if (!publishWill || null == session.will())
        {
            session.will(null); // never after a DISCONNECT [MQTT-3.1.2-10]
        }
        else if (session.willDelaySeconds() == 0 || !session.isPersistent())
        {
            if (failed)
            {
                return true; // a failed slot carries no output: the will goes out on a tick
            }
            final Message will = access.willOf(session); // judged by the rules in force now
            if (null != will)
            {
                publishes.publishWill(event, will);
            }
            session.will(null); // a will is published once: now, or when the session ends, if that comes first
        }
        else
        {
            // published when the delay has passed or the session ends, whichever comes first [MQTT-3.1.3-9]
            expiry.scheduleWill(session, event.routeTimeMs +
                Math.min(session.willDelaySeconds(), session.expirySeconds()) * 1000);
        }
        return false;
    }

    /**
     * A delayed will is due: it goes out with the next {@link IngressEvent#TICK}.
     */
    private void willDue(final RoutingSession session)
    {
        willDue(session, session.id());
    }

    /**
     * @param sessionId the session the persistence stage marks as having published its will, or
     *                  {@link IngressEvent#NONE} for one that ends now (its records go with it, and its id may be
     *                  another session's by the time the tick is routed).
     */
    private void willDue(final RoutingSession session, final int sessionId)
    {
        if (null != session.will() && !session.isOnline())
        {
            final Message will = publishesWills ? access.willOf(session) : null; // only shard 0 publishes wills
            if (null != will)
            {
                ticks.willDue(will, sessionId);
            }
            session.will(null);
        }
    }

    /**
     * The connection of a session ended: a clean session goes, a persistent one waits for its client until it
     * expires.
     */
    private void endSession(final RoutingSession session, final long connectionId, final long nowMs)
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
            session.trim(); // offline: an empty set of QoS 2 packet ids waits for no one
            expiry.schedule(session, nowMs);
        }
    }

    private void expire(final RoutingSession session)
    {
        if (!session.isOnline() && sessions.find(session.clientId()) == session)
        {
            sessionCounters.increment(BrokerCounters.SESSIONS_EXPIRED);
            willDue(session, IngressEvent.NONE); // the session ends: its delayed will goes now [MQTT-3.1.3-9]
            discard(session); // its shard forgets it with the next event's output
        }
    }

    /**
     * A session goes: its timers, its subscriptions in the index, its id (freed once the shards are told).
     */
    void discard(final RoutingSession session)
    {
        expiry.cancel(session);
        expiry.cancelWill(session);
        for (final Subscription subscription : session.subscriptions())
        {
            subscriptions.unindex(subscription);
        }
        session.clearSubscriptions();
        sessions.discard(session);
    }
}
