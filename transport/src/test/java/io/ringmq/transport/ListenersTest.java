package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The broker's listeners with real clients: TLS (Paho, the HiveMQ client, mosquitto_pub/sub with a CA file and
 * with client certificates), WebSocket and WebSocket over TLS (MQTT.js), the PROXY protocol (v1 and v2, the
 * loopback rule and the per-address limit applied to the client the header names), and all of them at once.
 */
@Timeout(120)
class ListenersTest
{
    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    static Path tls(final String name)
    {
        return TlsContextFactoryTest.tls(name);
    }

    /**
     * A TLS listener on an ephemeral loopback port, besides the default plain one.
     */
    static ListenerSettings tlsListener()
    {
        return new ListenerSettings(0, "127.0.0.1").certFile(tls("server-chain.pem")).keyFile(tls("server-key.pem"));
    }

    private Broker start(final ListenerSettings... listeners) throws IOException
    {
        final BrokerContext context = TestBrokers.v5Context();
        for (final ListenerSettings listener : listeners)
        {
            context.addListener(listener);
        }
        broker = Broker.launch(context);
        return broker;
    }

    private static MqttConnectOptions sslOptions(final SSLContext context)
    {
        final MqttConnectOptions options = Paho.options(true);
        options.setSocketFactory(context.getSocketFactory());
        return options;
    }

    @Test
    @DisplayName("TLS: Paho 3.1.1 over ssl:// trusting the CA, QoS 0/1/2 across a TLS and a plain listener")
    void pahoOverTls() throws Exception
    {
        start(tlsListener());
        final int tlsPort = broker.ports()[1];
        final Paho subscriber = Paho.connect("ssl://127.0.0.1:" + tlsPort, "tls-sub",
            sslOptions(TlsSocketLayerTest.clientContext(null)));
        closeables.add(subscriber);
        final Paho publisher = Paho.connect(broker.port(), "plain-pub");
        closeables.add(publisher);
        subscriber.client.subscribe("tls/#", 2);
        final StringBuilder big = new StringBuilder();
        while (big.length() < 100_000)
        {
            big.append("record larger than one TLS record; ");
        }
        for (int qos = 0; qos <= 2; qos++)
        {
            publisher.publish("tls/q" + qos, "qos " + qos, qos, false);
            final Paho.Received received = subscriber.next();
            assertThat(received.payload()).isEqualTo("qos " + qos);
        }
        publisher.publish("tls/big", big.toString(), 1, false);
        assertThat(subscriber.next().payload()).isEqualTo(big.toString());
        // and the other way: a TLS publisher, a plain subscriber
        final Paho plainSubscriber = Paho.connect(broker.port(), "plain-sub");
        closeables.add(plainSubscriber);
        plainSubscriber.client.subscribe("back", 1);
        subscriber.publish("back", "from tls", 1, false);
        assertThat(plainSubscriber.next().payload()).isEqualTo("from tls");
    }

    @Test
    @DisplayName("TLS: the HiveMQ client (MQTT 5.0) over TLS 1.3 with tls_version tlsv1.3")
    void hiveMqOverTls13() throws Exception
    {
        start(tlsListener().tlsVersion("tlsv1.3"));
        final TrustManagerFactory trust = trust();
        final Hive5 client = new Hive5(Hive5.builder(broker.ports()[1], "hive-tls").sslConfig()
            .trustManagerFactory(trust).protocols(List.of("TLSv1.3")).applySslConfig(), false);
        closeables.add(client);
        client.client.connect();
        client.subscribe("hive/tls", 1);
        client.publish("hive/tls", "over tls 1.3", 1, false);
        final Mqtt5Publish publish = client.received.poll(10, TimeUnit.SECONDS);
        assertThat(publish).isNotNull();
        assertThat(Hive5.text(publish)).isEqualTo("over tls 1.3");
        // a client that only speaks 1.2 is refused by the handshake
        final Hive5 old = new Hive5(Hive5.builder(broker.ports()[1], "hive-tls12").sslConfig()
            .trustManagerFactory(trust).protocols(List.of("TLSv1.2")).applySslConfig(), false);
        closeables.add(old);
        assertThatThrownBy(() -> old.client.connect()).isInstanceOf(RuntimeException.class);
    }

