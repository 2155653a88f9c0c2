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
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubscriptionOptions;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.collections.IntArrayList;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.UnsafeBuffer;
import com.lmax.disruptor.RingBuffer;

import java.nio.ByteOrder;
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
 */
public final class RoutingStage implements Stage
{
    private final SessionRegistry sessions;
    private final Long2ObjectHashMap<RoutingSession> connections = new Long2ObjectHashMap<>();
    private final SubscriptionIndex<Subscription> index = new SubscriptionIndex<>();
    private final RetainedStore retained;
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer willTopic = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willPayload = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer willProperties = new UnsafeBuffer(0, 0);
    private final ExpandableArrayBuffer propertyScratch = new ExpandableArrayBuffer(256);
    private final SubscriptionIndex.Matcher<Subscription> matcher = this::onMatch;
    private final SharedSubscriptions<Subscription> shared;
    private final SharedSubscriptions.Matcher<Subscription> sharedMatcher = this::onSharedMatch;
    private final SharedSubscriptions.Chooser<Subscription> chooser;
    private final SubscriptionChanges subscriptions;
    private final RoutingTicks ticks;
    private BrokerContext context;
    private LiveLimits live;
    private final RouteOutput.Writer output = new RouteOutput.Writer();
    private final MessageLog log;
    private final BrokerCounters counters;
    private final int maxSessions;
    private final SessionExpiry expiry;
    private final FailedCommits failedCommits;
    private final RoutingAccess access;
    /** The routing shards of this pipeline, and this one's index: shard 0 stamps every slot for the others. */
    private final RouteShards routeShards;
    private final int shard;
    /** Shard 0's counters for what happens to sessions; the other shards replay those changes on a muted set. */
    private final BrokerCounters sessionCounters;
    /** Shards above 0: the copy of a slot shard 0 routes, replayed here to keep the sessions the same. */
    private final IngressEvent replay;
    /** Shard 0: the other shards, which recovery fills as it fills this one. */
    private RoutingStage[] replicas = new RoutingStage[0];
    private boolean replaying;
    /** A shard above 0 that failed replaying a slot: its sessions may differ from shard 0's from then on. */
    private boolean replicaDiverged;
    /** The slot this stage is routing, until its output is committed: shard 0 throwing on one is told apart. */
    private IngressEvent routing;
    private int epoch;
    private long expiryTickMs;
    private long publishesRouted;
    private DirectBuffer matchTopic;
    private int matchOffset;
    private int matchLength;

