package io.ringmq.transport;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static io.ringmq.transport.TlsAgentHarness.await;
import static io.ringmq.transport.TlsContextFactoryTest.rsa;
import static io.ringmq.transport.TlsContextFactoryTest.tls;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * {@link TlsSocketLayer} over a real loopback socket, driven by {@link TlsAgentHarness} as an I/O agent would,
 * against JDK {@code SSLSocket} and {@code SSLEngine} clients: handshakes, data both ways, small agent buffers,
 * client certificates, version minimums, hostile peers and both directions of close_notify.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TlsSocketLayerTest
{
    private static final byte[] CONNECT = { 0x10, 0x10, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x02, 0x00, 0x3C, 0x00,
        0x04, 't', 'e', 's', 't' };
    private static final TlsTaskExecutor EXECUTOR = new TlsTaskExecutor(2, 64);

    private TlsAgentHarness agent;

    @AfterEach
    void closeAgent() throws IOException
    {
        if (null != agent)
        {
            agent.close();
            assertThat(agent.error).isNull();
        }
    }

    @AfterAll
    static void closeExecutor()
    {
        EXECUTOR.close();
    }

    @Test
    void handshakeTls12AndEcho() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, true);
        try (SSLSocket client = client(clientContext(null), "TLSv1.2"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            assertThat(client.getSession().getProtocol()).isEqualTo("TLSv1.2");
            await(() -> "TLSv1.2".equals(agent.protocol), "the layer to see TLS 1.2");
            assertThat(agent.identity).isNull();
        }
    }

    @Test
    void handshakeTls13AndEcho() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, true);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            assertThat(client.getSession().getProtocol()).isEqualTo("TLSv1.3");
            await(() -> "TLSv1.3".equals(agent.protocol), "the layer to see TLS 1.3");
            await(() -> 0 == agent.buffersHeld, "an idle connection to hold no buffers");
        }
        await(() -> agent.ended, "the layer to see the client's close");
        assertThat(agent.buffersHeld).isZero();
    }

    @Test
    void ecKeyHandshake() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(new io.ringmq.pipeline.ListenerSettings(0, null).certFile(tls("server-ec-cert.pem"))
            .keyFile(tls("server-ec-key.pem")), (w) -> { }), EXECUTOR, 4096, true);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            assertThat(client.getSession().getPeerCertificates()[0].getPublicKey().getAlgorithm()).isEqualTo("EC");
        }
    }

    @Test
    void oneMebibyteBothWays() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 16 * 1024, true);
        final byte[] payload = random(1 << 20, 1);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            assertThat(echo(client, payload)).isEqualTo(payload);
            await(() -> 0 == agent.buffersHeld, "the buffers to go back once the burst is through");
        }
    }

    @Test
    void smallAgentBufferGetsRecordsInPieces() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 7, true);
        final byte[] payload = random(100_000, 2);
        try (SSLSocket client = client(clientContext(null), "TLSv1.2"))
        {
            assertThat(echo(client, payload)).isEqualTo(payload);
        }
    }

    @Test
    void requiredClientCertificateGivesCommonName() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem")).requireCertificate(true),
            (w) -> { }), EXECUTOR, 4096, true);
        try (SSLSocket client = client(clientContext("alice"), "TLSv1.3"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            await(() -> null != agent.protocol, "the handshake");
            assertThat(agent.identity).isEqualTo("alice");
        }
    }

    @Test
    void requiredClientCertificateAbsentIsRefused() throws Exception
    {
        for (final String protocol : List.of("TLSv1.2", "TLSv1.3"))
        {
            agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem"))
                .requireCertificate(true), (w) -> { }), EXECUTOR, 4096, true);
            assertRefused(clientContext(null), protocol);
            agent.close();
        }
    }

    @Test
    void clientCertificateFromAnotherCaIsRefused() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem")).requireCertificate(true),
            (w) -> { }), EXECUTOR, 4096, true);
        assertRefused(clientContext("mallory"), "TLSv1.3");
    }

    @Test
    void optionalClientCertificateAbsentHasNoIdentity() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem")), (w) -> { }), EXECUTOR,
            4096, true);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            await(() -> null != agent.protocol, "the handshake");
            assertThat(agent.identity).isNull();
        }
    }

    @Test
    void optionalClientCertificatePresentGivesCommonName() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem")), (w) -> { }), EXECUTOR,
            4096, true);
        try (SSLSocket client = client(clientContext("alice"), "TLSv1.2"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
            await(() -> null != agent.protocol, "the handshake");
            assertThat(agent.identity).isEqualTo("alice");
        }
    }

    @Test
    void optionalClientCertificateFromAnotherCaIsRefused() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().caFile(tls("ca.pem")), (w) -> { }), EXECUTOR,
            4096, true);
        assertRefused(clientContext("mallory"), "TLSv1.2");
    }

    @Test
    void tlsVersionMinimum13RefusesTls12() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa().tlsVersion("tlsv1.3"), (w) -> { }), EXECUTOR,
            4096, true);
        assertRefused(clientContext(null), "TLSv1.2");
        assertThat(agent.protocol).isNull();
    }

    @Test
    void plainMqttOnTlsPortIsClosed() throws Exception
    {
        assertHostileClosed(CONNECT, false);
    }

    @Test
    void garbageIsClosed() throws Exception
    {
        assertHostileClosed(random(64, 3), false);
    }

    @Test
    void hugeRecordHeaderIsClosed() throws Exception
    {
        assertHostileClosed(new byte[]{ 0x16, 0x03, 0x01, (byte)0xFF, (byte)0xFF, 0x01, 0x00 }, false);
    }

    @Test
    void largeRecordHeaderThenEndIsClosed() throws Exception
    {
        // larger than a normal record but within what the JDK accepts as a large one: it waits for the rest
        final byte[] header = { 0x16, 0x03, 0x01, 0x48, 0x00, 0x01, 0x00, 0x47, (byte)0xFC };
        assertHostileClosed(header, true);
    }

    @Test
    void truncatedHandshakeIsClosed() throws Exception
    {
        final SSLEngine engine = clientContext(null).createSSLEngine("localhost", 0);
        engine.setUseClientMode(true);
        final ByteBuffer hello = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        engine.wrap(ByteBuffer.allocate(0), hello);
        hello.flip();
        final byte[] half = new byte[hello.remaining() / 2];
        hello.get(half);
        assertHostileClosed(half, true);
    }

    @Test
    void peerClosingMidRecordIsClosedWithNothingHandedOn() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, false);
        try (EngineClient client = new EngineClient(agent.port(), "TLSv1.3"))
        {
            client.handshake();
            final byte[] record = client.wrap(CONNECT);
            client.channel.write(ByteBuffer.wrap(record, 0, record.length - 5));
        }
        await(() -> agent.ended, "the layer to end at the cut record");
        assertThat(agent.received()).isEmpty();
        assertThat(agent.buffersHeld).isZero();
    }

    @Test
    void clientCloseNotifyEndsTheStreamAfterItsData() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, false);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            client.getOutputStream().write(CONNECT);
            client.getOutputStream().flush();
        } // close() sends close_notify
        await(() -> agent.ended, "the layer to end at close_notify");
        assertThat(agent.received()).isEqualTo(CONNECT);
        assertThat(agent.buffersHeld).isZero();
    }

    @Test
    void serverCloseSendsCloseNotify() throws Exception
    {
        for (final String protocol : List.of("TLSv1.2", "TLSv1.3"))
        {
            agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, true);
            try (SSLSocket client = client(clientContext(null), protocol))
            {
                assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
                agent.closeLayer();
                assertThat(client.getInputStream().read()).as("a clean end (close_notify), not a reset")
                    .isEqualTo(-1);
            }
            assertThat(agent.buffersHeld).isZero();
            agent.close();
        }
    }

    @Test
    void delegatedTasksRunOffTheAgentAndWakeIt() throws Exception
    {
        final AtomicReference<String> taskThread = new AtomicReference<>();
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), (task) -> EXECUTOR.execute(() ->
        {
            taskThread.set(Thread.currentThread().getName());
            task.run();
        }), 4096, true);
        try (SSLSocket client = client(clientContext(null), "TLSv1.3"))
        {
            assertThat(echo(client, CONNECT)).isEqualTo(CONNECT);
        }
        assertThat(agent.taskWakes.get()).isPositive();
        assertThat(taskThread.get()).startsWith("ringmq-tls-");
    }

    @Test
    void refusedTaskClosesTheConnection() throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), (task) ->
        {
            throw new RejectedExecutionException("full");
        }, 4096, true);
        assertRefused(clientContext(null), "TLSv1.3");
    }

    @Test
    void executorRefusesBeyondItsQueue() throws Exception
    {
        final java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
        try (TlsTaskExecutor executor = new TlsTaskExecutor(1, 1))
        {
            final Runnable blocked = () ->
            {
                try
                {
                    release.await(10, TimeUnit.SECONDS);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
            };
            executor.execute(blocked);
            executor.execute(blocked);
            await(() -> 1 == executor.queuedCount(), "one queued");
            try
            {
                executor.execute(blocked);
                fail("a third task must be refused");
            }
            catch (final RejectedExecutionException expected)
            {
                assertThat(executor.rejectedCount()).isEqualTo(1);
            }
            release.countDown();
        }
    }

    private void assertHostileClosed(final byte[] bytes, final boolean thenClose) throws Exception
    {
        agent = new TlsAgentHarness(TlsContextFactory.create(rsa(), (w) -> { }), EXECUTOR, 4096, true);
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), agent.port()))
        {
            socket.getOutputStream().write(bytes);
            socket.getOutputStream().flush();
            if (thenClose)
            {
                socket.shutdownOutput();
            }
            await(() -> agent.ended, "the layer to close the connection");
        }
        assertThat(agent.received()).isEmpty();
        assertThat(agent.buffersHeld).isZero();
    }

    private void assertRefused(final SSLContext context, final String protocol) throws Exception
    {
        try (SSLSocket client = client(context, protocol))
        {
            client.startHandshake();
            client.getOutputStream().write(CONNECT);
            client.getOutputStream().flush();
            final int read = client.getInputStream().read();
            assertThat(read).as("the server must not answer").isEqualTo(-1);
        }
        catch (final IOException expected)
        {
            // refused in the handshake (an alert) or by the closed socket
        }
        await(() -> agent.ended, "the layer to end the refused connection");
        assertThat(agent.received()).isEmpty();
        assertThat(agent.buffersHeld).isZero();
    }

    private SSLSocket client(final SSLContext context, final String protocol) throws IOException
    {
        final SSLSocket socket = (SSLSocket)context.getSocketFactory().createSocket("127.0.0.1", agent.port());
        socket.setSoTimeout(20_000);
        socket.setEnabledProtocols(new String[]{ protocol });
        final SSLParameters parameters = socket.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the SAN must hold 127.0.0.1
        socket.setSSLParameters(parameters);
        return socket;
    }

    private static byte[] echo(final SSLSocket client, final byte[] payload) throws Exception
    {
        final AtomicReference<Throwable> writeError = new AtomicReference<>();
        final Thread writer = new Thread(() ->
        {
            try
            {
                final OutputStream out = client.getOutputStream();
                for (int i = 0; i < payload.length; i += 10_000)
                {
                    out.write(payload, i, Math.min(10_000, payload.length - i));
                }
                out.flush();
            }
            catch (final IOException ex)
            {
                writeError.set(ex);
            }
        }, "tls-test-client-writer");
        writer.start();
        final InputStream in = client.getInputStream();
        final byte[] back = in.readNBytes(payload.length);
        writer.join(20_000);
        assertThat(writeError.get()).isNull();
        return back;
    }

    static SSLContext clientContext(final String name) throws Exception
    {
        final KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        trusted.setCertificateEntry("ca", PemFiles.certificates("cafile", tls("ca.pem")).get(0));
        final TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        KeyManagerFactory keys = null;
        if (null != name)
        {
            final KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("client", PemFiles.privateKey("keyfile", tls(name + "-key.pem")), new char[0],
                PemFiles.certificates("certfile", tls(name + "-cert.pem")).toArray(new X509Certificate[0]));
            keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(store, new char[0]);
        }
        final SSLContext context = SSLContext.getInstance("TLS");
        context.init(null == keys ? null : new KeyManager[]{ new Presenting(
            (X509ExtendedKeyManager)keys.getKeyManagers()[0]) }, trust.getTrustManagers(), null);
        return context;
    }

    /**
     * Presents its one certificate whatever CAs the server names, as a misconfigured or hostile client would.
     */
    static final class Presenting extends X509ExtendedKeyManager
    {
        private final X509ExtendedKeyManager keys;

        Presenting(final X509ExtendedKeyManager keys)
        {
            this.keys = keys;
        }

        public String chooseClientAlias(final String[] keyType, final Principal[] issuers, final Socket socket)
        {
            return "client";
        }

        public String chooseEngineClientAlias(final String[] keyType, final Principal[] issuers,
            final SSLEngine engine)
        {
            return "client";
        }

        public String[] getClientAliases(final String keyType, final Principal[] issuers)
        {
            return new String[]{ "client" };
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
            return keys.getCertificateChain(alias);
        }

        public PrivateKey getPrivateKey(final String alias)
        {
            return keys.getPrivateKey(alias);
        }
    }

    private static byte[] random(final int length, final long seed)
    {
        final byte[] bytes = new byte[length];
        new Random(seed).nextBytes(bytes);
        return bytes;
    }

    /**
     * A blocking client over a client-mode {@link SSLEngine}, for the bytes an {@code SSLSocket} will not send
     * (half a record).
     */
    static final class EngineClient implements AutoCloseable
    {
        final SocketChannel channel;
        private final SSLEngine engine;
        private final ByteBuffer netIn;
        private final ByteBuffer app;

        EngineClient(final int port, final String protocol) throws Exception
        {
            channel = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            engine = clientContext(null).createSSLEngine("localhost", port);
            engine.setUseClientMode(true);
            engine.setEnabledProtocols(new String[]{ protocol });
            netIn = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            app = ByteBuffer.allocate(engine.getSession().getApplicationBufferSize());
        }

        void handshake() throws IOException
        {
            engine.beginHandshake();
            boolean underflow = true;
            while (true)
            {
                switch (engine.getHandshakeStatus())
                {
                    case NEED_WRAP:
                        send(new byte[0]);
                        break;
                    case NEED_TASK:
                        Runnable task;
                        while (null != (task = engine.getDelegatedTask()))
                        {
                            task.run();
                        }
                        break;
                    case NEED_UNWRAP:
                        if (underflow || 0 == netIn.position())
                        {
                            if (channel.read(netIn) < 0)
                            {
                                throw new IOException("server closed in the handshake");
                            }
                        }
                        netIn.flip();
                        final SSLEngineResult result = engine.unwrap(netIn, app);
                        netIn.compact();
                        underflow = SSLEngineResult.Status.BUFFER_UNDERFLOW == result.getStatus();
                        break;
                    default:
                        return;
                }
            }
        }

        byte[] wrap(final byte[] plain) throws IOException
        {
            final ByteBuffer net = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            engine.wrap(ByteBuffer.wrap(plain), net);
            net.flip();
            return Arrays.copyOfRange(net.array(), 0, net.limit());
        }

        private void send(final byte[] plain) throws IOException
        {
            final ByteBuffer net = ByteBuffer.wrap(wrap(plain));
            while (net.hasRemaining())
            {
                channel.write(net);
            }
        }

        public void close() throws IOException
        {
            channel.close();
        }
    }
}