    static TrustManagerFactory trust() throws Exception
    {
        final java.security.KeyStore trusted = java.security.KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        trusted.setCertificateEntry("ca", PemFiles.certificates("cafile", tls("ca.pem")).get(0));
        final TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        return trust;
    }

    @Test
    @DisplayName("TLS with require_certificate: a client certificate from the CA gets in, none or another CA's does "
        + "not, and nothing is left open")
    void clientCertificates() throws Exception
    {
        start(tlsListener().caFile(tls("ca.pem")).requireCertificate(true));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final Paho alice = Paho.connect(uri, "alice", sslOptions(TlsSocketLayerTest.clientContext("alice")));
        closeables.add(alice);
        alice.client.subscribe("cert", 1);
        alice.publish("cert", "signed", 1, false);
        assertThat(alice.next().payload()).isEqualTo("signed");
        assertThatThrownBy(() -> Paho.connect(uri, "nobody", sslOptions(TlsSocketLayerTest.clientContext(null))))
            .isInstanceOf(Exception.class);
        assertThatThrownBy(() -> Paho.connect(uri, "mallory", sslOptions(TlsSocketLayerTest.clientContext("mallory"))))
            .isInstanceOf(Exception.class);
        awaitCondition(() -> broker.counters().get(BrokerCounters.CONNECTIONS_CLOSED) >= 2, "refused ones closed");
        assertThat(broker.counters().get(BrokerCounters.CLIENTS_CONNECTED)).isEqualTo(1);
    }

