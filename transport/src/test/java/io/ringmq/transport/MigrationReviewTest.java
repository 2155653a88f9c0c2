package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 1e12245, f7db52c, 17b7615: a mosquitto.conf migrated as is. Mosquitto sets max_qos and
 * allow_zero_length_clientid per listener; ringmq has one of each, the strictest read. use_subject_as_username names
 * users as OpenSSL prints subjects. A forged CRL refuses, as none would.
 */
@Timeout(60)
class MigrationReviewTest
{
    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    private static BrokerContext context(final Path config) throws Exception
    {
        return ConfigFileTest.context(config);
    }

    @Test
    @DisplayName("max_qos is a listener setting in Mosquitto 2: 'max_qos 0' on an untrusted listener and 'max_qos 2' "
        + "on a second one must leave the first at QoS 0")
    void maxQosPerListener(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n", "persistence false", "sys_interval 0", "allow_anonymous true",
            "listener 0 127.0.0.1", "max_qos 0",
            "listener 0 127.0.0.1", "max_qos 2", ""));
        broker = Broker.launch(context(config));
        try (RawClient client = new RawClient(broker.ports()[0]))
        {
            assertThat(client.handshake(RawClient.connect("untrusted", true, 60))).isZero();
            client.send(RawClient.subscribe(1, "t/#", 2));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(client.decoder().suback().reasonCode(0)).as("granted on the max_qos 0 listener").isZero();
        }
    }

    @Test
    @DisplayName("per_listener_settings true: allow_zero_length_clientid false on one listener refuses empty ids "
        + "there, whatever a later listener says (Mosquitto's security_options per listener)")
    void zeroLengthClientIdPerListener(@TempDir final Path dir) throws Exception
    {
        final Path config = dir.resolve("mosquitto.conf");
        Files.writeString(config, String.join("\n", "per_listener_settings true", "persistence false",
            "sys_interval 0",
            "listener 0 127.0.0.1", "allow_anonymous true", "allow_zero_length_clientid false",
            "listener 0 127.0.0.1", "allow_anonymous true", "allow_zero_length_clientid true", ""));
        broker = Broker.launch(context(config));
        try (RawClient client = new RawClient(broker.ports()[0]))
        {
            assertThat(client.handshake(RawClient.connect("", true, 60))).as("empty id on the strict listener")
                .isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        }
    }

    private Paho connectWithSubject(final String acl, final String certName, final Path dir) throws Exception
    {
        final Path aclFile = dir.resolve("acl");
        Files.writeString(aclFile, acl);
        final BrokerContext context = TestBrokers.v5Context().auth(a -> a.aclFile(aclFile)
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE));
        context.addListener(ListenersTest.tlsListener().caFile(ListenersTest.tls("ca.pem")).requireCertificate(true)
            .useSubjectAsUsername(true));
        broker = Broker.launch(context);
        final MqttConnectOptions options = Paho.options(true);
        options.setSocketFactory(TlsSocketLayerTest.clientContext(certName).getSocketFactory());
        final Paho client = Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], certName + "-device", options);
        closeables.add(client);
        return client;
    }

    private static String jdkSubject(final String name)
    {
        return PemFiles.certificates("certfile", ListenersTest.tls(name + "-cert.pem")).get(0)
            .getSubjectX500Principal().getName(javax.security.auth.x500.X500Principal.RFC2253);
    }

    @Test
    @DisplayName("use_subject_as_username: a subject with emailAddress is the name Mosquitto (OpenSSL XN_FLAG_RFC2253) "
        + "gives, emailAddress=carol@example.com,CN=carol,O=ringmq, so the migrated ACL applies")
    void subjectWithEmailAddress(@TempDir final Path dir) throws Exception
    {
        final Paho carol = connectWithSubject("user emailAddress=carol@example.com,CN=carol,O=ringmq\n" +
            "topic readwrite carol/#\nuser " + jdkSubject("carol") + "\ntopic readwrite jdk/#\n", "carol", dir);
        final int[] granted = carol.client.subscribeWithResponse(new String[]{"carol/in", "jdk/in"},
            new int[]{1, 1}).getGrantedQos();
        assertThat(granted).as("the ACL's rules for the subject Mosquitto names (carol/#), not the JDK's " +
            jdkSubject("carol") + " (jdk/#)").containsExactly(1, 0x80);
    }

    @Test
    @DisplayName("use_subject_as_username: a non-ASCII CN is escaped as OpenSSL's RFC 2253 form escapes it "
        + "(CN=J\\C3\\B6rg,O=ringmq), as Mosquitto names the user")
    void subjectWithNonAscii(@TempDir final Path dir) throws Exception
    {
        final Paho jorg = connectWithSubject("user CN=J\\C3\\B6rg,O=ringmq\ntopic readwrite jorg/#\n" +
            "user " + jdkSubject("jorg") + "\ntopic readwrite jdk/#\n", "jorg", dir);
        final int[] granted = jorg.client.subscribeWithResponse(new String[]{"jorg/in", "jdk/in"}, new int[]{1, 1})
            .getGrantedQos();
        assertThat(granted).as("the ACL's rules for the subject Mosquitto names (jorg/#), not the JDK's " +
            jdkSubject("jorg") + " (jdk/#)").containsExactly(1, 0x80);
    }

    @Test
    @DisplayName("crlfile: a forged CRL (the CA's name, another key, revoking nothing) does not let revoked-elsewhere "
        + "bob in: no valid CRL for the CA refuses its clients")
    void forgedCrl() throws Exception
    {
        final BrokerContext context = TestBrokers.v5Context();
        context.addListener(ListenersTest.tlsListener().caFile(ListenersTest.tls("ca.pem")).requireCertificate(true)
            .crlFile(ListenersTest.tls("forged-crl.pem")));
        broker = Broker.launch(context);
        final MqttConnectOptions options = Paho.options(true);
        options.setSocketFactory(TlsSocketLayerTest.clientContext("bob").getSocketFactory());
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> closeables.add(
            Paho.connect("ssl://127.0.0.1:" + broker.ports()[1], "bob", options))).isInstanceOf(Exception.class);
    }
}
