package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;

import java.io.IOException;

/**
 * The record buffers of one {@link TlsSocketLayer}, and who owns them when:
 * <pre>
 *   netIn   records from below not yet unwrapped
 *   netOut  records wrapped and not yet taken by below
 *   appIn   plaintext unwrapped that did not fit in the agent's buffer
 * </pre>
 * During a call, netIn and netOut are the agent thread's two scratch buffers, shared by all its TLS connections;
 * when the call ends ({@link #settle()}) whatever is left in them (part of a record that has not all arrived,
 * records the socket did not take) moves to a buffer of the connection's own, from netty's pooled allocator,
 * given back as soon as it is empty. So an idle connection holds none of the ~16 KB (up to 33 KB) a record may
 * need, and messages that arrive and leave whole take nothing from the pool: an acquire and release costs ~150
 * bytes of garbage with netty 4.2 outside its own threads. Heap buffers, as netty's {@code SslHandler} uses with
 * the JDK's engine, whose ciphers work on arrays. Owned by the connection's agent thread.
 * <p>
 * The heap is the JVM's, and running it out ends the broker ({@code -XX:+ExitOnOutOfMemoryError}). So what the
 * buffers of the process's TLS connections hold is counted, at the end of each call ({@link #settle}), against
 * {@link HeapShare#TLS_RECORDS} (a quarter of the maximum heap), and what those of connections not admitted yet (in
 * their handshake, or before a CONNACK accepted them) hold against {@link HeapShare#UNADMITTED} (a sixteenth, and
 * one address a sixteenth of that: {@link UnadmittedHeap}), so
 * connections that finished their handshake and never send a CONNECT cannot spend the quarter admitted clients need
 * (1,100 such sockets, each holding part of a 16 KB record, had an admitted client closed for want of buffer memory):
 * a call that would pass either throws
 * {@link HeapShare.Spent}, an
 * {@link OutOfMemoryError} as netty's own past its direct-memory limit, so only that connection ends (counted as
 * having no buffer memory left). Before, 4,970 sockets that each sent the first 4 KB of a record (before the carry of
 * short parts, one byte was enough) ran a 64 MiB heap out and ended the broker.
 */
final class TlsBuffers
{
    /** A normal record's buffer size (the JDK engine's packet buffer size); a larger record grows the buffer. */
    static final int RECORD_LENGTH = 16_709;
    /**
     * Part of a record up to this long is kept in a buffer of its own just that long, and carried back into the
     * scratch buffer for the next read; a longer part keeps a whole record's buffer. Memory follows the bytes that
     * arrived: a client that sent one byte of a record made the broker hold a 16 KB buffer until the connect timeout,
     * and 4,800 such sockets ran a 64 MiB heap out (as {@link InboundBuffers} carries a short partial packet).
     */
    static final int CARRY_LENGTH = 4 * 1024;

    private static final ByteBufAllocator ALLOCATOR = PooledByteBufAllocator.DEFAULT;
    private static final ThreadLocal<ByteBuf[]> SCRATCH = ThreadLocal.withInitial(
        () -> new ByteBuf[]{ Unpooled.buffer(RECORD_LENGTH), Unpooled.buffer(RECORD_LENGTH) });

    ByteBuf netIn;
    ByteBuf netOut;
    ByteBuf appIn;
    private boolean netInShared;
    private boolean netOutShared;
    private final UnadmittedHeap unadmitted;
    /** What this connection's own buffers held at the end of its last call, as counted; and whether unadmitted. */
    private long held;
    private boolean heldUnadmitted;

    /**
     * @param unadmitted what the connection holds before admission, shared by its layers.
     */
    TlsBuffers(final UnadmittedHeap unadmitted)
    {
        this.unadmitted = unadmitted;
    }

    UnadmittedHeap unadmitted()
    {
        return unadmitted;
    }

    /**
     * @return netIn, with room after what it holds for the rest of a record of {@code packetLength}.
     */
    ByteBuf netInToFill(final int packetLength)
    {
        if (null == netIn)
        {
            netIn = SCRATCH.get()[0].clear();
            netInShared = true;
        }
        else if (!netInShared && netIn.readableBytes() <= CARRY_LENGTH)
        {
            final ByteBuf carried = SCRATCH.get()[0].clear();
            carried.writeBytes(netIn); // a short part of a record goes on in the scratch buffer; its own goes back
            netIn.release();
            netIn = carried;
            netInShared = true;
        }
        netIn.discardReadBytes();
        if (netIn.writableBytes() < packetLength - netIn.readableBytes())
        {
            netIn.ensureWritable(packetLength - netIn.readableBytes());
        }
        return netIn;
    }

    /**
     * @return netOut, with room for a record of {@code packetLength} after what it holds.
     */
    ByteBuf netOutToWrap(final int packetLength)
    {
        if (null == netOut)
        {
            netOut = SCRATCH.get()[1].clear();
            netOutShared = true;
        }
        if (netOut.writableBytes() < packetLength)
        {
            netOut.discardReadBytes();
            netOut.ensureWritable(packetLength);
        }
        return netOut;
    }

    /**
     * Offers netOut to below.
     *
     * @return whether netOut is empty now.
     */
    boolean writeNetOut(final SocketLayer below) throws IOException
    {
        if (null == netOut)
        {
            return true;
        }
        if (netOut.isReadable())
        {
            below.write(netOut);
        }
        if (netOut.isReadable())
        {
            netOut = own(netOut, netOutShared, RECORD_LENGTH);
            netOutShared = false;
            return false;
        }
        netOut = netOutShared ? null : release(netOut);
        netOutShared = false;
        return true;
    }

