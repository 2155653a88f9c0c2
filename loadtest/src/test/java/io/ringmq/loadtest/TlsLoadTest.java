package io.ringmq.loadtest;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.transport.RingMq;
import io.ringmq.transport.junit.RingMqExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The generator over TLS: against the in-process ringmq behind an in-test JDK {@code SSLServerSocket} that terminates
 * TLS (so CI, without Mosquitto, covers the client), and against a Mosquitto TLS listener when {@code mosquitto} is on
 * the PATH. Handshake, exact QoS 0 and QoS 1 counts through TLS, client certificates, records split across reads, and
 * the refusals: a wrong CA, a server that does not speak TLS, bad files and flags.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class TlsLoadTest
{
    @RegisterExtension
    static final RingMqExtension BROKER =
        new RingMqExtension(() -> RingMq.builder().threading(BrokerContext.Threading.SHARED)).perClass();

    @TempDir
    static Path pki;
    private static TestCertificates certs;
    private static RingMq broker;

    @BeforeAll
    static void certificates() throws Exception
    {
        certs = new TestCertificates(pki);
    }

    @BeforeEach
    void broker(final RingMq running)
    {
        broker = running;
    }

    private static String[] tlsRun(final int port, final String... args)
    {
        final String[] common = {"-addr", "127.0.0.1:" + port, "-quiet", "-cafile", certs.caPem.toString()};
        final String[] all = Arrays.copyOf(common, common.length + args.length);
        System.arraycopy(args, 0, all, common.length, args.length);
        return all;
    }

    private static void assertExact(final String output, final long published, final int subscribers)
    {
        assertThat(jsonNumber(output, "tls")).as(output).isEqualTo(1);
        assertThat(jsonNumber(output, "failed")).as(output).isZero();
        assertThat(jsonNumber(output, "published")).as(output).isEqualTo(published);
        assertThat(jsonNumber(output, "delivered")).as(output).isEqualTo(published * subscribers);
        assertThat(jsonNumber(output, "lost")).isZero();
        assertThat(jsonNumber(output, "duplicates")).isZero();
        assertThat(jsonNumber(output, "tls_failures")).isZero();
    }

    @Test
    @DisplayName("through TLS, QoS 0 and QoS 1 pubsub deliver exactly what was published; connect times include the "
        + "handshake")
    void qos0AndQos1ThroughTls() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(false), broker.port(), 16 * 1024))
        {
            final String qos0 = run(0, tlsRun(tls.port(), "-mode", "pubsub", "-pubs", "2", "-subs", "2", "-qos",
                "0", "-rate", "50", "-duration", "1s"));
            assertExact(qos0, 100, 2);
            final String qos1 = run(0, tlsRun(tls.port(), "-mode", "pubsub", "-pubs", "2", "-subs", "2", "-qos",
                "1", "-rate", "50", "-duration", "1s", "-tls-version", "tlsv1.2", "-warmup", "300ms"));
            assertExact(qos1, 100, 2); // the warm-up's messages are not counted
            assertThat(jsonNumber(qos1, "acknowledged")).isEqualTo(100);
        }
    }

    @Test
    @DisplayName("conn mode over TLS: 200 connections dialled 50 at a time (connects still under way when the loop "
        + "first sees them) all complete their handshakes")
    void connectionLevelsOverTls() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(false), broker.port(), 16 * 1024))
        {
            final String output = run(0, tlsRun(tls.port(), "-mode", "conn", "-levels", "200", "-hold", "200ms",
                "-dial-concurrency", "50"));
            assertThat(output).as(output).contains("\"target\":200,\"established\":200,\"failed\":0,\"alive\":200");
            assertThat(LoadTestTest.jsonDouble(output, "connect_p50_ms")).isGreaterThan(0);
        }
    }

    @Test
    @DisplayName("TLS records split into 1..7-byte reads are reassembled: QoS 1 counts stay exact")
    void recordsSplitAcrossReads() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(false), broker.port(), 16 * 1024);
             ByteRelay splitter = ByteRelay.plain(tls.port(), 7))
        {
            final String output = run(0, tlsRun(splitter.port(), "-mode", "pubsub", "-pubs", "2", "-subs", "1",
                "-qos", "1", "-rate", "40", "-payload", "300", "-duration", "1s"));
            assertExact(output, 80, 1);
        }
    }

    @Test
    @DisplayName("a client certificate (-cert, -key) is presented to a server that requires one; without it the "
        + "handshake fails and is reported")
    void clientCertificate() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(true), broker.port(), 16 * 1024))
        {
            final String output = run(0, tlsRun(tls.port(), "-mode", "pub", "-pubs", "2", "-qos", "1", "-rate", "20",
                "-duration", "1s", "-cert", certs.clientCertPem.toString(), "-key", certs.clientKeyPem.toString()));
            assertThat(jsonNumber(output, "failed")).as(output).isZero();
            assertThat(jsonNumber(output, "acknowledged")).isEqualTo(40);
            final String refused = run(0, tlsRun(tls.port(), "-mode", "pub", "-pubs", "2", "-qos", "1", "-rate",
                "20", "-duration", "300ms"));
            assertThat(jsonNumber(refused, "failed")).as(refused).isEqualTo(2);
        }
    }

    @Test
    @DisplayName("a server certificate from another CA is refused, with the JDK's reason in the report")
    void wrongCaRefused() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(false), broker.port(), 16 * 1024))
        {
            final String output = run(0, "-addr", "127.0.0.1:" + tls.port(), "-quiet", "-cafile",
                certs.otherCaPem.toString(), "-mode", "pub", "-pubs", "3", "-qos", "1", "-duration", "300ms");
            assertThat(jsonNumber(output, "failed")).as(output).isEqualTo(3);
            assertThat(jsonNumber(output, "tls_failures")).isEqualTo(3);
            assertThat(jsonNumber(output, "published")).isZero();
            assertThat(output).contains("3 of 3 clients never ready (3 TLS handshakes failed: ")
                .contains("unable to find valid certification path");
        }
    }

    @Test
    @DisplayName("-insecure trusts a server no CA file vouches for")
    void insecureTrustsAnyServer() throws Exception
    {
        try (ByteRelay tls = new ByteRelay(certs.serverSocket(false), broker.port(), 16 * 1024))
        {
            final String output = run(0, "-addr", "127.0.0.1:" + tls.port(), "-quiet", "-insecure", "-mode", "pub",
                "-pubs", "1", "-qos", "1", "-rate", "20", "-duration", "500ms");
            assertThat(jsonNumber(output, "failed")).as(output).isZero();
            assertThat(jsonNumber(output, "acknowledged")).isEqualTo(10);
        }
    }

    @Test
    @DisplayName("a server that answers a ClientHello with plain MQTT bytes fails the handshake with a clear reason, "
        + "and one that hangs up mid-handshake counts as failed: no hang either way")
    void hostileServers() throws Exception
    {
        // a CONNACK and a DISCONNECT where a ServerHello should be: not a TLS record
        assertThat(twoClientsAgainst(new byte[]{0x20, 0x02, 0x00, 0x00, (byte)0xD0, 0x00}))
            .contains("TLS handshakes failed: ");
        // the start of a record header, then the end of the connection
        assertThat(twoClientsAgainst(new byte[]{0x16, 0x03, 0x03}))
            .contains("the server closed the connection during the TLS handshake");
    }

    /**
     * Two TLS publishers against a server that answers every ClientHello with {@code answer} and hangs up: both
     * fail their handshakes.
     *
     * @return the generator's output.
     */
    private static String twoClientsAgainst(final byte[] answer) throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            final Thread answering = new Thread(() -> answerWith(server, answer));
            answering.setDaemon(true);
            answering.start();
            final String output = run(0, tlsRun(server.getLocalPort(), "-mode", "pub", "-pubs", "2", "-duration",
                "300ms"));
            assertThat(jsonNumber(output, "failed")).as(output).isEqualTo(2);
            assertThat(jsonNumber(output, "tls_failures")).isEqualTo(2);
            return output;
        }
    }

    /**
     * Accepts until closed; to each connection, writes {@code bytes} and hangs up.
     */
    private static void answerWith(final ServerSocket server, final byte[] bytes)
    {
        while (!server.isClosed())
        {
            try (Socket socket = server.accept(); OutputStream out = socket.getOutputStream())
            {
                socket.getInputStream().read(new byte[512]); // the ClientHello (or its start)
                out.write(bytes);
                out.flush();
            }
            catch (final IOException ex)
            {
                return;
            }
        }
    }

    @Test
    @DisplayName("bad TLS flags and files exit 2 naming the problem")
    void badFlagsAndFiles(@TempDir final Path dir) throws Exception
    {
        final String addr = "127.0.0.1:" + broker.port();
        assertThat(run(2, "-addr", addr, "-cafile", dir.resolve("missing.pem").toString()))
            .contains("missing.pem");
        final Path garbage = Files.writeString(dir.resolve("garbage.pem"), "not a certificate\n");
        assertThat(run(2, "-addr", addr, "-cafile", garbage.toString())).contains("garbage.pem");
        assertThat(run(2, "-addr", addr, "-cert", certs.clientCertPem.toString()))
            .contains("-cert and -key go together");
        assertThat(run(2, "-addr", addr, "-cert", certs.clientCertPem.toString(), "-key", garbage.toString()))
            .contains("garbage.pem").contains("openssl pkcs8");
        final Path encrypted = Files.writeString(dir.resolve("enc.pem"),
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n");
        assertThat(run(2, "-addr", addr, "-cert", certs.clientCertPem.toString(), "-key", encrypted.toString()))
            .contains("encrypted");
        final Path truncated = Files.writeString(dir.resolve("truncated.pem"),
            Files.readString(certs.caPem).substring(0, 100));
        assertThat(run(2, "-addr", addr, "-cafile", truncated.toString())).contains("truncated.pem");
        assertThat(run(2, "-addr", addr, "-tls-version", "sslv3")).contains("-tls-version must be tlsv1.2 or tlsv1.3");
        assertThat(run(2, "-addr", addr, "-insecure", "-cafile", certs.caPem.toString())).contains("-insecure");
    }

    @Test
    @DisplayName("a PKCS#1 RSA key (BEGIN RSA PRIVATE KEY) is read as the same key as its PKCS#8 form")
    void rsaPkcs1Key(@TempDir final Path dir) throws Exception
    {
        final KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
        generator.initialize(2048);
        final byte[] pkcs8 = generator.generateKeyPair().getPrivate().getEncoded();
        // PrivateKeyInfo: SEQUENCE(4) version(3) AlgorithmIdentifier(15) OCTET STRING header(4), then RSAPrivateKey
        final byte[] pkcs1 = Arrays.copyOfRange(pkcs8, 26, pkcs8.length);
        assertThat(PemFiles.rsaPkcs1ToPkcs8(pkcs1)).isEqualTo(pkcs8);
        final Path pem = Files.writeString(dir.resolve("rsa.pem"), "-----BEGIN RSA PRIVATE KEY-----\n" +
            java.util.Base64.getMimeEncoder().encodeToString(pkcs1) + "\n-----END RSA PRIVATE KEY-----\n");
        assertThat(PemFiles.privateKey(pem).getEncoded()).isEqualTo(pkcs8);
    }

    @Test
    @DisplayName("against Mosquitto's TLS listener (when mosquitto is installed): QoS 0 and 1 counts exact, a wrong "
        + "CA refused")
    void mosquittoTlsListener(@TempDir final Path dir) throws Exception
    {
        final String mosquitto = onPath("mosquitto");
        assumeTrue(null != mosquitto, "mosquitto is not on the PATH");
        final int port;
        try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            port = free.getLocalPort();
        }
        final Path conf = Files.writeString(dir.resolve("mosquitto.conf"), String.join("\n",
            "user root", // as root, Mosquitto would otherwise drop to a user that cannot read this folder
            "listener " + port + " 127.0.0.1",
            "allow_anonymous true",
            "cafile " + certs.caPem,
            "certfile " + certs.serverCertPem,
            "keyfile " + certs.serverKeyPem, ""));
        final Process process = new ProcessBuilder(mosquitto, "-c", conf.toString())
            .redirectErrorStream(true).redirectOutput(dir.resolve("mosquitto.log").toFile()).start();
        try
        {
            awaitListening(port, process, dir.resolve("mosquitto.log"));
            final String qos0 = run(0, tlsRun(port, "-mode", "pubsub", "-pubs", "2", "-subs", "2", "-qos", "0",
                "-rate", "50", "-duration", "1s"));
            assertExact(qos0, 100, 2);
            final String qos1 = run(0, tlsRun(port, "-mode", "pubsub", "-pubs", "2", "-subs", "2", "-qos", "1",
                "-rate", "50", "-duration", "1s"));
            assertExact(qos1, 100, 2);
            final String refused = run(0, "-addr", "127.0.0.1:" + port, "-quiet", "-cafile",
                certs.otherCaPem.toString(), "-mode", "pub", "-pubs", "2", "-duration", "300ms");
            assertThat(jsonNumber(refused, "tls_failures")).as(refused).isEqualTo(2);
            assertThat(refused).contains("unable to find valid certification path");
        }
        finally
        {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS))
            {
                process.destroyForcibly();
            }
        }
    }

    private static String onPath(final String program)
    {
        final String path = System.getenv("PATH");
        for (final String dir : (null == path ? "" : path).split(File.pathSeparator))
        {
            for (final String candidate : new String[]{dir, "/usr/sbin", "/usr/local/sbin"})
            {
                final File file = new File(candidate, program);
                if (file.canExecute())
                {
                    return file.getPath();
                }
            }
        }
        return null;
    }

    private static void awaitListening(final int port, final Process process, final Path log) throws Exception
    {
        final long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadlineNs)
        {
            assertThat(process.isAlive()).as(() -> "mosquitto exited: " + readQuietly(log)).isTrue();
            try (Socket socket = new Socket())
            {
                socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 200);
                return;
            }
            catch (final IOException notYet)
            {
                Thread.sleep(50);
            }
        }
        throw new AssertionError("mosquitto did not listen on " + port + ": " + readQuietly(log));
    }

    private static String readQuietly(final Path file)
    {
        try
        {
            return Files.readString(file, StandardCharsets.UTF_8);
        }
        catch (final IOException ex)
        {
            return ex.toString();
        }
    }
}
