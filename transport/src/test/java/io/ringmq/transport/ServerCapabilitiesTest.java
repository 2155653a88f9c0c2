package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.mqttv5.client.IMqttToken;
import org.eclipse.paho.mqttv5.client.MqttClient;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.client.persist.MemoryPersistence;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --max-qos} and {@code --retain-available} (Mosquitto's {@code max_qos} and {@code retain_available}): what a
 * broker that supports less than all of QoS and retained messages tells MQTT 5.0 clients in CONNACK, grants on
 * SUBSCRIBE, and does with a PUBLISH or will beyond it, on 5.0 and 3.1.1, with Paho and raw packets.
 */
@Timeout(60)
class ServerCapabilitiesTest
{
    @TempDir
    Path directory;

    private RingMq broker;

    @AfterEach
    void stop()
    {
        if (null != broker)
        {
            broker.close();
        }
    }

    private RingMq start(final String... options) throws IOException
    {
        final RingMqBuilder builder = RingMq.builder().threading(BrokerContext.Threading.SHARED)
            .option("sys-interval", "0");
        for (int i = 0; i < options.length; i += 2)
        {
            builder.option(options[i], options[i + 1]);
        }
        broker = builder.start();
        return broker;
    }

    static byte[] publish(final int version, final String topic, final int qos, final boolean retain)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos).retain(retain)
            .packetId(qos == 0 ? 0 : 1).topic(topic).payload("m".getBytes());
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] connectWithWill(final int version, final int willQos, final boolean willRetain)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(version).cleanStart(true).keepAlive(60)
            .will(willQos, willRetain, null);
        encoder.clientId().wrap("willing");
        encoder.willTopic().wrap("will/t");
        encoder.willPayload().wrap("gone");
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    private static MqttClient paho(final int port, final String clientId) throws Exception
    {
        return new MqttClient("tcp://127.0.0.1:" + port, clientId, new MemoryPersistence());
    }

    @Test
    @DisplayName("MQTT-3.2.2-9: with --max-qos 1 a 5.0 CONNACK says Maximum QoS 1; without it, neither Maximum QoS "
        + "nor Retain Available is sent (both mean: all supported)")
    void connackAnnouncesMaximumQos() throws Exception
    {
        start("max-qos", "1");
        final MqttClient client = paho(broker.port(), "told");
        final IMqttToken token = client.connectWithResult(new MqttConnectionOptions());
        assertThat(token.getResponseProperties().getMaximumQoS()).isEqualTo(1);
        assertThat(token.getResponseProperties().isRetainAvailable()).isTrue();
        client.disconnect();
        client.close();
        broker.close();
        start();
        try (RawClient raw = new RawClient(broker.port()).v5())
        {
            assertThat(raw.handshake(RawClient.connect5("plain", null))).isZero();
            assertThat(raw.decoder().connack().properties().has(PropertyId.MAXIMUM_QOS)).isFalse();
            assertThat(raw.decoder().connack().properties().has(PropertyId.RETAIN_AVAILABLE)).isFalse();
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-10: with --max-qos 1 a SUBSCRIBE asking QoS 2 is accepted and granted QoS 1, on 5.0 "
        + "(Paho) and 3.1.1, and a QoS 1 message reaches it at QoS 1")
    void subscribeAboveTheMaximumIsGrantedIt() throws Exception
    {
        start("max-qos", "1");
        final MqttClient subscriber = paho(broker.port(), "sub5");
        subscriber.connect(new MqttConnectionOptions());
        final IMqttToken granted = subscriber.subscribe(
            new org.eclipse.paho.mqttv5.common.MqttSubscription[]{
                new org.eclipse.paho.mqttv5.common.MqttSubscription("cap/#", 2)});
        assertThat(granted.getReasonCodes()).containsExactly(1);
        try (RawClient v3 = new RawClient(broker.port()))
        {
            assertThat(v3.handshake(RawClient.connect("sub3", true, 60))).isZero();
            v3.send(RawClient.subscribe(1, "cap/#", 2));
            assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(v3.decoder().suback().reasonCode(0)).isEqualTo(1);
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                publisher.publish("cap/1", "m", 1, false);
            }
            assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(v3.decoder().publish().qos()).isEqualTo(1);
        }
        subscriber.disconnect();
        subscriber.close();
    }

    @Test
    @DisplayName("MQTT-3.2.2-11: with --max-qos 1 a QoS 2 PUBLISH ends a 5.0 connection with DISCONNECT 0x9B and a "
        + "3.1.1 one unanswered; a QoS 1 PUBLISH is acknowledged")
    void publishAboveTheMaximumEndsTheConnection() throws Exception
    {
        start("max-qos", "1");
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("p5", null))).isZero();
            v5.send(publish(MqttVersion.V5, "cap/t", 1, false));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            v5.send(publish(MqttVersion.V5, "cap/t", 2, false));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
            assertThat(v5.closedWithin(5_000)).isTrue();
        }
        try (RawClient v3 = new RawClient(broker.port()))
        {
            assertThat(v3.handshake(RawClient.connect("p3", true, 60))).isZero();
            v3.send(publish(MqttVersion.V3_1_1, "cap/t", 2, false));
            assertThat(v3.closedWithin(5_000)).isTrue();
        }
        assertThat(broker.unexpectedErrors()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.2.2-12: with --max-qos 1 a CONNECT whose will is QoS 2 is refused: 5.0 with CONNACK 0x9B, "
        + "3.1.1 closed unanswered (no return code says it), as Mosquitto does")
    void willAboveTheMaximumIsRefused() throws Exception
    {
        start("max-qos", "1");
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(connectWithWill(MqttVersion.V5, 2, false)))
                .isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
            assertThat(v5.closedWithin(5_000)).isTrue();
        }
        try (RawClient v3 = new RawClient(broker.port()))
        {
            v3.send(connectWithWill(MqttVersion.V3_1_1, 2, false));
            assertThat(v3.readPacketOrClosed(5_000)).as("closed, no CONNACK").isEqualTo(-1);
        }
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(connectWithWill(MqttVersion.V5, 1, true))).as("a QoS 1 will").isZero();
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-13, MQTT-3.2.2-14: with --retain-available false a 5.0 CONNACK says Retain Available 0, "
        + "a retained PUBLISH ends the connection with 0x9A (3.1.1: closed), a retained will is refused with CONNACK "
        + "0x9A; plain messages flow")
    void retainUnavailable() throws Exception
    {
        start("retain-available", "false");
        final MqttClient client = paho(broker.port(), "told");
        final IMqttToken token = client.connectWithResult(new MqttConnectionOptions());
        assertThat(token.getResponseProperties().isRetainAvailable()).isFalse();
        client.disconnect();
        client.close();
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("r5", null))).isZero();
            v5.send(publish(MqttVersion.V5, "cap/t", 1, false));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            v5.send(publish(MqttVersion.V5, "cap/t", 0, true));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.RETAIN_NOT_SUPPORTED);
        }
        try (RawClient v3 = new RawClient(broker.port()))
        {
            assertThat(v3.handshake(RawClient.connect("r3", true, 60))).isZero();
            v3.send(publish(MqttVersion.V3_1_1, "cap/t", 1, true));
            assertThat(v3.closedWithin(5_000)).isTrue();
        }
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(connectWithWill(MqttVersion.V5, 1, true)))
                .isEqualTo(ReasonCode.RETAIN_NOT_SUPPORTED);
        }
        try (RawClient reader = new RawClient(broker.port()))
        {
            assertThat(reader.handshake(RawClient.connect("reader", true, 60))).isZero();
            reader.send(RawClient.subscribe(1, "cap/#", 1));
            assertThat(reader.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            reader.send(RawClient.ping());
            assertThat(reader.readPacket(5_000)).as("nothing retained came").isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-10: a subscription granted QoS 1 under --max-qos 1 is kept at QoS 1 across a restart "
        + "with --max-qos 2")
    void grantedQosIsWhatIsStored() throws Exception
    {
        final String dataDir = directory.resolve("data").toString();
        start("max-qos", "1", "persistence", "rocksdb", "data-dir", dataDir);
        try (RawClient s = new RawClient(broker.port()))
        {
            assertThat(s.handshake(RawClient.connect("kept", false, 60))).isZero();
            s.send(RawClient.subscribe(1, "cap/#", 2));
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(s.decoder().suback().reasonCode(0)).isEqualTo(1);
        }
        broker.close();
        start("persistence", "rocksdb", "data-dir", dataDir);
        try (RawClient s = new RawClient(broker.port()))
        {
            assertThat(s.handshake(RawClient.connect("kept", false, 60))).isZero();
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                publisher.publish("cap/1", "m", 2, false);
            }
            assertThat(s.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(s.decoder().publish().qos()).as("at the QoS granted").isEqualTo(1);
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-11: the HiveMQ client (5.0) reads Maximum QoS 1 from CONNACK; its QoS 1 messages flow, "
        + "and a QoS 2 one (which it sends all the same) ends its connection with DISCONNECT 0x9B, as from Mosquitto")
    void hiveMqClientAndTheMaximum() throws Exception
    {
        start("max-qos", "1");
        final com.hivemq.client.mqtt.mqtt5.Mqtt5BlockingClient subscriber = com.hivemq.client.mqtt.mqtt5.Mqtt5Client
            .builder().identifier("h-sub").serverHost("127.0.0.1").serverPort(broker.port()).buildBlocking();
        final com.hivemq.client.mqtt.mqtt5.Mqtt5BlockingClient publisher = com.hivemq.client.mqtt.mqtt5.Mqtt5Client
            .builder().identifier("h-pub").serverHost("127.0.0.1").serverPort(broker.port()).buildBlocking();
        subscriber.connect();
        try (com.hivemq.client.mqtt.mqtt5.Mqtt5BlockingClient.Mqtt5Publishes publishes =
            subscriber.publishes(com.hivemq.client.mqtt.MqttGlobalPublishFilter.ALL))
        {
            subscriber.subscribeWith().topicFilter("hq/#").qos(com.hivemq.client.mqtt.datatypes.MqttQos.EXACTLY_ONCE)
                .send();
            assertThat(publisher.connect().getRestrictions().getMaximumQos())
                .isEqualTo(com.hivemq.client.mqtt.datatypes.MqttQos.AT_LEAST_ONCE);
            publisher.publishWith().topic("hq/t").qos(com.hivemq.client.mqtt.datatypes.MqttQos.AT_LEAST_ONCE)
                .payload("one".getBytes()).send();
            final java.util.Optional<com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish> received =
                publishes.receive(5, java.util.concurrent.TimeUnit.SECONDS);
            assertThat(received).isPresent();
            assertThat(new String(received.get().getPayloadAsBytes())).isEqualTo("one");
            assertThat(received.get().getQos()).isEqualTo(com.hivemq.client.mqtt.datatypes.MqttQos.AT_LEAST_ONCE);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> publisher.publishWith().topic("hq/t")
                    .qos(com.hivemq.client.mqtt.datatypes.MqttQos.EXACTLY_ONCE).payload("two".getBytes()).send())
                .rootCause()
                .isInstanceOfSatisfying(com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5DisconnectException.class,
                    disconnect -> assertThat(disconnect.getMqttMessage().getReasonCode())
                        .isEqualTo(com.hivemq.client.mqtt.mqtt5.message.disconnect.Mqtt5DisconnectReasonCode
                            .QOS_NOT_SUPPORTED));
        }
        subscriber.disconnect();
    }
}
