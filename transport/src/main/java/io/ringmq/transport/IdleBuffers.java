package io.ringmq.transport;

import io.netty.buffer.ByteBuf;

import java.util.ArrayList;

/**
 * The connections of one I/O agent that hold a pooled buffer, and the sweep that gives back the buffers they no
 * longer use: an emptied buffer stays with its connection while it keeps being used (a busy connection takes
 * nothing from the pool per duty cycle), and goes back to the pool once a whole sweep interval passed without a read
 * into it or a write to it. An idle connection so holds no buffer a little after its last packet; one grown past
 * {@link Buffers#SHRINK_ABOVE} by a burst goes back as soon as it empties. Bytes still waiting (a partial packet,
 * what a socket has not taken) are never given back here, only on close. The agent's thread only.
 */
final class IdleBuffers
{
    /** How long an emptied buffer stays with a connection that does not use it: between one and two of these. */
    static final long SWEEP_INTERVAL_MS = 100;

    private final ArrayList<Connection> holding = new ArrayList<>();
    private long nextSweepMs;

    /**
     * Notes that a connection took or used a buffer: it is looked at in the next sweeps until it holds none.
     */
    void use(final Connection connection)
    {
        connection.buffersUsed = true;
        if (!connection.buffersHeld)
        {
            connection.buffersHeld = true;
            holding.add(connection);
        }
    }

    /**
     * Gives back the emptied buffers of connections that did not use them since the last sweep; once per interval.
     *
     * @return buffers given back.
     */
    int sweep(final long nowMs)
    {
        if (nowMs < nextSweepMs)
        {
            return 0;
        }
        nextSweepMs = nowMs + SWEEP_INTERVAL_MS;
        int released = 0;
        int kept = 0;
        final int count = holding.size();
        for (int i = 0; i < count; i++)
        {
            final Connection connection = holding.get(i);
            if (!connection.closed && !connection.buffersUsed)
            {
                if (isEmpty(connection.in))
                {
                    connection.in.release();
                    connection.in = null;
                    released++;
                }
                if (isEmpty(connection.out))
                {
                    connection.out.release();
                    connection.out = null;
                    released++;
                }
                connection.nextOutLength = 0; // no pooled buffer used for an interval: its last busy cycle is stale
            }
            connection.buffersUsed = false;
            if (connection.closed || (null == connection.in && null == connection.out && 0 == connection.nextOutLength))
            {
                connection.buffersHeld = false; // a closed connection gave its buffers back when it closed
                if (!connection.closed)
                {
                    connection.layer.releaseIdleBuffers(); // a framing layer's own (WebSocket)
                }
            }
            else
            {
                holding.set(kept++, connection);
            }
        }
        for (int i = count - 1; i >= kept; i--)
        {
            holding.remove(i);
        }
        return released;
    }

    /**
     * Gives back an emptied buffer now when a burst grew it past {@link Buffers#SHRINK_ABOVE}, else readies it for
     * the next bytes.
     *
     * @return the buffer to keep, or null when it went back to the pool.
     */
    static ByteBuf emptied(final ByteBuf buffer)
    {
        if (buffer.capacity() > Buffers.SHRINK_ABOVE)
        {
            buffer.release();
            return null;
        }
        buffer.clear();
        return buffer;
    }

    private static boolean isEmpty(final ByteBuf buffer)
    {
        return null != buffer && !buffer.isReadable();
    }

    int size()
    {
        return holding.size();
    }
}
