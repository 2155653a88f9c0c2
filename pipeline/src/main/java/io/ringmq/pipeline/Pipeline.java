package io.ringmq.pipeline;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.YieldingWaitStrategy;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.delivery.DeliveryShard;
import io.ringmq.pipeline.delivery.ShardHandover;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.pipeline.status.LatencySink;

import java.util.function.Function;

/**
 * The staged pipeline on one Disruptor ring:
 * <pre>
 *   I/O agents ──claim/publish──▶ [ ingress ring: IngressEvent slots, fixed size, ids only ]
 *        │ packets too large for a slot: the agent's MessageLog        │
 *                                                                        ▼
 *                                   AuthStage       CONNECT credentials (CPU-heavy, off the I/O threads), the ACL
 *                                        │          verdict on every PUBLISH and SUBSCRIBE
 *                                        │
 *                                        ▼
 *                                   RoutingStage    sessions, subscription index, retained store, fan-out
 *                                        │          ──▶ its output (targets, codes, wills, retained) in the route log
 *                                        │          (--route-shards N: shard 0, then shards 1..N-1 in parallel, each
 *                                        │          routing the PUBLISHes whose topic hashes to it, with a replica
 *                                        │          of the sessions and its own route log: see RouteShards)
 *                                        ▼
 *                                   PersistenceStage  persistent sessions, their QoS 1/2 messages, retained: one
 *                                        │            group commit per batch, before the shards see it (only when
 *                                        │            the store is durable; with --persistence memory it is absent)
 *                    ┌───────────────────┼───────────────────┐
 *                    ▼                   ▼                   ▼
 *             DeliveryShard 0     DeliveryShard 1  …  DeliveryShard N-1   one per I/O agent, in parallel:
 *                    │                   │                   │             QoS state, encode once, outbound ring
 *                    └───────────────────┼───────────────────┘             of its own agent only
 *                                        ▼
 *                                   ReleaseStage    gives back log entries; gates the ring's producers
 * </pre>
 * Each stage is polled through a {@link StagePoller}, so the transport decides which stages share a thread:
 * all in one {@link StageAgent} (shared modes) or one agent per stage (dedicated). With {@code shared} or
 * {@code invoker} threading the ingress ring has a single producer: the I/O agent and every stage then run on one
 * thread ({@link #allStages}), which is also the one that produces onto {@link #ring()}.
 */
public final class Pipeline
{
    private final RingBuffer<IngressEvent> ring;
    private final ErrorLog errors;
    private final RoutingStage routing;
    private final MessageLog[] logs;
    private final MessageLog[] routeLogs;
    private final int batchLimit;
    /** Events a stage handles per turn, in batches of {@link #batchLimit}: the ring's size in shared threading. */
    private final int turnLimit;
    private final StageAgent.Step auth;
    private final AuthStage authStage;
    private final StageAgent.Step[] routes;
    private final StageAgent.Step persist;
    private final String recovered;
    private final DurableStore store;
    private final StageAgent.Step[] shards;
    /** The delivery shards' journals: the ends of messages they batched are written at a clean stop. */
    private final ShardJournal[] journals;
    private final StageAgent.Step release;
    /** The limits a reload changes, followed by the routing stage, the auth stage and every delivery shard. */
    private final LiveLimits limits;

    /**
     * @param outbound the transport's port to every I/O agent's outbound ring (shard i writes to agent i only).
     */
    public Pipeline(final BrokerContext context, final Authenticator authenticator, final Outbound outbound,
        final BrokerCounters counters, final ErrorLog errors)
    {
        this(context, authenticator, outbound, ConnectionControl.NONE, counters, errors);
    }

    /**
     * @param control where the auth stage revokes connections after a reload.
     */
    public Pipeline(final BrokerContext context, final Authenticator authenticator, final Outbound outbound,
        final ConnectionControl control, final BrokerCounters counters, final ErrorLog errors)
    {
        this(context, authenticator, outbound, control, counters, errors, MemoryStore.none());
    }

