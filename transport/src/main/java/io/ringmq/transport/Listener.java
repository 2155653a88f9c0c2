package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;
import org.agrona.CloseHelper;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A bound listening socket and what its connections need from it: its {@link ListenerSettings}, the byte layers
 * its sockets get ({@link SocketLayers}), and the count against its own connection limit. Made by the broker before
 * any thread starts; its socket is accepted on by I/O agent 0's {@link Acceptor}.
 */
final class Listener implements AutoCloseable
{
    /**
     * What it admits by; a reload that keeps its socket may give it new ones ({@link ListenerSettings#sameSocket}).
     */
    volatile ListenerSettings settings;
    final ServerSocketChannel server;
    final int port;
    /**
     * The byte layers of the sockets it accepts from now on; a reload that keeps its address but changes its
     * protocol, PROXY protocol or TLS settings gives it new ones (the connections it holds keep theirs).
     */
    volatile SocketLayers layers;
    private static final java.net.InetAddress LOOPBACK = loopback();
    /** Connections held through this listener, against its {@code max_connections}. */
    final AtomicInteger connectionCount = new AtomicInteger();
    /**
     * On the loopback listener of the broker's own bridges ({@link Bridges}): the password their CONNECTs carry, random
     * per start; a CONNECT with it is a bridge's ({@link io.ringmq.pipeline.IngressEvent#bridge}), any other closes its
     * connection. Null on every other listener. Set before the listener is handed to its acceptor.
     */
    volatile byte[] bridgeSecret;
    /** When set, only sockets from these loopback ports are admitted (the warm-up's own); null: any. */
    private volatile java.util.function.IntPredicate peerPorts;

    private Listener(final ListenerSettings settings, final ServerSocketChannel server, final SocketLayers layers)
        throws IOException
    {
        this.settings = settings;
        this.server = server;
        this.port = ((InetSocketAddress)server.getLocalAddress()).getPort();
        this.layers = layers;
    }

    /**
     * Admits only sockets whose peer is a loopback address and a port {@code peerPorts} accepts: the warm-up's
     * listener takes its own connections and no one else's (a local process could otherwise get in without
     * credentials while the broker starts).
     */
    void admitOnly(final java.util.function.IntPredicate peerPorts)
    {
        this.peerPorts = peerPorts;
    }

    /**
     * @return whether a socket accepted on this listener may be admitted at all.
     */
    boolean admits(final java.nio.channels.SocketChannel channel)
    {
        final java.util.function.IntPredicate only = peerPorts;
        if (null == only)
        {
            return true;
        }
        try
        {
            // 127.0.0.1 itself, where the broker's own sockets are bound: another process could take the same port
            // on 127.0.0.2
            final InetSocketAddress peer = (InetSocketAddress)channel.getRemoteAddress();
            return null != peer && LOOPBACK.equals(peer.getAddress()) && only.test(peer.getPort());
        }
        catch (final IOException | RuntimeException ex)
        {
            return false;
        }
    }

    private static java.net.InetAddress loopback()
    {
        try
        {
            return java.net.InetAddress.getByAddress(new byte[]{127, 0, 0, 1});
        }
        catch (final java.net.UnknownHostException ex)
        {
            throw new IllegalStateException(ex); // four bytes are always an address
        }
    }

    /**
     * @return whether a CONNECT on the bridges' listener carries their password (and no user name).
     */
    static boolean isBridge(final byte[] secret, final io.ringmq.protocol.ConnectFlyweight connect)
    {
        return !connect.hasUserName() && connect.hasPassword() &&
            java.security.MessageDigest.isEqual(secret, connect.password().toByteArray());
    }

    /**
     * A plain MQTT listener over a socket already bound (stepped tests).
     */
    static Listener[] wrap(final ServerSocketChannel server) throws IOException
    {
        return wrap(server, new ListenerSettings(0, null));
    }

    /**
     * A listener of those settings (no TLS) over a socket already bound (stepped tests).
     */
    static Listener[] wrap(final ServerSocketChannel server, final ListenerSettings settings) throws IOException
    {
        return new Listener[]{new Listener(settings, server, SocketLayers.of(settings, null))};
    }

    /**
     * Prepares (TLS material first: a bad file refuses the start before any port is taken) and binds every
     * listener; on a failure nothing stays open.
     *
     * @param tlsTasks the broker's TLS handshake pool, shared by its TLS listeners.
     * @throws IllegalArgumentException when a listener's files cannot be used (exit code 2).
     * @throws IOException              when a port cannot be bound.
     */
    static Listener[] bindAll(final List<ListenerSettings> settings, final int backlog,
        final TlsTaskExecutor tlsTasks) throws IOException
    {
        final Listener[] listeners = new Listener[settings.size()];
        try
        {
            final SocketLayers[] layers = new SocketLayers[settings.size()];
            for (int i = 0; i < layers.length; i++)
            {
                layers[i] = SocketLayers.of(settings.get(i), tlsTasks);
            }
            for (int i = 0; i < listeners.length; i++)
            {
                listeners[i] = new Listener(settings.get(i), bind(settings.get(i), backlog), layers[i]);
            }
            return listeners;
        }
        catch (final IOException | RuntimeException ex)
        {
            closeAll(listeners);
            throw ex;
        }
    }

    private static ServerSocketChannel bind(final ListenerSettings settings, final int backlog) throws IOException
    {
        final String address = null == settings.bindAddress() ? "0.0.0.0" : settings.bindAddress();
        final ServerSocketChannel server = ServerSocketChannel.open();
        try
        {
            server.bind(new InetSocketAddress(address, settings.port()), backlog);
            server.configureBlocking(false);
            return server;
        }
        catch (final IOException ex)
        {
            CloseHelper.quietClose(server);
            throw new IOException("cannot listen on " + address + ":" + settings.port() + ": " + ex.getMessage() +
                (ex instanceof BindException ? " (is another broker running on that port?)" : ""), ex);
        }
    }

    /**
     * @return whether the listener's own limit lets one more connection in; counted when it does.
     */
    boolean tryAcquire()
    {
        // counted whatever the limit: a reload may set one, and the connections made before count against it
        final int max = settings.maxConnections();
        if (connectionCount.incrementAndGet() > max && max != ListenerSettings.UNLIMITED)
        {
            connectionCount.decrementAndGet();
            return false;
        }
        return true;
    }

    /**
     * Gives back what {@link #tryAcquire()} took.
     */
    void release()
    {
        connectionCount.decrementAndGet();
    }

    /**
     * Stops accepting.
     */
    public void close()
    {
        CloseHelper.quietClose(server);
    }

    static void closeAll(final Listener[] listeners)
    {
        for (final Listener listener : listeners)
        {
            if (null != listener)
            {
                listener.close();
            }
        }
    }

    public String toString()
    {
        return settings.describe(port);
    }
}