    boolean hasNetIn()
    {
        return null != netIn && netIn.isReadable();
    }

    boolean hasNetOut()
    {
        return null != netOut && netOut.isReadable();
    }

    /**
     * @return a new appIn of {@code length} bytes.
     */
    ByteBuf newAppIn(final int length)
    {
        appIn = ALLOCATOR.heapBuffer(length);
        return appIn;
    }

    /**
     * Moves what appIn holds into {@code in}, as far as it has room; gives appIn back once empty.
     *
     * @return bytes moved.
     */
    int drainAppIn(final ByteBuf in)
    {
        final int length = Math.min(appIn.readableBytes(), in.writableBytes());
        in.writeBytes(appIn, length);
        if (!appIn.isReadable())
        {
            appIn = release(appIn);
        }
        return length;
    }

    void dropAppIn()
    {
        appIn = release(appIn);
    }

    /**
     * At the end of each call: what the scratch buffers still hold moves to buffers of the connection's own, and
     * own buffers that are empty go back to the pool; what they hold is counted.
     *
     * @param beforeAdmission whether the connection is in its handshake, or no CONNACK has accepted it yet.
     * @return whether netIn was emptied (its partial-record state no longer holds).
     * @throws HeapShare.Spent when what they hold would pass {@link HeapShare#TLS_RECORDS}, or for a connection not
     * admitted yet its {@link UnadmittedHeap} (nothing more counted: the caller ends the connection, and
     * {@link #releaseAll} gives it all back).
     */
    boolean settle(final boolean beforeAdmission)
    {
        final boolean netInEmptied = settle();
        count(ownCapacity(netIn, netInShared) + ownCapacity(netOut, netOutShared) + ownCapacity(appIn, false),
            beforeAdmission);
        return netInEmptied;
    }

    /**
     * A CONNACK accepted the connection: what its own buffers hold leaves {@link HeapShare#UNADMITTED} (gives back
     * only: never refused).
     */
    void admitted()
    {
        count(held, false);
    }

    /**
     * Counts what the own buffers hold now, {@code now} bytes, in both shares: what they hold more is taken first
     * (nothing counted when a share refuses it), what they hold less given back.
     */
    private void count(final long now, final boolean beforeAdmission)
    {
        final long change = now - held;
        final long unadmittedChange = (beforeAdmission ? now : 0) - (heldUnadmitted ? held : 0);
        if (change > 0)
        {
            HeapShare.TLS_RECORDS.take(change);
        }
        if (unadmittedChange > 0)
        {
            try
            {
                unadmitted.take(unadmittedChange);
            }
            catch (final HeapShare.Spent spent)
            {
                if (change > 0)
                {
                    HeapShare.TLS_RECORDS.giveBack(change);
                }
                throw spent;
            }
        }
        if (change < 0)
        {
            HeapShare.TLS_RECORDS.giveBack(-change);
        }
        if (unadmittedChange < 0)
        {
            unadmitted.giveBack(-unadmittedChange);
        }
        held = now;
        heldUnadmitted = beforeAdmission;
    }

    private static long ownCapacity(final ByteBuf buffer, final boolean shared)
    {
        return null == buffer || shared ? 0 : pooledLength(buffer.capacity());
    }

    /**
     * @return what netty's pool takes for a buffer of {@code capacity} bytes: its size class, four to each doubling
     * from 16 bytes (a record's 16,709-byte buffer takes 20,480), so a share counts the heap a buffer holds, not the
     * smaller length asked for.
     */
    static long pooledLength(final int capacity)
    {
        if (capacity <= 16)
        {
            return 16;
        }
        final int step = 1 << Math.max(4, 29 - Integer.numberOfLeadingZeros(capacity - 1)); // a quarter of the group
        return ((long)capacity + step - 1) & -step;
    }

    private boolean settle()
    {
        boolean netInEmptied = false;
        if (null != netIn && !netIn.isReadable())
        {
            netIn = netInShared ? null : release(netIn);
            netInEmptied = true;
        }
        else if (netInShared)
        {
            final int held = netIn.readableBytes();
            netIn = own(netIn, true, held <= CARRY_LENGTH ? held : RECORD_LENGTH);
        }
        netInShared = false;
        if (null != netOut && !netOut.isReadable())
        {
            netOut = netOutShared ? null : release(netOut);
        }
        else if (netOutShared)
        {
            netOut = own(netOut, true, RECORD_LENGTH);
        }
        netOutShared = false;
        return netInEmptied;
    }

    /**
     * Gives every buffer back (at close).
     */
    void releaseAll()
    {
        settle();
        netIn = release(netIn);
        netOut = release(netOut);
        appIn = release(appIn);
        count(0, false); // gives back only: never refused
    }

    /**
     * @return how many buffers of its own the connection holds now.
     */
    int buffersHeld()
    {
        return (null == netIn || netInShared ? 0 : 1) + (null == netOut || netOutShared ? 0 : 1) +
            (null == appIn ? 0 : 1);
    }

    /**
     * @return a buffer of the connection's own, of at least {@code length} bytes, holding what {@code buffer} holds
     * ({@code buffer} itself when it is already its own).
     */
    private static ByteBuf own(final ByteBuf buffer, final boolean shared, final int length)
    {
        if (!shared)
        {
            return buffer;
        }
        final ByteBuf own = ALLOCATOR.heapBuffer(Math.max(length, buffer.readableBytes()));
        own.writeBytes(buffer);
        buffer.clear();
        return own;
    }

    private static ByteBuf release(final ByteBuf buffer)
    {
        if (null != buffer)
        {
            buffer.release();
        }
        return null;
    }
}
