package io.ringmq.pipeline;

import io.ringmq.pipeline.session.SessionRegistry;

/**
 * A routing shard above 0 replays every slot shard 0 routes (all but the PUBLISHes the shards share) on its own copy
 * of it: the same changes to sessions and subscriptions in the same order, so each shard's session ids are the same
 * as shard 0's, its output dropped and its wills left to shard 0. One that throws replaying a slot has diverged
 * ({@link RouteShards#diverged}): from then on it routes no PUBLISH. Routing stage only (a shard above 0).
 */
final class ShardReplay
{
    /** The copy of a slot shard 0 routes, replayed here to keep the sessions the same. */
    private final IngressEvent replay = new IngressEvent(0);
    private final SlotRouter slots;
    private final RouteEpochs epochs;
    private final SessionConnects connects;
    private final PublishFanOut publishes;
    private final SessionRegistry sessions;
    private final RoutingTicks ticks;
    private final RouteShards routeShards;
    private final int shard;
    /** It failed replaying a slot: its sessions may differ from shard 0's from then on. */
    private boolean diverged;

    ShardReplay(final SlotRouter slots, final RouteEpochs epochs, final SessionConnects connects,
        final PublishFanOut publishes, final SessionRegistry sessions, final RoutingTicks ticks,
        final RouteShards routeShards, final int shard)
    {
        this.slots = slots;
        this.epochs = epochs;
        this.connects = connects;
        this.publishes = publishes;
        this.sessions = sessions;
        this.ticks = ticks;
        this.routeShards = routeShards;
        this.shard = shard;
    }

    /**
     * @return whether this shard failed replaying a slot (it must then route no PUBLISH).
     */
    boolean hasDiverged()
    {
        return diverged;
    }

    /**
     * Replays a slot shard 0 routes.
     *
     * @param failed whether a stage failed on it: only what a failed slot still does is replayed.
     */
    void replay(final IngressEvent event, final boolean failed)
    {
        // replayed even once the shards have diverged: this shard may still have PUBLISHes to route that shard 0
        // stamped before, and they are routed by what the slots before them changed
        publishes.replaying(true);
        try
        {
            event.copyInputsTo(replay);
            epochs.take(replay.routeEpoch);
            if (failed)
            {
                slots.abandon(replay);
                return;
            }
            slots.begin();
            slots.route(replay);
            // shard 0 hands the same discarded ids to the shards in this slot's output: they may be reused now
            sessions.releaseDiscarded(Math.min(sessions.takeDiscarded().size(), BrokerContext.DISCARDED_PER_ENTRY));
            if (replay.kind == IngressEvent.TICK)
            {
                ticks.done();
            }
        }
        catch (final RuntimeException error)
        {
            // never the shared slot's failure: shard 0 routed it, and the later stages act on its verdict
            diverged = true;
            routeShards.diverged("routing shard " + shard + " failed replaying a slot", error);
        }
        finally
        {
            publishes.replaying(false);
            connects.moveStands(); // the move stands (or never happened): a later failed slot must not undo it
        }
    }
}
