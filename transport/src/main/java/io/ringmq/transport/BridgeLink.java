package io.ringmq.transport;

import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import io.ringmq.protocol.PacketEncoder;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One MQTT client connection of a {@link Bridge}, on a blocking socket: to the remote broker, or to this broker's
 * bridge listener. One thread reads it ({@link #read}); any thread writes whole packets to it, one at a time (the
 * write lock), into a buffered stream that its writer flushes at the end of what it had to send ({@link #flush}),
 * so a burst goes out in few system calls. Keep-alive: {@link #upkeep} sends PINGREQ when nothing was sent for three
 * quarters of the keep-alive (or nothing went either way for half), and fails the link when nothing at all answered
 * one within the keep-alive.
 * A blocking write has no timeout of its own: a peer that stops reading would hold the writer, and everyone waiting
 * for the write lock, for ever. {@link #upkeep} (from the reader's thread, which never takes the write lock to
 * look) closes the socket under a write that has not ended within the keep-alive, and the write fails.
 */
final class BridgeLink implements AutoCloseable
{
    /** How long a read waits before the reader looks at the keep-alive. */
    static final int READ_TICK_MS = 500;
    private static final int WRITE_CHUNK = 64 * 1024;

    final String label;
    /** The protocol level packets are decoded and encoded at: 4 or 5 (a private 3.1.1 bridge level is 4 here). */
    final int version;
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final PacketDecoder decoder = new PacketDecoder();
    private final int maxPacketLength;
    private byte[] inBytes = new byte[8_192];
    private final UnsafeBuffer inView = new UnsafeBuffer(inBytes);
    private int start;
    private int end;
    private final ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(1_024);
    private volatile long keepAliveNs;
    private volatile long lastReadNs = System.nanoTime();
    private volatile long lastWriteNs = System.nanoTime();
    private long lastPingNs = System.nanoTime();
    /** When the PINGREQ still unanswered by any packet was sent; 0: none is. */
    private volatile long pingSentNs;
    private volatile boolean closed;
    private final ReentrantLock writeLock = new ReentrantLock();
    /** {@link System#nanoTime()} when the write in progress began, 0 while none is. */
    private volatile long writingSinceNs;

    /**
     * @param maxPacketLength the largest packet taken from the peer: a larger one fails the link.
     */
    BridgeLink(final String label, final Socket socket, final int version, final int keepAliveSeconds,
        final int maxPacketLength) throws IOException
    {
        this.label = label;
        this.socket = socket;
        this.version = version;
        this.maxPacketLength = maxPacketLength;
        this.keepAliveNs = TimeUnit.SECONDS.toNanos(keepAliveSeconds);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(READ_TICK_MS);
        this.in = socket.getInputStream();
        this.out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
    }

    /**
     * Reads until a whole packet is framed and decoded.
     *
     * @return the decoder, holding the packet; null when the read tick passed with nothing whole (keep-alive time).
     * @throws IOException when the peer closed, sent a malformed or oversized packet, or the socket failed.
     */
    PacketDecoder read() throws IOException
    {
        while (true)
        {
            if (end > start)
            {
                final int length = decoder.decode(inView, start, end - start, version, maxPacketLength);
                if (length > 0)
                {
                    start += length;
                    return decoder;
                }
                if (length != DecodeError.NEED_MORE)
                {
                    throw new IOException(label + ": malformed or oversized packet from the peer (" + length + ")");
                }
            }
            if (start > 0 && start == end)
            {
                start = 0;
                end = 0;
            }
            if (end == inBytes.length)
            {
                compactOrGrow();
            }
            final int read;
            try
            {
                read = in.read(inBytes, end, inBytes.length - end);
            }
            catch (final SocketTimeoutException ex)
            {
                return null;
            }
            if (read < 0)
            {
                throw new IOException(label + ": the peer closed the connection");
            }
            end += read;
            lastReadNs = System.nanoTime();
            pingSentNs = 0; // anything from the peer answers for it
        }
    }

    /**
     * @return whether the bytes read so far hold no further whole packet: the time to flush what was written.
     */
    boolean drained()
    {
        return end == start;
    }

    private void compactOrGrow() throws IOException
    {
        if (start > 0)
        {
            System.arraycopy(inBytes, start, inBytes, 0, end - start);
            end -= start;
            start = 0;
            return;
        }
        final long wanted = Math.max(decoder.frame().frameLength(), inBytes.length * 2L);
        if (wanted > maxPacketLength + 5L)
        {
            throw new IOException(label + ": a packet from the peer is larger than " + maxPacketLength + " bytes");
        }
        final byte[] larger = new byte[(int)Math.min(wanted, maxPacketLength + 5L)];
        System.arraycopy(inBytes, 0, larger, 0, end);
        inBytes = larger;
        inView.wrap(inBytes);
    }

    /**
     * Writes a whole packet (CONNECT, SUBSCRIBE, PUBLISH), not flushed.
     */
    void send(final PacketEncoder packet) throws IOException
    {
        writeLock.lock();
        try
        {
            scratch.checkLimit(packet.encodedLength());
            write(packet.encode(scratch, 0));
        }
        finally
        {
            writeLock.unlock();
        }
    }

    /**
     * Writes an acknowledgement (not flushed).
     */
    void ack(final int packetType, final int packetId) throws IOException
    {
        writeLock.lock();
        try
        {
            write(AckEncoder.encode(scratch, 0, packetType, packetId));
        }
        finally
        {
            writeLock.unlock();
        }
    }

    /**
     * The last words of an orderly close: a PUBLISH (the state 0, or null for none), then a DISCONNECT (5.0: with the
     * reason code), flushed; skipped when another write holds the link (a peer that stopped reading), and failures
     * ignored: the socket is closed next in any case.
     */
    void goodbye(final PublishEncoder last, final int reasonCode)
    {
        try
        {
            if (closed || !writeLock.tryLock(100, TimeUnit.MILLISECONDS))
            {
                return;
            }
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
            return;
        }
        try
        {
            if (null != last)
            {
                scratch.checkLimit(last.encodedLength());
                write(last.encode(scratch, 0));
            }
            scratch.putByte(0, (byte)0xE0);
            if (version == MqttVersion.V5 && reasonCode != 0)
            {
                scratch.putByte(1, (byte)1);
                scratch.putByte(2, (byte)reasonCode);
                write(3);
            }
            else
            {
                scratch.putByte(1, (byte)0);
                write(2);
            }
            flushLocked();
        }
        catch (final IOException ex)
        {
            // closing anyway
        }
        finally
        {
            writeLock.unlock();
        }
    }

    /**
     * Writes in pieces of at most {@link #WRITE_CHUNK} bytes, each marking progress: a large message to a slow but
     * live peer is a write that moves, not a stalled one ({@link #checkStall}).
     */
    private void write(final int length) throws IOException
    {
        try
        {
            for (int at = 0; at < length; at += WRITE_CHUNK)
            {
                writingSinceNs = System.nanoTime();
                out.write(scratch.byteArray(), at, Math.min(WRITE_CHUNK, length - at));
            }
        }
        finally
        {
            writingSinceNs = 0;
        }
        lastWriteNs = System.nanoTime();
    }

    void flush() throws IOException
    {
        writeLock.lock();
        try
        {
            flushLocked();
        }
        finally
        {
            writeLock.unlock();
        }
    }

    private void flushLocked() throws IOException
    {
        writingSinceNs = System.nanoTime();
        try
        {
            out.flush();
        }
        finally
        {
            writingSinceNs = 0;
        }
    }

    /**
     * The keep-alive, from the reader's thread between reads.
     *
     * @throws IOException when nothing answered a PINGREQ within the keep-alive, or a write has not moved.
     */
    void upkeep(final long nowNs) throws IOException
    {
        checkStall(nowNs);
        final long pinged = pingSentNs;
        if (pinged != 0 && nowNs - pinged > keepAliveNs)
        {
            // asked, and nothing at all came back for a whole keep-alive; while a long write holds the link no
            // PINGREQ goes out, and silence then is the peer reading, not a dead peer
            throw new IOException(label + ": no answer to a PINGREQ in " +
                TimeUnit.NANOSECONDS.toSeconds(nowNs - pinged) + " s (keep-alive)");
        }
        final long half = keepAliveNs / 2;
        if ((nowNs - lastWriteNs > keepAliveNs - keepAliveNs / 4 ||
            (nowNs - lastReadNs > half && nowNs - lastWriteNs > half)) && nowNs - lastPingNs > half &&
            writeLock.tryLock())
        {
            // nothing sent for a while (the peer would end the connection), or quiet both ways: ask for an answer.
            // Not while writing: the PINGREQ would wait behind what the peer has still to read, and a write that
            // stops moving is checkStall's; nor while a write holds the link (it is something sent)
            try
            {
                lastPingNs = nowNs;
                if (pingSentNs == 0)
                {
                    pingSentNs = nowNs; // before the write: its answer may come before the next line runs
                }
                write(PingCodec.encode(scratch, 0, PacketType.PINGREQ));
                flushLocked();
            }
            finally
            {
                writeLock.unlock();
            }
        }
    }

    /**
     * Closes the socket under a write that has not ended within the keep-alive (any thread, no lock taken): the
     * write fails, and with it the writer and the lock it holds.
     *
     * @throws IOException when it did.
     */
    void checkStall(final long nowNs) throws IOException
    {
        final long writing = writingSinceNs;
        if (writing != 0 && nowNs - writing > keepAliveNs)
        {
            close();
            throw new IOException(label + ": the peer has not read for " +
                TimeUnit.NANOSECONDS.toSeconds(nowNs - writing) + " s");
        }
    }

    /**
     * @param seconds the keep-alive in force: the server's (5.0 Server Keep Alive) when it set one.
     */
    void keepAliveSeconds(final int seconds)
    {
        if (seconds > 0)
        {
            keepAliveNs = TimeUnit.SECONDS.toNanos(seconds);
        }
    }

    boolean isClosed()
    {
        return closed;
    }

    @Override
    public void close()
    {
        closed = true;
        try
        {
            socket.close();
        }
        catch (final IOException ex)
        {
            // closed
        }
    }

    @Override
    public String toString()
    {
        return label;
    }
}
