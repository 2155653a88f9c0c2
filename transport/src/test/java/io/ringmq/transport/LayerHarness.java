package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A loopback socket pair for testing a {@link SocketLayer}: the server end non-blocking, driven by {@link #pump}
 * as an I/O agent drives it (read until nothing is buffered, flush what is pending, wait in the selector), and a
 * plain blocking client end (with a read timeout) that a test writes hand-made bytes to, or a real client that
 * {@link #listen listens} and is {@link #accept accepted}.
 */
final class LayerHarness implements AutoCloseable
{
    static final long TIMEOUT_MS = 5_000;

    final SocketChannel server;
    final Socket client;
    final ByteBuf in = Unpooled.buffer(1024);
    private final Selector selector;
    private boolean ended;

    private LayerHarness(final SocketChannel server, final Socket client) throws IOException
    {
        this.server = server;
        this.client = client;
        server.configureBlocking(false);
        server.socket().setTcpNoDelay(true);
        selector = Selector.open();
        server.register(selector, SelectionKey.OP_READ);
    }

    /**
     * @return a connected pair: a raw client socket and the server end it reached.
     */
    static LayerHarness open() throws IOException
    {
        try (ServerSocketChannel listener = listen())
        {
            final Socket client = new Socket();
            client.connect(listener.getLocalAddress(), (int)TIMEOUT_MS);
            client.setTcpNoDelay(true);
            client.setSoTimeout((int)TIMEOUT_MS);
            return new LayerHarness(accept(listener), client);
        }
    }

    /**
     * @return the server end of a connection a real client makes to {@code listener}.
     */
    static LayerHarness accepted(final ServerSocketChannel listener) throws IOException
    {
        return new LayerHarness(accept(listener), null);
    }

    static ServerSocketChannel listen() throws IOException
    {
        final ServerSocketChannel listener = ServerSocketChannel.open();
        listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        return listener;
    }

    private static SocketChannel accept(final ServerSocketChannel listener) throws IOException
    {
        listener.configureBlocking(false);
        final long deadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        while (System.nanoTime() < deadlineNs)
        {
            final SocketChannel channel = listener.accept();
            if (null != channel)
            {
                return channel;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
        throw new IOException("no connection within " + TIMEOUT_MS + " ms");
    }

    TcpSocketLayer tcp()
    {
        return new TcpSocketLayer(server);
    }

    /**
     * Plays the I/O agent until {@code done} holds or the layer ends the stream (then goes on waiting for
     * {@code done} alone, which may be about the client), or the timeout.
     *
     * @return whether {@code done} held.
     */
    boolean pump(final SocketLayer layer, final BooleanSupplier done) throws IOException
    {
        final long deadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        while (!done.getAsBoolean())
        {
            if (System.nanoTime() > deadlineNs)
            {
                return false;
            }
            if (ended)
            {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
                continue;
            }
            in.ensureWritable(1024);
            final int read = layer.read(in);
            if (layer.hasPendingOutput())
            {
                layer.flush();
            }
            if (read < 0)
            {
                ended = true;
            }
            else if (read == 0 && !layer.hasBufferedInput())
            {
                selector.selectNow();
                selector.selectedKeys().clear();
                selector.select(10);
                selector.selectedKeys().clear();
            }
        }
        return true;
    }

    /**
     * Pumps until {@code count} MQTT bytes were read or the stream ended.
     */
    boolean pumpBytes(final SocketLayer layer, final int count) throws IOException
    {
        return pump(layer, () -> in.readableBytes() >= count || ended);
    }

    /**
     * Pumps until the layer ends the stream.
     */
    boolean pumpToEnd(final SocketLayer layer) throws IOException
    {
        return pump(layer, () -> ended);
    }

    boolean ended()
    {
        return ended;
    }

    /**
     * Writes all of {@code bytes} through the layer, flushing what stays pending, as the agent would.
     */
    void writeAll(final SocketLayer layer, final byte[] bytes) throws IOException
    {
        final ByteBuf out = Unpooled.wrappedBuffer(bytes);
        final long deadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        while (out.isReadable() || layer.hasPendingOutput())
        {
            if (System.nanoTime() > deadlineNs)
            {
                throw new IOException("the layer did not take every byte in time");
            }
            if (out.isReadable())
            {
                layer.write(out);
            }
            if (layer.hasPendingOutput())
            {
                layer.flush();
            }
        }
    }

    byte[] mqttBytes()
    {
        final byte[] bytes = new byte[in.readableBytes()];
        in.getBytes(in.readerIndex(), bytes);
        return bytes;
    }

    void send(final byte[] bytes) throws IOException
    {
        client.getOutputStream().write(bytes);
        client.getOutputStream().flush();
    }

    /**
     * Sends from another thread, for more bytes than the socket buffers hold while the test pumps.
     */
    CompletableFuture<Void> sendAsync(final byte[] bytes)
    {
        return CompletableFuture.runAsync(() ->
        {
            try
            {
                send(bytes);
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException(ex);
            }
        });
    }

    /**
     * @return what the client receives, read with the harness's timeout.
     */
    InputStream clientIn() throws IOException
    {
        return client.getInputStream();
    }

    /**
     * @return the next {@code count} bytes the client received (the read timeout fails the test).
     */
    byte[] receive(final int count) throws IOException
    {
        return client.getInputStream().readNBytes(count);
    }

    /**
     * @return whether the client sees the end of the stream next.
     */
    boolean clientSeesEnd() throws IOException
    {
        try
        {
            return client.getInputStream().read() < 0;
        }
        catch (final java.net.SocketException ex)
        {
            return true; // reset: the server closed with bytes unread
        }
    }

    public void close() throws IOException
    {
        selector.close();
        server.close();
        if (null != client)
        {
            client.close();
        }
        in.release();
    }

    /**
     * A layer that hands up at most one byte per read: everything above it sees its input a byte at a time.
     */
    static final class OneByteLayer implements SocketLayer
    {
        private final SocketLayer below;
        private final ByteBuf one = Unpooled.buffer(1, 1);

        OneByteLayer(final SocketLayer below)
        {
            this.below = below;
        }

        public int read(final ByteBuf in) throws IOException
        {
            one.clear();
            final int read = below.read(one);
            if (read > 0)
            {
                in.writeBytes(one);
            }
            return read;
        }

        public int write(final ByteBuf out) throws IOException
        {
            return below.write(out);
        }

        public void close()
        {
            below.close();
        }
    }

    /**
     * A layer whose socket takes at most {@code chunk} bytes per write and nothing every other time: the layer
     * above must keep what is not taken pending.
     */
    static final class StingyLayer implements SocketLayer
    {
        private final SocketLayer below;
        private final int chunk;
        private boolean refuse;

        StingyLayer(final SocketLayer below, final int chunk)
        {
            this.below = below;
            this.chunk = chunk;
        }

        public int read(final ByteBuf in) throws IOException
        {
            return below.read(in);
        }

        public int write(final ByteBuf out) throws IOException
        {
            refuse = !refuse;
            if (refuse)
            {
                return 0;
            }
            final ByteBuf slice = out.readSlice(Math.min(chunk, out.readableBytes()));
            final int taken = slice.readableBytes();
            while (slice.isReadable())
            {
                below.write(slice);
            }
            return taken;
        }

        public void close()
        {
            below.close();
        }
    }
}
