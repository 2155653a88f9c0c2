package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.ClientAcl;
import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.RoutingSession;
import io.ringmq.pipeline.session.SessionMemory;
import io.ringmq.pipeline.session.SessionRegistry;
import io.ringmq.pipeline.session.Subscription;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.subscription.SharedSubscriptions;
import io.ringmq.pipeline.subscription.SubscriptionIndex;
import org.agrona.collections.IntArrayList;
import com.lmax.disruptor.RingBuffer;

import java.util.concurrent.atomic.AtomicReference;

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
 * <p>
 * Access control: a PUBLISH goes nowhere without the auth stage's grant; a SUBSCRIBE filter is refused or taken as
 * its verdict says, and a subscription wider than what its subscriber may read has each message (and each retained
 * message it brings) checked against the session's {@link ClientAcl} ({@link RoutingAccess}, which also follows
 * a reload).
 * <p>
 * This class is the stage's event loop and wiring; the parts it wires share its structures and its thread:
 * <pre>
 *   slot ─▶ shard 0 stamps it (RouteEpochs) ─▶ this shard's? ─ yes ─▶ SlotRouter ─▶ commit: one routing log entry
 *                                                  │ no: shard 0's, on a shard above 0
 *                                                  └─▶ ShardReplay: a copy ─▶ SlotRouter, its output dropped
 *   SlotRouter: CONNECT ─▶ SessionConnects              PUBLISH, will, re-dispatch ─▶ PublishFanOut
 *               (UN)SUBSCRIBE ─▶ SubscriptionChanges    end of a connection ─▶ SessionEnds
 *   doDutyCycle: reloads (RouteEpochs), session expiry (SessionExpiry), ticks (RoutingTicks)
 *   recovery, before the stage runs: RoutingRestore
 * </pre>
 */
public final class RoutingStage implements Stage
{
    private final SessionRegistry sessions;
    private final ByConnection<RoutingSession> connections = new ByConnection<>();
    private final SubscriptionIndex<Subscription> index = new SubscriptionIndex<>();
    private final RetainedStore retained;
    private final SharedSubscriptions<Subscription> shared;
    private final RouteOutput.Writer output = new RouteOutput.Writer();
    private final MessageLog log;
    private final BrokerCounters counters;
    private final FailedCommits failedCommits;
    private final RoutingAccess access;
    private final RoutingTicks ticks;
    /** The SUBSCRIBEs whose retained messages go out in parts; shard 0 only. */
    private final RetainedLine retainedLine;
    private final SessionExpiry expiry;
    private final PublishFanOut publishes;
    private final RouteEpochs epochs;
    private final SlotRouter slots;
    private final RoutingRestore restore;
    /** The routing shards of this pipeline, and this one's index: shard 0 stamps every slot for the others. */
    private final RouteShards routeShards;
    private final int shard;
    /** Shards above 0: the slots shard 0 routes, replayed here to keep the sessions the same. */
    private final ShardReplay replays;
    /** The slot this stage is routing, until its output is committed: shard 0 throwing on one is told apart. */
    private IngressEvent routing;
    private long expiryTickMs;
    private IngressEvent pending;

    /**
     * @param log the routing stage's output log (this stage appends, the last stage releases).
     */
    public RoutingStage(final BrokerContext context, final BrokerCounters counters, final MessageLog log)
    {
        this(context, counters, log, null, new SessionWindows(1), new SharedRedispatch(), new FailedCommits(),
            new AtomicReference<>(AccessRules.OPEN), ConnectionControl.NONE, new RouteShards(1, context), 0);
    }

