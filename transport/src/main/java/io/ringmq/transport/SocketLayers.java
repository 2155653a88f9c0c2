package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;

import java.nio.channels.SocketChannel;

/**
 * Builds the byte layers of one listener's sockets, bottom up: TCP, then the PROXY protocol header when a load
 * balancer in front sends one, then TLS, then WebSocket framing. What every socket of the listener shares (the TLS
 * context, read once from the PEM files) is made once, here.
 */
final class SocketLayers
{
    private final ListenerSettings settings;

    private SocketLayers(final ListenerSettings settings)
    {
        this.settings = settings;
    }

    /**
     * @throws IllegalArgumentException naming the file and what is wrong when the listener's files cannot be used.
     */
    static SocketLayers of(final ListenerSettings settings)
    {
        if (settings.isTls() || settings.protocol() != ListenerSettings.Protocol.MQTT ||
            settings.proxyProtocol() != ListenerSettings.ProxyProtocol.NONE)
        {
            throw new IllegalArgumentException("listener " + settings + ": not available in this build");
        }
        return new SocketLayers(settings);
    }

    /**
     * @param readyAgain called (from another thread) when a layer finished work off the agent's thread (a TLS
     *                   handshake step) and the connection should be read and flushed again.
     * @return the layers of a new socket.
     */
    SocketLayer open(final SocketChannel channel, final Runnable readyAgain)
    {
        return new TcpSocketLayer(channel);
    }

    /**
     * Releases what the listener's sockets shared.
     */
    void close()
    {
    }

    ListenerSettings settings()
    {
        return settings;
    }
}
