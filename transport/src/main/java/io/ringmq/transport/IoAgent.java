package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.LiveLimits;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.RetainedDrains;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network I/O agent: the duty cycle over a selector and the connections assigned to it, on its own thread (or a
 * thread it shares, or a test's). Each cycle it takes what other threads left for it (the
 * {@link ConnectionRegistry}'s sockets, layers ready again and credential verdicts, the {@link ConnectionCloser}'s
 * revocations, the {@link Acceptors}' new listeners), drains its outbound ring into the {@link ConnectionWriter},
 * lets the {@link Acceptor}s (agent 0 only) take new sockets and the {@link ConnectionReader} read and frame ready
 * ones, retries {@link PausedConnections}, flushes every touched connection once, and checks keep-alive and connect
 * timeouts. It never blocks on a socket: a full ingress ring pauses reading from that connection, and while it
 * stays full the agent asks its idle strategy for short sleeps instead of spinning.
 * <p>
 * It assembles its roles, each on this agent's thread, and reads the clock once per cycle for all of them:
 * <pre>
 *   Acceptors --socket--&gt; ConnectionRegistry (ids, layers, selection keys, connect timeout)
 *   ReadyKeys --readable--&gt; ConnectionReader --&gt; PacketFramer --&gt; IngressProxy --&gt; ingress ring
 *                             InboundBuffers     InboundConnects, InboundPublishes, AckRun
 *   outbound ring --&gt; IoAgent.send --&gt; ConnectionWriter --SocketLayer--&gt; socket
 *   ConnectionTimers, reader and writer roles --end--&gt; ConnectionCloser
 * </pre>
 */
final class IoAgent implements Agent
{
    /**
     * How long an agent with paused connections may sleep: in shared threading nobody wakes it when the ingress ring
     * frees up (the stages run on its thread after it); on a thread of its own the stage that frees the ring wakes it
     * ({@link #waitsForRingRoom()}), and this bounds a wake-up missed.
     */
    static final long PAUSED_SLEEP_MS = 1;

    private final int index;
    private final BrokerCounters counters;
    private final Selector selector;
    private final ManyToOneRingBuffer outbound;
    private final IngressProxy ingress;
    /**
     * Its open connections by id, this agent's thread only: the {@link ConnectionRegistry} puts them in, the
     * {@link ConnectionCloser} takes them out, the outbound ring's bytes find their connection here.
     */
    private final Long2ObjectHashMap<Connection> connections = new Long2ObjectHashMap<>();
    /** Its connections holding a pooled buffer; gives back those they stopped using. */
    private final IdleBuffers idleBuffers = new IdleBuffers();
    private final PausedConnections paused = new PausedConnections();
    /**
     * Whether the last duty cycle left work waiting for ingress ring room: paused connections whose retry moved
     * nothing ({@link PausedConnections#isStalled()}), or connection ends ({@link IngressProxy#hasPendingEnds()}).
     */
    private boolean waiting;
    /** {@link #waiting}, for the thread of the stage that frees the ingress ring. */
    private volatile boolean waitsForRingRoom;
    /**
     * A delivery shard on another thread found this agent's outbound ring full: wake it at the next read of the ring
     * that moves anything (not a Dekker pair: a wake missed costs the shard's nap, at most {@link #PAUSED_SLEEP_MS}).
     */
    private volatile boolean outboundRoomWanted;
    private Wakeable shardWake = Wakeable.NONE;
    /** Where the stages had freed the ring to just before the last retry, when it moved nothing. */
    private long stalledAtRelease;
    private long pausedNapMs = PAUSED_SLEEP_MS;
    /**
     * Milliseconds on the monotonic clock (only differences count): a connection's connect timeout, keep-alive
     * [MQTT-3.1.2-24] and close linger, the memory samples and the $SYS rounds hold when the wall clock is stepped
     * back (they would stop until it caught up) or forward (every keep-alive would expire at once).
     */
    static final EpochClock CLOCK = () -> System.nanoTime() / 1_000_000;
    private final EpochClock clock = CLOCK;
    private final ConnectionTimers timers;
    private final MemoryBudget memoryBudget;
    private final ConnectionWriter writer;
    private final ConnectionReader reader;
    private final HandshakeSlots handshakes;
    /** What the partial packets of its admitted connections hold, and who waits for room. */
    private final PartialPacketRoom partials;
    private final PacketFramer framer;
    private final ConnectionRegistry registry;
    private final ConnectionCloser closer;
    /** Agent 0 accepts on every listener; the others have none. */
    private final Acceptors acceptors;
    /** The limits in force on this agent: a reload replaces them on this agent's thread. */
    private BrokerContext context;
    private LiveLimits live;
    private final ReadyKeys readyKeys;
    private final MessageHandler outboundHandler = this::onOutbound;
    /** How often agent 0 logs the limits hit since its last line. */
    private static final long LIMIT_REPORT_MS = 60_000;
    /** Agent 0 publishes the $SYS tree; the others have none. */
    private final SysTopics sys;
    private final LimitReport limits;
    private Wakeable pipelineWake = Wakeable.NONE;
    private long nowMs;

    IoAgent(final int index, final BrokerContext context, final BrokerCounters counters,
        final Listener[] listeners, final ManyToOneRingBuffer outbound, final RingBuffer<IngressEvent> ingress,
        final MessageLog log, final AtomicInteger connectionCount) throws IOException
    {
        this(index, context, counters, listeners, outbound, ingress, log, connectionCount, null);
    }

    /**
     * @param credentials where CONNECT passwords are verified (their verdicts come back to this agent), or null to
     *                    leave them to the auth stage (stage tests).
     */
    IoAgent(final int index, final BrokerContext context, final BrokerCounters counters,
        final Listener[] listeners, final ManyToOneRingBuffer outbound, final RingBuffer<IngressEvent> ingress,
        final MessageLog log, final AtomicInteger connectionCount, final CredentialWorkers credentials)
        throws IOException
    {
        this.index = index;
        this.counters = counters;
        this.outbound = outbound;
        // copies in runs only where the ring is consumed on this agent's own thread, after the batch (shared and
        // invoker threading): with stages on other threads a slot's bytes must be in place when it is published,
        // and a run holds its slots back from every consumer meanwhile
        this.ingress = new IngressProxy(ingress, log, index,
            context.threads().threading() == BrokerContext.Threading.SHARED ||
            context.threads().threading() == BrokerContext.Threading.INVOKER);
        this.selector = Selector.open();
        this.nowMs = clock.time();
        this.closer = new ConnectionCloser(counters, this.ingress, connections, connectionCount, nowMs);
        this.timers = new ConnectionTimers(nowMs, context.limits().connectTimeoutMs(), closer);
        this.memoryBudget = new MemoryBudget(context.memory().memoryBudgetBytes());
        this.writer = new ConnectionWriter(context, counters, memoryBudget, paused, closer, idleBuffers);
        writer.credentials(credentials);
        this.sys = index == 0 ? new SysTopics(counters, context.observability().sysIntervalMs(), nowMs,
            (packet, length) ->
            this.ingress.packet(IngressEvent.SYSTEM_CONNECTION, MqttVersion.V3_1_1, true, PacketType.PUBLISH, packet,
                length)) : null;
        this.limits = new LimitReport(counters, LIMIT_REPORT_MS, nowMs);
        final long pooledLimit = io.netty.util.internal.PlatformDependent.maxDirectMemory();
        final InboundBuffers inbound = new InboundBuffers(idleBuffers,
            InboundBuffers.unadmittedShare(pooledLimit, context.threads().ioThreads()),
            PartialPacketRoom.share(pooledLimit, context.threads().ioThreads()));
        this.partials = inbound.room();
        this.framer = new PacketFramer(context, counters, this.ingress, timers, writer, paused, closer, credentials,
            index, inbound);
        this.handshakes = new HandshakeSlots(
            HandshakeSlots.forHeap(Runtime.getRuntime().maxMemory(), context.threads().ioThreads()));
        handshakes.nowMs(nowMs);
        partials.nowMs(nowMs);
        this.reader = new ConnectionReader(counters, writer, closer, idleBuffers, inbound, framer, handshakes);
        closer.wire(timers, reader, writer, this::publishCounts); // before anything can end a connection
        this.registry = new ConnectionRegistry(index, selector, clock, connections, connectionCount, timers, reader,
            writer);
        if (null != credentials)
        {
            credentials.sink(index, registry::onVerdict);
        }
        this.context = context;
        this.readyKeys = new ReadyKeys(selector, reader, writer, this::tick,
            context.threads().threading() == BrokerContext.Threading.SHARED, () -> paused.size() > 0);
        this.acceptors = new Acceptors(context, counters, selector, connectionCount, memoryBudget, listeners);
    }

    void wire(final IoAgent[] agents, final Wakeable[] agentWakes, final Wakeable pipelineWake)
    {
        this.pipelineWake = pipelineWake;
        registry.wire(agentWakes[index]);
        acceptors.wire(agents, agentWakes);
        if (agentWakes[index] instanceof IdleStrategies.SleepingIdleStrategy)
        {
            ((IdleStrategies.SleepingIdleStrategy)agentWakes[index]).sleepLimit(this::sleepLimitMs);
        }
    }

    /**
     * Where to write what the connections that retained parts go to owe (before the agent runs).
     */
    void drains(final RetainedDrains drains)
    {
        writer.drains(drains);
    }

    /**
     * Follows the limits a reload changes (before the agent runs); they are taken at the next duty cycle.
     */
    void follow(final LiveLimits live)
    {
        this.live = live;
        live.follow();
    }

    /**
     * Takes reloaded limits on this agent's thread: what its connections, acceptors and timers judge by.
     */
    private void applyLimits(final BrokerContext next)
    {
        context = next;
        framer.limits(next);
        writer.limits(next);
        timers.connectTimeoutMs(next.limits().connectTimeoutMs());
        memoryBudget.budget(next.memory().memoryBudgetBytes());
        acceptors.limits(next);
        if (null != sys)
        {
            sys.intervalMs(next.observability().sysIntervalMs());
        }
    }

    Selector selector()
    {
        return selector;
    }

    /**
     * @return true when another thread left work for this agent (for the idle strategy's last look).
     */
    boolean hasPendingWork()
    {
        return outbound.size() > 0 || registry.hasPendingWork() || closer.hasRevocations() ||
            acceptors.hasAddedListeners() || (null != live && live.current() != context) ||
            reader.hasReadableAgain() || (waiting && ingress.released() != stalledAtRelease);
    }

    /**
     * @return whether the last duty cycle left nothing on this thread for the next one that {@link #hasPendingWork()}
     * does not show: no bytes given to a connection and not flushed, no connection waiting to be retried, no
     * connection end waiting for ring room. Read live, not from {@link #waiting}: the stages that ran after this
     * agent in the cycle (a delivery's flush that closes a connection) can leave an end the cycle never saw.
     */
    boolean settled()
    {
        return 0 == paused.size() && !ingress.hasPendingEnds() && !writer.hasTouched();
    }

    /**
     * @return whether connections of this agent, or their ends, wait for room in the ingress ring, and its last
     * retry found none: whoever frees room then wakes it (any thread).
     */
    boolean waitsForRingRoom()
    {
        return waitsForRingRoom;
    }

    /**
     * A delivery shard's thread found this agent's outbound ring full (any thread).
     */
    void wantOutboundRoom()
    {
        if (!outboundRoomWanted)
        {
            outboundRoomWanted = true;
        }
    }

    /**
     * @param shardWake the thread of this agent's delivery shard, woken when its outbound ring was drained after the
     *                  shard found it full; set before the agent runs.
     */
    void shardWake(final Wakeable shardWake)
    {
        this.shardWake = shardWake;
    }

    /**
     * Tests: how long a nap with paused connections lasts (long enough, only a wake ends it).
     */
    void pausedNapMs(final long napMs)
    {
        this.pausedNapMs = napMs;
    }

    /**
     * @return how long this agent may sleep when idle: briefly while paused connections wait for ring room.
     */
    long sleepLimitMs()
    {
        return waiting ? pausedNapMs : Long.MAX_VALUE;
    }

    /**
     * Hands an accepted socket to this agent; any thread.
     *
     * @return false when its queue is full.
     */
    boolean offer(final Acceptor.Accepted accepted)
    {
        return registry.offer(accepted);
    }

    /**
     * @return the handler for a key the idle strategy's sleeping {@code select} found ready (this agent's thread):
     * it handles the key as this agent's own {@code selectNow} would, after the sleep, with the clock read again.
     */
    java.util.function.Consumer<SelectionKey> readyAfterSleep()
    {
        return readyKeys.afterSleep();
    }

    public int doWork() throws Exception
    {
        tick();
        if (null != live)
        {
            final BrokerContext next = live.changed(context);
            if (null != next)
            {
                applyLimits(next);
                live.took(next);
            }
        }
        memoryBudget.sample(nowMs);
        int work = registry.drainHandoff();
        work += closer.drainRevocations();
        work += registry.drainReadyAgain();
        work += acceptors.drainAddedListeners();
        work += registry.drainVerdicts();
        final int sent = outbound.read(outboundHandler, 4096);
        work += sent;
        if (sent > 0 && outboundRoomWanted)
        {
            outboundRoomWanted = false;
            shardWake.wake(); // its backlog goes on now, not at the end of its nap
        }
        // what the outbound ring delivered goes out before this cycle reads more: a read of every ready connection
        // would otherwise come between a message and its subscribers (the flush below takes what the reads wrote;
        // in shared threading the delivery stage flushes at the end of its batches)
        work += writer.flushTouched();
        // read before the retry asks the ring: room freed after that read is what the last look before sleeping
        // must see (freed between the retry's look and a later read, it would pass unseen while no one wakes an
        // agent that is awake)
        final long releasedBeforeRetry = ingress.released();
        // ring room goes first to the connections that waited for it, oldest first, then to fresh reads: read
        // first, sockets that are always ready took every slot the stages freed, and a paused publisher waited
        // until the load stopped (two of ten flooding publishers, the whole run, in the fan-out row)
        work += paused.retry(framer); // counts only packets that moved: a still-full ring is no work
        work += reader.readAgain();
        work += ingress.retryEnds();
        // skipped right after a sleeping select handed the keys over (shared); a fresh read that finds the ring
        // full pauses its connection behind those that wait (or, with paused.retry's progress, is retried at once)
        work += readyKeys.selectNow();
        waiting = paused.isStalled() || ingress.hasPendingEnds(); // the ends wait only while the ring is full
        if (waiting)
        {
            stalledAtRelease = releasedBeforeRetry;
        }
        if (waiting != waitsForRingRoom)
        {
            waitsForRingRoom = waiting; // written only when it changes: read by the stage thread
        }
        work += writer.flushTouched();
        work += timers.poll(nowMs);
        work += reader.yieldHandshakeSlots();
        work += reader.endStalledPartials();
        idleBuffers.sweep(nowMs); // no work: a sweep must not keep the agent from sleeping
        if (null != sys)
        {
            work += sys.poll(nowMs);
            limits.poll(nowMs);
        }
        if (ingress.takePublished())
        {
            pipelineWake.wake(); // once per duty cycle, however many packets were handed on
        }
        publishCounts();
        registry.throwFailure(); // last: the cycle's other work is done
        return work;
    }

    /**
     * Reads the clock once: {@link #CLOCK}'s milliseconds for timers and keep-alive, nanoseconds for the packets'
     * arrival stamps.
     */
    private void tick()
    {
        final long nowNs = System.nanoTime();
        nowMs = nowNs / 1_000_000;
        framer.nowMs(nowMs);
        handshakes.nowMs(nowMs);
        partials.nowMs(nowMs);
        closer.nowMs(nowMs);
        ingress.nowNs(nowNs);
    }

    private void publishCounts()
    {
        final ConnectionReader r = reader;
        final PacketFramer f = framer;
        final ConnectionWriter w = writer;
        if ((f.packetsIn | f.publishIn | r.bytesIn | w.publishOut | w.packetsOut | w.bytesOut | w.qos0Dropped |
            w.qos0Shed) != 0)
        {
            counters.add(BrokerCounters.BYTES_IN, r.bytesIn);
            counters.add(BrokerCounters.PACKETS_OUT, w.packetsOut);
            counters.add(BrokerCounters.BYTES_OUT, w.bytesOut);
            r.bytesIn = 0;
            w.packetsOut = 0;
            w.bytesOut = 0;
            counters.add(BrokerCounters.PACKETS_IN, f.packetsIn);
            counters.add(BrokerCounters.PUBLISH_IN, f.publishIn);
            counters.add(BrokerCounters.PUBLISH_OUT, w.publishOut);
            counters.add(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER, w.qos0Dropped);
            counters.add(BrokerCounters.QOS0_SHED_MEMORY, w.qos0Shed);
            f.packetsIn = 0;
            f.publishIn = 0;
            w.publishOut = 0;
            w.qos0Dropped = 0;
            w.qos0Shed = 0;
        }
    }

    /**
     * Asks this agent to end a connection (any thread; rare: a reload revoked it): DISCONNECT 0x87 on 5.0.
     */
    void revoke(final long connectionId)
    {
        closer.revoke(connectionId);
    }

    /**
     * Starts accepting on a listener a reload bound (any thread; agent 0 only).
     */
    void addListener(final Listener listener)
    {
        acceptors.addListener(listener);
    }

    private void onOutbound(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length)
    {
        final long connectionId = OutboundFrame.connectionId(buffer, index);
        if (msgTypeId == OutboundFrame.SEND || msgTypeId == OutboundFrame.SEND_KEPT)
        {
            send(connectionId, buffer, index + OutboundFrame.BYTES_OFFSET, length - OutboundFrame.BYTES_OFFSET,
                msgTypeId == OutboundFrame.SEND);
        }
        else if (msgTypeId == OutboundFrame.SEND_WATCHED)
        {
            sendWatched(connectionId, buffer.getInt(index + OutboundFrame.DRAIN_SLOT_OFFSET), buffer,
                index + OutboundFrame.WATCHED_BYTES_OFFSET, length - OutboundFrame.WATCHED_BYTES_OFFSET);
        }
        else
        {
            closeAfterFlush(connectionId, msgTypeId == OutboundFrame.CLOSE_ENDING_SESSION);
        }
    }

    /**
     * Queues bytes for a connection; called from the outbound ring, or directly when delivery shares this thread.
     */
    void send(final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        send(connectionId, buffer, offset, length, true);
    }

    /**
     * @param sheddable whether a QoS 0 PUBLISH among them may be shed (false: one a session queued for its client).
     */
    void send(final long connectionId, final DirectBuffer buffer, final int offset, final int length,
        final boolean sheddable)
    {
        final Connection connection = writable(connectionId);
        if (null != connection)
        {
            writer.send(connection, buffer, offset, length, sheddable);
        }
    }

    /**
     * @return the open connection of that id that may be sent to, or null: nothing after DISCONNECT [MQTT-3.14.4-1].
     */
    private Connection writable(final long connectionId)
    {
        final Connection connection = connections.get(connectionId);
        return null != connection && !connection.closed && !connection.closing ? connection : null;
    }

    /**
     * Queues a retained part's QoS 0 PUBLISH, never shed for lagging, and writes what its connection owes to the
     * part's slot from now on ({@link ConnectionWriter#watch}); from the outbound ring, or directly.
     */
    void sendWatched(final long connectionId, final int drainSlot, final DirectBuffer buffer, final int offset,
        final int length)
    {
        final Connection connection = writable(connectionId);
        if (null != connection)
        {
            writer.send(connection, buffer, offset, length, false);
            writer.watch(connection, drainSlot);
        }
    }

    /**
     * @param endingSession its session ends with it, whatever its Session Expiry Interval: its end event carries 0
     *                      ({@code --stalled-client-timeout}); a 5.0 client is told DISCONNECT 0x97 (Quota exceeded)
     *                      and nothing more is read from it, so no DISCONNECT of its own can keep the session, and it
     *                      is closed within the linger even if it reads nothing (review of 09f749b9, helper-158).
     */
    void closeAfterFlush(final long connectionId, final boolean endingSession)
    {
        final Connection connection = connections.get(connectionId);
        if (null == connection || connection.closed)
        {
            return;
        }
        if (endingSession)
        {
            connection.endSessionExpiryInterval = 0;
            closer.disconnect(connection, io.ringmq.protocol.ReasonCode.QUOTA_EXCEEDED);
            return;
        }
        writer.closeAfterFlush(connection);
    }

    /**
     * @return this agent's open connections that hold a pooled buffer (inbound or outbound): bytes wait in them.
     * For tests and diagnostics; an idle connection holds none. The agent's thread only.
     */
    int connectionsHoldingBuffers()
    {
        return registry.connectionsHoldingBuffers();
    }

    /**
     * @return this agent's open WebSocket connections whose layer holds its frame buffer (tests).
     */
    int webSocketLayersHoldingBuffers()
    {
        return registry.webSocketLayersHoldingBuffers();
    }

    /**
     * @return this agent's open connections that hold bytes in an inbound buffer (a partial packet, held packets).
     */
    int connectionsHoldingInbound()
    {
        return registry.connectionsHoldingInbound();
    }

    /**
     * @return an open connection of this agent, or null; for tests. The agent's thread only.
     */
    Connection connection(final long connectionId)
    {
        return connections.get(connectionId);
    }

    /**
     * @return each open connection's {@link Connection#describe()}, a line each: a diagnosis read from another thread
     * (a test's failure message), which may miss a connection being added or removed meanwhile.
     */
    String describeConnections()
    {
        final StringBuilder lines = new StringBuilder();
        try
        {
            for (final Connection connection : connections.values().toArray(new Connection[0]))
            {
                lines.append(roleName()).append(' ').append(connection.describe()).append('\n');
            }
        }
        catch (final RuntimeException ex)
        {
            lines.append(roleName()).append(": connections changed while read (").append(ex).append(")\n");
        }
        return lines.toString();
    }

    /**
     * @return this agent's open connections.
     */
    int connectionCount()
    {
        return connections.size();
    }

    /**
     * Writes every connection that was given bytes this cycle, once.
     */
    int flushTouched()
    {
        final int count = writer.flushTouched();
        publishCounts(); // also reached straight from the delivery stage in the shared mode
        return count;
    }

    /**
     * The broker is shutting down: every MQTT 5.0 client is sent DISCONNECT 0x8B (Server shutting down), every
     * connection is flushed, for at most {@link ConnectionCloser#SHUTDOWN_FLUSH_MS} in all, and closed. Their ends
     * are not handed to the pipeline, so a clean shutdown publishes no will and changes no session.
     */
    public void onClose()
    {
        registry.closeHandoff();
        closer.shutdown(selector, clock);
        publishCounts();
        reader.close();
        writer.close();
        CloseHelper.quietClose(selector);
    }

    public String roleName()
    {
        return "io-" + index;
    }
}