    /**
     * @param ring the ingress ring, where this stage puts a {@link IngressEvent#TICK} when a delayed will is due
     *             (null, for tests of the stage alone: delayed wills are never published).
     * @param windows    the delivery shards' in-flight room per session, for the least-loaded shared strategy.
     * @param redispatch where the shards hand back a leaving shared subscriber's unacknowledged messages.
     * @param failedCommits QoS 2 PUBLISHes the persistence stage could not keep: routed anew when resent.
     * @param accessRules the ACL rules in force, as the auth stage publishes them.
     * @param control     where a connection is revoked whose subscription reloaded rules refuse.
     * @param routeShards the routing shards of the pipeline.
     * @param shard       this shard's index: 0 routes all but the PUBLISHes the others take, and puts the ticks on
     *                    the ring; the others take no ring, redispatch, failed commits or control of their own.
     */
    RoutingStage(final BrokerContext context, final BrokerCounters counters, final MessageLog log,
        final RingBuffer<IngressEvent> ring, final SessionWindows windows, final SharedRedispatch redispatch,
        final FailedCommits failedCommits, final AtomicReference<AccessRules> accessRules,
        final ConnectionControl control, final RouteShards routeShards, final int shard)
    {
        this.routeShards = routeShards;
        this.shard = shard;
        // shard 0's counters for what happens to sessions; the other shards replay those changes on a muted set
        final BrokerCounters sessionCounters = shard == 0 ? counters : new BrokerCounters();
        this.access = new RoutingAccess(accessRules, control, counters, context.auth().useUserNameAsClientId(),
            shard == 0, context.auth().checkRetainSource());
        this.failedCommits = failedCommits;
        this.shared = new SharedSubscriptions<>(context.limits().sharedSubscriptionStrategy());
        this.counters = counters;
        this.log = log;
        this.sessions = new SessionRegistry(new SessionMemory(context.memory().sessionMemoryBytes(),
            context.memory().clientSessionMemoryBytes()));
        this.retained = new RetainedStore(context.limits().maxRetainedMessages(), context.limits().retainedBytes(),
            true);
        // shard 0 alone sends retained messages: the other shards' output is dropped
        this.retainedLine = 0 == shard ? new RetainedLine(retained, new RetainedDrains(), windows) : null;
        this.ticks = new RoutingTicks(ring, redispatch, retainedLine);
        final SubscriptionChanges subscriptions = new SubscriptionChanges(context, index, shared, retained, output,
            sessionCounters, sessions.memory(), access, retainedLine);
        output.maxTargets(context.limits().maxSessions()); // the routing log holds a target per session, no more
        this.publishes = new PublishFanOut(index, shared, retained, output, access, counters, sessionCounters,
            sessions.memory(), windows);
        final SessionEnds ends = new SessionEnds(connections, sessions, subscriptions, ticks, publishes, access,
            sessionCounters, 0 == shard);
        this.expiry = ends.expiry();
        final SessionConnects connects = new SessionConnects(connections, sessions, access, output, ends,
            publishes, sessionCounters, context.limits().maxSessions());
        this.epochs = new RouteEpochs(context, routeShards, access, sessions, subscriptions, retained);
        final Runnable gauges = this::onBatchEnd;
        this.slots = new SlotRouter(connections, output, connects, publishes, subscriptions, ends, ticks, epochs,
            access, routeShards, gauges);
        this.replays = shard == 0 ? null :
            new ShardReplay(slots, epochs, connects, publishes, sessions, ticks, routeShards, shard);
        this.restore = new RoutingRestore(sessions, subscriptions, publishes, expiry, access,
            context.limits().maxSessions(), gauges);
        if (0 == shard)
        {
            routeShards.took(0, context, access.rules()); // what every shard holds at start
        }
    }

    /**
     * Shard 0 only, before any stage runs: the other routing shards, filled by recovery as this one is.
     */
    void replicas(final RoutingStage[] replicas)
    {
        final RoutingRestore[] restores = new RoutingRestore[replicas.length];
        for (int i = 0; i < replicas.length; i++)
        {
            restores[i] = replicas[i].restore;
        }
        restore.replicas(restores);
    }

    /**
     * @return where recovery puts back what the store kept, before any stage runs.
     */
    RoutingRestore restore()
    {
        return restore;
    }

    /**
     * Publishes the routing stage's levels as gauges, once per batch, so that $SYS, Prometheus and
     * {@code ringmq stat} read them without touching this stage's structures.
     */
    public void onBatchEnd()
    {
        if (shard != 0)
        {
            return; // the same levels as shard 0's
        }
        counters.set(BrokerCounters.CLIENTS_CONNECTED, connections.size());
        counters.set(BrokerCounters.SESSIONS_CURRENT, sessions.size());
        counters.set(BrokerCounters.SUBSCRIPTIONS_CURRENT, index.size() + shared.size());
        counters.set(BrokerCounters.RETAINED_CURRENT, retained.size());
        counters.set(BrokerCounters.SESSION_MEMORY, sessions.memory().totalBytes());
    }

    /**
     * Follows the limits a reload changes (before the stage runs); they are taken at the next duty cycle.
     */
    public void follow(final LiveLimits live)
    {
        epochs.follow(live);
    }

    public int doDutyCycle()
    {
        epochs.followLive();
        int[] failed;
        int released = 0;
        // drained whole, past the batch limit: a client's resend of a QoS 2 PUBLISH whose commit failed must find its
        // packet id released (it comes only after a new CONNECT, so one full drain has run by then); a failing disk
        // leaves a ring's worth at most
        while (null != (failed = failedCommits.poll()))
        {
            released++;
            final RoutingSession session = sessions.get(failed[0]);
            if (null != session)
            {
                session.releasePubrel(failed[1]); // never stored, never acknowledged: a resend is new
            }
        }
        // the other routing shards take the rules at the slot shard 0 stamps with them, never on their own clock
        final int reloaded = 0 == shard ? epochs.followRules() : 0;
        int expired = 0;
        if (!routeShards.replicated())
        {
            expired = expiry.poll(System.currentTimeMillis());
        }
        else if (shard == 0 && expiry.hasTimers())
        {
            // every shard expires sessions at the same slot: a tick shard 0 puts on the ring, at its stamped time
            final long nowMs = System.currentTimeMillis();
            if (nowMs - expiryTickMs >= SessionExpiry.SHARDED_POLL_MS)
            {
                expiryTickMs = nowMs;
                ticks.expiryDue();
            }
        }
        if (expired > 0)
        {
            onBatchEnd(); // the gauges move with expiry too, events or not
            if (!sessions.takeDiscarded().isEmpty())
            {
                ticks.sessionsEnded();
            }
        }
        return released + reloaded + expired + ticks.doDutyCycle();
    }

