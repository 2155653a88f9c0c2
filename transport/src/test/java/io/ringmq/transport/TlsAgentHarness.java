package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * Plays an I/O agent's part for one {@link TlsSocketLayer} over a real loopback socket, on its own thread: select,
 * read until the layer has no buffered input, write what it owes, flush pending output, wait for writability while
 * output is pending. It is woken only by the selector and by the layer's task-done callback (the selector's
 * timeout is longer than any test), so a layer that forgets to ask for a read or a flush stalls the test. It
 * echoes what it reads when asked to.
 */
final class TlsAgentHarness implements AutoCloseable
{
    private static final long SELECT_MS = 60_000;

    private final TlsContext context;
    private final Executor executor;
    private final boolean echo;
    private final ServerSocketChannel server;
    private final Selector selector;
    private final Thread thread;
    private final ByteBuf in;
    private final ByteBuf out = Unpooled.buffer(1024);
    private final ByteArrayOutputStream received = new ByteArrayOutputStream();
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    final AtomicInteger taskWakes = new AtomicInteger();
    volatile TlsSocketLayer layer;
    volatile boolean ended;
    volatile int buffersHeld = -1;
    volatile String identity;
    volatile String protocol;
    volatile Throwable error;
    private volatile boolean stop;
    private SelectionKey key;

    /**
     * @param inCapacity the room the agent gives each read (the layer must hold what does not fit).
     */
    TlsAgentHarness(final TlsContext context, final Executor executor, final int inCapacity, final boolean echo)
        throws IOException
    {
        this.context = context;
        this.executor = executor;
        this.echo = echo;
        this.in = Unpooled.directBuffer(inCapacity, inCapacity);
        server = ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        server.configureBlocking(false);
        selector = Selector.open();
        server.register(selector, SelectionKey.OP_ACCEPT);
        thread = new Thread(this::run, "tls-test-agent");
        thread.setDaemon(true);
        thread.start();
    }

    int port()
    {
        return ((InetSocketAddress)server.socket().getLocalSocketAddress()).getPort();
    }

    /**
     * @return every MQTT byte the layer handed on so far.
     */
    byte[] received()
    {
        synchronized (received)
        {
            return received.toByteArray();
        }
    }

    /**
     * Has the agent thread send bytes to the client.
     */
    void send(final byte[] bytes)
    {
        command(() -> out.writeBytes(bytes));
    }

    /**
     * Has the agent thread close the layer (close_notify).
     */
    void closeLayer()
    {
        command(this::end);
    }

    static void await(final BooleanSupplier condition, final String what) throws InterruptedException
    {
        final long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > deadlineNs)
            {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(5); // polling a condition, bounded by the deadline
        }
    }

    public void close() throws IOException
    {
        stop = true;
        selector.wakeup();
        try
        {
            thread.join(10_000);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }

    private void command(final Runnable command)
    {
        commands.add(command);
        selector.wakeup();
    }

    private void run()
    {
        try
        {
            while (!stop)
            {
                selector.select(SELECT_MS);
                for (final SelectionKey selected : selector.selectedKeys())
                {
                    if (selected.isValid() && selected.isAcceptable())
                    {
                        accept();
                    }
                }
                selector.selectedKeys().clear();
                Runnable command;
                while (null != (command = commands.poll()))
                {
                    command.run();
                }
                if (null != layer && !ended)
                {
                    step();
                }
            }
        }
        catch (final Throwable ex)
        {
            error = ex;
        }
        finally
        {
            if (null != layer && !ended)
            {
                end();
            }
            try
            {
                selector.close();
                server.close();
            }
            catch (final IOException ignore)
            {
                // closing a test harness
            }
            in.release();
            out.release();
        }
    }

    private void accept() throws IOException
    {
        final SocketChannel channel = server.accept();
        if (null == channel)
        {
            return;
        }
        if (null != layer)
        {
            channel.close(); // one connection per harness
            return;
        }
        channel.configureBlocking(false);
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        key = channel.register(selector, SelectionKey.OP_READ);
        layer = new TlsSocketLayer(new TcpSocketLayer(channel), context, executor, () ->
        {
            taskWakes.incrementAndGet();
            selector.wakeup();
        });
    }

    private void step()
    {
        final TlsSocketLayer layer = this.layer;
        int reads = 0;
        do
        {
            int read;
            try
            {
                read = layer.read(in);
            }
            catch (final IOException ex)
            {
                read = -1;
            }
            if (read < 0)
            {
                end();
                return;
            }
            if (in.isReadable())
            {
                final byte[] chunk = new byte[in.readableBytes()];
                in.getBytes(in.readerIndex(), chunk);
                synchronized (received)
                {
                    received.write(chunk, 0, chunk.length);
                }
                if (echo)
                {
                    out.writeBytes(in);
                }
                in.clear();
            }
        }
        while (layer.hasBufferedInput() && ++reads < 100_000);
        if (null == protocol && layer.established())
        {
            identity = layer.peerIdentity();
            protocol = layer.protocol();
        }
        try
        {
            if (out.isReadable())
            {
                layer.write(out);
                out.discardReadBytes();
            }
            if (layer.hasPendingOutput())
            {
                layer.flush();
            }
        }
        catch (final IOException ex)
        {
            end();
            return;
        }
        final boolean wantsWrite = layer.hasPendingOutput() || (out.isReadable() && layer.established());
        key.interestOps(SelectionKey.OP_READ | (wantsWrite ? SelectionKey.OP_WRITE : 0));
        buffersHeld = layer.buffersHeld();
    }

    private void end()
    {
        if (ended || null == layer)
        {
            return;
        }
        layer.close();
        buffersHeld = layer.buffersHeld();
        ended = true; // last: a test that sees it sees the rest
    }
}
