package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.Pipeline;
import io.ringmq.pipeline.StageAgent;
import io.ringmq.pipeline.status.ErrorLog;
import org.agrona.CloseHelper;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.AgentInvoker;
import org.agrona.concurrent.AgentRunner;
import org.agrona.concurrent.CompositeAgent;
import org.agrona.concurrent.IdleStrategy;

import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Maps a broker's agents onto threads as {@code --threading} asks (the modes are drawn in {@link Broker}'s Javadoc):
 * picks each one's idle strategy, wires who wakes whom, pins and starts the threads, or builds the
 * {@link AgentInvoker} a test steps in {@code invoker} mode. It owns the agent runners, the invoker, the I/O agents'
 * wakes and what an agent's fatal JVM error does.
 * <p>
 * {@link #start} runs once, on the thread that launches the broker; {@link #wake} and {@link #wakeIoAgents} are
 * called from any thread (a stage revoking a connection, a reload); {@link #onAgentError} runs on the failing agent's
 * thread and hands a fatal error to a thread of its own ({@code ringmq-fatal}); {@link #close} runs on the closing
 * thread.
 */
final class AgentThreads
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");

    private final BrokerContext context;
    private final ErrorLog errors;
    private final List<AgentRunner> runners = new ArrayList<>();
    private AgentInvoker invoker;
    private volatile Wakeable[] agentWakes;
    /** Set once, by the first fatal error (a fatal JVM error, or an agent whose start threw). */
    private final java.util.concurrent.atomic.AtomicReference<Throwable> fatalError =
        new java.util.concurrent.atomic.AtomicReference<>();
    private volatile Consumer<Throwable> onFatalError;

    /**
     * @param onFatalError what an agent's fatal JVM error does until {@link #onFatalError(Consumer)} says otherwise.
     */
    AgentThreads(final BrokerContext context, final ErrorLog errors, final Consumer<Throwable> onFatalError)
    {
        this.context = context;
        this.errors = errors;
        this.onFatalError = onFatalError;
    }

    /**
     * Starts every agent in the threading mode of the context: the I/O agents, the stages of {@code pipeline}, and
     * the router's wakes of the I/O agents.
     */
    void start(final IoAgent[] agents, final OutboundRouter outbound, final Pipeline pipeline)
    {
        final CorePinning pinning = new CorePinning(context.threads().pin());
        final boolean wake = IdleStrategies.WAKE.equals(context.threads().idleStrategy());
        final Wakeable[] agentWakes = new Wakeable[agents.length];
        final IdleStrategy[] agentIdle = new IdleStrategy[agents.length];
        for (int i = 0; i < agents.length; i++)
        {
            final IoAgent agent = agents[i];
            if (wake)
            {
                final IdleStrategies.SleepingIdleStrategy idle =
                    IdleStrategies.wake(agent.selector(), agent::hasPendingWork, agent.readyAfterSleep());
                agentIdle[i] = idle;
                agentWakes[i] = idle;
            }
            else
            {
                agentIdle[i] = IdleStrategies.named(context.threads().idleStrategy());
                agentWakes[i] = Wakeable.NONE;
            }
        }
        outbound.wakes(agentWakes);
        this.agentWakes = agentWakes;
        switch (context.threads().threading())
        {
            case INVOKER:
            {
                final StageAgent stages = pipeline.allStages("pipeline");
                agents[0].wire(agents, agentWakes, Wakeable.NONE);
                invoker = new AgentInvoker(error -> errors.record("invoker", error), null,
                    new CompositeAgent(agents[0], stages));
                invoker.start();
                if (!invoker.isRunning())
                {
                    // its start threw (recorded): stepping it would do nothing
                    throw new IllegalStateException("the invoker's agents failed to start");
                }
                break;
            }
            case SHARED:
            {
                final StageAgent stages = pipeline.allStages("pipeline");
                if (wake)
                {
                    // the one sleeper of this thread is the agent's wake too (the router and this.agentWakes share
                    // the array): a TLS task's readyAgain wakes it, and wire() gives it the paused connections' limit
                    final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.wake(agents[0].selector(),
                        () -> agents[0].hasPendingWork() || stages.hasPendingWork(), agents[0].readyAfterSleep());
                    // every stage ran after the agent in the cycle: what one left for another is in the pending work
                    idle.sleepAfterWork(() -> agents[0].settled() && !stages.waitsForRoom());
                    agentIdle[0] = idle;
                    agentWakes[0] = idle;
                }
                agents[0].wire(agents, agentWakes, Wakeable.NONE);
                if (wake)
                {
                    // the agent's limit (paused connections), and the stages' work due on their own clock
                    ((IdleStrategies.SleepingIdleStrategy)agentIdle[0]).sleepLimit(
                        () -> Math.min(agents[0].sleepLimitMs(), stages.wakeWithinMs()));
                }
                run(new CompositeAgent(pinning.pin(pinning.sharedThreadRole(), 0, agents[0]), stages), agentIdle[0]);
                break;
            }
            case SHARED_NETWORK:
            {
                final StageAgent stages = pipeline.allStages("pipeline");
                stages.afterWork(() -> wakeWaitingForRoom(agents, agentWakes));
                final IdleStrategy idle = stageIdle(wake, stages);
                for (final IoAgent agent : agents)
                {
                    agent.shardWake(wakeable(idle)); // every shard runs on the pipeline thread
                }
                startIoAgents(agents, agentWakes, agentIdle, wakeable(idle), pinning);
                run(pinning.pin("pipeline", 0, stages), idle);
                break;
            }
            default:
            {
                // auth (with the light release stage), route, and one thread per delivery shard
                final StageAgent auth = pipeline.authAgent();
                final StageAgent[] routes = pipeline.routingAgents();
                if (pipeline.shardCount() != agents.length)
                {
                    // shard i wakes agent i's sleeper and is woken by it: one delivery shard per I/O agent
                    throw new IllegalStateException(
                        pipeline.shardCount() + " delivery shards for " + agents.length + " I/O agents");
                }
                final StageAgent[] shards = new StageAgent[pipeline.shardCount()];
                final IdleStrategy authIdle = stageIdle(wake, auth);
                final IdleStrategy[] routeIdle = new IdleStrategy[routes.length];
                final Wakeable[] routeWakes = new Wakeable[routes.length];
                for (int i = 0; i < routes.length; i++)
                {
                    routeIdle[i] = stageIdle(wake, routes[i]);
                    routeWakes[i] = wakeable(routeIdle[i]);
                }
                final IdleStrategy[] shardIdle = new IdleStrategy[shards.length];
                final Wakeable[] shardWakes = new Wakeable[shards.length];
                for (int i = 0; i < shards.length; i++)
                {
                    shards[i] = pipeline.shardAgent(i);
                    shardIdle[i] = stageIdle(wake, shards[i]);
                    shardWakes[i] = wakeable(shardIdle[i]);
                    agents[i].shardWake(shardWakes[i]);
                }
                final Wakeable authWake = wakeable(authIdle);
                pipeline.routing().wakeRingWith(authWake::wake); // its ticks: the auth thread takes them at once
                auth.afterWork(() ->
                {
                    routeWakes[0].wake();
                    wakeWaitingForRoom(agents, agentWakes); // the release stage runs on this thread
                });
                final Runnable wakeShards = () ->
                {
                    for (final Wakeable shardWake : shardWakes)
                    {
                        shardWake.wake();
                    }
                };
                final StageAgent persist = pipeline.persistenceAgent(); // its own thread: an fsync holds up no one
                final IdleStrategy persistIdle = null == persist ? null : stageIdle(wake, persist);
                final Runnable afterRouting;
                if (null != persist)
                {
                    afterRouting = wakeable(persistIdle)::wake;
                    persist.afterWork(wakeShards);
                }
                else
                {
                    afterRouting = wakeShards;
                }
                // routing shard 0 wakes the other shards, which follow it; each wakes what follows them all
                routes[0].afterWork(() ->
                {
                    for (int i = 1; i < routeWakes.length; i++)
                    {
                        routeWakes[i].wake();
                    }
                    afterRouting.run();
                });
                for (int i = 1; i < routes.length; i++)
                {
                    routes[i].afterWork(afterRouting);
                }
                for (final StageAgent shard : shards)
                {
                    shard.afterWork(authWake::wake); // the release stage runs on the auth thread
                }
                startIoAgents(agents, agentWakes, agentIdle, authWake, pinning);
                run(pinning.pin("auth", 0, auth), authIdle);
                for (int i = 0; i < routes.length; i++)
                {
                    run(pinning.pin("route", i, routes[i]), routeIdle[i]);
                }
                if (null != persist)
                {
                    run(pinning.pin("persist", 0, persist), persistIdle);
                }
                for (int i = 0; i < shards.length; i++)
                {
                    run(pinning.pin("deliver", i, shards[i]), shardIdle[i]);
                }
            }
        }
    }

    /**
     * After the release stage freed slots (on a thread other than the I/O agents'): wakes each agent whose paused
     * connections wait for that room, rather than leave it asleep for {@link IoAgent#PAUSED_SLEEP_MS}, while the stages
     * run dry (a 2,048-slot ring drains in a fraction of that).
     */
    static void wakeWaitingForRoom(final IoAgent[] agents, final Wakeable[] agentWakes)
    {
        VarHandle.fullFence(); // Dekker: the release stage's store of its sequence before the load of the flag
        for (int i = 0; i < agents.length; i++)
        {
            if (agents[i].waitsForRingRoom())
            {
                agentWakes[i].wake(); // only if it sleeps; if it is about to, its last look sees the room
            }
        }
    }

    /**
     * Closes an agent that never ran (its selector), as its runner would have.
     */
    private static void closeUnstarted(final IoAgent agent)
    {
        if (null != agent)
        {
            try
            {
                agent.onClose();
            }
            catch (final RuntimeException ex)
            {
                // it held nothing more than its selector: what could be closed is closed
            }
        }
    }

    private static Wakeable wakeable(final IdleStrategy idle)
    {
        return idle instanceof Wakeable ? (Wakeable)idle : Wakeable.NONE;
    }

    /**
     * A stage thread's idle strategy. With {@code wake} it parks until woken, and while a stage's work waits for room
     * an I/O agent frees (a delivery shard's backlog for a full outbound ring) it naps only
     * {@link IoAgent#PAUSED_SLEEP_MS} at a time: the agent wakes it when it drains its ring, and the nap bounds a
     * wake-up missed; work due on a stage's own clock ({@code Stage#wakeWithinMs}) bounds its sleep too.
     */
    private IdleStrategy stageIdle(final boolean wake, final StageAgent stages)
    {
        if (!wake)
        {
            return IdleStrategies.named(context.threads().idleStrategy());
        }
        final IdleStrategies.SleepingIdleStrategy idle = IdleStrategies.park(stages::hasPendingWork);
        idle.sleepLimit(() -> stages.waitsForRoom() ? IoAgent.PAUSED_SLEEP_MS : stages.wakeWithinMs());
        return idle;
    }

    private void startIoAgents(final IoAgent[] agents, final Wakeable[] agentWakes, final IdleStrategy[] agentIdle,
        final Wakeable pipelineWake, final CorePinning pinning)
    {
        for (int i = 0; i < agents.length; i++)
        {
            agents[i].wire(agents, agentWakes, pipelineWake);
            run(pinning.pin("io", i, agents[i]), agentIdle[i]);
        }
    }

    private void run(final Agent agent, final IdleStrategy idle)
    {
        final boolean[] startFailed = new boolean[1]; // this runner's thread only: set before its error handler runs
        final AgentRunner runner = new AgentRunner(idle, error -> onAgentError(agent, error, startFailed[0]), null,
            startGuarded(agent, () -> startFailed[0] = true));
        runners.add(runner);
        AgentRunner.startOnThread(runner);
    }

    /**
     * @param onStartFailed run, before the exception goes on to the runner, when the agent's {@code onStart} throws.
     * @return the agent, telling {@code onStartFailed} when its start fails: Agrona's runner then ends the thread
     * before the first duty cycle, and a broker without that agent accepts connections and never answers them.
     */
    static Agent startGuarded(final Agent agent, final Runnable onStartFailed)
    {
        return new Agent()
        {
            public void onStart()
            {
                try
                {
                    agent.onStart();
                }
                catch (final RuntimeException | Error ex)
                {
                    onStartFailed.run();
                    throw ex;
                }
            }

            public int doWork() throws Exception
            {
                return agent.doWork();
            }

            public void onClose()
            {
                agent.onClose();
            }

            public String roleName()
            {
                return agent.roleName();
            }
        };
    }

    /**
     * An agent's runner reports an error (on the agent's thread; a test calls it directly).
     *
     * @param startFailed whether the error came out of the agent's start, which ended its thread.
     */
    void onAgentError(final Agent agent, final Throwable error, final boolean startFailed)
    {
        errors.record(agent.roleName() + " agent", error);
        if ((error instanceof VirtualMachineError || startFailed) && fatalError.compareAndSet(null, error))
        {
            // out of memory or the like, or an agent that never ran: a broker that looks alive would serve nothing
            LOG.log(System.Logger.Level.ERROR, "fatal error in " + agent.roleName() + ": " + error + "; stopping");
            final Thread stopper = new Thread(() -> onFatalError.accept(error), "ringmq-fatal");
            stopper.setDaemon(true);
            stopper.start();
        }
    }

    /**
     * @param handler what to do when an agent hits a fatal JVM error (out of memory, stack overflow) or its start
     *                fails; run at once if that has happened already (an agent's start runs on its own thread,
     *                possibly before the caller of {@link Broker#launch} could name its handler).
     */
    void onFatalError(final Consumer<Throwable> handler)
    {
        this.onFatalError = handler;
        final Throwable already = fatalError.get();
        if (null != already)
        {
            handler.accept(already);
        }
    }

    /**
     * @return whether an agent hit a fatal JVM error or failed to start: the broker serves nothing any more.
     */
    boolean fatal()
    {
        return null != fatalError.get();
    }

    /**
     * Wakes I/O agent {@code agentIndex} if it sleeps; nothing before {@link #start}.
     */
    void wake(final int agentIndex)
    {
        final Wakeable[] wakes = this.agentWakes;
        if (null != wakes && null != wakes[agentIndex])
        {
            wakes[agentIndex].wake();
        }
    }

    /**
     * Wakes every I/O agent that sleeps; nothing before {@link #start}.
     */
    void wakeIoAgents()
    {
        final Wakeable[] wakes = agentWakes;
        for (int i = 0; null != wakes && i < wakes.length; i++)
        {
            wake(i);
        }
    }

    /**
     * @return whether every I/O agent that sleeps when idle ({@code --idle-strategy wake}) sleeps now, true when
     * none does (other idle strategies); for tests, so that what they send then meets a sleeping broker.
     */
    boolean ioAgentsAsleep()
    {
        final Wakeable[] wakes = agentWakes;
        if (null == wakes)
        {
            return false;
        }
        for (final Wakeable wake : wakes)
        {
            if (wake instanceof IdleStrategies.SleepingIdleStrategy &&
                !((IdleStrategies.SleepingIdleStrategy)wake).isSleeping())
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @return whether the caller steps the agents ({@code invoker} threading): no thread of the broker's own runs.
     */
    boolean invoked()
    {
        return null != invoker;
    }

    /**
     * Runs one duty cycle of every agent on the calling thread ({@code invoker} threading).
     *
     * @return the work done (0 when every agent was idle).
     * @throws IllegalStateException in any other threading mode.
     */
    int invoke()
    {
        if (null == invoker)
        {
            throw new IllegalStateException("invoke() is for --threading invoker");
        }
        return invoker.invoke();
    }

    /**
     * Undoes a start that failed part way: closes what runs (each runner closes its agent) or, when nothing ran,
     * every I/O agent made so far.
     */
    void closeFailedStart(final IoAgent[] agents)
    {
        CloseHelper.quietCloseAll(runners);
        if (null != invoker)
        {
            CloseHelper.quietClose(invoker);
        }
        else if (runners.isEmpty())
        {
            for (final IoAgent agent : agents)
            {
                closeUnstarted(agent);
            }
        }
    }

    /**
     * Stops every agent: each runner's thread ends its duty cycle and closes its agent (connections flushed and
     * closed, no wills), then the invoker's agents close.
     */
    void close()
    {
        CloseHelper.quietCloseAll(runners);
        CloseHelper.quietClose(invoker);
    }
}
