package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.protocol.SmallCopy;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;

/**
 * The I/O agent's own reusable buffer for small writes: a connection that holds no outbound buffer (nothing waits
 * for its socket) has its small packets (PINGRESP, PUBACK, CONNACK, SUBACK, or a whole small batch of them) staged
 * here during a duty cycle and offered to its layer from here, in one write, when it is flushed. Only what the layer
 * does not take is copied into a pooled buffer of the connection's own, so an idle connection answering keep-alives
 * takes nothing from the pool and allocates nothing.
 * <pre>
 *   staging: | A: PINGRESP | B: PUBACK PUBACK | C: SUBACK | ... free ... |
 *            0                                        used          CAPACITY
 * </pre>
 * A connection's staged bytes are one contiguous range ({@link Connection#stagedOffset},
 * {@link Connection#stagedLength}); bytes for it that cannot extend that range (another connection staged after it,
 * or past {@link #MAX_STAGED_LENGTH}) move it to a pooled buffer first, so order is kept. The whole buffer is reused
 * once every touched connection was flushed. The agent's thread only.
 */
final class SmallWrites
{
    /** Room for one duty cycle's small writes, over all the agent's connections. */
    static final int CAPACITY = 64 * 1024;
    /** A connection's staged bytes stay below this; more go to a pooled buffer of its own. */
    static final int MAX_STAGED_LENGTH = 4 * 1024;

    private final ByteBuf staging = Buffers.allocate(CAPACITY);
    private final UnsafeBuffer view = new UnsafeBuffer(0, 0);
    private int used;

    /**
     * Stages bytes for a connection that holds no outbound buffer, after those already staged for it.
     *
     * @return false when they do not fit its range: the caller {@link #spill spills} and appends them instead.
     */
    boolean stage(final Connection connection, final DirectBuffer src, final int offset, final int length)
    {
        final int staged = connection.stagedLength;
        if (staged + length > MAX_STAGED_LENGTH || used + length > CAPACITY ||
            (staged > 0 && connection.stagedOffset + staged != used))
        {
            return false;
        }
        if (0 == staged)
        {
            connection.stagedOffset = used;
        }
        Buffers.view(view, staging, used, length);
        SmallCopy.copy(view, 0, src, offset, length);
        used += length;
        connection.stagedLength = staged + length;
        return true;
    }

    /**
     * Takes a pooled buffer for a connection, holding its staged bytes (they go first: order is kept) and room for
     * {@code extraLength} more.
     */
    ByteBuf spill(final Connection connection, final int extraLength)
    {
        final int staged = connection.stagedLength;
        final ByteBuf out = takeOut(connection, staged + extraLength);
        if (staged > 0)
        {
            out.writeBytes(staging, connection.stagedOffset, staged);
            connection.stagedLength = 0;
        }
        return out;
    }

    /**
     * Offers a connection's staged bytes to its layer in one write (when {@code layerClear}: nothing of the layer's
     * own waits before them); what it does not take is copied into a pooled buffer, {@link Connection#out}.
     *
     * @return bytes the layer took.
     */
    int write(final Connection connection, final boolean layerClear) throws IOException
    {
        final int offset = connection.stagedOffset;
        final int staged = connection.stagedLength;
        connection.stagedLength = 0; // even when the write throws: the connection is closed then
        staging.setIndex(offset, offset + staged);
        final int taken = layerClear ? Math.max(0, connection.layer.write(staging)) : 0;
        final int rest = staged - taken;
        if (rest > 0)
        {
            final ByteBuf out = takeOut(connection, rest); // a lagging subscriber's next appends go here too
            out.writeBytes(staging, offset + taken, rest); // only what the socket did not take
            connection.out = out;
        }
        return taken;
    }

    /**
     * @return a pooled buffer for a connection's outbound bytes, with room for {@code length}, or for
     * {@link Connection#nextOutLength} when that is more (taken once).
     */
    private static ByteBuf takeOut(final Connection connection, final int length)
    {
        final int capacity = Math.max(Math.max(Buffers.INITIAL_CAPACITY, connection.nextOutLength), length);
        connection.nextOutLength = 0; // taken: the next emptying says again how much a cycle needs
        return Buffers.allocate(capacity);
    }

    /**
     * Forgets a connection's staged bytes (it closed).
     */
    static void discard(final Connection connection)
    {
        connection.stagedLength = 0;
    }

    /**
     * Every connection with staged bytes was flushed or closed: the whole buffer is free again.
     */
    void reset()
    {
        used = 0;
    }

    /**
     * Gives the buffer back: the agent is closing.
     */
    void close()
    {
        if (staging.refCnt() > 0)
        {
            staging.release();
        }
    }
}
