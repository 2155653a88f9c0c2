package io.ringmq.transport;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;

import java.io.IOException;
import java.util.ArrayList;

/**
 * The reading role of an I/O agent, on the agent's thread: reads a connection's bytes through its
 * {@link SocketLayer} into the {@link InboundBuffers}, has the {@link PacketFramer} frame, judge and hand on every
 * complete packet, and reads again a connection whose layer holds more input than it handed on (TLS). It owns the
 * list of connections to read again and the count of bytes read.
 * <p>
 * Memory follows the bytes that arrived, never the length a header claims: the inbound buffer grows only as
 * bytes are read, and before CONNECT the first packet must be a CONNECT of at most {@code --max-connect-size},
 * judged as soon as its remaining length is known ({@link InboundConnects}).
 */
final class ConnectionReader
{
    /** Reads of a layer's buffered input in one go before the connection waits for the next duty cycle. */
    private static final int MAX_LAYER_ROUNDS = 4;

    private final BrokerCounters counters;
    private final ConnectionWriter writer;
    private final ConnectionWriter.Closer closer;
    private final IdleBuffers idle;
    private final InboundBuffers buffers;
    private final PacketFramer framer;
    private final HandshakeSlots handshakes;
    private ArrayList<Connection> again = new ArrayList<>();
    private ArrayList<Connection> spare = new ArrayList<>();
    // per-message counts, added to the shared counters by the agent once per duty cycle
    long bytesIn;

    ConnectionReader(final BrokerCounters counters, final ConnectionWriter writer,
        final ConnectionWriter.Closer closer, final IdleBuffers idle, final InboundBuffers buffers,
        final PacketFramer framer, final HandshakeSlots handshakes)
    {
        this.handshakes = handshakes;
        this.counters = counters;
        this.writer = writer;
        this.closer = closer;
        this.idle = idle;
        this.buffers = buffers;
        this.framer = framer;
    }

    /**
     * Reads what the socket has and processes every complete packet. A layer that took more from the socket than
     * it could hand on (TLS) is read again, a few times here and then once per duty cycle
     * ({@link #readAgain()}), so nothing waits for a socket that has no more to say; what a layer has to write
     * on its own (a handshake step, a pong) is flushed.
     *
     * @return 1 when the socket was read.
     */
    int read(final Connection connection)
    {
        if (!connection.readable())
        {
            return 0;
        }
        if (!connection.addressSettled && !readAddress(connection))
        {
            return 1; // the PROXY header is still coming (or the connection closed)
        }
        if (!handshakes.admit(connection))
        {
            return 0;
        }
        handshakes.reading(connection);
        final SocketLayer layer = connection.layer;
        int rounds = 0;
        do
        {
            int read;
            try
            {
                final io.netty.buffer.ByteBuf into = buffers.readBuffer(connection);
                if (null == into)
                {
                    break; // its partial packet waits, unread, for room (PartialPacketRoom)
                }
                read = layer.read(into);
                bytesIn += Math.max(0, read);
                buffers.room().heard(connection, read);
            }
            catch (final IOException ex)
            {
                read = -1;
            }
            catch (final OutOfMemoryError ex)
            {
                // no pooled memory for its buffer (or its TLS or WebSocket layer's): that connection ends, not the
                // agent, whose every other connection would end with it
                closer.outOfBufferMemory(connection);
                return 1;
            }
            catch (final RuntimeException ex)
            {
                // a layer that throws (a fault, say a TLS engine's on bytes it did not expect) never leaves the scratch
                // buffer lent, nor its connection open: read again at every select, it would throw again at every
                // duty cycle for good. The error goes on to the agent's error log
                buffers.keepRest(connection);
                closer.close(connection, IngressEvent.CONNECTION_LOST);
                throw ex;
            }
            if (read < 0)
            {
                closer.close(connection, IngressEvent.CONNECTION_LOST);
                return 1;
            }
            if (read == 0)
            {
                if (!buffers.keepRest(connection)) // gives the scratch buffer back
                {
                    closer.pastUnadmittedShare(connection);
                    return 1;
                }
            }
            else
            {
                // also gives back what it no longer needs, the scratch buffer included
                framer.processInbound(connection);
            }
        }
        while (layer.hasBufferedInput() && ++rounds < MAX_LAYER_ROUNDS && connection.readable());
        if (!connection.closed)
        {
            readAgain(handshakes.release(connection)); // its handshake ended: the slot goes to the next in line
            if (layer.holdsIdleBuffers())
            {
                // what the layer wrote of its own (a WebSocket pong, the 101) took its buffer: the sweep gives it
                // back once the connection is idle, as it does the connection's own
                idle.use(connection);
            }
            if (layer.hasPendingOutput())
            {
                writer.flush(connection);
            }
            if (layer.hasBufferedInput() && !connection.readAgain && !connection.closed)
            {
                connection.readAgain = true;
                again.add(connection);
            }
        }
        return 1;
    }

