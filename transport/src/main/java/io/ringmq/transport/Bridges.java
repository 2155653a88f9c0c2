package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The broker's bridges ({@link Bridge}) and their listener: a plain MQTT listener on an ephemeral loopback port that
 * admits only the bridges' own sockets (their local ports on 127.0.0.1, registered before each connects) and only
 * CONNECTs with the bridges' password (random per start, {@link Listener#bridgeSecret}), which it marks as the
 * bridges', so the auth stage admits them as
 * {@link io.ringmq.pipeline.AccessRules#BRIDGE_USER}. Everything a bridge needs from files (its TLS material) is read
 * before anything starts: a bad file stops the broker's start.
 */
final class Bridges implements AutoCloseable
{
    private static final System.Logger LOG = System.getLogger(Bridges.class.getName());

    private final Listener listener;
    private final List<Bridge> bridges;

    private Bridges(final Listener listener, final List<Bridge> bridges)
    {
        this.listener = listener;
        this.bridges = bridges;
    }

    /**
     * Starts the context's bridges on I/O agent 0's acceptor.
     *
     * @param wake wakes I/O agent 0, which takes the listener at its next duty cycle.
     * @return them, or null when there are none (or in {@code invoker} threading, where no thread would serve them).
     * @throws IllegalArgumentException when a bridge's TLS files cannot be used.
     */
    static Bridges start(final BrokerContext context, final IoAgent agent, final Runnable wake) throws IOException
    {
        if (context.bridges().isEmpty())
        {
            return null;
        }
        if (context.threads().threading() == BrokerContext.Threading.INVOKER)
        {
            LOG.log(System.Logger.Level.WARNING, "bridges need the broker's threads: none started in invoker mode");
            return null;
        }
        final List<SSLSocketFactory> factories = new ArrayList<>();
        for (final BridgeSettings settings : context.bridges())
        {
            factories.add(settings.isTls() ? tls(settings) : null); // every file read before anything starts
        }
        final Listener listener = Listener.bindAll(List.of(new ListenerSettings(0, "127.0.0.1").conclude()), 16,
            null)[0];
        final Set<Integer> ownPorts = ConcurrentHashMap.newKeySet();
        // a local process cannot get in as a bridge: it would need one of their ports on 127.0.0.1, and this password
        final byte[] secret = new byte[32];
        new java.security.SecureRandom().nextBytes(secret);
        final String password = java.util.HexFormat.of().formatHex(secret);
        listener.bridgeSecret = password.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        listener.admitOnly(ownPorts::contains);
        agent.addListener(listener);
        wake.run();
        final List<Bridge> bridges = new ArrayList<>();
        for (int i = 0; i < context.bridges().size(); i++)
        {
            final Bridge bridge = new Bridge(context.bridges().get(i), listener.port, ownPorts, password,
                context.limits().maxPacketSize(), factories.get(i));
            bridges.add(bridge);
            bridge.start();
        }
        return new Bridges(listener, bridges);
    }

    /**
     * @return the TLS client of a bridge: the remote's certificate checked against its CA file or directory, and
     * the bridge's own certificate when it has one.
     */
    static SSLSocketFactory tls(final BridgeSettings settings)
    {
        final String what = "bridge " + settings.name();
        try
        {
            final List<X509Certificate> cas = new ArrayList<>();
            if (null != settings.caFile())
            {
                cas.addAll(PemFiles.certificates("bridge_cafile", Path.of(settings.caFile())));
            }
            if (null != settings.caPath())
            {
                cas.addAll(TlsContextFactory.caPath(Path.of(settings.caPath()), warning ->
                    LOG.log(System.Logger.Level.WARNING, what + ": " + warning)));
            }
            final TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            trust.init(TlsContextFactory.trustStore(cas));
            final KeyManagerFactory keys = null == settings.certFile() ? null : TlsContextFactory.keyManagers(
                PemFiles.privateKey("bridge_keyfile", Path.of(settings.keyFile())),
                PemFiles.certificates("bridge_certfile", Path.of(settings.certFile())));
            final SSLContext context = SSLContext.getInstance("TLS");
            context.init(null == keys ? null : keys.getKeyManagers(), trust.getTrustManagers(), null);
            return context.getSocketFactory();
        }
        catch (final GeneralSecurityException | IOException ex)
        {
            throw new IllegalArgumentException(what + ": its TLS files cannot be used (" + ex.getMessage() + ")", ex);
        }
    }

    /**
     * @return the bridges, in file order.
     */
    List<Bridge> bridges()
    {
        return bridges;
    }

    /**
     * Stops every bridge (each closes its connections), then the listener.
     */
    @Override
    public void close()
    {
        for (final Bridge bridge : bridges)
        {
            bridge.close();
        }
        Listener.closeAll(new Listener[]{listener});
    }
}
