package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Review of fb1554c (a reload reads a kept TLS listener's files again; reload() keeps its listeners): wss, a reload
 * that fails with listeners added and removed, SIGHUP with a config file, a server certificate renewed, a handshake
 * under way at the swap, a reload storm beside TLS connects, and TLS session resumption after a revocation.
 */
@Timeout(120)
class TlsReloadReviewTest
{
    @TempDir
    Path dir;
    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    static Path tls(final String name)
    {
        return ListenersTest.tls(name);
    }

    private static MqttConnectOptions ssl(final SSLContext context)
    {
        final MqttConnectOptions options = Paho.options(true);
        options.setSocketFactory(context.getSocketFactory());
        return options;
    }

    private static BrokerContext context(final ListenerSettings... extra)
    {
        final BrokerContext context = TestBrokers.v5Context().persistence(p -> p.persistent(false));
        for (final ListenerSettings listener : extra)
        {
            context.addListener(listener);
        }
        return context.conclude();
    }

    private ListenerSettings crlListener(final Path crl)
    {
        return ListenersTest.tlsListener().caFile(tls("ca.pem")).requireCertificate(true).crlFile(crl);
    }

    private Path crl() throws Exception
    {
        final Path crl = dir.resolve("crl.pem");
        Files.copy(tls("crl-none.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        return crl;
    }

    private static boolean accepts(final int port)
    {
        try (Socket socket = new Socket("127.0.0.1", port))
        {
            return true;
        }
        catch (final Exception ex)
        {
            return false;
        }
    }


    @Test
    @DisplayName("a wss listener reads a CRL renewed at the same path at a reload: the revoked client is refused, its "
        + "connection made before stays")
    void wssListenerReadsRenewedCrl() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl).protocol(ListenerSettings.Protocol.WEBSOCKETS)
            .websocketPath("/mqtt")));
        final String uri = "wss://127.0.0.1:" + broker.ports()[1] + "/mqtt";
        final Paho bob = Paho.connect(uri, "bob", ssl(TlsSocketLayerTest.clientContext("bob")));
        closeables.add(bob);
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again for 1 listener(s)");
        assertThatThrownBy(() -> Paho.connect(uri, "bob2", ssl(TlsSocketLayerTest.clientContext("bob"))))
            .isInstanceOf(Exception.class);
        assertThat(bob.client.isConnected()).isTrue();
        closeables.add(Paho.connect(uri, "alice", ssl(TlsSocketLayerTest.clientContext("alice"))));
    }

    @Test
    @DisplayName("a reload with a bad file on a kept listener, one listener removed and one added, changes nothing; "
        + "with good files it applies all")
    void sighupStyleBadKeptFileWithRemovedAndAddedChangesNothing() throws Exception
    {
        final Path crl = crl();
        final int plain = TestBrokers.freePort();
        broker = Broker.launch(context(crlListener(crl), new ListenerSettings(plain, "127.0.0.1")));
        final int[] before = broker.ports();
        final String uri = "ssl://127.0.0.1:" + before[1];
        Files.writeString(crl, "not a CRL\n");
        final int added = TestBrokers.freePort();
        assertThatThrownBy(() -> broker.reload(context(crlListener(crl), new ListenerSettings(added, "127.0.0.1"))))
            .hasMessageContaining("crlfile");
        assertThat(broker.ports()).containsExactly(before);
        assertThat(accepts(plain)).as("removed in a failed reload: still accepts").isTrue();
        assertThat(accepts(added)).as("added in a failed reload: not bound").isFalse();
        closeables.add(Paho.connect(uri, "bob-1", ssl(TlsSocketLayerTest.clientContext("bob"))));
        // now a good one: CRL revokes bob; plain removed; added bound
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        final String line = broker.reload(context(crlListener(crl), new ListenerSettings(added, "127.0.0.1")));
        assertThat(line).contains("TLS files read again for 1 listener(s)").contains("-[").contains("+[");
        assertThatThrownBy(() -> Paho.connect(uri, "bob-2", ssl(TlsSocketLayerTest.clientContext("bob"))))
            .isInstanceOf(Exception.class);
        closeables.add(Paho.connect(uri, "alice", ssl(TlsSocketLayerTest.clientContext("alice"))));
        closeables.add(Paho.connect(added, "via-added"));
    }

    @Test
    @DisplayName("SIGHUP with a config file: the TLS listener is kept, its port stays, its renewed CRL takes effect")
    void sighupThroughConfigFile() throws Exception
    {
        final Path crl = crl();
        final Path conf = dir.resolve("ringmq.conf");
        Files.writeString(conf, "listener 0 127.0.0.1\ncertfile " + tls("server-chain.pem") + "\nkeyfile " +
            tls("server-key.pem") + "\ncafile " + tls("ca.pem") + "\nrequire_certificate true\nallow_anonymous true" +
            "\ncrlfile " + crl + "\n", StandardCharsets.UTF_8);
        final String[] args = {"-c", conf.toString(), "--bind", "127.0.0.1", "--port", "0", "--sys-interval", "0",
            "--persistence", "memory"};
        final BrokerContext ctx = Main.rereadContext(args);
        broker = Broker.launch(ctx);
        final int[] ports = broker.ports();
        assertThat(ports).hasSize(2);
        final String uri = "ssl://127.0.0.1:" + ports[1];
        closeables.add(Paho.connect(uri, "bob-1", ssl(TlsSocketLayerTest.clientContext("bob"))));
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        SignalReloads.reloadOnSignal(broker, args);
        assertThat(broker.ports()).containsExactly(ports);
        assertThatThrownBy(() -> Paho.connect(uri, "bob-2", ssl(TlsSocketLayerTest.clientContext("bob"))))
            .isInstanceOf(Exception.class);
        closeables.add(Paho.connect(uri, "alice", ssl(TlsSocketLayerTest.clientContext("alice"))));
    }

    @Test
    @DisplayName("a server certificate and key renewed at the same path serve new handshakes; a certificate without "
        + "its key fails the reload")
    void serverCertificateRenewedAtSamePath() throws Exception
    {
        final Path cert = dir.resolve("cert.pem");
        final Path key = dir.resolve("key.pem");
        Files.copy(tls("server-chain.pem"), cert);
        Files.copy(tls("server-key.pem"), key);
        broker = Broker.launch(context(new ListenerSettings(0, "127.0.0.1").certFile(cert).keyFile(key)));
        final int port = broker.ports()[1];
        final X509Certificate first = served(port);
        Files.copy(tls("server-ec-cert.pem"), cert, StandardCopyOption.REPLACE_EXISTING);
        Files.copy(tls("server-ec-key.pem"), key, StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again");
        final X509Certificate second = served(port);
        assertThat(second).isNotEqualTo(first);
        // cert renewed, key not yet: the reload fails, the ec pair stays in use
        Files.copy(tls("server-chain.pem"), cert, StandardCopyOption.REPLACE_EXISTING);
        assertThatThrownBy(() -> broker.reload()).isInstanceOf(IllegalArgumentException.class);
        assertThat(served(port)).isEqualTo(second);
    }

    private static X509Certificate served(final int port) throws Exception
    {
        final AtomicReference<X509Certificate> seen = new AtomicReference<>();
        final SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, new javax.net.ssl.TrustManager[]{ new javax.net.ssl.X509TrustManager()
        {
            public void checkClientTrusted(final X509Certificate[] chain, final String authType)
            {
            }

            public void checkServerTrusted(final X509Certificate[] chain, final String authType)
            {
                seen.set(chain[0]);
            }

            public X509Certificate[] getAcceptedIssuers()
            {
                return new X509Certificate[0];
            }
        } }, null);
        try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket)context.getSocketFactory()
            .createSocket("127.0.0.1", port))
        {
            socket.startHandshake();
        }
        return seen.get();
    }

    @Test
    @DisplayName("a handshake under way when a reload swaps the TLS context finishes with the old one; the next uses "
        + "the new")
    void handshakeUnderWayAtTheSwapFinishesWithTheOldContext() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl)));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final CountDownLatch choosing = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final SSLContext blocking = blockingClient("bob", choosing, release);
        final AtomicReference<Object> result = new AtomicReference<>();
        final Thread client = new Thread(() ->
        {
            try
            {
                result.set(Paho.connect(uri, "bob-mid", ssl(blocking)));
            }
            catch (final Throwable ex)
            {
                result.set(ex);
            }
        });
        client.start();
        assertThat(choosing.await(20, TimeUnit.SECONDS)).isTrue();
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again");
        release.countDown();
        client.join(30_000);
        System.out.println("mid-handshake result: " + result.get());
        if (result.get() instanceof Paho p)
        {
            closeables.add(p);
        }
        assertThat(result.get()).isInstanceOf(Paho.class);
        assertThatThrownBy(() -> Paho.connect(uri, "bob-after", ssl(TlsSocketLayerTest.clientContext("bob"))))
            .isInstanceOf(Exception.class);
    }

    private static SSLContext blockingClient(final String name, final CountDownLatch choosing,
        final CountDownLatch release) throws Exception
    {
        final KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        trusted.setCertificateEntry("ca", PemFiles.certificates("cafile", tls("ca.pem")).get(0));
        final TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        final KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("client", PemFiles.privateKey("keyfile", tls(name + "-key.pem")), new char[0],
            PemFiles.certificates("certfile", tls(name + "-cert.pem")).toArray(new X509Certificate[0]));
        final KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(store, new char[0]);
        final X509ExtendedKeyManager inner = (X509ExtendedKeyManager)keys.getKeyManagers()[0];
        final X509ExtendedKeyManager km = new X509ExtendedKeyManager()
        {
            public String[] getClientAliases(final String keyType, final Principal[] issuers)
            {
                return inner.getClientAliases(keyType, issuers);
            }

            public String chooseClientAlias(final String[] keyType, final Principal[] issuers, final Socket socket)
            {
                choosing.countDown();
                try
                {
                    release.await(30, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
                return "client";
            }

            public String chooseEngineClientAlias(final String[] keyType, final Principal[] issuers,
                final SSLEngine engine)
            {
                return chooseClientAlias(keyType, issuers, null);
            }

            public String[] getServerAliases(final String keyType, final Principal[] issuers)
            {
                return null;
            }

            public String chooseServerAlias(final String keyType, final Principal[] issuers, final Socket socket)
            {
                return null;
            }

            public X509Certificate[] getCertificateChain(final String alias)
            {
                return inner.getCertificateChain(alias);
            }

            public PrivateKey getPrivateKey(final String alias)
            {
                return inner.getPrivateKey(alias);
            }
        };
        final SSLContext context = SSLContext.getInstance("TLS");
        context.init(new KeyManager[]{ km }, trust.getTrustManagers(), null);
        return context;
    }

    @Test
    @DisplayName("60 reloads while 30 TLS clients with certificates connect: no connect fails, no reload throws")
    void reloadStormWhileTlsClientsConnect() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl)));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Thread reloader = new Thread(() ->
        {
            try
            {
                for (int i = 0; i < 60; i++)
                {
                    broker.reload();
                }
            }
            catch (final Throwable ex)
            {
                failure.compareAndSet(null, ex);
            }
        });
        reloader.start();
        final SSLContext alice = TlsSocketLayerTest.clientContext("alice");
        for (int i = 0; i < 30; i++)
        {
            try (Paho p = Paho.connect(uri, "alice-" + i, ssl(alice)))
            {
                assertThat(p.client.isConnected()).isTrue();
            }
        }
        reloader.join(60_000);
        assertThat(failure.get()).isNull();
    }

    @Test
    @DisplayName("reload() with no configuration keeps the ports; after close every port binds again")
    void reloadWithNullKeepsListenersThenClose() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl)));
        final int[] ports = broker.ports();
        broker.reload();
        broker.reload();
        assertThat(broker.ports()).containsExactly(ports);
        broker.close();
        assertThat(broker.reload()).contains("not reloaded");
        for (final int port : ports)
        {
            try (java.nio.channels.ServerSocketChannel again = java.nio.channels.ServerSocketChannel.open())
            {
                again.bind(new java.net.InetSocketAddress("127.0.0.1", port));
            }
        }
    }

    @Test
    @DisplayName("a client that connected before its certificate was revoked is refused after the reload, TLS session "
        + "cache and all")
    void resumedSessionAfterRevocationIsRefused() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl)));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final SSLContext bob = TlsSocketLayerTest.clientContext("bob");
        try (Paho first = Paho.connect(uri, "bob-1", ssl(bob)))
        {
            first.client.subscribe("x", 1);
        }
        try (Paho second = Paho.connect(uri, "bob-2", ssl(bob)))
        {
            second.client.subscribe("x", 1);
        }
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again");
        assertThatThrownBy(() -> Paho.connect(uri, "bob-3", ssl(bob))).as("revoked, resuming")
            .isInstanceOf(Exception.class);
    }

    @Test
    @DisplayName("as above on TLS 1.2, where sessions resume by id")
    void resumedSessionTls12AfterRevocationIsRefused() throws Exception
    {
        final Path crl = crl();
        broker = Broker.launch(context(crlListener(crl)));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final SSLContext bob = TlsSocketLayerTest.clientContext("bob");
        final MqttConnectOptions o = ssl(bob);
        o.setSocketFactory(new Tls12Only(bob.getSocketFactory()));
        try (Paho first = Paho.connect(uri, "bob-1", o))
        {
            first.client.subscribe("x", 1);
        }
        Files.copy(tls("crl.pem"), crl, StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again");
        assertThatThrownBy(() -> Paho.connect(uri, "bob-3", o)).as("revoked, resuming 1.2")
            .isInstanceOf(Exception.class);
    }

    static final class Tls12Only extends javax.net.ssl.SSLSocketFactory
    {
        private final javax.net.ssl.SSLSocketFactory f;

        Tls12Only(final javax.net.ssl.SSLSocketFactory f)
        {
            this.f = f;
        }

        private Socket only(final Socket s)
        {
            ((javax.net.ssl.SSLSocket)s).setEnabledProtocols(new String[]{"TLSv1.2"});
            return s;
        }

        public String[] getDefaultCipherSuites()
        {
            return f.getDefaultCipherSuites();
        }

        public String[] getSupportedCipherSuites()
        {
            return f.getSupportedCipherSuites();
        }

        public Socket createSocket() throws java.io.IOException
        {
            return only(f.createSocket());
        }

        public Socket createSocket(final Socket s, final String h, final int p, final boolean a)
            throws java.io.IOException
        {
            return only(f.createSocket(s, h, p, a));
        }

        public Socket createSocket(final String h, final int p) throws java.io.IOException
        {
            return only(f.createSocket(h, p));
        }

        public Socket createSocket(final String h, final int p, final java.net.InetAddress l, final int lp)
            throws java.io.IOException
        {
            return only(f.createSocket(h, p, l, lp));
        }

        public Socket createSocket(final java.net.InetAddress h, final int p) throws java.io.IOException
        {
            return only(f.createSocket(h, p));
        }

        public Socket createSocket(final java.net.InetAddress h, final int p, final java.net.InetAddress l,
            final int lp) throws java.io.IOException
        {
            return only(f.createSocket(h, p, l, lp));
        }
    }
}
