package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;

import java.nio.channels.SocketChannel;

/**
 * Builds the byte layers of one listener's sockets, bottom up: TCP, then the PROXY protocol header when a load
 * balancer in front sends one, then TLS, then WebSocket framing. What every socket of the listener shares (the TLS
 * context, read from the PEM files) is made once, here, and again at a reload ({@link #freshTls}, {@link #tls}):
 * a certificate, key or CRL renewed at the same path is used by the handshakes that start after it.
 */
final class SocketLayers
{
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");

    private final ListenerSettings settings;
    /** Replaced by a reload's thread; read once per accepted socket by the accepting agent. */
    private volatile TlsContext tls;
    private final TlsTaskExecutor tlsTasks;
    private final ProxyProtocolLayer.Versions proxy;
    private final boolean webSocket;

    private SocketLayers(final ListenerSettings settings, final TlsContext tls, final TlsTaskExecutor tlsTasks)
    {
        this.settings = settings;
        this.tls = tls;
        this.tlsTasks = tlsTasks;
        this.proxy = settings.proxyProtocol() == ListenerSettings.ProxyProtocol.NONE ? null :
            ProxyProtocolLayer.Versions.valueOf(settings.proxyProtocol().name());
        this.webSocket = settings.protocol() == ListenerSettings.Protocol.WEBSOCKETS;
    }

    /**
     * @param tlsTasks where TLS handshakes run their delegated tasks (shared by the broker's listeners); only used
     *                 when the listener speaks TLS.
     * @throws IllegalArgumentException naming the file and what is wrong when the listener's files cannot be used.
     */
    static SocketLayers of(final ListenerSettings settings, final TlsTaskExecutor tlsTasks)
    {
        if (!settings.isTls())
        {
            return new SocketLayers(settings, null, null);
        }
        return new SocketLayers(settings, tlsOf(settings), tlsTasks);
    }

    private static TlsContext tlsOf(final ListenerSettings settings)
    {
        try
        {
            return TlsContextFactory.create(settings,
                warning -> LOG.log(System.Logger.Level.WARNING, "listener " + settings + ": " + warning));
        }
        catch (final IllegalArgumentException ex)
        {
            throw new IllegalArgumentException("listener " + settings + ": " + ex.getMessage(), ex);
        }
    }

    /**
     * A reload: the listener's TLS context read again from its files, not yet in use.
     *
     * @return null for a listener without TLS.
     * @throws IllegalArgumentException naming the file and what is wrong (the reload then changes nothing).
     */
    TlsContext freshTls()
    {
        return null == tls ? null : tlsOf(settings);
    }

    /**
     * A reload: handshakes that start from now on use {@code fresh}; connections made already keep theirs.
     */
    void tls(final TlsContext fresh)
    {
        this.tls = fresh;
    }

    /**
     * @param readyAgain called (from another thread) when a layer finished work off the agent's thread (a TLS
     *                   handshake step) and the connection should be read and flushed again.
     * @param addressKey the client's limited address ({@link InboundConnects#limitedAddressKey}), as the socket's
     *                   is known; behind a PROXY listener the header's is given to the layers' {@link UnadmittedHeap}
     *                   once read.
     * @return the layers of a new socket.
     */
    SocketLayer open(final SocketChannel channel, final Runnable readyAgain, final long addressKey)
    {
        SocketLayer layer = new TcpSocketLayer(channel);
        final TlsContext context = tls;
        if (null == proxy && null == context && !webSocket)
        {
            return layer; // plain MQTT: nothing held on the heap before admission
        }
        final UnadmittedHeap unadmitted = new UnadmittedHeap(); // one for all the connection's layers
        unadmitted.address(addressKey);
        if (null != proxy)
        {
            // the proxy's header comes first on the wire, under TLS
            layer = new ProxyProtocolLayer(layer, proxy, unadmitted);
        }
        if (null != context)
        {
            layer = new TlsSocketLayer(layer, context, tlsTasks, readyAgain, unadmitted);
        }
        if (webSocket)
        {
            layer = new WebSocketLayer(layer, settings.websocketPath(), unadmitted);
        }
        return layer;
    }

    /**
     * @return whether the listener's clients are known by their TLS certificate (its CN, or its whole subject) instead
     * of a CONNECT user name.
     */
    boolean useIdentityAsUsername()
    {
        return null != tls && tls.useIdentityAsUsername();
    }

    /**
     * @return whether its sockets start with a PROXY protocol header.
     */
    boolean proxied()
    {
        return null != proxy;
    }

    ListenerSettings settings()
    {
        return settings;
    }
}
