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
 * The own buffers of admitted connections share their {@link PartialPacketRoom}: past it a partial packet waits in
 * its socket instead of growing its buffer, and reads are short.
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
    /** What the own buffers of this agent's admitted connections hold, and who waits for room. */
    private final PartialPacketRoom room;

    /**
     * @param unadmittedLimitBytes the most the own buffers of this agent's connections not admitted yet may hold
     *                             together, counted while each holds bytes.
     * @param admittedLimitBytes   the same for admitted connections ({@link PartialPacketRoom}).
     */
    InboundBuffers(final IdleBuffers idle, final long unadmittedLimitBytes, final long admittedLimitBytes)
    {
        this.idle = idle;
        this.unadmittedLimitBytes = unadmittedLimitBytes;
        this.room = new PartialPacketRoom(admittedLimitBytes, MAX_READ);
    }

    /**
     * @return the own buffers of admitted connections, and who waits for room.
     */
    PartialPacketRoom room()
    {
        return room;
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
     * An admitted connection's own buffer grows only while its {@link PartialPacketRoom} has room.
     *
     * @return null when the connection may not be read now: it waits for room, unread.
     */
    ByteBuf readBuffer(final Connection connection)
    {
        final ByteBuf in = connection.in;
        final boolean admitted = !connection.hashing && connection.connack == Connection.CONNACK_ACCEPTED;
        if (null == in || in.readableBytes() <= CARRY_LENGTH || connection.hashing)
        {
            scratch.clear();
            // not admitted yet (its CONNECT hashed, in the pipeline or still to come, as when it arrives with a burst
            // behind it): a read takes at most what a hashing connection may hold, whatever the socket has; admitted,
            // with no room for a whole read: a short one, whose rest a buffer of its own takes
            final int most = !admitted ? Connection.HASHING_BUFFER_LIMIT : room.roomForRead() ? MAX_READ : CARRY_LENGTH;
            if (most < MAX_READ)
            {
                final int start = MAX_READ - most - (null == in ? 0 : in.readableBytes());
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
        // room for what is likely there, never for what a header claims: memory follows arrived bytes
        final int wanted = Math.min(MAX_READ, Math.max(MIN_READ, in.writableBytes()));
        final int grown = in.writableBytes() < wanted ? grown(in, wanted) : in.capacity();
        if (admitted)
        {
            // a packet's room is reserved once, before it is read on from its own buffer (not each packet of a buffer
            // grown large enough already: read on past the room, that one would hold it past the room for good)
            final int needs = Math.max(grown, reach(in.capacity(), declaredLength(in)));
            if ((needs > PartialPacketRoom.held(connection) || !PartialPacketRoom.reserved(connection)) &&
                !room.reserve(connection, needs))
            {
                return null; // waits, unread, for room
            }
        }
        if (grown > in.capacity())
        {
            in.capacity(grown);
        }
        idle.use(connection);
        return in;
    }

    /**
     * @return the length of the packet at the front of a buffer, fixed header included, as its header declares (the
     * framer has judged it against {@code --max-packet-size} already); 0 while the header is not all there.
     */
    static int declaredLength(final ByteBuf in)
    {
        final int start = in.readerIndex();
        final int end = Math.min(in.writerIndex(), start + 5);
        int remaining = 0;
        for (int i = start + 1, shift = 0; i < end; i++, shift += 7)
        {
            final int b = in.getByte(i);
            remaining |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0)
            {
                return i + 1 - start + remaining;
            }
        }
        return 0;
    }

    /**
     * @return the capacity a partial packet's own buffer grows to for {@code wanted} more bytes: by a quarter, at
     * least a read's worth, instead of netty's doubling, so a packet of 262 KB holds 320 KB rather than 512 (what
     * its room counts) for the copies of five growths rather than three.
     */
    static int grown(final ByteBuf in, final int wanted)
    {
        final long grown = Math.max((long) in.writerIndex() + wanted, in.capacity() + Math.max(MAX_READ,
            in.capacity() / 4L));
        return (int) Math.min(in.maxCapacity(), grown);
    }

    /**
     * @return the capacity a partial packet's own buffer of {@code capacity} grows to by {@link #grown} steps once the
     * {@code declared} bytes of its packet are in: the room its packet is to take, reserved before it is read.
     */
    static int reach(final int capacity, final int declared)
    {
        long reach = capacity;
        while (reach - MIN_READ < declared)
        {
            reach += Math.max(MAX_READ, reach / 4);
        }
        return (int) Math.min(Integer.MAX_VALUE, reach);
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
        final boolean admitted = connection.connack == Connection.CONNACK_ACCEPTED;
        final int bytes = null != in && in.isReadable() ? in.capacity() : 0;
        // at its capacity, or at the room reserved for its partial packet while that packet is not over: a packet's
        // declared length counts only as far as room was reserved for it (PartialPacketRoom#reserve), before a read
        room.count(connection, admitted && bytes > 0 ? Math.max(bytes, PartialPacketRoom.reserved(connection) ?
            Math.min(reach(bytes, declaredLength(in)), PartialPacketRoom.held(connection)) : 0) : 0);
        final int held = admitted ? 0 : bytes;
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
            room.packetEnded(connection); // what it held was taken whole
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
            if (in.readerIndex() > 0)
            {
                room.packetEnded(connection); // a packet of its own buffer was taken: the next starts
            }
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
        room.release(connection);
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