    @Test
    @DisplayName("use_identity_as_username: the certificate's CN is the user name, whatever the CONNECT says; the ACL "
        + "judges that name")
    void identityAsUserName(@org.junit.jupiter.api.io.TempDir final Path dir) throws Exception
    {
        final Path acl = dir.resolve("acl");
        java.nio.file.Files.writeString(acl, "user alice\ntopic readwrite alice/#\n");
        final BrokerContext context = TestBrokers.v5Context().auth(a -> a.aclFile(acl)
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE));
        context.addListener(tlsListener().caFile(tls("ca.pem")).requireCertificate(true).useIdentityAsUsername(true));
        broker = Broker.launch(context);
        final MqttConnectOptions options = sslOptions(TlsSocketLayerTest.clientContext("alice"));
        options.setUserName("mallory"); // ignored: the certificate says alice
        options.setPassword("not checked".toCharArray());
        final Paho alice = Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], "alice-device", options);
        closeables.add(alice);
        final int[] granted = alice.client.subscribeWithResponse(new String[]{"alice/in", "bob/in"}, new int[]{1, 1})
            .getGrantedQos();
        assertThat(granted).containsExactly(1, 0x80); // alice's rules, not mallory's (who has none)
        alice.publish("alice/in", "mine", 1, false);
        assertThat(alice.next().payload()).isEqualTo("mine");
        // without a certificate name there is no user: refused like a bad password; anonymous is off
        final MqttConnectOptions none = sslOptions(TlsSocketLayerTest.clientContext(null));
        assertThatThrownBy(() -> Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], "x", none))
            .isInstanceOf(Exception.class);
    }

    @Test
    @DisplayName("crlfile: a client certificate the CA revoked is refused at the handshake; one it did not revoke "
        + "gets in; a file with no CRL stops the start")
    void revokedClientCertificate() throws Exception
    {
        start(tlsListener().caFile(tls("ca.pem")).requireCertificate(true).crlFile(tls("crl.pem")));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final Paho alice = Paho.connect(uri, "alice", sslOptions(TlsSocketLayerTest.clientContext("alice")));
        closeables.add(alice);
        alice.publish("crl", "in", 1, false);
        assertThatThrownBy(() -> Paho.connect(uri, "bob", sslOptions(TlsSocketLayerTest.clientContext("bob"))))
            .as("bob's certificate is revoked").isInstanceOf(Exception.class);
        awaitCondition(() -> broker.counters().get(BrokerCounters.CONNECTIONS_CLOSED) >= 1, "bob closed");
        assertThat(broker.counters().get(BrokerCounters.CLIENTS_CONNECTED)).isEqualTo(1);
        broker.close();
        assertThatThrownBy(() -> start(tlsListener().caFile(tls("ca.pem")).requireCertificate(true)
            .crlFile(tls("ca.pem")))).hasStackTraceContaining("holds no certificate revocation list");
        start(tlsListener().caFile(tls("ca.pem")).requireCertificate(true)); // control: without the CRL
        closeables.add(Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], "bob",
            sslOptions(TlsSocketLayerTest.clientContext("bob"))));
    }

    @Test
    @DisplayName("a reload reads a kept listener's TLS files again: a CRL renewed at the same path refuses the "
        + "certificate it now revokes; connections made before stay; a bad file changes nothing")
    void reloadReadsRenewedCrl(@org.junit.jupiter.api.io.TempDir final Path dir) throws Exception
    {
        final Path crl = dir.resolve("crl.pem");
        java.nio.file.Files.copy(tls("crl-none.pem"), crl);
        start(tlsListener().caFile(tls("ca.pem")).requireCertificate(true).crlFile(crl));
        final String uri = "ssl://127.0.0.1:" + broker.ports()[1];
        final Paho bob = Paho.connect(uri, "bob", sslOptions(TlsSocketLayerTest.clientContext("bob")));
        closeables.add(bob);
        java.nio.file.Files.copy(tls("crl.pem"), crl, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        assertThat(broker.reload()).contains("TLS files read again for 1 listener(s)");
        assertThatThrownBy(() -> Paho.connect(uri, "bob-again", sslOptions(TlsSocketLayerTest.clientContext("bob"))))
            .as("revoked now").isInstanceOf(Exception.class);
        assertThat(bob.client.isConnected()).as("the connection made before stays").isTrue();
        closeables.add(Paho.connect(uri, "alice", sslOptions(TlsSocketLayerTest.clientContext("alice"))));
        java.nio.file.Files.writeString(crl, "not a CRL\n");
        assertThatThrownBy(() -> broker.reload()).hasMessageContaining("crlfile");
        closeables.add(Paho.connect(uri, "alice-again", sslOptions(TlsSocketLayerTest.clientContext("alice"))));
    }

    @Test
    @DisplayName("use_subject_as_username: the certificate's whole subject (RFC 2253, as Mosquitto gives it) is the "
        + "user name; the ACL judges that name")
    void subjectAsUserName(@org.junit.jupiter.api.io.TempDir final Path dir) throws Exception
    {
        final Path acl = dir.resolve("acl");
        java.nio.file.Files.writeString(acl, "user CN=alice,O=ringmq\ntopic readwrite alice/#\nuser alice\n" +
            "topic readwrite bob/#\n");
        final BrokerContext context = TestBrokers.v5Context().auth(a -> a.aclFile(acl)
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE));
        context.addListener(tlsListener().caFile(tls("ca.pem")).requireCertificate(true).useSubjectAsUsername(true));
        broker = Broker.launch(context);
        final MqttConnectOptions options = sslOptions(TlsSocketLayerTest.clientContext("alice"));
        options.setUserName("alice"); // ignored: the certificate's subject is the user name
        final Paho alice = Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], "alice-device", options);
        closeables.add(alice);
        final int[] granted = alice.client.subscribeWithResponse(new String[]{"alice/in", "bob/in"}, new int[]{1, 1})
            .getGrantedQos();
        assertThat(granted).containsExactly(1, 0x80); // the subject's rules, not the CN's
    }

    @Test
    @DisplayName("per_listener_settings: anonymous clients on one listener, a password on another")
    void perListenerAnonymous(@org.junit.jupiter.api.io.TempDir final Path dir) throws Exception
    {
        final Path passwd = dir.resolve("passwd");
        io.ringmq.pipeline.auth.PasswordFile.write(passwd, "carol", "secret", 1_000);
        final BrokerContext context = TestBrokers.v5Context();
        context.hasDefaultListener(false);
        context.addListener(new ListenerSettings(0, "127.0.0.1").anonymous(
            io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.ALL));
        context.addListener(new ListenerSettings(0, "127.0.0.1").anonymous(
            io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE).passwordFile(passwd));
        broker = Broker.launch(context);
        final int open = broker.ports()[0];
        final int guarded = broker.ports()[1];
        try (RawClient anonymous = new RawClient(open))
        {
            assertThat(anonymous.handshake(RawClient.connect("anon-open", true, 60)))
                .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        }
        try (RawClient anonymous = new RawClient(guarded))
        {
            assertThat(anonymous.handshake(RawClient.connect("anon-guarded", true, 60)))
                .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        }
        try (RawClient carol = new RawClient(guarded))
        {
            assertThat(carol.handshake(RawClient.connect("carol", "carol", "secret")))
                .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        }
        // two listeners with different password files are refused at start, naming both
        final BrokerContext two = TestBrokers.v5Context();
        two.addListener(new ListenerSettings(0, "127.0.0.1").passwordFile(passwd));
        two.addListener(new ListenerSettings(0, "127.0.0.1").passwordFile(dir.resolve("other")));
        assertThatThrownBy(two::conclude).hasMessageContaining("different password_files");
    }

    @Test
    @DisplayName("TLS: plain MQTT and garbage on the TLS port are closed; the listener keeps serving")
    void plainBytesOnTlsPort() throws Exception
    {
        start(tlsListener());
        final int tlsPort = broker.ports()[1];
        try (RawClient plain = new RawClient(tlsPort))
        {
            plain.send(RawClient.connect("plain-on-tls", true, 60));
            assertThat(plain.closedWithin(5_000)).isTrue();
        }
        try (RawClient garbage = new RawClient(tlsPort))
        {
            final byte[] junk = new byte[4096];
            new java.util.Random(42).nextBytes(junk);
            junk[0] = 0x16; // a handshake record type, then nonsense
            garbage.send(junk);
            assertThat(garbage.closedWithin(5_000)).isTrue();
        }
        final Paho good = Paho.connect("ssl://127.0.0.1:" + tlsPort, "good",
            sslOptions(TlsSocketLayerTest.clientContext(null)));
        closeables.add(good);
        assertThat(good.client.isConnected()).isTrue();
    }

    @Test
    @DisplayName("mosquitto_pub and mosquitto_sub over TLS, with --cafile and with a client certificate")
    void mosquittoClientsOverTls() throws Exception
    {
        assumeTrue(onPath("mosquitto_pub") && onPath("mosquitto_sub"), "mosquitto clients are not installed");
        start(tlsListener().caFile(tls("ca.pem")), tlsListener().caFile(tls("ca.pem")).requireCertificate(true));
        final int optional = broker.ports()[1];
        final int required = broker.ports()[2];
        assertThat(mosquittoRoundTrip(optional, List.of("--cafile", tls("ca.pem").toString()))).isEqualTo("over tls");
        final List<String> cert = List.of("--cafile", tls("ca.pem").toString(), "--cert",
            tls("alice-cert.pem").toString(), "--key", tls("alice-key.pem").toString());
        assertThat(mosquittoRoundTrip(required, cert)).isEqualTo("over tls");
        final Process refused = new ProcessBuilder(command("mosquitto_pub", required,
            List.of("--cafile", tls("ca.pem").toString()), "-t", "t", "-m", "x")).redirectErrorStream(true).start();
        assertThat(refused.waitFor(20, TimeUnit.SECONDS)).isTrue();
        assertThat(refused.exitValue()).as("no client certificate on a listener that requires one").isNotZero();
    }

    private static List<String> command(final String tool, final int port, final List<String> tlsOptions,
        final String... more)
    {
        final List<String> command = new ArrayList<>(List.of(tool, "-h", "127.0.0.1", "-p", String.valueOf(port)));
        command.addAll(tlsOptions);
        command.addAll(List.of(more));
        return command;
    }

    private static String mosquittoRoundTrip(final int port, final List<String> tlsOptions) throws Exception
    {
        final Process sub = new ProcessBuilder(command("mosquitto_sub", port, tlsOptions, "-t", "m/t", "-q", "1",
            "-C", "1", "-W", "20", "-i", "sub-" + port)).redirectErrorStream(true).start();
        try
        {
            final long deadline = System.currentTimeMillis() + 20_000;
            String output = "";
            while (System.currentTimeMillis() < deadline)
            {
                // publish until the subscriber has subscribed and received it (it exits after one message)
                final Process pub = new ProcessBuilder(command("mosquitto_pub", port, tlsOptions, "-t", "m/t",
                    "-m", "over tls", "-q", "1")).redirectErrorStream(true).start();
                assertThat(pub.waitFor(20, TimeUnit.SECONDS)).isTrue();
                final String pubOutput = new String(pub.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(pub.exitValue()).as(pubOutput).isZero();
                if (sub.waitFor(200, TimeUnit.MILLISECONDS))
                {
                    output = new String(sub.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
                    break;
                }
            }
            return output;
        }
        finally
        {
            sub.destroyForcibly();
        }
    }

    private static boolean onPath(final String tool)
    {
        for (final String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
        {
            if (new File(dir, tool).canExecute())
            {
                return true;
            }
        }
        return false;
    }

    @Test
    @DisplayName("MQTT-6.0.0-1..4: MQTT.js over ws:// and wss:// listeners, QoS 0/1/2 on 3.1.1 and 5.0")
    void mqttJsOverWebSocket() throws Exception
    {
        final String nodePath = System.getenv().getOrDefault("MQTTJS_NODE_PATH", "/tmp/mqttjs/node_modules");
        final File script = new File("../interop/mqttjs-ws.js");
        assumeTrue(onPath("node") && script.isFile() && new File(nodePath, "mqtt").isDirectory(),
            "node and MQTT.js are not installed");
        start(new ListenerSettings(0, "127.0.0.1").protocol(ListenerSettings.Protocol.WEBSOCKETS),
            tlsListener().protocol(ListenerSettings.Protocol.WEBSOCKETS).websocketPath("/mqtt"));
        runNode(nodePath, script, String.valueOf(broker.ports()[1]));
        runNode(nodePath, script, String.valueOf(broker.ports()[2]), "--cafile", tls("ca.pem").toString(),
            "--servername", "localhost");
    }

    private static void runNode(final String nodePath, final File script, final String... args) throws Exception
    {
        final List<String> command = new ArrayList<>(List.of("node", script.getPath()));
        command.addAll(List.of(args));
        final ProcessBuilder node = new ProcessBuilder(command).redirectErrorStream(true);
        node.environment().put("NODE_PATH", nodePath);
        final Process process = node.start();
        final boolean exited = process.waitFor(90, TimeUnit.SECONDS);
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!exited)
        {
            process.destroyForcibly();
        }
        assertThat(exited).as(output).isTrue();
        assertThat(process.exitValue()).as(output).isZero();
    }

    @Test
    @DisplayName("PROXY v1 and v2: the loopback rule applies to the client the header names, not to the proxy")
    void proxyProtocol() throws Exception
    {
        // anonymous clients only from loopback (the default): the proxy itself is on loopback, its clients may not be
        start(new ListenerSettings(0, "127.0.0.1").proxyProtocol(ListenerSettings.ProxyProtocol.ANY));
        final int port = broker.ports()[1];
        assertThat(proxiedConnect(port, "PROXY TCP4 203.0.113.7 127.0.0.1 51000 1883\r\n".getBytes(
            StandardCharsets.US_ASCII), "far-v1")).isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(proxiedConnect(port, "PROXY TCP4 127.0.0.1 127.0.0.1 51000 1883\r\n".getBytes(
            StandardCharsets.US_ASCII), "near-v1")).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        assertThat(proxiedConnect(port, v2Header(new byte[]{(byte)198, 51, 100, 9}), "far-v2"))
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(proxiedConnect(port, v2Header(new byte[]{127, 0, 0, 1}), "near-v2"))
            .isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        // a malformed header closes the socket
        try (RawClient bad = new RawClient(port))
        {
            bad.send("PROXY TCP9 x y z w\r\n".getBytes(StandardCharsets.US_ASCII));
            assertThat(bad.closedWithin(5_000)).isTrue();
        }
    }

    @Test
    @DisplayName("PROXY: --max-connections-per-address counts the client the header names")
    void proxyPerAddressLimit() throws Exception
    {
        final BrokerContext context = TestBrokers.v5Context().maxConnectionsPerAddress(2).auth(a -> a.anonymous(
            io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.ALL));
        context.addListener(new ListenerSettings(0, "127.0.0.1").proxyProtocol(ListenerSettings.ProxyProtocol.V1));
        broker = Broker.launch(context);
        final int port = broker.ports()[1];
        final byte[] header = "PROXY TCP4 203.0.113.8 127.0.0.1 51000 1883\r\n".getBytes(StandardCharsets.US_ASCII);
        final List<Socket> held = new ArrayList<>();
        for (int i = 0; i < 2; i++)
        {
            final Socket socket = proxiedSocket(port, header, "held-" + i);
            held.add(socket);
            closeables.add(socket);
            assertThat(connack(socket)).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        }
        try (Socket third = proxiedSocket(port, header, "third"))
        {
            assertThat(third.getInputStream().read()).as("closed at the header").isEqualTo(-1);
        }
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS)).isEqualTo(1);
        // another client behind the same proxy is not affected
        try (Socket other = proxiedSocket(port, "PROXY TCP4 203.0.113.9 127.0.0.1 51000 1883\r\n".getBytes(
            StandardCharsets.US_ASCII), "other"))
        {
            assertThat(connack(other)).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
        }
    }

    private static byte[] v2Header(final byte[] source)
    {
        final byte[] header = new byte[16 + 12];
        final byte[] signature = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};
        System.arraycopy(signature, 0, header, 0, 12);
        header[12] = 0x21; // version 2, PROXY
        header[13] = 0x11; // TCP over IPv4
        header[15] = 12;
        System.arraycopy(source, 0, header, 16, 4);
        header[20] = 127;
        header[23] = 1;
        header[24] = (byte)0xC7;
        header[25] = 0x38;
        header[26] = 0x07;
        header[27] = 0x5B;
        return header;
    }

    private static Socket proxiedSocket(final int port, final byte[] header, final String clientId) throws IOException
    {
        final Socket socket = new Socket("127.0.0.1", port);
        socket.setSoTimeout(10_000);
        final OutputStream out = socket.getOutputStream();
        final byte[] connect = RawClient.connect(clientId, true, 60);
        final byte[] both = new byte[header.length + connect.length];
        System.arraycopy(header, 0, both, 0, header.length);
        System.arraycopy(connect, 0, both, header.length, connect.length); // in one segment, as a proxy sends it
        out.write(both);
        out.flush();
        return socket;
    }

    private static int connack(final Socket socket) throws IOException
    {
        final InputStream in = socket.getInputStream();
        final byte[] packet = in.readNBytes(4);
        assertThat(packet).hasSize(4);
        assertThat(packet[0]).isEqualTo((byte)0x20);
        return packet[3];
    }

    private static int proxiedConnect(final int port, final byte[] header, final String clientId) throws IOException
    {
        try (Socket socket = proxiedSocket(port, header, clientId))
        {
            return connack(socket);
        }
    }

    private static void awaitCondition(final java.util.function.BooleanSupplier condition, final String what)
        throws InterruptedException
    {
        final long deadline = System.currentTimeMillis() + 10_000;
        while (!condition.getAsBoolean())
        {
            assertThat(System.currentTimeMillis()).as(what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }
}
