package io.ringmq.transport;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A share of the JVM's heap that buffers whose size a client drives may hold, all of the process's connections
 * together. The heap is the JVM's, and running it out ends the broker ({@code -XX:+ExitOnOutOfMemoryError}): before
 * these shares, 4,800 sockets that each sent one byte of a TLS record, or 6,336 that each sent 8 KB of an Upgrade
 * request without its end, did that to a {@code bin/ringmq} broker (256m). Past a share the connection that would
 * take more ends by {@link Spent}, counted as having no buffer memory left. Any thread (each connection's own agent
 * takes and gives back its own).
 */
final class HeapShare
{
    /**
     * What connections not admitted yet (in their handshake, or with no CONNACK accepting them) hold in buffers whose
     * size the client drives (a TLS record's buffer, a WebSocket Upgrade request grown past its first read): a
     * sixteenth of the maximum heap, so clients no one has authenticated cannot spend what admitted ones need.
     */
    static final HeapShare UNADMITTED = new HeapShare(Runtime.getRuntime().maxMemory() / 16,
        "buffers of connections not admitted yet hold their share of the heap");
    /** What the record buffers of every TLS connection hold: a quarter of the maximum heap. */
    static final HeapShare TLS_RECORDS = new HeapShare(Runtime.getRuntime().maxMemory() / 4,
        "TLS record buffers hold their share of the heap");

    private final AtomicLong held = new AtomicLong();
    private final String spent;
    /** The most {@link #held} may reach (tests lower it). */
    volatile long limitBytes;

    private HeapShare(final long limitBytes, final String spent)
    {
        this.limitBytes = limitBytes;
        this.spent = spent;
    }

    /**
     * Counts {@code bytes} more, unless that would pass {@link #limitBytes}; each caller's answer its own.
     *
     * @throws Spent when it would (nothing counted).
     */
    void take(final long bytes)
    {
        while (true)
        {
            final long now = held.get();
            if (now + bytes > limitBytes)
            {
                throw new Spent(spent);
            }
            if (held.compareAndSet(now, now + bytes))
            {
                return;
            }
        }
    }

    /**
     * Counts {@code bytes} less.
     */
    void giveBack(final long bytes)
    {
        held.addAndGet(-bytes);
    }

    /**
     * @return what is counted now (tests).
     */
    long held()
    {
        return held.get();
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
