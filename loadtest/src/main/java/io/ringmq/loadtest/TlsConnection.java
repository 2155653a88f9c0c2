package io.ringmq.loadtest;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * One connection's TLS record layer over a non-blocking socket: a client-mode {@link SSLEngine} and its two
 * ciphertext buffers, driven from the {@link Client}'s own {@code read} and {@code flush}, so the handshake runs
 * inside the client loop like any other traffic (no thread of its own, never a blocking call; the engine's delegated
 * tasks, certificate checks, run inline). Plaintext queued before the handshake ends waits in the client's buffer.
 *
 * <pre>
 *   Client.out (plaintext) --wrap--> netOut --write--> socket
 *   Client.in  (plaintext) <-unwrap-- netIn  <--read-- socket
 * </pre>
 *
 * Buffers are allocated once per connection (grown only if the engine asks for more); the steady state allocates
 * nothing here.
 */
final class TlsConnection
{
    /** {@link #unwrap}: the plaintext buffer had no room for the next record; make room and call again. */
    static final int NEED_ROOM = -1;
    /** {@link #unwrap}: the server closed TLS (close_notify). */
    static final int CLOSED = -2;

    private final SSLEngine engine;
    private final ByteBuffer empty = ByteBuffer.allocate(0);
    /** Ciphertext read, not yet unwrapped; write mode (position: end of data). */
    private ByteBuffer netIn;
    /** Ciphertext wrapped, not yet written; write mode. */
    private ByteBuffer netOut;
    private boolean closed;
    /** Set by {@link #closeAfterPending()}: close_notify follows the plaintext already queued. */
    private boolean closing;

    TlsConnection(final SSLEngine engine)
    {
        this.engine = engine;
        final int packet = engine.getSession().getPacketBufferSize();
        this.netIn = ByteBuffer.allocateDirect(packet * 2);
        this.netOut = ByteBuffer.allocateDirect(Math.max(packet * 4, 64 * 1024)); // several records per write
    }

    /**
     * @return the least free room {@link #unwrap} needs in the plaintext buffer for one record.
     */
    int applicationBufferSize()
    {
        return engine.getSession().getApplicationBufferSize();
    }

    boolean isHandshaking()
    {
        final SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
        return status != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING &&
            status != SSLEngineResult.HandshakeStatus.FINISHED;
    }

    /**
     * @return whether the handshake has something to send before it can read on.
     */
    boolean needsWrap()
    {
        return engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP;
    }

    /**
     * @return ciphertext waiting for the socket, plus one while the handshake has something to send.
     */
    int pendingOut()
    {
        final SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
        return netOut.position() + (status == SSLEngineResult.HandshakeStatus.NEED_WRAP ||
            status == SSLEngineResult.HandshakeStatus.NEED_TASK ? 1 : 0);
    }

    /**
     * Wraps what the handshake needs and, once it is done, the plaintext in {@code app} (write mode; what is wrapped
     * leaves it), and writes as much ciphertext as the socket takes.
     */
    void flush(final SocketChannel channel, final ByteBuffer app) throws IOException
    {
        while (true)
        {
            if (netOut.position() > 0)
            {
                netOut.flip();
                try
                {
                    channel.write(netOut);
                }
                finally
                {
                    netOut.compact();
                }
                if (netOut.position() > 0)
                {
                    return; // the socket is full: the next duty cycle writes the rest
                }
            }
            if (closed)
            {
                return;
            }
            final SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
            if (status == SSLEngineResult.HandshakeStatus.NEED_TASK)
            {
                runTasks();
                continue;
            }
            if (closing && app.position() == 0 && !engine.isOutboundDone())
            {
                engine.closeOutbound(); // everything queued is wrapped: close_notify is next
                continue;
            }
            final boolean handshakeWrap = status == SSLEngineResult.HandshakeStatus.NEED_WRAP;
            if (!handshakeWrap && (isHandshaking() || app.position() == 0))
            {
                return; // waiting for the server's flight, or nothing to send
            }
            final SSLEngineResult result;
            app.flip();
            try
            {
                result = engine.wrap(handshakeWrap && isHandshaking() ? empty : app, netOut);
            }
            finally
            {
                app.compact();
            }
            switch (result.getStatus())
            {
                case BUFFER_OVERFLOW:
                    if (netOut.position() == 0)
                    {
                        netOut = grow(netOut, engine.getSession().getPacketBufferSize());
                    }
                    break; // written out first, then wrapped again
                case CLOSED:
                    closed = true;
                    break;
                default:
                    if (result.bytesConsumed() == 0 && result.bytesProduced() == 0 &&
                        result.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NEED_TASK)
                    {
                        return;
                    }
            }
        }
    }

    /**
     * Asks for a close_notify after what is queued (a DISCONNECT), so the server sees TLS end cleanly.
     */
    void closeAfterPending()
    {
        closing = true;
    }

    /**
     * Reads what the socket has into the ciphertext buffer.
     *
     * @return false at end of stream.
     */
    boolean fill(final SocketChannel channel) throws IOException
    {
        if (!netIn.hasRemaining())
        {
            netIn = grow(netIn, engine.getSession().getPacketBufferSize()); // a record larger than announced
        }
        return channel.read(netIn) >= 0;
    }

    /**
     * Unwraps every whole record read so far into {@code app} (write mode), running the handshake's steps as they
     * come; stops at a partial record, or when the handshake must send before it can go on (the next flush does).
     *
     * @return plaintext bytes added, {@link #NEED_ROOM} or {@link #CLOSED}.
     * @throws SSLException when the handshake fails (an unknown CA, a name mismatch, no common protocol), with the
     *                      engine's reason.
     */
    int unwrap(final ByteBuffer app) throws SSLException
    {
        int produced = 0;
        netIn.flip();
        try
        {
            while (netIn.hasRemaining())
            {
                final SSLEngineResult result = engine.unwrap(netIn, app);
                produced += result.bytesProduced();
                switch (result.getStatus())
                {
                    case BUFFER_UNDERFLOW:
                        return produced; // a partial record: wait for the rest
                    case BUFFER_OVERFLOW:
                        return produced > 0 ? produced : NEED_ROOM;
                    case CLOSED:
                        closed = true;
                        return CLOSED;
                    default:
                        break;
                }
                final SSLEngineResult.HandshakeStatus status = result.getHandshakeStatus();
                if (status == SSLEngineResult.HandshakeStatus.NEED_TASK)
                {
                    runTasks();
                }
                else if (status == SSLEngineResult.HandshakeStatus.NEED_WRAP)
                {
                    return produced; // the handshake speaks next (flush)
                }
                else if (result.bytesConsumed() == 0)
                {
                    return produced;
                }
            }
            return produced;
        }
        finally
        {
            netIn.compact();
        }
    }

    /**
     * @return whether ciphertext is buffered that a later {@link #unwrap} could turn into plaintext.
     */
    boolean hasBufferedInput()
    {
        return netIn.position() > 0;
    }

    private void runTasks()
    {
        Runnable task;
        while (null != (task = engine.getDelegatedTask()))
        {
            task.run(); // inline: a certificate check is short, and a thread per connection is what we avoid
        }
    }

    private static ByteBuffer grow(final ByteBuffer buffer, final int atLeast)
    {
        final ByteBuffer bigger = ByteBuffer.allocateDirect(Math.max(buffer.capacity() * 2, buffer.position() +
            atLeast));
        buffer.flip();
        bigger.put(buffer);
        return bigger;
    }
}