    /**
     * Behind a PROXY-protocol listener: reads the header alone, and judges the client it names, before anything of
     * the client's own (a TLS handshake, and its slot) is read.
     *
     * @return true once the address is settled; false while the header is still coming, or when the connection was
     * closed (a malformed header, its address holding its limit, no memory for the header).
     */
    private boolean readAddress(final Connection connection)
    {
        int known;
        try
        {
            known = connection.layer.readAddress();
        }
        catch (final IOException ex)
        {
            known = -1;
        }
        catch (final OutOfMemoryError ex)
        {
            closer.outOfBufferMemory(connection); // the header's growth past its share of the heap
            return false;
        }
        if (known < 0)
        {
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return false;
        }
        return known > 0 && settleAddress(connection);
    }

    /**
     * A connection given a handshake slot is read again now when its layer holds bytes already (what followed a
     * PROXY header): its socket may have nothing more to say.
     */
    private void readAgain(final Connection given)
    {
        if (null != given && !given.closed && given.layer.hasBufferedInput() && !given.readAgain)
        {
            given.readAgain = true;
            again.add(given);
        }
    }

    /**
     * Behind a PROXY-protocol listener, once the header is read: the client it names is who the loopback rule and
     * the per-address limit apply to, not the proxy.
     *
     * @return false when the connection was closed (its address holds its limit).
     */
    private boolean settleAddress(final Connection connection)
    {
        connection.addressSettled = true;
        final java.net.InetSocketAddress client = connection.layer.proxiedAddress();
        if (null == client)
        {
            return true; // LOCAL or UNKNOWN: the proxy speaks for itself, as its own peer
        }
        connection.loopback = null != client.getAddress() && client.getAddress().isLoopbackAddress();
        if (null != client.getAddress() && !connection.acquireProxied(client.getAddress()))
        {
            counters.increment(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS);
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return false;
        }
        final UnadmittedHeap unadmitted = connection.layer.unadmittedHeap();
        if (null != unadmitted)
        {
            unadmitted.address(InboundConnects.limitedAddressKey(connection)); // what its layers hold is the client's
        }
        return true;
    }

    /**
     * @return whether a connection waits to be read again and may be read now.
     */
    boolean hasReadableAgain()
    {
        for (int i = 0, size = again.size(); i < size; i++)
        {
            if (again.get(i).readable())
            {
                return true;
            }
        }
        return false;
    }

    /**
     * Reads again every connection whose layer holds input, once it may be read; once per duty cycle.
     *
     * @return connections read.
     */
    int readAgain()
    {
        final int count = again.size();
        if (0 == count)
        {
            return 0;
        }
        final ArrayList<Connection> now = again;
        again = spare;
        spare = now;
        int work = 0;
        for (int i = 0; i < count; i++)
        {
            final Connection connection = now.get(i);
            connection.readAgain = false;
            if (connection.closed)
            {
                continue;
            }
            if (connection.readable())
            {
                work += read(connection);
            }
            else if (connection.layer.hasBufferedInput())
            {
                connection.readAgain = true; // paused: waits here, not on a socket that may stay quiet
                again.add(connection);
            }
        }
        now.clear();
        return work;
    }

    /**
     * Ends the TLS handshakes that have held their slot too long while connections of addresses holding fewer wait
     * ({@link HandshakeSlots#yielding}); each slot goes to the next in line as its holder closes. Once per duty cycle.
     *
     * @return handshakes ended.
     */
    int yieldHandshakeSlots()
    {
        int ended = 0;
        for (Connection holder = handshakes.yielding(true); null != holder; holder = handshakes.yielding(false))
        {
            closer.handshakeYielded(holder);
            ended++;
        }
        return ended;
    }

    /**
     * Ends the connections whose partial packets have held their room unread too long while others wait for it
     * ({@link PartialPacketRoom#stalled}); their room goes to the line as they close. Once per duty cycle.
     *
     * @return connections ended.
     */
    int endStalledPartials()
    {
        int ended = 0;
        final PartialPacketRoom room = buffers.room();
        for (Connection holder = room.stalled(true); null != holder; holder = room.stalled(false))
        {
            closer.partialPacketStalled(holder);
            ended++;
        }
        return ended;
    }

    /**
     * A credential verdict for a connection of this agent: its CONNECT goes on to the pipeline with it.
     */
    void onVerdict(final Connection connection, final long verdict)
    {
        connection.hashing = false;
        connection.credentialVerdict = verdict;
        connection.updateInterest();
        framer.processInbound(connection);
    }

    /**
     * Gives back a closed connection's inbound buffer, once, and its own buffer when the scratch buffer it is
     * borrowing carries its partial packet; never the scratch buffer.
     */
    void release(final Connection connection)
    {
        framer.release(connection); // first: its PUBLISHes read in this batch are copied before their bytes go back
        buffers.release(connection);
        readAgain(handshakes.release(connection)); // closed: its handshake slot, or its place in the line for one
    }

    /**
     * Gives back the scratch buffer: the agent is closing.
     */
    void close()
    {
        buffers.close();
    }
}