    /**
     * @param store where persistent sessions, their messages and retained messages are kept; recovered from here
     *              before this returns (a store that is not durable: no persistence stage at all).
     * @throws io.ringmq.pipeline.persistence.StoreException when recovery lost data under --strict-recovery.
     */
    public Pipeline(final BrokerContext context, final Authenticator authenticator, final Outbound outbound,
        final ConnectionControl control, final BrokerCounters counters, final ErrorLog errors,
        final DurableStore store)
    {
        this.store = store;
        context.conclude(); // derived sizes (the message logs') are settled there; a second call changes nothing
        this.errors = errors;
        this.batchLimit = context.threads().stageBatchLimit();
        this.turnLimit = context.threads().stageTurnLimit(context.memory().ringSize());
        final int inline = context.memory().slotInlineBytes();
        // shared and invoker threading run the one I/O agent and every stage (the routing stage's ticks are the
        // other producer) on one thread: a single producer claims without a CAS and publishes without the
        // per-slot availability flags. Whoever runs this pipeline's agents must then run them all, and produce
        // onto its ring, from one thread (allStages(), as Broker does); tryNext has no same-thread assertion
        final boolean oneThread = context.threads().threading() == BrokerContext.Threading.SHARED ||
            context.threads().threading() == BrokerContext.Threading.INVOKER;
        this.ring = oneThread ?
            RingBuffer.createSingleProducer(() -> new IngressEvent(inline), context.memory().ringSize(),
                new YieldingWaitStrategy()) :
            RingBuffer.createMultiProducer(() -> new IngressEvent(inline), context.memory().ringSize(),
                new YieldingWaitStrategy());
        final int shardCount = context.threads().ioThreads();
        this.logs = new MessageLog[shardCount];
        for (int i = 0; i < logs.length; i++)
        {
            logs[i] = new MessageLog(context.memory().messageLogBytes());
        }
        final RouteShards routeShards = new RouteShards(context.threads().routeShards(), context, errors);
        this.routeLogs = new MessageLog[routeShards.count()];
        for (int i = 0; i < routeLogs.length; i++)
        {
            routeLogs[i] = new MessageLog(context.routeLogBytes());
        }
        final SessionWindows windows = new SessionWindows(context.limits().maxSessions());
        final LiveLimits live = new LiveLimits(context);
        this.limits = live;
        final SharedRedispatch redispatch = // read at each hand-back: a reload of --max-message-memory moves it
            new SharedRedispatch(counters, () -> SharedRedispatch.maxBytesFor(live.current()));
        final FailedCommits failedCommits = new FailedCommits();
        final java.util.concurrent.atomic.AtomicReference<AccessRules> accessRules =
            new java.util.concurrent.atomic.AtomicReference<>(AccessRules.load(context.auth().aclFile()));
        this.routing = new RoutingStage(context, counters, routeLogs[0], ring, windows, redispatch, failedCommits,
            accessRules, control, routeShards, 0);
        routing.follow(limits); // shard 0 takes reloaded limits; the other shards take them from its stamps

        final StagePoller authPoller = oneThread ? StagePoller.firstOfSingleProducer(ring) : new StagePoller(ring);
        authStage = new AuthStage(authenticator, counters, context.limits().maxClientIdLength(), control,
            new AccessControl(accessRules, context.auth().useUserNameAsClientId(), counters));
        authStage.clientIds(context);
        authStage.bridgeClientIds(context); // the bridges run as started: a reload does not change them
        authStage.follow(limits);
        auth = step(authStage, authPoller,
            counters, BrokerCounters.EVENTS_AUTH);
        // shard 0 after auth; every other routing shard after shard 0 (it reads shard 0's stamps), in parallel
        routes = new StageAgent.Step[routeShards.count()];
        final Sequence[] routeSequences = new Sequence[routes.length];
        final RoutingStage[] replicas = new RoutingStage[routes.length - 1];
        for (int i = 0; i < routes.length; i++)
        {
            final StagePoller poller = 0 == i ? new StagePoller(ring, authPoller.sequence()) :
                new StagePoller(ring, routeSequences[0]);
            final RoutingStage stage = 0 == i ? routing : new RoutingStage(context, counters, routeLogs[i], null,
                windows, new SharedRedispatch(), new FailedCommits(), accessRules, ConnectionControl.NONE,
                routeShards, i);
            if (i > 0)
            {
                replicas[i - 1] = stage;
            }
            routes[i] = 0 == i ? step(stage, poller, counters, BrokerCounters.EVENTS_ROUTE) :
                new StageAgent.Step(stage, poller, errors, batchLimit, turnLimit, null, 0); // shard 0 counts slots
            routeSequences[i] = poller.sequence();
        }
        routing.replicas(replicas);
        final PersistenceStage persistence = store.isDurable() ?
            new PersistenceStage(context, counters, routeLogs, store, failedCommits) : null;
        final StagePoller persistPoller = null == persistence ? null : new StagePoller(ring, routeSequences);
        persist = null == persistence ? null :
            step(persistence, persistPoller, counters, BrokerCounters.EVENTS_PERSIST);
        final Sequence[] shardsFollow = null == persistence ? routeSequences :
            new Sequence[]{persistPoller.sequence()};
        final ShardHandover handover = new ShardHandover(shardCount);
        shards = new StageAgent.Step[shardCount];
        final DeliveryShard[] deliveryShards = new DeliveryShard[shardCount];
        journals = new ShardJournal[shardCount];
        final Sequence[] shardSequences = new Sequence[shardCount];
        for (int i = 0; i < shardCount; i++)
        {
            final StagePoller poller = new StagePoller(ring, shardsFollow);
            journals[i] = ShardJournal.of(store, context.persistence().fsyncIntervalMs());
            deliveryShards[i] = new DeliveryShard(i, context, outbound.forShard(i), counters, routeLogs, handover,
                windows, redispatch, journals[i]);
            deliveryShards[i].follow(limits);
            shards[i] = step(deliveryShards[i], poller, counters, BrokerCounters.EVENTS_DELIVER);
            shardSequences[i] = poller.sequence();
        }
        recovered = null == persistence ? null :
            new PersistenceRecovery(store, routing.restore(), persistence, deliveryShards[0])
                .run(context.persistence().strictRecovery());
        final StagePoller releasePoller = new StagePoller(ring, shardSequences);
        release = step(new ReleaseStage(logs, routeLogs, ring, releasePoller.sequence(), counters), releasePoller,
            counters, BrokerCounters.EVENTS_RELEASE);
        ring.addGatingSequences(releasePoller.sequence()); // producers wait for the last stage
    }

