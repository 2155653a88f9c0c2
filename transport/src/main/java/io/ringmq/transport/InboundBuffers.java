package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.auth.AddressKeys;
import org.agrona.collections.Long2LongHashMap;

/**
 * Where an I/O agent's connections are read into, on the agent's thread: the agent's one scratch buffer, lent to a
 * connection for a read and the processing after it, and each connection's own pooled buffer, held only while a
 * partial packet (or packets held while the connection waits) is left over. It owns the scratch buffer and what it
 * carries; the {@link ConnectionReader} asks it where to read, and the {@link PacketFramer} gives back what it has
 * processed.
 * <p>
 * Memory follows the bytes that arrived, never the length a header claims: a connection's own buffer grows only as
 * bytes are read. The own buffers of connections not admitted yet (no CONNACK accepted them) that hold bytes (a
 * partial CONNECT, a CONNECT waiting for its credential verdict, what waits behind one) hold together at most their
 * share of the pooled memory ({@link #unadmittedLimitBytes}), and those of one address ({@link AddressKeys}; loopback
 * only with {@code --limit-loopback}) a sixteenth of that: past either such a connection ends, so clients no one has
 * authenticated, each sending all but the end of a CONNECT, cannot spend the pool that admitted clients need, and
 * one host cannot spend the share of all the others. A CONNECT read whole in one read holds no buffer of its own.
 */
final class InboundBuffers
{
    /**
     * Largest single read, and the scratch buffer's size; a partial packet's buffer grows toward it. 64 KiB: with a
     * client streaming 1 KiB PUBLISHes a read took 15 KiB of 16 and 52 KiB of 64 (docs/perf/2026-11-30-ingest-1k.md).
     */
    private static final int MAX_READ = 64 * 1024;
    private static final int MIN_READ = 1024;
    /**
     * A partial packet up to this long is carried into the scratch buffer and read behind there, so the read has room
     * for at least {@code MAX_READ - CARRY_LENGTH} bytes: with packets of a KiB nearly every read ends mid-packet, and
     * reading behind the partial in its own small buffer took one packet per read system call. A longer partial
     * packet grows its own buffer instead, toward the length that arrives.
     */
    private static final int CARRY_LENGTH = 4 * 1024;

    /** Where a connection with no partial packet is read into: one per agent, so idle connections hold none. */
    private final ByteBuf scratch = Buffers.allocate(MAX_READ);
    /**
     * The connection whose partial packet the scratch buffer carries, during one read, and its own buffer, emptied:
     * {@link #keepRest} gives it back to the connection, with the rest in it, so carrying takes nothing from the
     * pool (netty's recycler would allocate a buffer object for most takes) and the connection keeps what it held.
     */
    private Connection carriedFor;
    private ByteBuf carriedFrom;
    private final IdleBuffers idle;
    /** The most {@link #unadmittedBytes} may reach on this agent. */
    private final long unadmittedLimitBytes;
    /** What the own buffers of this agent's connections not admitted yet hold ({@link Connection#unadmittedBytes}). */
    private long unadmittedBytes;
    /** Of {@link #unadmittedBytes}, what each limited address's connections hold. */
    private final Long2LongHashMap unadmittedByAddress = new Long2LongHashMap(0);

    /**
     * @param unadmittedLimitBytes the most the own buffers of this agent's connections not admitted yet may hold
     *                             together, counted while each holds bytes.
     */
    InboundBuffers(final IdleBuffers idle, final long unadmittedLimitBytes)
    {
        this.idle = idle;
        this.unadmittedLimitBytes = unadmittedLimitBytes;
    }

    /**
     * @return this agent's share of the pooled memory for the partial packets of connections not admitted yet: a
     * quarter of netty's limit, split between the I/O agents.
     */
    static long unadmittedShare(final long pooledLimitBytes, final int agents)
    {
        return pooledLimitBytes / 4 / Math.max(1, agents);
    }

    /**
     * @return where the next read goes: into the agent's scratch buffer, lent to the connection until
     * {@link PacketFramer#processInbound} has taken what it can from it, behind the connection's partial packet when
     * one of at most {@link #CARRY_LENGTH} waits (carried over from its own buffer, {@link #carriedFrom}); behind a
     * longer partial packet in its own buffer, which grows toward {@link #MAX_READ} only as the socket has that much.
     */
    ByteBuf readBuffer(final Connection connection)
    {
        final ByteBuf in = connection.in;
        if (null == in || in.readableBytes() <= CARRY_LENGTH || connection.hashing)
        {
            scratch.clear();
            if (connection.hashing || connection.connack != Connection.CONNACK_ACCEPTED)
            {
                // not admitted yet (its CONNECT hashed, in the pipeline or still to come, as when it arrives with a
                // burst behind it): a read takes at most what a hashing connection may hold, whatever the socket has
                final int start = MAX_READ - Connection.HASHING_BUFFER_LIMIT - (null == in ? 0 : in.readableBytes());
                scratch.setIndex(start, start);
            }
            if (null != in)
            {
                idle.use(connection);
                scratch.writeBytes(in, in.readerIndex(), in.readableBytes()); // what remains is kept in order
                carriedFor = connection;
                carriedFrom = in.clear();
            }
            connection.in = scratch;
            return scratch;
        }
        idle.use(connection);
        // room for what is likely there, never for what a header claims: memory follows arrived bytes
        in.ensureWritable(Math.min(MAX_READ, Math.max(MIN_READ, in.writableBytes())));
        return in;
    }

