package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.SessionRegistry;

/**
 * The limits and ACL rules a routing shard judges slots by, numbered as epochs shared through {@link RouteShards}.
 * Shard 0 (or the only routing stage) takes a reload ({@link LiveLimits}) or the rules the auth stage published as a
 * new epoch, and stamps every slot with its epoch, its clock and the shard that routes it; a shard above 0 takes the
 * epoch a slot carries before it replays or routes it, never on its own clock, so every shard judges a slot alike.
 * Routing stage only.
 */
final class RouteEpochs
{
    private final RouteShards routeShards;
    private final RoutingAccess access;
    private final SessionRegistry sessions;
    private final SubscriptionChanges subscriptions;
    private final RetainedStore retained;
    private BrokerContext context;
    private LiveLimits live;
    private int epoch;

    /**
     * @param context the limits at start (epoch 0).
     */
    RouteEpochs(final BrokerContext context, final RouteShards routeShards, final RoutingAccess access,
        final SessionRegistry sessions, final SubscriptionChanges subscriptions, final RetainedStore retained)
    {
        this.context = context;
        this.routeShards = routeShards;
        this.access = access;
        this.sessions = sessions;
        this.subscriptions = subscriptions;
        this.retained = retained;
    }

    /**
     * @return the limits this shard judges by now.
     */
    BrokerContext limits()
    {
        return context;
    }

    /**
     * Shard 0: follows the limits a reload changes (before the stage runs); they are taken at the next duty cycle.
     */
    void follow(final LiveLimits live)
    {
        this.live = live;
        live.follow();
    }

    /**
     * @return whether a reload waits to be taken.
     */
    boolean hasReload()
    {
        return null != live && live.current() != context;
    }

    /**
     * Shard 0: takes reloaded limits, when there are new ones, as a new epoch.
     */
    void followLive()
    {
        if (null != live)
        {
            final BrokerContext next = live.changed(context);
            if (null != next)
            {
                context = next; // the retained and subscription limits; the rest is the same as at start
                retained.limits(next.limits().maxRetainedMessages(), next.limits().retainedBytes());
                subscriptions.limits(next);
                sessions.memory().maxBytes(next.memory().sessionMemoryBytes(), next.memory()
                    .clientSessionMemoryBytes());
                routeShards.took(++epoch, next, access.rules()); // before any slot is stamped with it
                live.took(next);
            }
        }
    }

    /**
     * Shard 0 (or the only routing stage): takes the ACL rules the auth stage published, when new; the slots it
     * stamps from now on carry them to the other shards.
     *
     * @return the work done.
     */
    int followRules()
    {
        final int work = access.follow(sessions);
        if (work > 0)
        {
            routeShards.took(++epoch, context, access.rules());
        }
        return work;
    }

    /**
     * Shard 0: which shard routes the slot, and the clock and limits it is judged by.
     */
    void stamp(final IngressEvent event)
    {
        event.routeEpoch = epoch;
        if (!RouteShards.isPublish(event))
        {
            event.routeTimeMs = System.currentTimeMillis();
            return;
        }
        event.routeShard = routeShards.replicated() && event.connectionId != IngressEvent.SYSTEM_CONNECTION &&
            !routeShards.hasDiverged() ? routeShards.ownerOf(event.packet, event.packetLength) : 0;
    }

    /**
     * A shard above 0 takes the limits and ACL rules shard 0 stamped a slot with, before it replays or routes it
     * (nothing when they are the ones it holds).
     */
    void take(final int routeEpoch)
    {
        if (routeEpoch == epoch)
        {
            return;
        }
        final BrokerContext limits = routeShards.limits(routeEpoch);
        final AccessRules rules = routeShards.rules(routeEpoch);
        epoch = routeEpoch;
        if (limits != context)
        {
            context = limits;
            subscriptions.limits(context);
            sessions.memory().maxBytes(context.memory().sessionMemoryBytes(), context.memory()
                .clientSessionMemoryBytes()); // as shard 0
        }
        if (null != rules)
        {
            access.follow(sessions, rules);
        }
    }
}