    private StageAgent.Step step(final Stage stage, final StagePoller poller, final BrokerCounters counters,
        final int workCounter)
    {
        return new StageAgent.Step(stage, poller, errors, batchLimit, turnLimit, counters, workCounter);
    }

    /**
     * Reports each PUBLISH's time from ingress to the end of every stage: {@code auth}, {@code route},
     * {@code deliver-0} … (queued on the outbound ring), {@code release} (the whole pipeline). Call before any
     * stage runs.
     *
     * @param sinkForStage the sink for a stage's name.
     */
    public void latencySinks(final Function<String, LatencySink> sinkForStage)
    {
        auth.latency(sinkForStage.apply("auth"));
        for (int i = 0; i < routes.length; i++)
        {
            routes[i].latency(sinkForStage.apply(0 == i ? "route" : "route-" + i));
        }
        if (null != persist)
        {
            persist.latency(sinkForStage.apply("persist"));
        }
        for (int i = 0; i < shards.length; i++)
        {
            shards[i].latency(sinkForStage.apply("deliver-" + i));
        }
        release.latency(sinkForStage.apply("release"));
    }

    /**
     * Unmaps the message logs and routing logs (RingMemory) once every stage and I/O thread has stopped: nothing may
     * touch them after this.
     */
    public void releaseMemory()
    {
        for (final MessageLog log : logs)
        {
            log.releaseMemory();
        }
        for (final MessageLog log : routeLogs)
        {
            log.releaseMemory();
        }
    }

