package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --allow-zero-length-clientid} and {@code --clientid-prefixes} (Mosquitto's {@code allow_zero_length_clientid}
 * and {@code clientid_prefixes}): which client ids may connect, on 3.1.1 and 5.0, with raw CONNECTs; under
 * {@code per_listener_settings true} each listener's own.
 */
@Timeout(60)
class ClientIdRulesTest
{
    private RingMq broker;
    private Broker fromFile;

    @TempDir
    Path directory;

    @AfterEach
    void stop()
    {
        if (null != broker)
        {
            broker.close();
        }
        if (null != fromFile)
        {
            fromFile.close();
        }
    }

    private int connect(final boolean v5, final String clientId) throws IOException
    {
        return connect(broker.port(), v5, clientId);
    }

    private static int connect(final int port, final boolean v5, final String clientId) throws IOException
    {
        try (RawClient client = v5 ? new RawClient(port).v5() : new RawClient(port))
        {
            return client.handshake(v5 ? RawClient.connect5(clientId, null) : RawClient.connect(clientId, true, 60));
        }
    }

    private void start(final String option, final String value) throws IOException
    {
        broker = RingMq.builder().threading(BrokerContext.Threading.SHARED).option("sys-interval", "0")
            .option(option, value).start();
    }

    @Test
    @DisplayName("MQTT-3.1.3-9 (3.1.1), MQTT-3.1.3-8 (5.0): with --allow-zero-length-clientid false an empty client id "
        + "is rejected (0x02, 0x85) and counted; a named client gets in")
    void emptyClientIdRejected() throws Exception
    {
        start("allow-zero-length-clientid", "false");
        assertThat(connect(false, "")).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(connect(true, "")).isEqualTo(ReasonCode.CLIENT_IDENTIFIER_NOT_VALID);
        assertThat(connect(false, "named")).isZero();
        assertThat(connect(true, "named5")).isZero();
        assertThat(broker.counters().get(BrokerCounters.CLIENT_ID_REFUSED)).isEqualTo(2);
    }

    @Test
    @DisplayName("by default an empty client id gets one assigned, on 3.1.1 with clean session [MQTT-3.1.3-6] and 5.0")
    void emptyClientIdAcceptedByDefault() throws Exception
    {
        start("max-client-id-length", "1024");
        assertThat(connect(false, "")).isZero();
        assertThat(connect(true, "")).isZero();
    }

    @Test
    @DisplayName("with --clientid-prefixes secure- only ids starting with it get in; others are not authorized (0x05, "
        + "0x87), an empty one too, and counted")
    void prefixRequired() throws Exception
    {
        start("clientid-prefixes", "secure-");
        assertThat(connect(false, "secure-1")).isZero();
        assertThat(connect(true, "secure-2")).isZero();
        assertThat(connect(false, "mqtt")).isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(connect(true, "secure")).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(connect(true, "")).as("an assigned id has no prefix").isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(broker.counters().get(BrokerCounters.CLIENT_ID_REFUSED)).isEqualTo(3);
    }

    @Test
    @DisplayName("MQTT-3.1.3-8: under per_listener_settings true allow_zero_length_clientid is each listener's, as in "
        + "Mosquitto: refused (0x02, 0x85) and counted on the listener that says false, assigned on the other")
    void perListener() throws Exception
    {
        final Path conf = conf("per_listener_settings true", "listener 0 127.0.0.1", "allow_anonymous true",
            "allow_zero_length_clientid false", "listener 0 127.0.0.1", "allow_anonymous true");
        fromFile = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"}));
        final int strict = fromFile.ports()[0];
        final int open = fromFile.ports()[1];
        assertThat(connect(strict, false, "")).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(connect(strict, true, "")).isEqualTo(ReasonCode.CLIENT_IDENTIFIER_NOT_VALID);
        assertThat(connect(strict, true, "named")).isZero();
        assertThat(connect(open, false, "")).isZero();
        assertThat(connect(open, true, "")).isZero();
        assertThat(fromFile.counters().get(BrokerCounters.CLIENT_ID_REFUSED)).isEqualTo(2);
    }

    private Path conf(final String... lines) throws IOException
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        return conf;
    }

    @Test
    @DisplayName("review: MQTT-3.1.3-8: allow_zero_length_clientid false before any listener line under "
        + "per_listener_settings holds for every listener, without a warning (Mosquitto gives it to a default listener "
        + "it may never open)")
    void generalSectionFalseUnderPerListenerSettings() throws Exception
    {
        final Path conf = conf("per_listener_settings true", "allow_zero_length_clientid false",
            "listener 0 127.0.0.1", "allow_anonymous true");
        assertThat(ConfigFile.read(conf, name -> false).warnings).isEmpty();
        fromFile = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"}));
        final int port = fromFile.ports()[0];
        assertThat(connect(port, false, "")).as("3.1.1, empty id").isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
    }

    @Test
    @DisplayName("review: a reload that sets a listener's allow_zero_length_clientid false keeps its socket and "
        + "refuses empty ids from then on (0x02, 0x85)")
    void reloadTurnsAListenerStrict() throws Exception
    {
        final int free = TestBrokers.freePort();
        final Path conf = conf("per_listener_settings true", "listener " + free + " 127.0.0.1", "allow_anonymous true");
        fromFile = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"}));
        final int port = fromFile.ports()[0];
        assertThat(connect(port, false, "")).isZero();
        conf("per_listener_settings true", "listener " + port + " 127.0.0.1", "allow_anonymous true",
            "allow_zero_length_clientid false");
        assertThat(fromFile.reload(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"})))
            .contains("listener settings");
        assertThat(connect(port, false, "")).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(connect(port, true, "")).isEqualTo(ReasonCode.CLIENT_IDENTIFIER_NOT_VALID);
    }

    @Test
    @DisplayName("review: MQTT-3.1.2-2: on a 5.0-only listener that refuses empty ids, a 3.1.1 CONNECT without one "
        + "is refused for its version (0x01), as one with an id is")
    void versionRefusalComesBeforeTheEmptyIdRefusal() throws Exception
    {
        final Path conf = conf("per_listener_settings true", "listener 0 127.0.0.1", "allow_anonymous true",
            "accept_protocol_versions 5", "allow_zero_length_clientid false");
        fromFile = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"}));
        final int port = fromFile.ports()[0];
        assertThat(connect(port, false, "named")).isEqualTo(ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION);
        assertThat(connect(port, false, "")).isEqualTo(ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION);
    }
}
