package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.ringmq.protocol.SmallCopy;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Connection buffers from netty-buffer's pooled allocator, seen through Agrona views so the codec can work on
 * them in place. Direct buffers are used where their address is reachable, heap buffers otherwise. A connection
 * takes one only while bytes wait in it and gives it back once they are gone; the I/O agent's thread cache makes
 * the take and the give-back cheap and allocation-free.
 */
final class Buffers
{
    static final int INITIAL_CAPACITY = 1024;
    /** A buffer grown past this by a burst is shrunk back once it is empty again. */
    static final int SHRINK_ABOVE = 64 * 1024;

    private static final ByteBufAllocator ALLOCATOR = PooledByteBufAllocator.DEFAULT;
    private static final boolean DIRECT;

    static
    {
        final ByteBuf probe = ALLOCATOR.directBuffer(16);
        DIRECT = probe.hasMemoryAddress();
        probe.release();
    }

    private Buffers()
    {
    }

    static ByteBuf allocate()
    {
        return allocate(INITIAL_CAPACITY);
    }

    static ByteBuf allocate(final int capacity)
    {
        return DIRECT ? ALLOCATOR.directBuffer(capacity) : ALLOCATOR.heapBuffer(capacity);
    }

    /**
     * Points {@code view} at {@code length} bytes of {@code buf} from {@code index}.
     */
    static void view(final UnsafeBuffer view, final ByteBuf buf, final int index, final int length)
    {
        if (buf.hasMemoryAddress())
        {
            view.wrap(buf.memoryAddress() + index, length);
        }
        else
        {
            view.wrap(buf.array(), buf.arrayOffset() + index, length);
        }
    }

    /**
     * Appends bytes to {@code out}, growing it as needed.
     */
    static void append(final ByteBuf out, final UnsafeBuffer view, final DirectBuffer src, final int offset,
        final int length)
    {
        out.ensureWritable(length);
        final int writerIndex = out.writerIndex();
        view(view, out, writerIndex, length);
        SmallCopy.copy(view, 0, src, offset, length);
        out.writerIndex(writerIndex + length);
    }
}