    private IngressEvent pending;
    private RoutingSession moved;
    private RoutingSession publishSession;
    private RoutingSession publisher;
    private boolean publishRetain;
    /** Whether the retained store took the last retained message offered (the persistence stage keeps only those). */
    private boolean retainKept;
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
        this.sessionCounters = shard == 0 ? counters : new BrokerCounters();
        this.replay = shard == 0 ? null : new IngressEvent(0);
        this.access = new RoutingAccess(accessRules, control, counters, context.useUserNameAsClientId(), shard == 0);
        this.failedCommits = failedCommits;
        this.ticks = new RoutingTicks(ring, redispatch);
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
        this.counters = counters;
        this.log = log;
        this.maxSessions = context.maxSessions();
        this.sessions = new SessionRegistry(new SessionMemory(context.sessionMemoryBytes(),
            context.clientSessionMemoryBytes()));
        this.retained = new RetainedStore(context.maxRetainedMessages(), context.maxRetainedBytes());
        this.subscriptions = new SubscriptionChanges(context, index, shared, retained, output, sessionCounters,
            sessions.memory());
        output.maxTargets(context.maxSessions()); // the routing log holds a target per session, no more
        this.expiry = new SessionExpiry(this::expire, this::willDue);
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
        this.replicas = replicas;
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
        this.live = live;
        live.follow();
    }

    public int doDutyCycle()
    {
        if (null != live)
        {
            final BrokerContext next = live.changed(context);
            if (null != next)
            {
                context = next; // the retained and subscription limits; the rest is the same as at start
                retained.limits(next.maxRetainedMessages(), next.maxRetainedBytes());
                subscriptions.limits(next);
                sessions.memory().maxBytes(next.sessionMemoryBytes(), next.clientSessionMemoryBytes());
                routeShards.took(++epoch, next, access.rules()); // before any slot is stamped with it
                live.took(next);
            }
        }
        int[] failed;
        while (null != (failed = failedCommits.poll()))
        {
            final RoutingSession session = sessions.get(failed[0]);
            if (null != session)
            {
                session.releasePubrel(failed[1]); // never stored, never acknowledged: a resend is new
            }
        }
        // the other routing shards take the rules at the slot shard 0 stamps with them, never on their own clock
        final int reloaded = 0 == shard ? followRules() : 0;
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
        }
        return reloaded + expired + ticks.doDutyCycle();
    }


    public boolean hasPendingWork()
    {
        return ticks.hasPendingWork() || (null != live && live.current() != context);
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
                followRules(); // judged by rules this stage has not taken yet: taken before the slot is stamped
            }
            stamp(event);
        }
        if (event.routeShard != shard && event != replay)
        {
            if (shard != 0 && !RouteShards.isPublish(event))
            {
                replay(event, false); // shard 0 routes it: the same session changes here, no output
            }
            return true; // a PUBLISH another shard routes
        }
        if (shard != 0 && event != replay)
        {
            if (replicaDiverged)
            {
                // fail closed: its session ids may not be shard 0's, so the PUBLISH could reach the wrong client
                throw new IllegalStateException(name() + " failed replaying a slot: it routes no PUBLISH since");
            }
            if (event.routeEpoch != epoch)
            {
                takeEpoch(event.routeEpoch); // the limits and rules shard 0 judged it by
            }
        }
        routing = event;
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
        if (shard == 0 && routing != event && pending != event)
        {
            stamp(event); // failed before this stage (one it threw on keeps the stamp it was routed by)
        }
        if (event.routeShard != shard && event != replay)
        {
            if (shard != 0 && !RouteShards.isPublish(event))
            {
                replay(event, true);
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
            ticks.failed();
            return;
        }
        if (event.kind != IngressEvent.PACKET)
        {
            final RoutingSession session = connections.remove(event.connectionId);
            if (null != session)
            {
                event.sessionId = session.id();
                endSession(session, event.connectionId, event.routeTimeMs);
            }
        }
    }

    /**
     * Shard 0: which shard routes the slot, and the clock and limits it is judged by.
     */
    private void stamp(final IngressEvent event)
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
     * A shard above 0 replays a slot shard 0 routes on its own copy of it: the same changes to sessions and
     * subscriptions in the same order (each shard's session ids are the same), its output dropped.
     */
    private void replay(final IngressEvent event, final boolean failed)
    {
        // replayed even once the shards have diverged: this shard may still have PUBLISHes to route that shard 0
        // stamped before, and they are routed by what the slots before them changed
        replaying = true;
        try
        {
            event.copyInputsTo(replay);
            if (replay.routeEpoch != epoch)
            {
                takeEpoch(replay.routeEpoch);
            }
            if (failed)
            {
                onFailed(replay);
                return;
            }
            output.reset();
            moved = null;
            publisher = null;
            switch (replay.kind)
            {
                case IngressEvent.PACKET: onPacket(replay); break;
                case IngressEvent.CONNECTION_LOST: onConnectionEnd(replay, true); break;
                case IngressEvent.TICK: onTick(replay); break;
                default: onConnectionEnd(replay, replay.reasonCode != ReasonCode.NORMAL_DISCONNECTION);
            }
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
            replicaDiverged = true;
            routeShards.diverged("routing shard " + shard + " failed replaying a slot", error);
        }
        finally
        {
            replaying = false;
            moved = null; // the move stands (or never happened): a later failed slot must not undo it
        }
    }

    /**
     * A shard above 0 takes the limits and ACL rules shard 0 stamped a slot with, before it replays or routes it.
     */
    private void takeEpoch(final int routeEpoch)
    {
        final BrokerContext limits = routeShards.limits(routeEpoch);
        final AccessRules rules = routeShards.rules(routeEpoch);
        epoch = routeEpoch;
        if (limits != context)
        {
            context = limits;
            subscriptions.limits(context);
            sessions.memory().maxBytes(context.sessionMemoryBytes(), context.clientSessionMemoryBytes()); // as shard 0
        }
        if (null != rules)
        {
            access.follow(sessions, rules);
        }
    }

    /**
     * Shard 0 (or the only routing stage): takes the ACL rules the auth stage published, when new; the slots it
     * stamps from now on carry them to the other shards.
     *
     * @return the work done.
     */
    private int followRules()
    {
        final int work = access.follow(sessions);
        if (work > 0)
        {
            routeShards.took(++epoch, context, access.rules());
        }
        return work;
    }

    private boolean commit(final IngressEvent event)
    {
        if (!writeOutput(event))
        {
            return false;
        }
        moved = null; // the move stands: a later failed slot must not undo it
        routing = null;
        if (publishPending)
        {
            applyPublish(event);
        }
        if (event.kind == IngressEvent.TICK)
        {
            ticks.done(); // its message is on its way
        }
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

    private void onPacket(final IngressEvent event)
    {
        if (event.packetType == PacketType.CONNECT)
        {
            if (routeShards.replicated() && expiry.poll(event.routeTimeMs) > 0)
            {
                // sessions due by the slot's stamped time end before it, on every shard alike: a CONNECT never
                // resumes one that has expired (one restored already due waits for no tick) [MQTT-4.1.0-2]
                onBatchEnd();
            }
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
            case PacketType.SUBSCRIBE: subscriptions.onSubscribe(event, session, access.generation()); break;
            case PacketType.UNSUBSCRIBE: subscriptions.onUnsubscribe(event, session); break;
            case PacketType.PUBREL:
                if (ack.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                {
                    session.releasePubrel(ack.packetId()); // the inbound QoS 2 exchange ends
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
        final String aclClientId = access.clientIdOf(connect);
        String clientId = aclClientId;
        if (clientId.isEmpty())
        {
            clientId = routeShards.assignedClientId(++assignedIds); // [MQTT-3.1.3-6], the same on every shard
            if (event.version == MqttVersion.V5)
            {
                output.assignedClientId(clientId.getBytes(java.nio.charset.StandardCharsets.UTF_8)); // [MQTT-3.2.2-16]
            }
        }
        final RoutingSession existing = sessions.find(clientId);
        if (!sessions.memory().hasRoomForConnect(sessionLength(existing, clientId), willLength()))
        {
            // before anything changes: a session taken over or resumed stays as it was
            sessionCounters.increment(BrokerCounters.SESSION_MEMORY_REFUSED); // its shard refuses it: no session
            return;
        }
        Message endedWill = null;
        if (null != existing && existing.isOnline())
        {
            event.takeoverAgent = existing.agentIndex();
            event.takeoverConnectionId = existing.connectionId();
            event.takeoverVersion = existing.version(); // its shard may no longer hold its session to ask
            connections.remove(existing.connectionId());
            sessionCounters.increment(BrokerCounters.CONNECTIONS_TAKEN_OVER);
            // it ends without DISCONNECT: its will goes out, as Mosquitto does, unless it is delayed and its session
            // is resumed right here, within the delay [MQTT-3.1.3-9]
            if (null != existing.will() && (existing.willDelaySeconds() == 0 || clean || !existing.isPersistent()))
            {
                endedWill = Wills.toPublish(existing.will());
            }
            existing.will(null);
            existing.connection(IngressEvent.NONE, IngressEvent.NONE);
        }
        else if (null != existing && null != existing.will())
        {
            // a delayed will of an offline session: a reconnect within the delay cancels it [MQTT-3.1.3-9], a
            // clean start ends the session, which publishes it
            expiry.cancelWill(existing);
            endedWill = clean || !existing.isPersistent() ? Wills.toPublish(existing.will()) : null;
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
                sessionCounters.increment(BrokerCounters.SESSIONS_REFUSED_LIMIT); // its shard refuses it: no session
                return;
            }
            session = sessions.create(clientId, expirySeconds, event.agentIndex);
            event.sessionNew = true;
        }
        session.connection(event.agentIndex, event.connectionId);
        session.version(event.version);
        // a resumed session's client id as the CONNECT gave it is most often its own: one copy of it is kept
        access.bind(session, connect, event, aclClientId.equals(session.clientId()) ? session.clientId() : aclClientId);
        setWill(session, event.aclVerdict == IngressEvent.ACL_ALLOWED); // a will the ACL refuses is not kept
        connections.put(event.connectionId, session);
        event.sessionId = session.id();
        if (null != endedWill)
        {
            publishWill(event, endedWill); // its shard sends it after the new client's CONNACK
        }
    }

    /**
     * @return what the CONNECT in {@link #connect} would add to {@code --max-session-memory} for a new session: its
     * client id and user name (0 for a session resumed).
     */
    private long sessionLength(final RoutingSession existing, final String clientId)
    {
        return null == existing || !existing.isPersistent() || connect.isCleanStart() ?
            SessionMemory.sessionLength(clientId, connect.userName().length()) : 0;
    }

    /**
     * @return what the CONNECT's will would add to {@code --max-session-memory} (the one it replaces is not taken
     * off: a client at the bound does not get in by swapping), 0 for none.
     */
    private long willLength()
    {
        return connect.hasWill() ? SessionMemory.WILL_LENGTH + connect.willTopic().length() +
            connect.willPayload().length() + connect.willProperties().sectionLength() : 0;
    }

    /**
     * Keeps the CONNECT's will with its session, when the client may publish it.
     */
    private void setWill(final RoutingSession session, final boolean allowed)
    {
        final boolean kept = allowed && connect.hasWill();
        session.will(kept ? Wills.fromConnect(connect, propertyScratch) : null);
        session.willDelaySeconds(kept ? Wills.delaySeconds(connect) : 0);
    }

    private void onPublish(final IngressEvent event, final RoutingSession session)
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
        final int refusal = event.qos == 2 && null != session ? sessions.memory().awaitedRefusal(session,
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
     * Applies a routed PUBLISH's changes to routing state, after its output is committed.
     */
    private void applyPublish(final IngressEvent event)
    {
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
            retain(retained.put(event.packet, event.topicOffset, event.topicLength, event.packet,
                event.payloadOffset, event.payloadLength, event.qos, null == publishSession, // $SYS: exempt
                propertyScratch, 0, propertiesLength,
                expirySeconds < 0 ? Message.NEVER : System.currentTimeMillis() + expirySeconds * 1000));
            event.retainKept = retainKept;
        }
        publishSession = null;
        publishRetain = false;
        publishPending = false;
    }

    private void onConnectionEnd(final IngressEvent event, final boolean publishWill)
    {
        final RoutingSession session = connections.remove(event.connectionId);
        if (null == session)
        {
            return;
        }
        event.sessionId = session.id();
        if (event.sessionExpiryInterval >= 0 && session.isPersistent())
        {
            // never from 0: a protocol error the edge refuses, and a clean session has nothing kept [MQTT-3.14.2-2]
            session.expirySeconds(context.sessionExpiryFor(event.sessionExpiryInterval));
        }
        final Message will = session.will();
        if (!publishWill || null == will)
        {
            session.will(null); // never after a DISCONNECT [MQTT-3.1.2-10]
        }
        else if (session.willDelaySeconds() == 0 || !session.isPersistent())
        {
            final Message now = Wills.toPublish(session.will());
            session.will(null); // a will is published once: now, or when the session ends, if that comes first
            publishWill(event, now);
        }
        else
        {
            // published when the delay has passed or the session ends, whichever comes first [MQTT-3.1.3-9]
            expiry.scheduleWill(session, event.routeTimeMs +
                Math.min(session.willDelaySeconds(), session.expirySeconds()) * 1000);
        }
        endSession(session, event.connectionId, event.routeTimeMs);
    }

    /**
     * A delayed will is due: it goes out with the next {@link IngressEvent#TICK}.
     */
    private void willDue(final RoutingSession session)
    {
        if (null != session.will() && !session.isOnline())
        {
            if (0 == shard)
            {
                ticks.willDue(Wills.toPublish(session.will()), session.id()); // only shard 0 publishes wills
            }
            session.will(null);
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
            SubscriptionOptions.retainAsPublished(options), session.shard(), subscriptionId, shared.matchingGroupId()))
        {
            counters.increment(BrokerCounters.FANOUT_TRUNCATED);
        }
    }

    private void onTick(final IngressEvent event)
    {
        if (routeShards.replicated() && expiry.poll(event.routeTimeMs) > 0)
        {
            onBatchEnd(); // the gauges move with expiry too
        }
        final Message will = ticks.takeWill();
        if (null != will)
        {
            event.sessionId = ticks.takeWillSession(); // whose delayed will it is: no longer pending in the store
            publishWill(event, will);
            return;
        }
        final SharedRedispatch.Entry entry = ticks.takeRedispatch();
        if (null != entry)
        {
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
        matchTopic = willTopic;
        matchOffset = 0;
        matchLength = message.topic().length;
        if (shared.dispatch(entry.groupId(), willTopic, 0, message.topic().length, 0, chooser, sharedMatcher))
        {
            counters.increment(BrokerCounters.SHARED_REDISPATCHED);
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
            willDue(session); // the session ends: its delayed will goes now [MQTT-3.1.3-9]
            discard(session); // its shard forgets it with the next event's output
        }
    }

    private void publishWill(final IngressEvent event, final Message will)
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
                will.qos(), false, willProperties, 0, will.properties().length, will.expiresAtMs()));
            event.retainKept = retainKept;
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

    private boolean mayRead(final Subscription subscription)
    {
        return access.mayRead(subscription, matchTopic, matchOffset, matchLength);
    }

    private void discard(final RoutingSession session)
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
        for (final RoutingStage replica : replicas)
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

    void restoreSubscription(final int sessionId, final String filter, final int options, final int subscriptionId)
    {
        subscriptions.restore(sessions.get(sessionId), filter, options, subscriptionId);
        access.restored(sessions.get(sessionId).subscription(filter));
        for (final RoutingStage replica : replicas)
        {
            replica.restoreSubscription(sessionId, filter, options, subscriptionId);
        }
    }

    void restoreAwaitingPubrel(final int sessionId, final int packetId)
    {
        sessions.get(sessionId).awaitPubrel(packetId);
    }

    void restoreRetained(final Message message)
    {
        final UnsafeBuffer topic = new UnsafeBuffer(message.topic());
        retain(retained.put(topic, 0, message.topic().length, new UnsafeBuffer(message.payload()), 0,
            message.payload().length, message.qos(), false, new UnsafeBuffer(message.properties()), 0,
            message.properties().length, message.expiresAtMs()));
    }

    /**
     * Recovery is over: the routing thread takes the structures it filled.
     */
    void restored()
    {
        for (final RoutingStage replica : replicas)
        {
            replica.restored();
        }
        sessions.releaseOwner();
        onBatchEnd(); // the gauges show what was restored
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
        return publishesRouted;
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
