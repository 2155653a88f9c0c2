package io.ringmq.transport;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The heap that connections still in their handshake may hold in buffers whose size the client drives (a TLS
 * record's buffer, a WebSocket Upgrade request that grows past its first read), all of the process's together: at
 * most {@link #limitBytes}, a sixteenth of the maximum heap. The heap is the JVM's, and running it out ends the broker
 * ({@code -XX:+ExitOnOutOfMemoryError}): before this, 4,800 sockets that each sent one byte of a TLS record, or 6,336
 * that each sent 8 KB of an Upgrade request without its end, did that to a {@code bin/ringmq} broker (256m). Past it
 * the connection that would take more ends by {@link Spent}, counted as having no buffer memory left. Any thread (each
 * connection's own agent takes and gives back its own).
 */
final class HandshakeHeap
{
    private static final AtomicLong HELD = new AtomicLong();
    /** The most {@link #HELD} may reach (tests lower it). */
    static volatile long limitBytes = Runtime.getRuntime().maxMemory() / 16;

    private HandshakeHeap()
    {
    }

    /**
     * Counts {@code bytes} more, unless that would pass {@link #limitBytes}.
     *
     * @throws Spent when it would (nothing counted).
     */
    static void take(final long bytes)
    {
        if (HELD.addAndGet(bytes) > limitBytes && bytes > 0)
        {
            HELD.addAndGet(-bytes);
            throw new Spent("buffers of connections in their handshake hold their share of the heap");
        }
    }

    /**
     * Counts {@code bytes} less.
     */
    static void giveBack(final long bytes)
    {
        HELD.addAndGet(-bytes);
    }

    /**
     * @return what is counted now (tests).
     */
    static long held()
    {
        return HELD.get();
    }

    /**
     * A share of the heap is spent: the connection that would take more ends. An {@link OutOfMemoryError}, as netty
     * throws past its direct-memory limit, so the agent's handling of a buffer that cannot be taken applies (that
     * connection closed, counted); no stack trace.
     */
    static final class Spent extends OutOfMemoryError
    {
        private static final long serialVersionUID = 1L;

        Spent(final String message)
        {
            super(message);
        }

        @Override
        public synchronized Throwable fillInStackTrace()
        {
            return this;
        }
    }
}
