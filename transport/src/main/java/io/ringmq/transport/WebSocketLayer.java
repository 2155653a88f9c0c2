package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * MQTT over WebSocket, the server side (RFC 6455; MQTT 5.0 section 6), over any layer below: plain TCP for
 * {@code ws://}, TLS for {@code wss://}.
 * <pre>
 *   HANDSHAKE --101--> OPEN --close / protocol error / close()--> ENDED
 *       \--400/404-----------------------------------------------^
 * </pre>
 * Inbound, the HTTP Upgrade request is gathered by a {@link WebSocketHandshake} (bounded, dropped once answered);
 * then the client's masked frames are read straight into the connection's inbound buffer and unmasked there by the
 * {@link WebSocketFrameDecoder}, which leaves only the MQTT bytes. Outbound, what {@link #write} is given goes out
 * as unmasked binary frames of at most {@link #MAX_FRAME_PAYLOAD_LENGTH} bytes, framed into one reused buffer that
 * also carries the 101, pongs and the close frame: made for the 101, kept at its pooled 1 KiB, grown for a burst and
 * shrunk back once the burst is written, given back on close or once the connection is idle
 * ({@link #releaseIdleBuffers()}; releasing it whenever it empties would allocate per flush). What the layer below
 * does not take stays {@link #hasPendingOutput() pending}.
 * <p>
 * A close from the client is echoed and ends the stream; a protocol error sends a close with its code (1002, or
 * 1003 for a text frame [MQTT-6.0.0-1]) and ends it. MQTT bytes that came before either in the same read are
 * handed up first, and the end follows on the next read ({@link #hasBufferedInput()} says so meanwhile).
 */
final class WebSocketLayer implements SocketLayer, WebSocketFrameDecoder.Handler
{
    /** The largest frame payload the server sends: a longer write goes out as several frames. */
    static final int MAX_FRAME_PAYLOAD_LENGTH = 16 * 1024;
    /** Past this many bytes waiting for the wire, pings go unanswered (RFC 6455 5.5.3 allows answering fewer). */
    static final int MAX_PENDING_LENGTH = 2 * MAX_FRAME_PAYLOAD_LENGTH;
    private static final int MAX_HEADER_LENGTH = 10;
    private static final int HANDSHAKE = 0;
    private static final int OPEN = 1;
    private static final int ENDED = 2;

    private final SocketLayer below;
    private final UnadmittedHeap unadmitted;
    private final WebSocketFrameDecoder decoder = new WebSocketFrameDecoder(this);
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer wireView = new UnsafeBuffer(0, 0);
    private WebSocketHandshake handshake;
    private int state = HANDSHAKE;
    /** Frames and HTTP bytes for the wire; null until the first is written, released on close. */
    private ByteBuf wire;
    /** The stream has ended but MQTT bytes before the end were handed up first: the next read returns -1. */
    private boolean endPending;
    private boolean closeSent;
    private boolean closed;

    /**
     * @param below        the layer under WebSocket: TCP, TLS, or PROXY over TCP.
     * @param requiredPath the only path the Upgrade request may name, e.g. {@code /mqtt} (its query ignored; any
     *                     other gets 404); null accepts any path, as Mosquitto does.
     */
    WebSocketLayer(final SocketLayer below, final String requiredPath)
    {
        this(below, requiredPath, new UnadmittedHeap());
    }

    /**
     * @param unadmitted what the connection holds before admission, shared by its layers.
     */
    WebSocketLayer(final SocketLayer below, final String requiredPath, final UnadmittedHeap unadmitted)
    {
        this.below = below;
        this.unadmitted = unadmitted;
        this.handshake = new WebSocketHandshake(requiredPath, unadmitted);
    }

    public int read(final ByteBuf in) throws IOException
    {
        if (state == HANDSHAKE)
        {
            return readHandshake(in);
        }
        if (state == ENDED || endPending)
        {
            endPending = false;
            state = ENDED;
            return -1;
        }
        final int start = in.writerIndex();
        final int read = below.read(in);
        if (read <= 0)
        {
            return read;
        }
        return decode(in, start);
    }

    public int write(final ByteBuf out) throws IOException
    {
        if (state != OPEN || closeSent)
        {
            return 0; // nothing goes out before the 101 or after the close
        }
        int taken = 0;
        while (drain() && out.isReadable())
        {
            final int length = Math.min(out.readableBytes(), MAX_FRAME_PAYLOAD_LENGTH);
            appendHeader(WebSocketFrameDecoder.OPCODE_BINARY, length);
            wire.writeBytes(out, length);
            taken += length;
        }
        if (!wire().isReadable() && !out.isReadable() && wire.capacity() > Buffers.INITIAL_CAPACITY)
        {
            wire.capacity(Buffers.INITIAL_CAPACITY); // the burst is written: give back what it took
        }
        return taken;
    }

    public boolean flush() throws IOException
    {
        return drain();
    }

    public boolean hasPendingOutput()
    {
        return (null != wire && wire.isReadable()) || below.hasPendingOutput();
    }

    public boolean hasBufferedInput()
    {
        return endPending || (state != ENDED && below.hasBufferedInput());
    }

    public void releaseIdleBuffers()
    {
        if (null != wire && !wire.isReadable())
        {
            wire.release(); // written, and the connection idle: an idle connection holds no pooled buffer
            wire = null;
        }
        below.releaseIdleBuffers();
    }

    public boolean holdsIdleBuffers()
    {
        return null != wire || below.holdsIdleBuffers();
    }

    /**
     * @return whether the layer holds its frame buffer (tests).
     */
    boolean holdsBuffer()
    {
        return null != wire;
    }

    public String peerIdentity()
    {
        return below.peerIdentity();
    }

    public boolean handshaking()
    {
        return below.handshaking(); // TLS under it (wss://)
    }

    public void admitted()
    {
        below.admitted(); // TLS under it (wss://)
    }

    public InetSocketAddress proxiedAddress()
    {
        return below.proxiedAddress();
    }

    public boolean addressKnown()
    {
        return below.addressKnown();
    }

    public UnadmittedHeap unadmittedHeap()
    {
        return unadmitted;
    }

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
     * Sends a close frame (1000) if the connection is open and none was sent, offers what is pending to the layer
     * below once, and closes it. Never blocks.
     */
    public void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        try
        {
            if (state == OPEN)
            {
                sendClose(WebSocketFrameDecoder.CLOSE_NORMAL);
            }
            drain();
        }
        catch (final IOException | OutOfMemoryError | RuntimeException ignore)
        {
            // best effort, the close frame too (no buffer for it when the pooled memory is spent, a TLS engine below
            // that throws): the socket closes anyway, and what the layers hold goes back
        }
        state = ENDED;
        below.close();
        if (null != wire)
        {
            wire.release();
            wire = null;
        }
        if (null != handshake)
        {
            handshake.release();
            handshake = null;
        }
    }

    /**
     * A ping: answered with a pong carrying its payload, unless too much already waits for the wire.
     */
    public void onPing(final DirectBuffer payload, final int length)
    {
        if (wire().readableBytes() <= MAX_PENDING_LENGTH)
        {
            appendHeader(WebSocketFrameDecoder.OPCODE_PONG, length);
            appendBytes(payload, length);
        }
    }

    /**
     * @return the close code decided so far, for tests: {@link WebSocketFrameDecoder#OPEN} while open.
     */
    int closeCode()
    {
        return decoder.closeCode();
    }

    /**
     * @return bytes framed here that the layer below has not taken yet.
     */
    int pendingLength()
    {
        return null == wire ? 0 : wire.readableBytes();
    }

    /**
     * @return whether the handshake is done and the stream has not ended.
     */
    boolean isOpen()
    {
        return state == OPEN;
    }

    /**
     * @return why the Upgrade request was refused, or null.
     */
    String refusal()
    {
        return null == handshake ? null : handshake.refusal();
    }

    private int readHandshake(final ByteBuf in) throws IOException
    {
        final int verdict = handshake.read(below);
        if (verdict == WebSocketHandshake.NEED_MORE)
        {
            return 0;
        }
        if (verdict == WebSocketHandshake.END_OF_STREAM)
        {
            state = ENDED;
            return -1;
        }
        final byte[] response = handshake.response();
        wire().writeBytes(response);
        if (verdict == WebSocketHandshake.REFUSED)
        {
            state = ENDED; // the refusal is written on the way out, by close()
            drain();
            return -1;
        }
        state = OPEN;
        final ByteBuf leftover = handshake.leftover();
        final int start = in.writerIndex();
        final int early = leftover.readableBytes();
        in.writeBytes(leftover); // frames the client sent right behind its request
        handshake.release();
        handshake = null;
        final int mqttBytes = early > 0 ? decode(in, start) : 0;
        drain();
        return mqttBytes;
    }

    /**
     * Unmasks the frames read at {@code [start, writerIndex)} in place, leaving their MQTT bytes from
     * {@code start}, and answers what they asked for (pongs, the close).
     */
    private int decode(final ByteBuf in, final int start) throws IOException
    {
        final int end = in.writerIndex();
        Buffers.view(inView, in, 0, end);
        final int mqttBytes = decoder.decode(inView, start, end);
        in.writerIndex(start + mqttBytes);
        final int closeCode = decoder.closeCode();
        if (closeCode != WebSocketFrameDecoder.OPEN)
        {
            sendClose(closeCode); // echoes the client's close, or says which rule it broke
            if (mqttBytes == 0)
            {
                state = ENDED;
                drain();
                return -1;
            }
            endPending = true;
        }
        if (null != wire && wire.isReadable())
        {
            drain();
        }
        return mqttBytes;
    }

    private void sendClose(final int code)
    {
        if (closeSent)
        {
            return;
        }
        closeSent = true;
        if (code == WebSocketFrameDecoder.CLOSE_NO_STATUS)
        {
            appendHeader(WebSocketFrameDecoder.OPCODE_CLOSE, 0);
            return;
        }
        appendHeader(WebSocketFrameDecoder.OPCODE_CLOSE, 2);
        wire.writeShort(code);
    }

    /**
     * Offers the framed bytes to the layer below until it stops taking them.
     *
     * @return true when nothing is left pending, here or below.
     */
    private boolean drain() throws IOException
    {
        if (below.hasPendingOutput() && !below.flush())
        {
            return false;
        }
        if (null != wire && wire.isReadable())
        {
            while (wire.isReadable() && below.write(wire) > 0)
            {
                // the layer below took some: offer the rest
            }
            if (wire.isReadable())
            {
                return false;
            }
            wire.clear();
        }
        return !below.hasPendingOutput();
    }

    /**
     * Appends a server frame's header: FIN, the opcode and the length in its shortest form; servers never mask
     * (RFC 6455 5.1).
     */
    private void appendHeader(final int opcode, final int length)
    {
        final ByteBuf wire = wire();
        wire.ensureWritable(MAX_HEADER_LENGTH + length);
        wire.writeByte(0x80 | opcode);
        if (length < 126)
        {
            wire.writeByte(length);
        }
        else if (length <= 0xFFFF)
        {
            wire.writeByte(126);
            wire.writeShort(length);
        }
        else
        {
            wire.writeByte(127);
            wire.writeLong(length);
        }
    }

    private void appendBytes(final DirectBuffer source, final int length)
    {
        final int index = wire.writerIndex();
        Buffers.view(wireView, wire, index, length);
        wireView.putBytes(0, source, 0, length);
        wire.writerIndex(index + length);
    }

    private ByteBuf wire()
    {
        if (null == wire)
        {
            wire = Buffers.allocate();
        }
        return wire;
    }
}
