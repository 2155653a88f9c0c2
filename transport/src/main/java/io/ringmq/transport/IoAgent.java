package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.LiveLimits;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.CloseHelper;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.Agent;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A network I/O agent: the duty cycle over a selector and the connections assigned to it. Each cycle it takes
 * connections handed to it, drains its outbound ring into the {@link ConnectionWriter}, lets the
 * {@link Acceptor} (agent 0 only) take new sockets and the {@link ConnectionReader} read ready ones (its
 * {@link PacketFramer} frames them), retries {@link PausedConnections}, flushes every touched connection once, and
 * checks keep-alive and connect timeouts. It never blocks on a socket: a full ingress ring pauses reading from that
 * connection, and while it stays full the agent asks its idle strategy for short sleeps instead of spinning.
 */
final class IoAgent implements Agent
{
    /** How long an agent with paused connections may sleep: nobody wakes it when the ingress ring frees up. */
    static final long PAUSED_SLEEP_MS = 1;
    /** How long a connection the server sent DISCONNECT to may take to be written before it is closed anyway. */
    static final long CLOSE_LINGER_MS = 1_000;
    /** How long a shutting-down agent waits for its DISCONNECTs (0x8B) to be written, all connections together. */
    static final long SHUTDOWN_FLUSH_MS = 500;
    /** Credential verdicts taken per duty cycle at most. */
    static final int VERDICT_DRAIN_LIMIT = 256;

