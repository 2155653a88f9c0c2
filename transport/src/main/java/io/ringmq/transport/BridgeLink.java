package io.ringmq.transport;

import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import io.ringmq.protocol.ConnectEncoder;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.TimeUnit;

/**
 * One MQTT client connection of a {@link Bridge}, on a blocking socket: to the remote broker, or to this broker's
 * bridge listener. One thread reads it ({@link #read}); any thread writes whole packets to it, one at a time (the
 * write lock), into a buffered stream that its writer flushes at the end of what it had to send ({@link #flush}),
 * so a burst goes out in few system calls. Keep-alive: {@link #upkeep} sends PINGREQ when nothing was sent for three
 * quarters of the keep-alive, and fails the link when nothing came for one and a half.
 */
final class BridgeLink implements AutoCloseable
{
    /** How long a read waits before the reader looks at the keep-alive. */
    static final int READ_TICK_MS = 500;

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
    private volatile boolean closed;

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

    void connect(final ConnectEncoder connect) throws IOException
    {
        synchronized (out)
        {
            final int length = connect.encode(scratch, 0);
            write(length);
        }
    }

    void subscribe(final SubscribeEncoder subscribe) throws IOException
    {
        synchronized (out)
        {
            write(subscribe.encode(scratch, 0));
        }
    }

    /**
     * Writes a PUBLISH (not flushed).
     */
    void publish(final PublishEncoder publish) throws IOException
    {
        synchronized (out)
        {
            scratch.checkLimit(publish.encodedLength());
            write(publish.encode(scratch, 0));
        }
    }

    /**
     * Writes an acknowledgement (not flushed).
     */
    void ack(final int packetType, final int packetId) throws IOException
    {
        synchronized (out)
        {
            write(AckEncoder.encode(scratch, 0, packetType, packetId));
        }
    }

    /**
     * Writes a 5.0 DISCONNECT with the reason code (a 3.1.1 one without) and flushes; errors are ignored (closing).
     */
    void disconnect(final int reasonCode)
    {
        try
        {
            synchronized (out)
            {
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
                out.flush();
            }
        }
        catch (final IOException ex)
        {
            // closing anyway
        }
    }

    private void write(final int length) throws IOException
    {
        out.write(scratch.byteArray(), 0, length);
        lastWriteNs = System.nanoTime();
    }

    void flush() throws IOException
    {
        synchronized (out)
        {
            out.flush();
        }
    }

    /**
     * The keep-alive, from the reader's thread between reads.
     *
     * @throws IOException when the peer has been silent for one and a half keep-alives.
     */
    void upkeep(final long nowNs) throws IOException
    {
        if (nowNs - lastReadNs > keepAliveNs + keepAliveNs / 2)
        {
            throw new IOException(label + ": nothing from the peer for " +
                TimeUnit.NANOSECONDS.toSeconds(nowNs - lastReadNs) + " s (keep-alive)");
        }
        final long half = keepAliveNs / 2;
        if ((nowNs - lastWriteNs > keepAliveNs - keepAliveNs / 4 || nowNs - lastReadNs > half) &&
            nowNs - lastPingNs > half)
        {
            // nothing sent for a while (the peer would end the connection), or nothing heard: ask for an answer
            lastPingNs = nowNs;
            synchronized (out)
            {
                write(PingCodec.encode(scratch, 0, PacketType.PINGREQ));
                out.flush();
            }
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
