package io.ringmq.transport;

import io.ringmq.pipeline.auth.CredentialRequest;
import org.agrona.CloseHelper;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.ManyToOneConcurrentArrayQueue;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How connections come to an I/O agent and are found again by id. The sockets an {@link Acceptor} hands over are
 * queued by its thread and registered here on the agent's thread (non-blocking, no Nagle, an id that names the
 * agent, a {@link SocketLayer}, a selection key and a connect timeout); what other threads finish for a connection
 * is queued by them and taken here by id: a layer's work (a TLS handshake task: the connection is flushed and read
 * again) and the credential workers' verdict on a CONNECT the agent holds back. It puts connections into the agent's
 * table, which only the agent's thread touches, and counts for tests what they hold.
 */
final class ConnectionRegistry
{
    /** Credential verdicts taken per duty cycle at most. */
    static final int VERDICT_DRAIN_LIMIT = 256;
    /**
     * Accepted sockets registered, and connections whose layer is ready again served, per duty cycle at most: the
     * rest wait for the next (the agent does not sleep while they do), so a connection storm or a burst of TLS
     * handshakes finishing on other threads never holds the agent away from its connections' reads and writes.
     */
    static final int DRAIN_LIMIT = 256;

    private final int index;
    private final Selector selector;
    private final EpochClock clock;
    /** The agent's open connections by id (its thread only); a connection enters it here. */
    private final Long2ObjectHashMap<Connection> connections;
    /** The first registration that failed in this duty cycle, thrown at its end ({@link #throwFailure}). */
    private RuntimeException failure;
    private final AtomicInteger connectionCount;
    private final ConnectionTimers timers;
    private final ConnectionReader reader;
    private final ConnectionWriter writer;
    private final ManyToOneConcurrentArrayQueue<Acceptor.Accepted> handoff =
        new ManyToOneConcurrentArrayQueue<>(4096);
    /** Connections whose layer finished work on another thread (a TLS handshake task): read and flush them. */
    private final ManyToOneConcurrentLinkedQueue<Long> readyAgain = new ManyToOneConcurrentLinkedQueue<>();
    /** Credential verdicts from the workers, for CONNECTs this agent holds back until they come. */
    private final ManyToOneConcurrentLinkedQueue<CredentialRequest> verdicts =
        new ManyToOneConcurrentLinkedQueue<>();
    private Wakeable ownWake = Wakeable.NONE;
    private long nextConnectionSeq;

    ConnectionRegistry(final int index, final Selector selector, final EpochClock clock,
        final Long2ObjectHashMap<Connection> connections, final AtomicInteger connectionCount,
        final ConnectionTimers timers, final ConnectionReader reader, final ConnectionWriter writer)
    {
        this.index = index;
        this.selector = selector;
        this.clock = clock;
        this.connections = connections;
        this.connectionCount = connectionCount;
        this.timers = timers;
        this.reader = reader;
        this.writer = writer;
    }

    /**
     * @param ownWake wakes the agent's idle strategy when a layer finished work on another thread.
     */
    void wire(final Wakeable ownWake)
    {
        this.ownWake = ownWake;
    }

    /**
     * @return true when another thread left a socket, a layer's work or a verdict for this agent.
     */
    boolean hasPendingWork()
    {
        return !handoff.isEmpty() || !readyAgain.isEmpty() || !verdicts.isEmpty();
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

    int drainHandoff()
    {
        int work = 0;
        Acceptor.Accepted accepted;
        while (work < DRAIN_LIMIT && null != (accepted = handoff.poll()))
        {
            try
            {
                register(accepted);
            }
            catch (final RuntimeException ex)
            {
                if (null == failure)
                {
                    failure = ex; // the sockets after it are still registered, and the cycle goes on
                }
            }
            work++;
        }
        return work;
    }

    /**
     * Passes on the first registration that failed since the last call, at the end of the agent's duty cycle (its
     * runner counts and logs it): a socket whose connection could not be made never costs the other connections
     * their reads and writes of that cycle.
     */
    void throwFailure()
    {
        final RuntimeException thrown = failure;
        if (null != thrown)
        {
            failure = null;
            throw thrown;
        }
    }

    /**
     * At the agent's close: sockets accepted for it but not registered yet are closed, their counts given back.
     */
    void closeHandoff()
    {
        Acceptor.Accepted accepted;
        while (null != (accepted = handoff.poll()))
        {
            accepted.release(connectionCount);
            CloseHelper.quietClose(accepted.channel);
        }
    }

    /**
     * Makes a connection of an accepted socket. When that fails, whether by an {@link IOException} (the client left)
     * or anything else (its layers could not be made: a TLS engine the JDK refused), nothing stays behind: the socket
     * is closed, and its connection and per-address counts are given back (a count kept would refuse clients once
     * {@code --max-connections} of them had piled up). What is not an {@link IOException} is thrown on.
     */
    private void register(final Acceptor.Accepted accepted)
    {
        final SocketChannel channel = accepted.channel;
        SocketLayer layer = null;
        Connection connection = null;
        try
        {
            channel.configureBlocking(false);
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            final long id = ((long)index << 40) | (nextConnectionSeq++ & 0xFF_FFFF_FFFFL);
            layer = accepted.layers.open(channel, () -> readyAgain(id),
                InboundConnects.limitedAddressKey(accepted.limitedAddress));
            connection = new Connection(id, accepted, layer, clock.time());
            connection.key = channel.register(selector, SelectionKey.OP_READ, connection);
            connections.put(id, connection);
            timers.onAccepted(connection);
        }
        catch (final IOException ex)
        {
            unregister(accepted, layer, connection);
        }
        catch (final RuntimeException | Error ex)
        {
            unregister(accepted, layer, connection);
            throw ex;
        }
    }

    /**
     * Undoes what {@link #register} did before it failed.
     *
     * @param layer      null when not opened yet.
     * @param connection null when not made yet.
     */
    private void unregister(final Acceptor.Accepted accepted, final SocketLayer layer, final Connection connection)
    {
        if (null != connection)
        {
            connections.remove(connection.id); // its id is new: nothing else is under it
            timers.onClosed(connection);
        }
        if (null != layer)
        {
            layer.close(); // what it took when opened (a TLS engine, a framing layer's buffers) goes back
        }
        accepted.release(connectionCount);
        CloseHelper.quietClose(accepted.channel); // and with it its selection key, if it had one
    }

    /**
     * A connection's layer finished work on another thread (any thread calls this).
     */
    private void readyAgain(final long connectionId)
    {
        readyAgain.offer(connectionId);
        ownWake.wake();
    }

    int drainReadyAgain()
    {
        int work = 0;
        Long connectionId;
        while (work < DRAIN_LIMIT && null != (connectionId = readyAgain.poll()))
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
    void onVerdict(final CredentialRequest request)
    {
        verdicts.offer(request);
        selector.wakeup(); // whichever idle strategy sleeps on this selector (the shared mode's too) wakes
    }

    int drainVerdicts()
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
}
