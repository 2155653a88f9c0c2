package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.Pipeline;
import io.ringmq.pipeline.RingMemory;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.CountersFile;
import io.ringmq.pipeline.status.ErrorLog;
import org.agrona.CloseHelper;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Assembles and runs a broker:
 * <pre>
 *            accept (io-0)                 ingress ring (Disruptor, multi-producer)
 *   sockets ──▶ io-0 … io-N ──decode──▶ [ slot | slot | slot | … ] ──▶ auth ─▶ route ─▶ deliver-0 … deliver-N
 *                 ▲                                                                      │ (one shard per agent)
 *                 └──── outbound ring per I/O agent (Agrona, [conn id][bytes]), shard i ─▶ io-i
 *                                                                             then release (gives back log entries)
 *
 *   --threading shared          one thread:  [io-0 + auth + route + deliver], delivery calls io-0 directly
 *   --threading shared-network  io-0 … io-N each on a thread, one thread for [auth + route + deliver]
 *   --threading dedicated       io-0 … io-N, auth (+ release), route, deliver-0 … deliver-N each on its own
 *                               (pinnable) thread
 *   --threading invoker         no thread: the caller steps [io-0 + auth + route + deliver] with invoke()
 * </pre>
 * With the default {@code wake} idle strategy every thread sleeps when idle (I/O agents in {@code select},
 * stage threads parked) and is woken once per batch by whoever gave it work.
 * <p>
 * The broker is the assembly, as Aeron's {@code MediaDriver} is: in order, it opens the password file and the store
 * ({@link StartupFiles}), binds the listeners, builds the pipeline, the outbound rings and the I/O agents, has
 * {@link AgentThreads} put the agents on threads in the threading mode, runs the warm-up ({@link WarmStart}) before
 * the real listeners are bound, and on {@link #close()} undoes it all in order. A reload is {@link LiveReload}'s,
 * never overlapping the close. Launching, reloading and closing run on their callers' threads.
 */
public final class Broker implements AutoCloseable
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private static final int STARTING = 0;
    private static final int STARTED = 1;
    private static final int FAILED = 2;

    /** How long a reload waits for every owner to take its limits ({@link LiveReload}; tests read it here). */
    static final long LIMITS_TAKEN_TIMEOUT_MS = LiveReload.LIMITS_TAKEN_TIMEOUT_MS;
    private final CountersFile countersFile;
    private final BrokerCounters counters;
    /** What the broker listens on now; a reload replaces it. */
    private volatile Listener[] listeners;
    /** Runs TLS handshakes' delegated tasks for every TLS listener; its threads start with the first handshake. */
    private final TlsTaskExecutor tlsTasks;
    private final DurableStore store;
    /** The agents' threads (or the invoker that steps them), their wakes and what a fatal error does. */
    private final AgentThreads threads;
    /** Reloads the password and ACL files, the listeners and the live limits. */
    private final LiveReload reloads;
    private final Pipeline pipeline;
    /** The I/O agents' outbound rings: mapped memory (RingMemory), unmapped by {@link #close()}. */
    private final ManyToOneRingBuffer[] rings;
    /** Its I/O agents, for a diagnosis only ({@link #describeConnections()}): they run on their own threads. */
    private final IoAgent[] ioAgents;
    private final CredentialWorkers credentials;
    private final int port;
    private final MetricsEndpoint metrics;
    /** What the warm-up at start did, or null without one. */
    private final Warmup.Result warmedUp;
    /** The bridges to remote brokers, or null without any. */
    private Bridges bridges;
    private volatile boolean closed;
    /** STARTING until the constructor ends, then STARTED; FAILED when an agent's fatal error came first. */
    private final AtomicInteger start = new AtomicInteger(STARTING);
    /** The fatal error that failed the start (written before {@link #start} becomes FAILED). */
    private volatile Throwable startFailure;

    private Broker(final BrokerContext context) throws IOException
    {
        context.conclude(); // validated once, before anything is opened
        final Authenticator authenticator = StartupFiles.authenticator(context);
        // first: a data directory in use refuses the start before the port is taken
        store = StartupFiles.openStore(context);
        // after what may refuse the start on its own, so that refusal has nothing of it to close
        this.tlsTasks = new TlsTaskExecutor(context.threads().tlsThreads(), TlsTaskExecutor.DEFAULT_QUEUE_CAPACITY);
        // a warm-up accepts on a loopback listener of its own, and the real ones are bound after it: a client (or a
        // supervisor's probe) that finds the port open meets a warm broker
        final Listener[] warmupListeners = WarmStart.listeners(context);
        try
        {
            listeners = null == warmupListeners ?
                Listener.bindAll(context.listeners(), context.acceptBacklog(), tlsTasks) : new Listener[0];
        }
        catch (final IOException | RuntimeException ex)
        {
            tlsTasks.close();
            store.close();
            throw ex;
        }
        try
        {
            countersFile = CountersFile.create(context.observability().countersDir());
        }
        catch (final IOException ex)
        {
            Listener.closeAll(listeners);
            Listener.closeAll(null == warmupListeners ? new Listener[0] : warmupListeners);
            tlsTasks.close();
            CloseHelper.quietClose(store);
            throw new IOException("cannot create a counters file in " + context.observability().countersDir() +
                ": " + ex, ex);
        }
        counters = new BrokerCounters(countersFile);
        final ErrorLog errors = new ErrorLog(counters);
        // passwords are verified on their own named threads in every mode; inline in invoker mode (no threads)
        credentials = new CredentialWorkers(authenticator, context.auth().credentialSettings(),
            context.threads().threading() == BrokerContext.Threading.INVOKER ? 0 : context.auth().credentialSettings()
                .threads(),
            counters);
        // an agent's fatal error while this constructor still runs (the warm-up, binding the listeners) is the
        // constructor's to act on: close() beside it would close what it is still opening
        threads = new AgentThreads(context, errors, this::onDefaultFatalError);
        final int ioCount = context.threads().ioThreads();
        final BrokerContext.Threading threading = context.threads().threading();
        rings = new ManyToOneRingBuffer[ioCount];
        final IoAgent[] agents = new IoAgent[ioCount];
        ioAgents = agents;
        final boolean[] direct = new boolean[ioCount];
        direct[0] = threading == BrokerContext.Threading.SHARED || threading == BrokerContext.Threading.INVOKER;
        final OutboundRouter outbound = new OutboundRouter(rings, agents, direct);
        try
        {
            pipeline = new Pipeline(context, authenticator, outbound, (agentIndex, connectionId) ->
            {
                agents[agentIndex].revoke(connectionId);
                threads.wake(agentIndex);
            }, counters, errors, store);
            if (null != pipeline.recovered())
            {
                LOG.log(System.Logger.Level.INFO, pipeline.recovered());
            }
            final AtomicInteger connectionCount = new AtomicInteger();
            for (int i = 0; i < ioCount; i++)
            {
                rings[i] = new ManyToOneRingBuffer(new UnsafeBuffer(RingMemory.allocate( // resident as written
                    context.memory().outboundRingBytes() + RingBufferDescriptor.TRAILER_LENGTH)));
                agents[i] = new IoAgent(i, context, counters, i == 0 ? (null != warmupListeners ? warmupListeners :
                    listeners) : new Listener[0], rings[i], pipeline.ring(), pipeline.messageLog(i), connectionCount,
                    credentials);
                agents[i].follow(pipeline.limits());
                agents[i].drains(pipeline.routing().retainedDrains());
            }
            final StageLatencyCollector latencies = 0 == context.observability().metricsPort() ? null :
                StageLatencyCollector.attach(pipeline);
            threads.start(agents, outbound, pipeline);
            if (null != warmupListeners)
            {
                warmedUp = WarmStart.warmUp(context, counters, pipeline, warmupListeners[0], connectionCount);
                failIfAnAgentFailed(); // before the real listeners are bound: no client finds a broken broker
                listeners = Listener.bindAll(context.listeners(), context.acceptBacklog(), tlsTasks);
                for (final Listener listener : listeners)
                {
                    agents[0].addListener(listener);
                }
                threads.wake(0);
            }
            else
            {
                warmedUp = null;
            }
            port = listeners[0].port;
            bridges = Bridges.start(context, agents[0], () -> threads.wake(0));
            metrics = MetricsEndpoint.start(context, counters, latencies, () -> !closed && !threads.fatal());
        }
        catch (final RuntimeException | IOException | Error ex) // out of direct memory too: nothing may stay behind
        {
            CloseHelper.quietClose(bridges);
            threads.closeFailedStart(agents);
            Listener.closeAll(listeners);
            Listener.closeAll(null == warmupListeners ? new Listener[0] : warmupListeners);
            tlsTasks.close();
            CloseHelper.quietCloseAll(credentials, countersFile, store); // the metrics endpoint starts last: none here
            if (ex instanceof StoreException)
            {
                throw new IOException(ex.getMessage(), ex); // recovery refused (--strict-recovery): a failed start
            }
            throw ex;
        }
        reloads = new LiveReload(context, tlsTasks, pipeline, agents[0], threads);
        if (!start.compareAndSet(STARTING, STARTED))
        {
            close();
            throw new IOException("an agent failed while the broker started: " + startFailure, startFailure);
        }
        LOG.log(System.Logger.Level.INFO, "ringmq listening on " + context.bindAddress() + ":" + port + " (" +
            context + "); counters in " + countersFile.path() + (null == warmedUp ? "" : "; " + warmedUp));
    }

    private void failIfAnAgentFailed() throws IOException
    {
        if (start.get() == FAILED)
        {
            throw new IOException("an agent failed while the broker started: " + startFailure, startFailure);
        }
    }

    /**
     * The default fatal-error handler (ringmq-fatal's thread): a broker that has started closes; one still starting
     * leaves it to its constructor, which closes it and fails the start.
     */
    private void onDefaultFatalError(final Throwable error)
    {
        startFailure = error;
        if (start.getAndUpdate(state -> state == STARTING ? FAILED : state) == STARTED)
        {
            close(); // a second agent's fatal error while starting finds FAILED: the constructor's to handle too
        }
    }

    /**
     * Starts a broker on the settings given.
     *
     * @throws IOException              when the port cannot be bound, the password file read, or an agent failed
     *                                  fatally (out of memory, or its start threw) while the broker started.
     * @throws IllegalArgumentException for a bad setting, with a one-line reason.
     */
    public static Broker launch(final BrokerContext context) throws IOException
    {
        return new Broker(context);
    }

    /**
     * @return the line recovery printed at start (what it restored, in how long, what was lost), or null without
     * persistence.
     */
    public String recovered()
    {
        return pipeline.recovered();
    }

    /**
     * @param handler what to do when an agent hits a fatal JVM error (out of memory, stack overflow) or its start
     *                throws; by default the broker closes itself. The command line exits the process instead, for a
     *                supervisor to restart it. Run at once if that has happened already.
     * @return this.
     */
    public Broker onFatalError(final java.util.function.Consumer<Throwable> handler)
    {
        threads.onFatalError(handler);
        return this;
    }

    /**
     * Reloads the password and ACL files (SIGHUP, {@code ringmq reload}): new CONNECTs are checked against them, a
     * connected client whose credentials or subscriptions no longer hold is disconnected, everyone else stays
     * connected. Both are read before either is taken: a file that cannot be read or parsed changes nothing.
     *
     * @return what was reloaded, one line.
     */
    public String reload() throws IOException
    {
        return reload(null);
    }

    /**
     * Reloads with a configuration read again (the command line and its config file, as at start): the password
     * and ACL files it names, and its listeners: a listener it no longer has stops accepting (its connections
     * stay), a new one starts accepting, one whose settings changed is opened anew; one it keeps keeps its socket.
     * Everything is read and bound before anything is taken: a bad file or a port in use changes nothing. The
     * limits of {@code next} ({@link io.ringmq.pipeline.ReloadPlan#liveContext}) are published to their owners, each
     * taking them on its own thread; this returns once every one has them. Settings that need a restart keep their old value and
     * are named in one log line. A reload and {@link #close} do not overlap: one that comes after the close began
     * does nothing.
     *
     * @param next the configuration now, or null to read the same files again.
     * @return what was reloaded, one line.
     */
    public synchronized String reload(final BrokerContext next) throws IOException
    {
        if (closed)
        {
            // SIGHUP during SIGTERM: nothing to bind a listener for, no agent left to take a limit
            LOG.log(System.Logger.Level.INFO, "reload: not reloaded, the broker is stopping");
            return "not reloaded: the broker is stopping";
        }
        return reloads.reload(next, listeners, now -> listeners = now);
    }

    /**
     * @return the limits in force now (the last reload's), for tests and status.
     */
    BrokerContext limits()
    {
        return pipeline.limits().current();
    }

    /**
     * @return whether every I/O agent that sleeps when idle ({@code --idle-strategy wake}) sleeps now, true when
     * none does (other idle strategies); for tests, so that what they send then meets a sleeping broker.
     */
    boolean ioAgentsAsleep()
    {
        return threads.ioAgentsAsleep();
    }

    /**
     * @return every open connection's state as its I/O agent judges whether to read it, a line each; for a test's
     * failure message, read from the calling thread while the agents run, so only as fresh as it happens to see.
     */
    String describeConnections()
    {
        final StringBuilder lines = new StringBuilder();
        for (final IoAgent agent : ioAgents)
        {
            if (null != agent)
            {
                lines.append(agent.describeConnections());
            }
        }
        return lines.toString();
    }

    /**
     * Runs one duty cycle of every agent on the calling thread: the {@code invoker} threading mode, where no
     * thread of the broker's own runs and a test steps it deterministically.
     *
     * @return the work done (0 when every agent was idle).
     * @throws IllegalStateException in any other threading mode.
     */
    public int invoke()
    {
        return threads.invoke();
    }

    /**
     * @return the bridges to remote brokers (none: an empty list).
     */
    java.util.List<Bridge> bridges()
    {
        return null == bridges ? java.util.List.of() : bridges.bridges();
    }

    /**
     * @return what the warm-up at start did ({@code --warmup}), or null when there was none.
     */
    Warmup.Result warmup()
    {
        return warmedUp;
    }

    /**
     * @return the port the broker listens on (the real one when 0 was asked for).
     */
    public int port()
    {
        return port;
    }

    /**
     * @return the port each listener is bound to, in the order they were given (the default listener first).
     */
    public int[] ports()
    {
        final int[] ports = new int[listeners.length];
        for (int i = 0; i < ports.length; i++)
        {
            ports[i] = listeners[i].port;
        }
        return ports;
    }

    /**
     * @return what each listener is, for the start line: {@code mqtt://0.0.0.0:1883}, {@code wss://...:8081}.
     */
    public List<String> listenerNames()
    {
        final List<String> names = new ArrayList<>(listeners.length);
        for (final Listener listener : listeners)
        {
            names.add(listener.toString());
        }
        return names;
    }

    /**
     * @return the port {@code /metrics} and {@code /health} are served on (the real one for
     * {@link ObservabilitySettings#METRICS_PORT_EPHEMERAL}), or 0 when the endpoint is off.
     */
    public int metricsPort()
    {
        return null == metrics ? 0 : metrics.port();
    }

    /**
     * @return the counters file {@code ringmq stat} reads; it is deleted on {@link #close()}.
     */
    public Path countersFile()
    {
        return countersFile.path();
    }

    public BrokerCounters counters()
    {
        return counters;
    }

    /**
     * @return the number of sessions the routing stage holds (a racy read, for tests and status).
     */
    public int sessionCount()
    {
        return pipeline.routing().sessionCount();
    }

    /**
     * Stops accepting, flushes and closes every connection, and stops every thread, within the time the agents
     * take to finish a duty cycle. A clean shutdown publishes no will: the ends of the connections it closes are
     * not routed.
     */
    public void close()
    {
        synchronized (this) // after a reload under way (its listeners are among those closed below); none after
        {
            if (closed)
            {
                return;
            }
            closed = true;
        }
        CloseHelper.quietClose(metrics); // first: a scrape in progress ends before anything it reads is closed
        CloseHelper.quietClose(bridges); // while the agents still run: their local connections end with a DISCONNECT
        Listener.closeAll(listeners); // stop accepting
        threads.close(); // then every agent: connections flushed and closed, no wills
        tlsTasks.close(); // the TLS handshake pool, once no connection needs it
        CloseHelper.quietClose(credentials); // after the agents: no verdict is waited for any more
        try
        {
            pipeline.stopped(); // after every stage thread: the next start knows this stop was clean
        }
        catch (final RuntimeException ex)
        {
            LOG.log(System.Logger.Level.WARNING, "could not record the clean stop in the store: " + ex.getMessage());
        }
        CloseHelper.quietClose(store); // what the stages committed is synced, then closed
        CloseHelper.quietClose(countersFile);
        // every thread that touched the rings and logs has stopped: unmap them now, not at some later collection
        // (a JVM that starts many brokers, tests, kept every closed one's mappings and written pages until then)
        for (final ManyToOneRingBuffer ring : rings)
        {
            RingMemory.release(ring.buffer().byteBuffer());
        }
        pipeline.releaseMemory();
        LOG.log(System.Logger.Level.INFO, "ringmq stopped; counters:\n" + counters.describe(false));
    }
}
