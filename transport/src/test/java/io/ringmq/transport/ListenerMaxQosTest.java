package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.mqttv5.client.IMqttToken;
import org.eclipse.paho.mqttv5.client.MqttClient;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.client.persist.MemoryPersistence;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A listener's own {@code max_qos} (Mosquitto's is per listener): what a client of that listener is told in CONNACK,
 * granted on SUBSCRIBE, and what its PUBLISH or will above it gets, while a client of another listener uses every
 * QoS; {@code --max-qos} caps every listener; a reload that changes a listener's {@code max_qos} applies to its new
 * connections. With Paho 5.0 and raw 3.1.1 and 5.0 packets.
 */
@Timeout(60)
class ListenerMaxQosTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;


    private static BrokerContext context(final ListenerSettings restricted)
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .addListener(restricted);
    }

    private static byte[] publish(final int version, final int qos)
    {
        return ServerCapabilitiesTest.publish(version, "cap/t", qos, false);
    }

    private static byte[] connectWithWill(final int version, final int willQos)
    {
        return ServerCapabilitiesTest.connectWithWill(version, willQos, false);
    }

    private MqttClient paho(final int port, final String clientId) throws Exception
    {
        final MqttClient client = new MqttClient("tcp://127.0.0.1:" + port, clientId, new MemoryPersistence());
        closeLater(() ->
        {
            if (client.isConnected())
            {
                client.disconnect();
            }
            client.close();
        });
        return client;
    }

    /**
     * @return the Maximum QoS a 5.0 client of the port is told (2: none said).
     */
    private int maximumQosTold(final int port, final String clientId) throws Exception
    {
        try (RawClient v5 = new RawClient(port).v5())
        {
            assertThat(v5.handshake(RawClient.connect5(clientId, null))).isZero();
            return v5.decoder().connack().properties().has(PropertyId.MAXIMUM_QOS) ?
                (int)v5.decoder().connack().properties().longValue(PropertyId.MAXIMUM_QOS, 2) : 2;
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-9, MQTT-3.2.2-10: a listener with max_qos 1 tells its 5.0 clients Maximum QoS 1 and "
        + "grants their QoS 2 subscriptions QoS 1 (3.1.1 too); the default listener says nothing and grants QoS 2; a "
        + "QoS 2 message from the open listener reaches the restricted subscriber at QoS 1")
    void connackAndGrantsPerListener() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(1)));
        final int open = broker.ports()[0];
        final int restricted = broker.ports()[1];
        assertThat(maximumQosTold(restricted, "told")).isEqualTo(1);
        assertThat(maximumQosTold(open, "untold")).isEqualTo(2);

        final MqttClient limited = paho(restricted, "limited");
        final IMqttToken token = limited.connectWithResult(new MqttConnectionOptions());
        assertThat(token.getResponseProperties().getMaximumQoS()).isEqualTo(1);
        assertThat(limited.subscribe(new MqttSubscription[]{new MqttSubscription("cap/#", 2)}).getReasonCodes())
            .containsExactly(1);
        final MqttClient full = paho(open, "full");
        full.connect(new MqttConnectionOptions());
        assertThat(full.subscribe(new MqttSubscription[]{new MqttSubscription("cap/#", 2)}).getReasonCodes())
            .containsExactly(2);
        try (RawClient v3 = new RawClient(restricted))
        {
            assertThat(v3.handshake(RawClient.connect("sub3", true, 60))).isZero();
            v3.send(RawClient.subscribe(1, "cap/#", 2));
            assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(v3.decoder().suback().reasonCode(0)).isEqualTo(1);
            try (RawClient publisher = new RawClient(open).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
                publisher.send(publish(MqttVersion.V5, 2));
                assertThat(publisher.readPacket(5_000)).as("QoS 2 is open here").isEqualTo(PacketType.PUBREC);
            }
            assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(v3.decoder().publish().qos()).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-11, MQTT-3.2.2-12: on a listener with max_qos 0 a QoS 1 PUBLISH ends a 5.0 connection "
        + "with 0x9B and a 3.1.1 one unanswered, a QoS 1 will is refused (5.0: CONNACK 0x9B); the default listener "
        + "takes both")
    void publishAndWillAboveTheListenersMaximum() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(0)));
        final int open = broker.ports()[0];
        final int restricted = broker.ports()[1];
        try (RawClient v5 = new RawClient(restricted).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("p5", null))).isZero();
            v5.send(publish(MqttVersion.V5, 1));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
        }
        try (RawClient v3 = new RawClient(restricted))
        {
            assertThat(v3.handshake(RawClient.connect("p3", true, 60))).isZero();
            v3.send(publish(MqttVersion.V3_1_1, 1));
            assertThat(v3.closedWithin(5_000)).isTrue();
        }
        try (RawClient v5 = new RawClient(restricted).v5())
        {
            assertThat(v5.handshake(connectWithWill(MqttVersion.V5, 1))).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
        }
        try (RawClient v5 = new RawClient(open).v5())
        {
            assertThat(v5.handshake(connectWithWill(MqttVersion.V5, 1))).isZero();
            v5.send(publish(MqttVersion.V5, 1));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
    }

    @Test
    @DisplayName("--max-qos caps every listener: under --max-qos 0 a listener with max_qos 1 tells Maximum QoS 0")
    void brokerMaximumCapsTheListeners() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(1)).limits(l -> l.maxQos(0)));
        assertThat(maximumQosTold(broker.ports()[1], "capped")).isZero();
        assertThat(maximumQosTold(broker.ports()[0], "default")).isZero();
    }

    @Test
    @DisplayName("a reload that changes a listener's max_qos: its new connections are told and granted the new value, "
        + "a connection made before keeps what its CONNACK said")
    void reloadChangesTheListenersMaximum() throws Exception
    {
        final int port = TestBrokers.freePort();
        launch(context(new ListenerSettings(port, "127.0.0.1").maxQos(1)));
        try (RawClient before = new RawClient(port).v5())
        {
            assertThat(before.handshake(RawClient.connect5("before", null))).isZero();
            assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1").maxQos(2))))
                .contains("reloaded");
            assertThat(maximumQosTold(port, "after")).isEqualTo(2);
            before.send(publish(MqttVersion.V5, 2));
            assertThat(before.readPacketOrClosed(5_000)).as("its CONNACK said QoS 1").isEqualTo(PacketType.DISCONNECT);
        }
    }

    @Test
    @DisplayName("a config file: max_qos in a listener section is that listener's; one before any listener line caps "
        + "every listener (Mosquitto gives it to the default listener only: the stricter reading, with a warning)")
    void configFile() throws Exception
    {
        final int first = TestBrokers.freePort();
        final int second = TestBrokers.freePort();
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "max_qos 1\nallow_anonymous true\nlistener " + first + " 127.0.0.1\nmax_qos 0\n" +
            "listener " + second + " 127.0.0.1\n", StandardCharsets.UTF_8);
        final Main.Options options = Main.withConfigFile(new String[]{"-c", conf.toString()});
        assertThat(options.fromFile().warnings).containsExactly(conf + ":1: max_qos before any listener line caps " +
            "every listener in ringmq (Mosquitto gives it to the default listener only); put it after a listener " +
            "line for that listener alone");
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--bind", "127.0.0.1",
            "--port", "0", "--sys-interval", "0", "--persistence", "memory"});
        assertThat(context.limits().maxQos()).isEqualTo(1);
        assertThat(context.listeners()).extracting(ListenerSettings::maxQos).containsExactly(2, 0, 2);
        launch(context);
        assertThat(maximumQosTold(broker.ports()[0], "default")).isEqualTo(1);
        assertThat(maximumQosTold(first, "first")).isZero();
        assertThat(maximumQosTold(second, "second")).isEqualTo(1);
    }
}