    public boolean hasPendingWork()
    {
        return ticks.hasPendingWork() || epochs.hasReload();
    }

    /**
     * @return this stage's retained store (tests).
     */
    RetainedStore retainedStore()
    {
        return retained;
    }

    /**
     * @return the SUBSCRIBEs whose retained messages go out in parts (tests), null on a shard above 0.
     */
    RetainedLine retainedLine()
    {
        return retainedLine;
    }

    /**
     * @return where the I/O agents write what the connections that retained parts go to owe (shard 0's; null on
     * the other shards, which send none).
     */
    public RetainedDrains retainedDrains()
    {
        return null == retainedLine ? null : retainedLine.drains();
    }

    public long wakeWithinMs()
    {
        return ticks.dueInMs();
    }

    /**
     * @param wakeRing wakes the ring's first stage when this stage puts a tick on the ring, where that stage sleeps
     *                 on a thread of its own (set before the threads start).
     */
    public void wakeRingWith(final Runnable wakeRing)
    {
        ticks.wakeRingWith(wakeRing);
    }

    public boolean onEvent(final IngressEvent event)
    {
        if (pending == event)
        {
            return commit(event); // processed already: only its output waits for room in the log
        }
        if (shard == 0)
        {
            if (event.aclGeneration != access.generation())
            {
                // judged by rules this stage has not taken yet: taken before the slot is stamped
                epochs.followRules();
            }
            epochs.stamp(event);
        }
        if (event.routeShard != shard)
        {
            if (shard != 0 && !RouteShards.isPublish(event))
            {
                replays.replay(event, false); // shard 0 routes it: the same session changes here, no output
            }
            return true; // a PUBLISH another shard routes
        }
        if (shard != 0)
        {
            if (replays.hasDiverged())
            {
                // fail closed: its session ids may not be shard 0's, so the PUBLISH could reach the wrong client
                throw new IllegalStateException(name() + " failed replaying a slot: it routes no PUBLISH since");
            }
            epochs.take(event.routeEpoch); // the limits and rules shard 0 judged it by
        }
        routing = event;
        // every layout of a slot clears the routing verdict (IngressEvent.start, copyInputsTo), and nothing before
        // this stage writes it: not cleared again here, 30 stores per PUBLISH on the stages' thread
        assert event.routingCleared() : "a slot reached routing with an earlier verdict: " + event;
        slots.begin();
        slots.route(event);
        return commit(event);
    }

    /**
     * A slot an earlier stage failed on: a CONNECT is not admitted, but the end of a connection still ends its
     * session, so nothing stays bound to a dead connection.
     */
    public void onFailed(final IngressEvent event)
    {
        if (shard == 0 && routing != event && pending != event)
        {
            epochs.stamp(event); // failed before this stage (one it threw on keeps the stamp it was routed by)
        }
        if (event.routeShard != shard)
        {
            if (shard != 0 && !RouteShards.isPublish(event))
            {
                replays.replay(event, true);
            }
            return; // a PUBLISH another shard routes
        }
        if (routing == event && shard == 0 && routeShards.replicated() && !RouteShards.isPublish(event))
        {
            // it threw part-way through a slot the others replay: their sessions may no longer be the same
            routeShards.diverged("routing shard 0 failed on a slot the other shards replay", null);
        }
        routing = null;
        if (pending == event)
        {
            pending = null;
        }
        slots.abandon(event);
    }

    private boolean commit(final IngressEvent event)
    {
        if (!writeOutput(event))
        {
            return false;
        }
        routing = null;
        slots.committed(event);
        return true;
    }

    private boolean writeOutput(final IngressEvent event)
    {
        final IntArrayList discarded = sessions.takeDiscarded();
        // the rest: next; with routing shards, only in slots every shard replays, so each reuses them at the same one
        final int discardedCount = routeShards.replicated() && RouteShards.isPublish(event) ? 0 :
            Math.min(discarded.size(), BrokerContext.DISCARDED_PER_ENTRY);
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
        event.routeShard = shard; // the routing log the later stages read it from
        event.routeLogLength = length;
        event.routeLogEnd = end;
        sessions.releaseDiscarded(discardedCount); // the shards learn of them in this entry: their ids may be reused
        pending = null;
        return true;
    }

    /**
     * @return the number of persistent sessions known (walks the registry: for tests and diagnostics).
     */
    public int persistentSessionCount()
    {
        int count = 0;
        for (int id = 0, seen = 0; seen < sessions.size(); id++)
        {
            final RoutingSession session = sessions.get(id);
            if (null != session)
            {
                seen++;
                count += session.isPersistent() ? 1 : 0;
            }
        }
        return count;
    }

    /**
     * @return the sessions (for tests: every routing shard holds the same, id by id).
     */
    SessionRegistry sessions()
    {
        return sessions;
    }

    /**
     * @return the PUBLISHes this shard has routed (for tests: the shards share the work).
     */
    long publishesRouted()
    {
        return publishes.publishesRouted();
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
        return 0 == shard ? "route" : "route-" + shard;
    }
}
