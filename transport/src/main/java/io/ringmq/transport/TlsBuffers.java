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
 */
final class TlsBuffers
{
    /** A normal record's buffer size (the JDK engine's packet buffer size); a larger record grows the buffer. */
    static final int RECORD_LENGTH = 16_709;

    private static final ByteBufAllocator ALLOCATOR = PooledByteBufAllocator.DEFAULT;
    private static final ThreadLocal<ByteBuf[]> SCRATCH = ThreadLocal.withInitial(
        () -> new ByteBuf[]{ Unpooled.buffer(RECORD_LENGTH), Unpooled.buffer(RECORD_LENGTH) });

    ByteBuf netIn;
    ByteBuf netOut;
    ByteBuf appIn;
    private boolean netInShared;
    private boolean netOutShared;

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
            netOut = own(netOut, netOutShared);
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
     * own buffers that are empty go back to the pool.
     *
     * @return whether netIn was emptied (its partial-record state no longer holds).
     */
    boolean settle()
    {
        boolean netInEmptied = false;
        if (null != netIn && !netIn.isReadable())
        {
            netIn = netInShared ? null : release(netIn);
            netInEmptied = true;
        }
        else if (netInShared)
        {
            netIn = own(netIn, true);
        }
        netInShared = false;
        if (null != netOut && !netOut.isReadable())
        {
            netOut = netOutShared ? null : release(netOut);
        }
        else if (netOutShared)
        {
            netOut = own(netOut, true);
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
    }

    /**
     * @return how many buffers of its own the connection holds now.
     */
    int held()
    {
        return (null == netIn || netInShared ? 0 : 1) + (null == netOut || netOutShared ? 0 : 1) +
            (null == appIn ? 0 : 1);
    }

    /**
     * @return a buffer of the connection's own holding what {@code buffer} holds ({@code buffer} itself when it is
     * already its own).
     */
    private static ByteBuf own(final ByteBuf buffer, final boolean shared)
    {
        if (!shared)
        {
            return buffer;
        }
        final ByteBuf own = ALLOCATOR.heapBuffer(Math.max(RECORD_LENGTH, buffer.readableBytes()));
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
