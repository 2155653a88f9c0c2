package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A listener's {@code accept_protocol_versions} (Mosquitto 2.1): which MQTT versions may connect through it. A client
 * of another version is refused as Mosquitto refuses it, 3.1.1 with return code 1, 5.0 with 0x84
 * [MQTT-3.1.2-2]; other listeners take every version; a reload changes it in place, for new connections.
 */
@Timeout(60)
class ListenerProtocolVersionsTest extends InProcessBrokerTest
{
    private static final int V311 = 1 << 4;
    private static final int V5 = 1 << 5;

    @TempDir
    Path directory;

    private static BrokerContext context(final ListenerSettings restricted)
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .addListener(restricted);
    }

    private static int connect(final int port, final boolean v5, final String clientId) throws Exception
    {
        try (RawClient client = v5 ? new RawClient(port).v5() : new RawClient(port))
        {
            return client.handshake(v5 ? RawClient.connect5(clientId, null) : RawClient.connect(clientId, true, 60));
        }
    }

    @Test
    @DisplayName("MQTT-3.1.2-2: a 5.0-only listener refuses Paho 3.1.1 with return code 1 and takes 5.0; a "
        + "3.1.1-only one refuses 5.0 with 0x84; the default listener takes both")
    void refusedPerListener() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").acceptProtocolVersions(V5))
            .addListener(new ListenerSettings(0, "127.0.0.1").acceptProtocolVersions(V311)));
        final int open = broker.ports()[0];
        final int only5 = broker.ports()[1];
        final int only311 = broker.ports()[2];

        final MqttClient paho = new MqttClient("tcp://127.0.0.1:" + only5, "paho311", new MemoryPersistence());
        closeLater(paho::close);
        assertThatThrownBy(paho::connect).isInstanceOfSatisfying(MqttException.class,
            refused -> assertThat(refused.getReasonCode())
                .isEqualTo(MqttException.REASON_CODE_INVALID_PROTOCOL_VERSION));
        assertThat(connect(only5, true, "five")).isZero();

        assertThat(connect(only311, true, "five")).isEqualTo(ReasonCode.UNSUPPORTED_PROTOCOL_VERSION);
        assertThat(connect(only311, false, "three")).isZero();

        assertThat(connect(open, false, "three")).isZero();
        assertThat(connect(open, true, "five")).isZero();
    }

    @Test
    @DisplayName("a reload that changes accept_protocol_versions keeps the socket and refuses the version from then "
        + "on; a connection made before stays")
    void reloadChangesItInPlace() throws Exception
    {
        final int port = TestBrokers.freePort();
        launch(context(new ListenerSettings(port, "127.0.0.1")));
        try (RawClient before = new RawClient(port))
        {
            assertThat(before.handshake(RawClient.connect("before", true, 60))).isZero();
            assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1").acceptProtocolVersions(V5))))
                .contains("reloaded");
            assertThat(connect(port, false, "after")).isEqualTo(ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION);
            assertThat(connect(port, true, "after5")).isZero();
            before.send(RawClient.ping());
            assertThat(before.readPacket(5_000)).as("still connected").isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    @DisplayName("a config file: accept_protocol_versions in a listener section is that listener's (3 is MQTT 3.1); "
        + "one naming no version, or another number, stops the start; --listener takes it too")
    void configFile() throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "allow_anonymous true\nlistener 0 127.0.0.1\naccept_protocol_versions 3, 4\n",
            StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory"});
        final int port = launch(context);
        assertThat(connect(port, true, "five")).isEqualTo(ReasonCode.UNSUPPORTED_PROTOCOL_VERSION);
        assertThat(connect(port, false, "three")).isZero();

        for (final String bad : new String[]{"2", "4,6", "", "five"})
        {
            Files.writeString(conf, "listener 1883\naccept_protocol_versions " + bad + "\n",
                StandardCharsets.UTF_8);
            assertThatThrownBy(() -> Main.rereadContext(new String[]{"-c", conf.toString()})).as(bad)
                .hasMessageContaining("accept_protocol_versions");
        }
        final ListenerSettings fromFlag = ConfigFile.parseListener("1884,accept_protocol_versions=5");
        assertThat(fromFlag.accepts(5)).isTrue();
        assertThat(fromFlag.accepts(4)).isFalse();
        assertThat(fromFlag.accepts(3)).isFalse();
        assertThat(ConfigFile.parseListener("1885").accepts(3)).as("by default MQTT 3.1 too, as Mosquitto").isTrue();
    }
}
