package io.ringmq.transport;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.agrona.CloseHelper;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.concurrent.EpochClock;
import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How an I/O agent's connections end, on the agent's thread: closed at once, or (MQTT 5.0) sent a DISCONNECT first
 * and closed once it is written; expired by the {@link ConnectionTimers} (connect timeout, keep-alive, close linger);
 * revoked by a reload (queued by the auth stage's thread, taken each duty cycle); and all of them when the broker
 * shuts down. It is the {@link ConnectionWriter.Closer} through which the reader and the writer end connections,
 * and it removes them from the agent's table: their buffers go back, their slot in the connection limit is freed,
 * and the pipeline is told, unless the connection never got as far as CONNECT.
 */
final class ConnectionCloser implements ConnectionWriter.Closer, ConnectionTimers.Expiry
{
    /** How long a connection the server sent DISCONNECT to may take to be written before it is closed anyway. */
    static final long CLOSE_LINGER_MS = 1_000;
    /** How long a shutting-down agent waits for its DISCONNECTs (0x8B) to be written, all connections together. */
    static final long SHUTDOWN_FLUSH_MS = 500;

    private final BrokerCounters counters;
    private final IngressProxy ingress;
    /** The agent's open connections by id (its thread only); a connection leaves it here. */
    private final Long2ObjectHashMap<Connection> connections;
    private final AtomicInteger connectionCount;
    /** Connections to close whose credentials no longer hold (a reload), from the auth stage's thread. */
    private final ManyToOneConcurrentLinkedQueue<Long> revocations = new ManyToOneConcurrentLinkedQueue<>();
    /** Set once by {@link #wire}, before the agent runs: they end connections through this closer. */
    private ConnectionTimers timers;
    private ConnectionReader reader;
    private ConnectionWriter writer;
    /** Adds what the agent counted so far (bytes and packets read and written) to the broker's counters. */
    private Runnable publishCounts;
    private boolean shuttingDown;
    private long nowMs;

    ConnectionCloser(final BrokerCounters counters, final IngressProxy ingress,
        final Long2ObjectHashMap<Connection> connections, final AtomicInteger connectionCount, final long nowMs)
    {
        this.counters = counters;
        this.ingress = ingress;
        this.connections = connections;
        this.connectionCount = connectionCount;
        this.nowMs = nowMs;
    }

    /**
     * The roles whose state a closed connection gives back, and which end connections through this closer; and how
     * the agent publishes its counts, which a closed connection does before it stops counting as open.
     */
    void wire(final ConnectionTimers timers, final ConnectionReader reader, final ConnectionWriter writer,
        final Runnable publishCounts)
    {
        this.timers = timers;
        this.reader = reader;
        this.writer = writer;
        this.publishCounts = publishCounts;
    }

    /**
     * The duty cycle's clock, read once per cycle: a closing connection's linger starts from it.
     */
    void nowMs(final long nowMs)
    {
        this.nowMs = nowMs;
    }

    /**
     * Ends a connection and tells the pipeline, unless it never got as far as CONNECT.
     */
    @Override
    public void close(final Connection connection, final int kind)
    {
        if (connection.closed)
        {
            return;
        }
        connection.closed = true;
        timers.onClosed(connection);
        connection.key.cancel();
        try
        {
            connection.layer.close();
        }
        catch (final OutOfMemoryError | RuntimeException ex)
        {
            // a layer that could not finish its close (a buffer for a last frame): the socket closes all the same,
            // and what the connection holds is given back below
            CloseHelper.quietClose(connection.key.channel());
        }
        reader.release(connection);
        writer.release(connection);
        connections.remove(connection.id);
        try
        {
            counters.increment(BrokerCounters.CONNECTIONS_CLOSED);
            if (connection.connectSeen && !shuttingDown)
            {
                ingress.end(connection.id, kind, connection.version, connection.endReasonCode,
                    connection.endSessionExpiryInterval);
            }
            // what it was counted for is in the broker's counters before it stops counting as open: the warm-up at
            // start puts the counters back once its connections are all closed, and in shared threading the end of
            // the duty cycle that closed them came after that, so its last bytes read stayed counted (WarmupTest, CI
            // at 6b738c9)
            publishCounts.run();
        }
        finally
        {
            connection.release(connectionCount); // its slot, whatever failed above (review of 35f5f2b7, helper-155)
        }
    }

    @Override
    public void outOfBufferMemory(final Connection connection)
    {
        closeCounted(connection, BrokerCounters.BUFFER_MEMORY_CLOSED);
    }

    @Override
    public void pastUnadmittedShare(final Connection connection)
    {
        closeCounted(connection, BrokerCounters.UNADMITTED_MEMORY_CLOSED);
    }

    @Override
    public void handshakeYielded(final Connection connection)
    {
        closeCounted(connection, BrokerCounters.HANDSHAKES_YIELDED);
    }

    @Override
    public void partialPacketStalled(final Connection connection)
    {
        closeCounted(connection, BrokerCounters.PARTIAL_PACKETS_ENDED);
    }

    private void closeCounted(final Connection connection, final int counter)
    {
        if (!connection.closed)
        {
            counters.increment(counter);
            close(connection, IngressEvent.CONNECTION_LOST);
        }
    }

    @Override
    public void disconnect(final Connection connection, final int reasonCode)
    {
        disconnect(connection, reasonCode, null);
    }

    /**
     * Ends a connection for a reason: an MQTT 5.0 client whose CONNACK accepted it is sent DISCONNECT with that
     * reason code [MQTT-4.13.1-1] and closed once it is written, within {@link #CLOSE_LINGER_MS}; any other
     * connection is closed at once. The end handed to the pipeline is a loss that carries the reason.
     */
    @Override
    public void disconnect(final Connection connection, final int reasonCode, final String reasonString)
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

    @Override
    public void expire(final Connection connection, final int cause)
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
     * Asks the agent to end a connection (any thread; rare: a reload revoked it): DISCONNECT 0x87 on 5.0.
     */
    void revoke(final long connectionId)
    {
        revocations.offer(connectionId);
    }

    /**
     * @return true when another thread revoked a connection not ended yet.
     */
    boolean hasRevocations()
    {
        return !revocations.isEmpty();
    }

    /**
     * Ends the connections revoked since the last duty cycle, {@link ConnectionRegistry#DRAIN_LIMIT} at most (a reload
     * may revoke thousands: the rest go in the next cycles).
     *
     * @return revocations taken.
     */
    int drainRevocations()
    {
        int work = 0;
        Long connectionId;
        while (work < ConnectionRegistry.DRAIN_LIMIT && null != (connectionId = revocations.poll()))
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

    /**
     * The broker is shutting down: every MQTT 5.0 client is sent DISCONNECT 0x8B (Server shutting down), every
     * connection is flushed, for at most {@link #SHUTDOWN_FLUSH_MS} in all, and closed. Their ends are not handed
     * to the pipeline, so a clean shutdown publishes no will and changes no session.
     */
    void shutdown(final Selector selector, final EpochClock clock)
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
    }
}