    /**
     * A clean stop, once every stage thread has stopped: the store records when, so the next start knows the
     * sessions connected now went away normally (no wills) and counts their expiry from now.
     */
    public void stopped()
    {
        if (store.isDurable())
        {
            for (final ShardJournal journal : journals)
            {
                try
                {
                    journal.commitAll(); // its thread has stopped: what it acknowledged last is not sent again
                }
                catch (final StoreException ex)
                {
                    // those messages are sent again after the restart, which MQTT allows; the stop is still clean
                    errors.record("clean stop (ends of messages)", ex);
                }
            }
            final io.ringmq.pipeline.persistence.StoreWriter writer = store.writer(true);
            final org.agrona.concurrent.UnsafeBuffer key = new org.agrona.concurrent.UnsafeBuffer(new byte[16]);
            key.putLong(8, System.currentTimeMillis());
            writer.put(key, 0, io.ringmq.pipeline.persistence.Records.stopKey(key), key, 8, 8);
            writer.commit();
        }
    }

    /**
     * @return the line recovery printed (what it restored, how long it took, what was lost), or null when the store
     * is not durable.
     */
    public String recovered()
    {
        return recovered;
    }

    /**
     * @return the message log of one I/O agent, where it puts packets too large for a slot.
     */
    public MessageLog messageLog(final int agentIndex)
    {
        return logs[agentIndex];
    }

    public RingBuffer<IngressEvent> ring()
    {
        return ring;
    }

    /**
     * @return the limits a reload publishes; the I/O agents follow them too.
     */
    public LiveLimits limits()
    {
        return limits;
    }

    /**
     * Hands a reloaded password file to the auth stage (any thread).
     */
    public void reloadPasswordFile(final io.ringmq.pipeline.auth.PasswordFile passwordFile)
    {
        authStage.reload(passwordFile);
    }

    /**
     * Hands a reloaded ACL file to the auth stage (any thread), which takes it and publishes it to routing.
     */
    public void reloadAclFile(final io.ringmq.pipeline.auth.AclFile aclFile)
    {
        authStage.reload(aclFile);
    }

    public RoutingStage routing()
    {
        return routing;
    }

    /**
     * @return a routing shard (0: {@link #routing()}); the others' structures are their threads' own.
     */
    RoutingStage routing(final int shard)
    {
        return (RoutingStage)routes[shard].stage();
    }

    /**
     * @return the number of delivery shards, one per I/O agent.
     */
    public int shardCount()
    {
        return shards.length;
    }

    /**
     * @return one agent that runs every stage in order (the shared threading modes and tests).
     */
    public StageAgent allStages(final String roleName)
    {
        final int before = 1 + routes.length + (null == persist ? 0 : 1);
        final StageAgent.Step[] steps = new StageAgent.Step[shards.length + before + 1];
        steps[0] = auth;
        System.arraycopy(routes, 0, steps, 1, routes.length);
        if (null != persist)
        {
            steps[before - 1] = persist;
        }
        System.arraycopy(shards, 0, steps, before, shards.length);
        steps[steps.length - 1] = release;
        return new StageAgent(roleName, steps);
    }

    /**
     * @return the auth stage with the release stage (both light; the dedicated mode's first stage thread).
     */
    public StageAgent authAgent()
    {
        return new StageAgent("auth", new StageAgent.Step[]{auth, release});
    }

    /**
     * @return one agent per routing shard (dedicated mode: a thread each), shard 0 first.
     */
    public StageAgent[] routingAgents()
    {
        final StageAgent[] agents = new StageAgent[routes.length];
        for (int i = 0; i < agents.length; i++)
        {
            agents[i] = new StageAgent(0 == i ? "route" : "route-" + i, new StageAgent.Step[]{routes[i]});
        }
        return agents;
    }

    /**
     * @return the persistence stage's agent (dedicated mode: an fsync never holds up routing), or null when the
     * store is not durable.
     */
    public StageAgent persistenceAgent()
    {
        return null == persist ? null : new StageAgent("persist", new StageAgent.Step[]{persist});
    }

    public StageAgent shardAgent(final int shard)
    {
        return new StageAgent("deliver-" + shard, new StageAgent.Step[]{shards[shard]});
    }
}