    private final int index;
    private final BrokerCounters counters;
    private final Selector selector;
    private final ManyToOneRingBuffer outbound;
    private final IngressProxy ingress;
    /** Connections to close whose credentials no longer hold (a reload), from the auth stage's thread. */
    private final org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<Long> revocations =
        new org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<>();
    /** Connections whose layer finished work on another thread (a TLS handshake task): read and flush them. */
    private final org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<Long> readyAgain =
        new org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<>();
    private Wakeable ownWake = Wakeable.NONE;
    /** Credential verdicts from the workers, for CONNECTs this agent holds back until they come. */
    private final org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<CredentialRequest> verdicts =
        new org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<>();
    private final ManyToOneConcurrentArrayQueue<Acceptor.Accepted> handoff =
        new ManyToOneConcurrentArrayQueue<>(4096);
    private final Long2ObjectHashMap<Connection> connections = new Long2ObjectHashMap<>();
    /** Its connections holding a pooled buffer; gives back those they stopped using. */
    private final IdleBuffers idleBuffers = new IdleBuffers();
    private final PausedConnections paused = new PausedConnections();
    /**
     * Milliseconds on the monotonic clock (only differences count): a connection's connect timeout, keep-alive
     * [MQTT-3.1.2-24] and close linger, the memory samples and the $SYS rounds hold when the wall clock is stepped
     * back (they would stop until it caught up) or forward (every keep-alive would expire at once).
     */
    static final EpochClock CLOCK = () -> System.nanoTime() / 1_000_000;
    private final EpochClock clock = CLOCK;
    private final AtomicInteger connectionCount;
    private final ConnectionTimers timers;
    private final MemoryBudget memoryBudget;
    private final ConnectionWriter writer;
    private final ConnectionReader reader;
    private final PacketFramer framer;
    /** Agent 0 accepts on every listener; the others have none. */
    private final ArrayList<Acceptor> acceptors = new ArrayList<>();
    /** Listeners a reload added, from the reloading thread (agent 0). */
    private final org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<Listener> addedListeners =
        new org.agrona.concurrent.ManyToOneConcurrentLinkedQueue<>();
    private final AddressLimit addressLimit;
    /** The limits in force on this agent: a reload replaces them on this agent's thread. */
    private BrokerContext context;
    private LiveLimits live;
    private final AtomicInteger acceptorConnections;
    private IoAgent[] agents;
    private Wakeable[] agentWakes;
    private final MessageHandler outboundHandler = this::onOutbound;
    private final java.util.function.Consumer<SelectionKey> onReady = this::onReady;
    private final java.util.function.Consumer<SelectionKey> onReadyAfterSleep = this::onReadyAfterSleep;
    private int selectedWork;
    /** The sleeping select handed keys over: the duty cycle after it skips its selectNow (shared threading). */
    private boolean selectedInSleep;
    private final boolean skipSelectAfterSleep;
    /** How often agent 0 logs the limits hit since its last line. */
    private static final long LIMIT_REPORT_MS = 60_000;
    /** Agent 0 publishes the $SYS tree; the others have none. */
    private final SysTopics sys;
    private final LimitReport limits;
    private boolean shuttingDown;
    private Wakeable pipelineWake = Wakeable.NONE;
    private long nowMs;
    private long nextConnectionSeq;

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
            context.threading() == BrokerContext.Threading.SHARED ||
            context.threading() == BrokerContext.Threading.INVOKER);
        this.connectionCount = connectionCount;
        this.selector = Selector.open();
        this.nowMs = clock.time();
        this.timers = new ConnectionTimers(nowMs, context.connectTimeoutMs(), this::expire);
        this.memoryBudget = new MemoryBudget(context.memoryBudgetBytes());
        final ConnectionWriter.Closer closer = new ConnectionWriter.Closer()
        {
            public void close(final Connection connection, final int kind)
            {
                IoAgent.this.close(connection, kind);
            }

            public void disconnect(final Connection connection, final int reasonCode)
            {
                IoAgent.this.disconnect(connection, reasonCode, null);
            }

            public void disconnect(final Connection connection, final int reasonCode, final String reasonString)
            {
                IoAgent.this.disconnect(connection, reasonCode, reasonString);
            }
        };
        this.writer = new ConnectionWriter(context, counters, memoryBudget, paused, closer, idleBuffers);
        writer.credentials(credentials);
        this.sys = index == 0 ? new SysTopics(counters, context.sysIntervalMs(), nowMs, (packet, length) ->
            this.ingress.packet(IngressEvent.SYSTEM_CONNECTION, MqttVersion.V3_1_1, true, PacketType.PUBLISH, packet,
                length)) : null;
        this.limits = new LimitReport(counters, LIMIT_REPORT_MS, nowMs);
        final InboundBuffers inbound = new InboundBuffers(idleBuffers);
        this.framer = new PacketFramer(context, counters, this.ingress, timers, writer, paused, closer, credentials,
            index, inbound);
        this.reader = new ConnectionReader(counters, writer, closer, idleBuffers, inbound, framer);
        if (null != credentials)
        {
            credentials.sink(index, this::onVerdict);
        }
        this.context = context;
        this.skipSelectAfterSleep = context.threading() == BrokerContext.Threading.SHARED;
        this.acceptorConnections = connectionCount;
        this.addressLimit = new AddressLimit(context.maxConnectionsPerAddress(), context.limitLoopback());
        for (final Listener listener : listeners)
        {
            addAcceptor(listener);
        }
    }

    void wire(final IoAgent[] agents, final Wakeable[] agentWakes, final Wakeable pipelineWake)
    {
        this.pipelineWake = pipelineWake;
        this.ownWake = agentWakes[index];
        this.agents = agents;
        this.agentWakes = agentWakes;
        for (final Acceptor acceptor : acceptors)
        {
            acceptor.wire(agents, agentWakes);
        }
        if (agentWakes[index] instanceof IdleStrategies.SleepingIdleStrategy)
        {
            ((IdleStrategies.SleepingIdleStrategy)agentWakes[index]).sleepLimit(this::sleepLimitMs);
        }
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
        timers.connectTimeoutMs(next.connectTimeoutMs());
        memoryBudget.budget(next.memoryBudgetBytes());
        addressLimit.limits(next.maxConnectionsPerAddress(), next.limitLoopback());
        for (final Acceptor acceptor : acceptors)
        {
            acceptor.limits(next);
        }
        if (null != sys)
        {
            sys.intervalMs(next.sysIntervalMs());
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
        return outbound.size() > 0 || !handoff.isEmpty() || !revocations.isEmpty() || !readyAgain.isEmpty() ||
            !addedListeners.isEmpty() || (null != live && live.current() != context) ||
            reader.hasReadableAgain() || !verdicts.isEmpty();
    }

    /**
     * @return how long this agent may sleep when idle: briefly while paused connections wait for ring room.
     */
    long sleepLimitMs()
    {
        return paused.isStalled() ? PAUSED_SLEEP_MS : Long.MAX_VALUE;
    }

    /**
     * Hands an accepted socket to this agent; any thread.
     *
     * @return false when its queue is full.
     */
    boolean offer(final Acceptor.Accepted accepted)
    {
        return handoff.offer(accepted);
    }

    /**
     * @return the handler for a key the idle strategy's sleeping {@code select} found ready (this agent's thread):
     * it handles the key as this agent's own {@code selectNow} would, after the sleep, with the clock read again.
     */
    java.util.function.Consumer<SelectionKey> readyAfterSleep()
    {
        return onReadyAfterSleep;
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
        int work = drainHandoff();
        work += drainRevocations();
        work += drainReadyAgain();
        work += drainAddedListeners();
        work += drainVerdicts();
        work += outbound.read(outboundHandler, 4096);
        // what the outbound ring delivered goes out before this cycle reads more: a read of every ready connection
        // would otherwise come between a message and its subscribers (the flush below takes what the reads wrote;
        // in shared threading the delivery stage flushes at the end of its batches)
        work += writer.flushTouched();
        if (selectedInSleep)
        {
            // the sleeping select handed every ready key over a moment ago: a selectNow would find only what came
            // since, which the next cycle's finds, or the next sleep's (it returns at once for a ready key); shared
            // threading only, where this cycle's stages have the handed packets to work on, so the cycle does not
            // end idle and start a short idle spell that turns the adaptive polls on (a ring threading's would)
            selectedInSleep = false;
        }
        else
        {
            selectedWork = 0;
            selector.selectNow(onReady); // ready keys straight to the handler: no selected-key set, no iterator
            work += selectedWork;
        }
        work += paused.retry(framer); // counts only packets that moved: a still-full ring is no work
        work += reader.readAgain();
        work += ingress.retryEnds();
        work += writer.flushTouched();
        work += timers.poll(nowMs);
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
     * Handles one ready key; the selector calls it for each, allocating nothing.
     */
    private void onReady(final SelectionKey key)
    {
        try
        {
            selectedWork += handle(key);
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
    }

    /**
     * Handles a key the sleeping {@code select} found ready: the sleep may have lasted up to its timeout, so the
     * clock is read first (a packet's arrival stamp, a keep-alive's last-seen time).
     */
    private void onReadyAfterSleep(final SelectionKey key)
    {
        tick();
        selectedInSleep = skipSelectAfterSleep;
        onReady(key);
    }

    private int handle(final SelectionKey key) throws IOException
    {
        if (!key.isValid())
        {
            return 0;
        }
        if (key.isAcceptable())
        {
            return ((Acceptor)key.attachment()).accept();
        }
        final Connection connection = (Connection)key.attachment();
        if (key.isWritable())
        {
            writer.flush(connection);
        }
        return key.isValid() && key.isReadable() ? reader.read(connection) : 0;
    }

    /**
     * Asks this agent to end a connection (any thread; rare: a reload revoked it): DISCONNECT 0x87 on 5.0.
     */
    void revoke(final long connectionId)
    {
        revocations.offer(connectionId);
    }

    private int drainRevocations()
    {
        int work = 0;
        Long connectionId;
        while (null != (connectionId = revocations.poll()))
        {
            final Connection connection = connections.get(connectionId.longValue());
            if (null != connection)
            {
                writer.flush(connection);
                // a 5.0 client hears why: its credentials no longer hold after a reload; 3.1.1 is just closed
                disconnect(connection, ReasonCode.NOT_AUTHORIZED, "credentials revoked by a reload");
            }
            work++;
        }
        return work;
    }

    private Acceptor addAcceptor(final Listener listener) throws IOException
    {
        final Acceptor acceptor = new Acceptor(context, counters, listener, acceptorConnections, memoryBudget,
            addressLimit);
        acceptor.register(selector);
        acceptors.add(acceptor);
        return acceptor;
    }

    /**
     * Starts accepting on a listener a reload bound (any thread; agent 0 only).
     */
    void addListener(final Listener listener)
    {
        addedListeners.offer(listener);
    }

    private int drainAddedListeners()
    {
        int work = 0;
        Listener listener;
        while (null != (listener = addedListeners.poll()))
        {
            acceptors.removeIf(acceptor -> !acceptor.isOpen()); // the listeners a reload closed
            try
            {
                addAcceptor(listener).wire(agents, agentWakes);
            }
            catch (final IOException ex)
            {
                listener.close(); // closed already by a reload that came after: nothing to accept on
            }
            work++;
        }
        return work;
    }

    /**
     * A connection's layer finished work on another thread (any thread calls this).
     */
    private void readyAgain(final long connectionId)
    {
        readyAgain.offer(connectionId);
        ownWake.wake();
    }

    private int drainReadyAgain()
    {
        int work = 0;
        Long connectionId;
        while (null != (connectionId = readyAgain.poll()))
        {
            final Connection connection = connections.get(connectionId.longValue());
            if (null != connection && !connection.closed)
            {
                writer.flush(connection);
                if (!connection.closed)
                {
                    reader.read(connection);
                }
            }
            work++;
        }
        return work;
    }

    /**
     * A credential worker's verdict (its thread): queued for this agent, which is woken to take it.
     */
    private void onVerdict(final CredentialRequest request)
    {
        verdicts.offer(request);
        selector.wakeup(); // whichever idle strategy sleeps on this selector (the shared mode's too) wakes
    }

    private int drainVerdicts()
    {
        int work = 0;
        CredentialRequest request;
        while (work < VERDICT_DRAIN_LIMIT && null != (request = verdicts.poll()))
        {
            request.wipe(); // the password copy is not needed past its verdict
            final Connection connection = connections.get(request.connectionId());
            if (null != connection && !connection.closed && connection.hashing)
            {
                reader.onVerdict(connection, request.verdict()); // a closed one's verdict is just dropped
            }
            work++;
        }
        return work;
    }

    private int drainHandoff()
    {
        int work = 0;
        Acceptor.Accepted accepted;
        while (null != (accepted = handoff.poll()))
        {
            register(accepted);
            work++;
        }
        return work;
    }

    private void register(final Acceptor.Accepted accepted)
    {
        final SocketChannel channel = accepted.channel;
        try
        {
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            final long id = ((long)index << 40) | (nextConnectionSeq++ & 0xFF_FFFF_FFFFL);
            final Connection connection = new Connection(id, accepted,
                accepted.listener.layers.open(channel, () -> readyAgain(id)), clock.time());
            connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            connections.put(id, connection);
            timers.onAccepted(connection);
        }
        catch (final IOException ex)
        {
            accepted.release(connectionCount);
            CloseHelper.quietClose(channel);
        }
    }

    /**
     * Ends a connection and tells the pipeline, unless it never got as far as CONNECT.
     */
    private void close(final Connection connection, final int kind)
    {
        if (connection.closed)
        {
            return;
        }
        connection.closed = true;
        timers.onClosed(connection);
        connection.key.cancel();
        connection.layer.close();
        reader.release(connection);
        writer.release(connection);
        connections.remove(connection.id);
        connection.accepted.release(connectionCount);
        counters.increment(BrokerCounters.CONNECTIONS_CLOSED);
        if (connection.connectSeen && !shuttingDown)
        {
            ingress.end(connection.id, kind, connection.version, connection.endReasonCode,
                connection.endSessionExpiryInterval);
        }
    }

    /**
     * Ends a connection for a reason: an MQTT 5.0 client whose CONNACK accepted it is sent DISCONNECT with that
     * reason code [MQTT-4.13.1-1] and closed once it is written, within {@link #CLOSE_LINGER_MS}; any other
     * connection is closed at once. The end handed to the pipeline is a loss that carries the reason.
     */
    private void disconnect(final Connection connection, final int reasonCode, final String reasonString)
    {
        if (connection.closed)
        {
            return;
        }
        if (!connection.closing)
        {
            connection.endReasonCode = reasonCode;
        }
        if (!writer.sendDisconnect(connection, reasonCode, reasonString))
        {
            close(connection, IngressEvent.CONNECTION_LOST);
            return;
        }
        writer.flush(connection); // closes it when the socket took everything
        if (!connection.closed)
        {
            connection.closeByMs = nowMs + CLOSE_LINGER_MS;
            timers.onClosing(connection);
        }
    }

    private void onOutbound(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length)
    {
        final long connectionId = OutboundFrame.connectionId(buffer, index);
        if (msgTypeId == OutboundFrame.SEND)
        {
            send(connectionId, buffer, index + OutboundFrame.BYTES_OFFSET, length - OutboundFrame.BYTES_OFFSET);
        }
        else
        {
            closeAfterFlush(connectionId);
        }
    }

    /**
     * Queues bytes for a connection; called from the outbound ring, or directly when delivery shares this thread.
     */
    void send(final long connectionId, final DirectBuffer buffer, final int offset, final int length)
    {
        final Connection connection = connections.get(connectionId);
        if (null != connection && !connection.closed && !connection.closing) // nothing after DISCONNECT [MQTT-3.14.4-1]
        {
            writer.send(connection, buffer, offset, length);
        }
    }

    void closeAfterFlush(final long connectionId)
    {
        final Connection connection = connections.get(connectionId);
        if (null != connection && !connection.closed)
        {
            writer.closeAfterFlush(connection);
        }
    }

    /**
     * @return this agent's open connections that hold a pooled buffer (inbound or outbound): bytes wait in them.
     * For tests and diagnostics; an idle connection holds none. The agent's thread only.
     */
    int connectionsHoldingBuffers()
    {
        int count = 0;
        for (final Connection connection : connections.values())
        {
            if (null != connection.in || null != connection.out)
            {
                count++;
            }
        }
        return count;
    }

    /**
     * @return this agent's open WebSocket connections whose layer holds its frame buffer (tests).
     */
    int webSocketLayersHoldingBuffers()
    {
        int count = 0;
        for (final Connection connection : connections.values())
        {
            if (connection.layer instanceof WebSocketLayer && ((WebSocketLayer)connection.layer).holdsBuffer())
            {
                count++;
            }
        }
        return count;
    }

    /**
     * @return this agent's open connections that hold bytes in an inbound buffer (a partial packet, held packets).
     */
    int connectionsHoldingInbound()
    {
        int count = 0;
        for (final Connection connection : connections.values())
        {
            if (connection.inBytes() > 0)
            {
                count++;
            }
        }
        return count;
    }

    /**
     * @return an open connection of this agent, or null; for tests. The agent's thread only.
     */
    Connection connection(final long connectionId)
    {
        return connections.get(connectionId);
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

    private void expire(final Connection connection, final int cause)
    {
        switch (cause)
        {
            case ConnectionTimers.CONNECT_TIMEOUT:
                counters.increment(BrokerCounters.CONNECT_TIMEOUTS);
                close(connection, IngressEvent.CONNECTION_LOST);
                break;
            case ConnectionTimers.KEEP_ALIVE_TIMEOUT:
                counters.increment(BrokerCounters.KEEP_ALIVE_TIMEOUTS);
                disconnect(connection, ReasonCode.KEEP_ALIVE_TIMEOUT, "keep-alive timeout"); // 0x8D on 5.0 [MQTT-3.1.2-22]
                break;
            default:
                close(connection, IngressEvent.CONNECTION_LOST); // its DISCONNECT was not written in time
        }
    }

    /**
     * The broker is shutting down: every MQTT 5.0 client is sent DISCONNECT 0x8B (Server shutting down), every
     * connection is flushed, for at most {@link #SHUTDOWN_FLUSH_MS} in all, and closed. Their ends are not handed
     * to the pipeline, so a clean shutdown publishes no will and changes no session.
     */
    public void onClose()
    {
        shuttingDown = true;
        final ArrayList<Connection> open = new ArrayList<>(connections.values());
        for (final Connection connection : open)
        {
            writer.sendDisconnect(connection, ReasonCode.SERVER_SHUTTING_DOWN, null);
            connection.closing = true; // nothing more is read from any
            connection.closeAfterFlush = false; // closed below, once everything had its chance to be written
            connection.updateInterest();
        }
        writer.flushAll(open, selector, clock, SHUTDOWN_FLUSH_MS);
        for (final Connection connection : open)
        {
            close(connection, IngressEvent.CONNECTION_LOST);
        }
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
