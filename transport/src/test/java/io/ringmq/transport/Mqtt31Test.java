package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 3.1 clients ("MQIsdp", protocol level 3: old devices, PubSubClient built for 3.1), served as 3.1.1 as
 * Mosquitto serves them. Before, they were refused with return code 1, where Mosquitto 2.0.11 took them.
 */
@Timeout(60)
class Mqtt31Test extends InProcessBrokerTest
{
    private static MqttConnectOptions v31(final boolean clean)
    {
        final MqttConnectOptions options = Paho.options(clean);
        options.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1);
        return options;
    }

    /**
     * @return an MQTT 3.1 CONNECT: "MQIsdp", level 3, keep-alive 60.
     */
    private static byte[] connect31(final String clientId, final boolean clean)
    {
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.writeBytes(new byte[]{0, 6, 'M', 'Q', 'I', 's', 'd', 'p', 3, (byte)(clean ? 0x02 : 0), 0, 60});
        final byte[] id = clientId.getBytes(StandardCharsets.UTF_8);
        body.writeBytes(new byte[]{(byte)(id.length >> 8), (byte)id.length});
        body.writeBytes(id);
        final ByteArrayOutputStream packet = new ByteArrayOutputStream();
        packet.write(0x10);
        packet.write(body.size()); // under 128 bytes here
        packet.writeBytes(body.toByteArray());
        return packet.toByteArray();
    }

    @Test
    @DisplayName("Paho in MQTT 3.1 mode connects, subscribes and gets QoS 0, 1 and 2 messages from a 3.1.1 and a 5.0 " +
        "publisher, each publisher's in its order [MQTT-4.6.0-6]")
    void pahoSpeaks31() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Paho old = closeLater(Paho.connect(port, "old-device", v31(true)));
        old.client.subscribe("dev/#", 2);
        final Paho publisher = closeLater(Paho.connect(port, "pub311"));
        final Paho5 publisher5 = closeLater(Paho5.connect(port, "pub5"));
        for (int qos = 0; qos <= 2; qos++)
        {
            publisher.publish("dev/a", "311-" + qos, qos, false);
        }
        publisher5.publish("dev/b", "five", 1);
        final java.util.List<String> got = new java.util.ArrayList<>();
        while (got.size() < 4)
        {
            final Paho.Received message = old.received.poll(10, TimeUnit.SECONDS);
            assertThat(message).as("message " + got.size() + ", after " + got).isNotNull();
            got.add(message.payload());
        }
        // one publisher's, in its order; the other publisher's anywhere among them
        assertThat(got).containsExactlyInAnyOrder("311-0", "311-1", "311-2", "five");
        assertThat(got.stream().filter(payload -> payload.startsWith("311"))).containsExactly("311-0", "311-1", "311-2");
    }

    @Test
    @DisplayName("a 3.1 session resumed (clean session 0) gets what was queued while it was away; its CONNACK's " +
        "acknowledge flags, reserved in 3.1, are 0 (3.1.1 would say Session Present)")
    void aResumedSessionGetsItsQueueAndNoSessionPresentFlag() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        try (RawClient first = new RawClient(port))
        {
            assertThat(first.handshake(connect31("keeper", false))).isZero();
            first.send(RawClient.subscribe(1, "q", 1));
            assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            first.send(new byte[]{(byte)0xE0, 0}); // DISCONNECT
        }
        final Paho publisher = closeLater(Paho.connect(port, "pub"));
        publisher.publish("q", "while away", 1, false);
        try (RawClient again = new RawClient(port))
        {
            again.send(connect31("keeper", false));
            assertThat(again.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            assertThat(again.lastPacket()).as("CONNACK: flags 0, accepted").containsExactly(0x20, 0x02, 0x00, 0x00);
            assertThat(again.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        }
        try (RawClient v311 = new RawClient(port))
        {
            v311.send(RawClient.connect("keeper", false, 60));
            assertThat(v311.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            assertThat(v311.lastPacket()).as("the same session in 3.1.1: Session Present [MQTT-3.2.2-2]")
                .containsExactly(0x20, 0x02, 0x01, 0x00);
        }
    }

    @Test
    @DisplayName("a 3.1 CONNECT without a client id is refused with return code 2 (3.1 assigns none), as Mosquitto " +
        "refuses it; a listener whose accept_protocol_versions leaves out 3 refuses 3.1 with return code 1")
    void emptyClientIdAndListenersThatLeaveItOut() throws Exception
    {
        launch(TestBrokers.v5Context().addListener(new ListenerSettings(0, "127.0.0.1")
            .acceptProtocolVersions(1 << 4 | 1 << 5)));
        final int open = broker.ports()[0];
        final int without31 = broker.ports()[1];
        try (RawClient anonymous = new RawClient(open))
        {
            assertThat(anonymous.handshake(connect31("", true))).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        }
        assertThat(broker.counters().get(BrokerCounters.CLIENT_ID_REFUSED)).isEqualTo(1);
        try (RawClient refused = new RawClient(without31))
        {
            assertThat(refused.handshake(connect31("old", true))).isEqualTo(ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION);
        }
        try (RawClient taken = new RawClient(without31))
        {
            assertThat(taken.handshake(RawClient.connect("new", true, 60))).as("3.1.1 on it").isZero();
        }
    }
}