    /**
     * After processing: bytes left over (a partial packet, or packets held while the connection waits) move from
     * the scratch buffer into a pooled buffer of their own; an emptied one of its own stays for the next read until
     * {@link IdleBuffers} finds it unused. An idle connection holds none.
     *
     * @return false when the connection is not admitted yet and what its own buffer holds would take this agent's
     * unadmitted connections past {@link #unadmittedLimitBytes}: the caller ends it (its buffer is given back with it).
     */
    boolean keepRest(final Connection connection)
    {
        keep(connection);
        return counted(connection);
    }

    /**
     * Counts a connection's own buffer, at its capacity, while the connection is not admitted and the buffer holds
     * bytes (an emptied one goes back to the pool within two {@link IdleBuffers} sweeps), and stops counting it once
     * it is admitted or holds none.
     *
     * @return false when counting more of it would pass {@link #unadmittedLimitBytes}, or its address's sixteenth
     * of it (nothing more counted).
     */
    private boolean counted(final Connection connection)
    {
        final ByteBuf in = connection.in;
        final int held = null != in && connection.connack != Connection.CONNACK_ACCEPTED && in.isReadable() ?
            in.capacity() : 0;
        final int before = connection.unadmittedBytes;
        if (held == before)
        {
            return true;
        }
        final long key = InboundConnects.limitedAddressKey(connection); // settled: bytes were read, so it stays
        final long change = held - before;
        if (change > 0 && (unadmittedBytes + change > unadmittedLimitBytes || (key != AddressKeys.NONE &&
            unadmittedByAddress.get(key) + change > unadmittedLimitBytes / AddressKeys.SHARES)))
        {
            return false;
        }
        unadmittedBytes += change;
        connection.unadmittedBytes = held;
        if (key != AddressKeys.NONE)
        {
            count(key, change);
        }
        return true;
    }

    private void count(final long key, final long change)
    {
        final long now = unadmittedByAddress.get(key) + change;
        if (now > 0)
        {
            unadmittedByAddress.put(key, now);
        }
        else
        {
            unadmittedByAddress.remove(key); // the table holds only addresses whose connections hold something
        }
    }

    /**
     * @return what the own buffers of this agent's connections not admitted yet hold, as counted (tests).
     */
    long unadmittedBytes()
    {
        return unadmittedBytes;
    }

    private void keep(final Connection connection)
    {
        final ByteBuf in = connection.in;
        final ByteBuf carried = takeCarried(connection);
        if (null == in)
        {
            if (null != carried)
            {
                carried.release(); // never left behind, whatever took the connection's buffer
            }
            return;
        }
        if (!in.isReadable())
        {
            final ByteBuf own = in != scratch ? in : carried; // the scratch buffer never stays with a connection
            connection.in = null == own ? null : IdleBuffers.emptied(own);
        }
        else if (in == scratch)
        {
            final int rest = in.readableBytes();
            final ByteBuf own = null != carried ? carried : Buffers.allocate(Math.max(Buffers.INITIAL_CAPACITY, rest));
            try
            {
                own.writeBytes(in, rest); // grows a carried buffer when the rest is longer than it was
            }
            catch (final OutOfMemoryError ex)
            {
                own.release(); // no longer anyone's: the connection still holds the scratch buffer, and ends
                throw ex;
            }
            connection.in = own;
            idle.use(connection);
        }
        else
        {
            in.discardReadBytes(); // keep a partial packet at the front; its buffer grows only as it arrives
        }
    }

    /**
     * @return the connection's own buffer while the scratch buffer carries its partial packet (no longer noted as
     * carried), or null.
     */
    private ByteBuf takeCarried(final Connection connection)
    {
        if (carriedFor != connection)
        {
            return null;
        }
        final ByteBuf carried = carriedFrom;
        carriedFor = null;
        carriedFrom = null;
        return carried;
    }

    /**
     * Gives back a closed connection's inbound buffer, once, and its own buffer when the scratch buffer it is
     * borrowing carries its partial packet; never the scratch buffer.
     */
    void release(final Connection connection)
    {
        final ByteBuf in = connection.in;
        final ByteBuf carried = takeCarried(connection);
        connection.in = null;
        if (connection.unadmittedBytes > 0)
        {
            unadmittedBytes -= connection.unadmittedBytes;
            final long key = InboundConnects.limitedAddressKey(connection);
            if (key != AddressKeys.NONE)
            {
                count(key, -connection.unadmittedBytes);
            }
            connection.unadmittedBytes = 0;
        }
        if (null != in && in != scratch)
        {
            in.release();
        }
        if (null != carried)
        {
            carried.release();
        }
    }

    /**
     * Gives back the scratch buffer: the agent is closing.
     */
    void close()
    {
        if (scratch.refCnt() > 0)
        {
            scratch.release();
        }
    }
}
