package io.ringmq.loadtest;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A test relay: accepts on its server socket (a TLS one terminates TLS, as a same-host TLS terminator would) and
 * pipes each connection to {@code upstreamPort} on loopback, both ways, in pieces of at most {@code chunk} bytes (1
 * splits every TLS record across many reads). Two threads per connection; tests only.
 */
final class ByteRelay implements AutoCloseable
{
    private final ServerSocket server;
    private final int upstreamPort;
    private final int chunk;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    ByteRelay(final ServerSocket server, final int upstreamPort, final int chunk)
    {
        this.server = server;
        this.upstreamPort = upstreamPort;
        this.chunk = chunk;
        final Thread acceptor = new Thread(this::accept, "relay-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    static ByteRelay plain(final int upstreamPort, final int chunk) throws IOException
    {
        return new ByteRelay(new ServerSocket(0, 200, InetAddress.getLoopbackAddress()), upstreamPort, chunk);
    }

    int port()
    {
        return server.getLocalPort();
    }

    private void accept()
    {
        while (!closed)
        {
            try
            {
                final Socket downstream = server.accept();
                downstream.setTcpNoDelay(true);
                final Socket upstream = new Socket(InetAddress.getLoopbackAddress(), upstreamPort);
                upstream.setTcpNoDelay(true);
                sockets.add(downstream);
                sockets.add(upstream);
                pump(downstream, upstream);
                pump(upstream, downstream);
            }
            catch (final IOException ex)
            {
                if (closed)
                {
                    return;
                }
            }
        }
    }

    private void pump(final Socket from, final Socket to)
    {
        final Thread thread = new Thread(() ->
        {
            final byte[] buffer = new byte[chunk];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream())
            {
                int read;
                while ((read = in.read(buffer)) >= 0)
                {
                    out.write(buffer, 0, read);
                    out.flush();
                }
            }
            catch (final IOException ignore)
            {
                // one side ended (a failed handshake included): end the other
            }
            finally
            {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "relay-pump");
        thread.setDaemon(true);
        thread.start();
    }

    private static void closeQuietly(final Socket socket)
    {
        try
        {
            socket.close();
        }
        catch (final IOException ignore)
        {
            // closing anyway
        }
    }

    public void close() throws IOException
    {
        closed = true;
        server.close();
        for (final Socket socket : sockets)
        {
            closeQuietly(socket);
        }
    }
}
