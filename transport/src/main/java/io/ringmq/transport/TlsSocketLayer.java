package io.ringmq.transport;

import io.netty.buffer.ByteBuf;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * TLS 1.2 and 1.3 over a JDK {@link SSLEngine} in server mode, between the MQTT bytes the agent frames and writes
 * and the layer below (TCP, or the PROXY protocol over TCP). The handshake is driven, without ever blocking, from
 * {@link #read}, {@link #write} and {@link #flush}; the engine's delegated tasks (key exchange, signatures,
 * certificate checks) run on a shared {@link TlsTaskExecutor}, and {@code onTaskDone} is called from that thread
 * when they are done: until then {@code read} and {@code write} return 0, and then the agent calls {@code read}
 * (and {@code flush} while {@link #hasPendingOutput()}) to go on.
 * <pre>
 *   in  (MQTT) &lt;- unwrap &lt;- netIn  &lt;- below.read     appIn: plaintext that did not fit in {@code in}
 *   out (MQTT) -&gt; wrap   -&gt; netOut -&gt; below.write    netOut: records the socket did not take yet
 * </pre>
 * The record buffers are {@link TlsBuffers}: the agent thread's scratch during a call, the connection's own
 * (pooled) only for what is left when it returns, so an idle connection holds none. The JDK engine itself
 * allocates ~1.3 KB per record (its result, and a cipher re-initialised for each record's nonce), which this layer
 * cannot avoid and adds nothing to; {@code TlsSocketLayerInMemoryTest} measures both.
 * <p>
 * Anything the peer sends that is not TLS (plain MQTT, garbage, a record header claiming more than a record may
 * hold, a record cut short by the end of the stream) ends in -1 from {@code read}, after a best-effort alert; the
 * agent then calls {@link #close()}, which gives every buffer back. Owned by the connection's I/O agent thread,
 * but for {@code taskRunning}, which the task thread clears.
 */
final class TlsSocketLayer implements SocketLayer
{
    /** Reads from below in one {@link #read} call at most this often: a peer cannot keep the agent in it. */
    static final int MAX_BELOW_READS = 16;

    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final SocketLayer below;
    private final TlsContext context;
    private final SSLEngine engine;
    private final Executor tasks;
    private final Runnable onTaskDone;
    private final Runnable runTasks = this::runDelegatedTasks;
    private final TlsBuffers buffers;
    /** Delegated tasks are running on the executor: the engine is theirs until it is cleared. */
    private volatile boolean taskRunning;
    /** netIn holds part of a record only: more must come from below before an unwrap can make progress. */
    private boolean needMoreInput;
    /** The stream ended (end of stream, close_notify, a TLS error): the next read returns -1. */
    private boolean inputEnded;
    private boolean failed;
    private boolean handshakeStarted;
    private boolean established;
    /** Whether a CONNACK accepted the connection ({@link #admitted()}): its buffers count as an admitted client's. */
    private boolean admitted;
    private boolean identityKnown;
    private boolean closed;
    private String peerIdentity;

    /**
     * @param below      the layer the records travel through (TCP, or the PROXY protocol over TCP).
     * @param context    the listener's TLS: a server-mode engine for this connection, and what of the client
     *                   certificate is its user name.
     * @param tasks      runs the engine's delegated tasks ({@link TlsTaskExecutor}, shared by all connections).
     * @param onTaskDone called on the executor's thread when a connection's delegated tasks are done: the agent
     *                   must then call {@link #read} (and {@link #flush} while output is pending) for it.
     */
    TlsSocketLayer(final SocketLayer below, final TlsContext context, final Executor tasks, final Runnable onTaskDone)
    {
        this(below, context, tasks, onTaskDone, new UnadmittedHeap());
    }

    /**
     * @param unadmitted what the connection holds before admission, shared by its layers.
     */
    TlsSocketLayer(final SocketLayer below, final TlsContext context, final Executor tasks, final Runnable onTaskDone,
        final UnadmittedHeap unadmitted)
    {
        this.below = below;
        this.context = context;
        this.engine = context.newEngine();
        this.tasks = tasks;
        this.onTaskDone = onTaskDone;
        this.buffers = new TlsBuffers(unadmitted);
    }

    public int read(final ByteBuf in) throws IOException
    {
        if (closed || failed)
        {
            return -1;
        }
        if (taskRunning)
        {
            return 0;
        }
        int produced = 0;
        try
        {
            if (null != buffers.appIn)
            {
                produced += buffers.drainAppIn(in);
                if (null != buffers.appIn)
                {
                    return produced;
                }
            }
            int belowReads = 0;
            while (in.isWritable())
            {
                final HandshakeStatus status = engine.getHandshakeStatus();
                if (HandshakeStatus.NEED_TASK == status || HandshakeStatus.NEED_WRAP == status)
                {
                    if (!handshakeStep())
                    {
                        break;
                    }
                    continue;
                }
                if (!buffers.hasNetIn() || needMoreInput)
                {
                    if (inputEnded)
                    {
                        break;
                    }
                    if (belowReads++ == MAX_BELOW_READS)
                    {
                        break;
                    }
                    final int read = fill();
                    if (read < 0)
                    {
                        inputEnded = true; // a record cut short, or no close_notify: the stream ends here anyway
                        break;
                    }
                    if (0 == read)
                    {
                        break;
                    }
                    continue;
                }
                final int before = in.writerIndex();
                if (!unwrap(in))
                {
                    produced += in.writerIndex() - before;
                    break;
                }
                produced += in.writerIndex() - before;
            }
        }
        catch (final SSLException | RejectedExecutionException ex)
        {
            fail();
            return -1;
        }
        finally
        {
            settle();
        }
        checkEstablished();
        if (0 == produced && inputEnded && null == buffers.appIn)
        {
            return -1;
        }
        return produced;
    }

    public int write(final ByteBuf out) throws IOException
    {
        if (closed || failed)
        {
            throw new IOException("TLS connection closed");
        }
        if (taskRunning)
        {
            return 0;
        }
        int taken = 0;
        try
        {
            checkEstablished();
            if (!established)
            {
                while (handshakeStep())
                {
                    // wrap what the handshake has to say until it waits for the peer, a task or the socket
                }
                return 0;
            }
            if (!flushNetOut())
            {
                return 0;
            }
            while (out.isReadable() && !taskRunning)
            {
                final ByteBuf netOut = buffers.netOutToWrap(engine.getSession().getPacketBufferSize());
                final ByteBuffer src = out.internalNioBuffer(out.readerIndex(), out.readableBytes());
                final ByteBuffer dst = netOut.internalNioBuffer(netOut.writerIndex(), netOut.writableBytes());
                final SSLEngineResult result = engine.wrap(src, dst);
                out.skipBytes(result.bytesConsumed());
                netOut.writerIndex(netOut.writerIndex() + result.bytesProduced());
                taken += result.bytesConsumed();
                if (SSLEngineResult.Status.CLOSED == result.getStatus())
                {
                    throw new IOException("TLS connection closed");
                }
                if (SSLEngineResult.Status.BUFFER_OVERFLOW == result.getStatus())
                {
                    netOut.ensureWritable(engine.getSession().getPacketBufferSize());
                    continue;
                }
                if (HandshakeStatus.NEED_TASK == result.getHandshakeStatus())
                {
                    startTasks();
                }
                if (0 == result.bytesConsumed() && 0 == result.bytesProduced())
                {
                    flushNetOut();
                    break; // the engine waits for the peer (a renegotiation): the agent comes back on a read
                }
                if (!flushNetOut())
                {
                    break;
                }
            }
        }
        catch (final SSLException | RejectedExecutionException ex)
        {
            fail();
            throw new IOException("TLS: " + ex.getMessage(), ex);
        }
        finally
        {
            settle();
        }
        return taken;
    }

    public boolean flush() throws IOException
    {
        if (closed)
        {
            return true;
        }
        if (taskRunning)
        {
            return !hasPendingOutput();
        }
        try
        {
            if (flushNetOut() && !failed)
            {
                while (handshakeStep())
                {
                    // a handshake waiting for the socket goes on now that it took what was pending
                }
            }
        }
        catch (final SSLException | RejectedExecutionException ex)
        {
            fail();
            throw new IOException("TLS: " + ex.getMessage(), ex);
        }
        finally
        {
            settle();
        }
        return !hasPendingOutput();
    }

    public boolean hasPendingOutput()
    {
        return buffers.hasNetOut() || below.hasPendingOutput();
    }

    public boolean hasBufferedInput()
    {
        if (closed || taskRunning)
        {
            return false;
        }
        return null != buffers.appIn || inputEnded || failed || (buffers.hasNetIn() && !needMoreInput) ||
            below.hasBufferedInput();
    }

    /**
     * @return the client certificate's CN (or its whole subject, as the listener says), when one was presented and
     * verified; null otherwise, and before the handshake is done.
     */
    public String peerIdentity()
    {
        if (!identityKnown && established && !taskRunning)
        {
            identityKnown = true;
            peerIdentity = context.identityOf(engine.getSession());
        }
        return peerIdentity;
    }

    public java.net.InetSocketAddress proxiedAddress()
    {
        return below.proxiedAddress();
    }

    @Override
    public boolean addressKnown()
    {
        return below.addressKnown();
    }

    @Override
    public UnadmittedHeap unadmittedHeap()
    {
        return buffers.unadmitted();
    }

    @Override
    public int readAddress() throws IOException
    {
        return below.readAddress();
    }

    @Override
    public long bytesFromSocket()
    {
        return below.bytesFromSocket();
    }

    /**
     * Sends close_notify, as far as the socket takes it now, gives every buffer back and closes below.
     */
    public void close()
    {
        if (closed)
        {
            return;
        }
        if (!failed && !taskRunning)
        {
            try
            {
                engine.closeOutbound();
                wrapClosing();
            }
            catch (final IOException | RuntimeException ex)
            {
                // best effort: the socket closes anyway
            }
        }
        closed = true;
        buffers.releaseAll();
        below.close();
    }

    /**
     * @return whether the handshake is done (the peer's identity is known from here on).
     */
    boolean established()
    {
        return established;
    }

    @Override
    public boolean handshaking()
    {
        return !established && !closed && !failed;
    }

    @Override
    public void admitted()
    {
        admitted = true;
        buffers.admitted();
    }

    /**
     * @return how many of its pooled buffers the layer holds now (0 for an idle connection, and after close).
     */
    int buffersHeld()
    {
        return buffers.buffersHeld();
    }

    /**
     * @return the version agreed (TLSv1.2, TLSv1.3), once {@link #established()}.
     */
    String protocol()
    {
        return engine.getSession().getProtocol();
    }

    /**
     * One step of a handshake that needs a task or a wrap.
     *
     * @return true when it went on and the caller may look again; false when it waits (for a task, the socket or
     * the peer).
     */
    private boolean handshakeStep() throws IOException
    {
        final HandshakeStatus status = engine.getHandshakeStatus();
        if (HandshakeStatus.NEED_TASK == status)
        {
            startTasks();
            return false;
        }
        if (HandshakeStatus.NEED_WRAP != status || !flushNetOut())
        {
            return false;
        }
        final ByteBuf netOut = buffers.netOutToWrap(engine.getSession().getPacketBufferSize());
        final ByteBuffer dst = netOut.internalNioBuffer(netOut.writerIndex(), netOut.writableBytes());
        final SSLEngineResult result = engine.wrap(EMPTY, dst);
        netOut.writerIndex(netOut.writerIndex() + result.bytesProduced());
        onResult(result);
        if (SSLEngineResult.Status.BUFFER_OVERFLOW == result.getStatus())
        {
            return flushNetOut(); // then a larger buffer is made room for
        }
        if (SSLEngineResult.Status.CLOSED == result.getStatus())
        {
            flushNetOut();
            inputEnded = true;
            return false;
        }
        return flushNetOut();
    }

    /**
     * Unwraps one record from netIn into {@code in} (or into appIn when it does not fit).
     *
     * @return whether the read loop may go on.
     */
    private boolean unwrap(final ByteBuf in) throws IOException
    {
        final ByteBuf netIn = buffers.netIn;
        final ByteBuffer src = netIn.internalNioBuffer(netIn.readerIndex(), netIn.readableBytes());
        final ByteBuffer dst = in.internalNioBuffer(in.writerIndex(), in.writableBytes());
        final boolean wasEstablished = established;
        final SSLEngineResult result = engine.unwrap(src, dst);
        netIn.skipBytes(result.bytesConsumed());
        in.writerIndex(in.writerIndex() + result.bytesProduced());
        onResult(result);
        refuseRenegotiation(wasEstablished, result);
        switch (result.getStatus())
        {
            case BUFFER_UNDERFLOW:
                needMoreInput = true; // a record's header is here, not all of it
                return true;
            case BUFFER_OVERFLOW:
                return unwrapToAppIn(in);
            case CLOSED:
                inputEnded = true; // close_notify: answer it and end
                engine.closeOutbound();
                wrapClosing();
                return false;
            default:
                if (0 == result.bytesConsumed() && 0 == result.bytesProduced() &&
                    HandshakeStatus.NOT_HANDSHAKING == result.getHandshakeStatus())
                {
                    needMoreInput = true;
                }
                return true;
        }
    }

    /**
     * A TLS 1.2 client asking for a new handshake on an established connection (a renegotiation): each would be a
     * full key exchange and signature on the shared task pool, past the connect timeout and the per-address limit,
     * so it ends the connection (as {@code jdk.tls.rejectClientInitiatedRenegotiation} would, for the whole JVM).
     * TLS 1.3 has no renegotiation; its post-handshake messages (KeyUpdate, tickets) go on.
     */
    private void refuseRenegotiation(final boolean wasEstablished, final SSLEngineResult result) throws SSLException
    {
        final HandshakeStatus status = result.getHandshakeStatus();
        if (wasEstablished && HandshakeStatus.NOT_HANDSHAKING != status && HandshakeStatus.FINISHED != status &&
            !"TLSv1.3".equals(engine.getSession().getProtocol()))
        {
            throw new SSLException("client-initiated renegotiation refused");
        }
    }

    /**
     * A record larger than the room in {@code in}: unwrap it into appIn and hand on what fits.
     */
    private boolean unwrapToAppIn(final ByteBuf in) throws SSLException
    {
        final ByteBuf netIn = buffers.netIn;
        final ByteBuf appIn = buffers.newAppIn(engine.getSession().getApplicationBufferSize());
        final ByteBuffer src = netIn.internalNioBuffer(netIn.readerIndex(), netIn.readableBytes());
        final ByteBuffer dst = appIn.internalNioBuffer(0, appIn.writableBytes());
        final SSLEngineResult result = engine.unwrap(src, dst);
        netIn.skipBytes(result.bytesConsumed());
        appIn.writerIndex(result.bytesProduced());
        onResult(result);
        if (SSLEngineResult.Status.BUFFER_UNDERFLOW == result.getStatus())
        {
            buffers.dropAppIn(); // the engine judged the room by the header: the record is not all here yet
            needMoreInput = true;
            return true;
        }
        if (SSLEngineResult.Status.OK != result.getStatus())
        {
            buffers.dropAppIn();
            throw new SSLException("TLS record larger than the application buffer: " + result.getStatus());
        }
        buffers.drainAppIn(in);
        return null == buffers.appIn;
    }

    /**
     * Reads what below has into netIn, made room for a whole record.
     *
     * @return bytes read, or -1 at the end of the stream.
     */
    private int fill() throws IOException
    {
        final int packetLength = engine.getSession().getPacketBufferSize();
        final ByteBuf netIn = buffers.netInToFill(packetLength);
        if (!netIn.isWritable())
        {
            throw new SSLException("TLS record larger than " + packetLength + " bytes");
        }
        final int read = below.read(netIn);
        if (read > 0)
        {
            needMoreInput = false;
        }
        return read;
    }

    /**
     * Hands what netOut holds to below.
     *
     * @return whether nothing is left pending, here or below.
     */
    private boolean flushNetOut() throws IOException
    {
        if (below.hasPendingOutput() && !below.flush())
        {
            return false;
        }
        return buffers.writeNetOut(below) && !below.hasPendingOutput();
    }

    /**
     * Wraps the closing alert(s) the engine holds and offers them to below once.
     */
    private void wrapClosing() throws IOException
    {
        for (int i = 0; i < 4 && !engine.isOutboundDone(); i++)
        {
            final ByteBuf netOut = buffers.netOutToWrap(engine.getSession().getPacketBufferSize());
            final ByteBuffer dst = netOut.internalNioBuffer(netOut.writerIndex(), netOut.writableBytes());
            final SSLEngineResult result = engine.wrap(EMPTY, dst);
            netOut.writerIndex(netOut.writerIndex() + result.bytesProduced());
            if (0 == result.bytesProduced())
            {
                break;
            }
        }
        flushNetOut();
    }

    /**
     * A TLS error: offer the alert the engine holds, and end the stream.
     */
    private void fail()
    {
        if (failed || closed)
        {
            return;
        }
        failed = true;
        inputEnded = true;
        try
        {
            engine.closeOutbound();
            wrapClosing();
        }
        catch (final IOException | RuntimeException ex)
        {
            // best effort: the connection is closing
        }
    }

    private void onResult(final SSLEngineResult result)
    {
        if (HandshakeStatus.FINISHED == result.getHandshakeStatus())
        {
            established = true;
        }
        else if (!established && result.bytesConsumed() > 0)
        {
            handshakeStarted = true;
        }
    }

    /**
     * The engine reports FINISHED in the result of the wrap or unwrap that ends the handshake; should the end come
     * from a delegated task instead, it is seen here, from the engine's state.
     */
    private void checkEstablished()
    {
        if (!established && handshakeStarted && !inputEnded &&
            HandshakeStatus.NOT_HANDSHAKING == engine.getHandshakeStatus() &&
            !"SSL_NULL_WITH_NULL_NULL".equals(engine.getSession().getCipherSuite()))
        {
            established = true;
        }
    }

    private void startTasks()
    {
        taskRunning = true; // the engine is the task thread's from here until it clears this
        try
        {
            tasks.execute(runTasks);
        }
        catch (final RejectedExecutionException ex)
        {
            taskRunning = false;
            throw ex;
        }
    }

    /**
     * On the executor's thread: run every task the engine has, then hand the engine back and wake the agent.
     */
    private void runDelegatedTasks()
    {
        try
        {
            Runnable task;
            while (null != (task = engine.getDelegatedTask()))
            {
                task.run(); // a task that fails leaves its exception for the next wrap or unwrap to throw
            }
        }
        finally
        {
            taskRunning = false; // publishes the engine's new state to the agent thread
            onTaskDone.run();
        }
    }

    /**
     * At the end of each call: leftovers in the thread's scratch buffers move to the connection's own.
     */
    private void settle()
    {
        if (buffers.settle(!established || !admitted))
        {
            needMoreInput = false;
        }
    }
}
