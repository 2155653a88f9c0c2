package io.ringmq.transport;

import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Another broker's 3.1.1 bridge connecting with protocol level 0x84 (Mosquitto's {@code try_private}), as Mosquitto
 * takes it: admitted as 3.1.1, and its subscriptions get No Local (what it published is not sent back to it) and
 * Retain As Published (a retained message stays retained when it is forwarded live), except a shared subscription,
 * where No Local is a protocol error [MQTT-3.8.3-4].
 */
@Timeout(30)
class RemoteBridgeLevelTest extends InProcessBrokerTest
{
    private static byte[] bridgeConnect(final String clientId)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(0x84).cleanStart(true).keepAlive(60);
        encoder.clientId().wrap(clientId);
        final byte[] bytes = new byte[encoder.encodedLength()];
        encoder.encode(new org.agrona.concurrent.UnsafeBuffer(bytes), 0);
        return bytes;
    }

    @Test
    @DisplayName("a 0x84 bridge gets neither its own messages back (No Local) and live retained messages keep their "
        + "retain flag (Retain As Published); a 3.1.1 client is told otherwise")
    void noLocalAndRetainAsPublished() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        try (RawClient bridge = new RawClient(port))
        {
            assertThat(bridge.handshake(bridgeConnect("mosquitto-bridge"))).isZero();
            bridge.send(RawClient.subscribe(1, "edge/#", 1));
            assertThat(bridge.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            final Paho plain = closeLater(Paho.connect(port, "plain"));
            plain.client.subscribe("edge/#", 1);

            bridge.send(RawClient.publish("edge/own", "from the bridge".getBytes(StandardCharsets.UTF_8), 1, 7));
            assertThat(bridge.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            assertThat(plain.next().payload()).isEqualTo("from the bridge");

            plain.publish("edge/state", "retained", 1, true);
            assertThat(bridge.readPacket(5_000)).as("the plain client's message, not its own").isEqualTo(
                PacketType.PUBLISH);
            assertThat(bridge.decoder().publish().topic().asString()).isEqualTo("edge/state");
            assertThat(bridge.decoder().publish().isRetain()).as("Retain As Published").isTrue();
            final Paho.Received live = plain.next();
            assertThat(live.topic()).isEqualTo("edge/state");
            assertThat(live.retained()).as("a 3.1.1 subscriber's live copy").isFalse();
        }
    }

    @Test
    @DisplayName("MQTT-3.8.3-4: a 0x84 bridge's shared subscription gets no No Local: its own message comes back")
    void sharedSubscriptionWithoutNoLocal() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        try (RawClient bridge = new RawClient(port))
        {
            assertThat(bridge.handshake(bridgeConnect("mosquitto-bridge"))).isZero();
            bridge.send(RawClient.subscribe(1, "$share/g/work/#", 1));
            assertThat(bridge.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(bridge.decoder().suback().reasonCode(0)).isEqualTo(1);
            bridge.send(RawClient.publish("work/1", "job".getBytes(StandardCharsets.UTF_8), 1, 9));
            int type = bridge.readPacket(5_000);
            if (type == PacketType.PUBACK)
            {
                type = bridge.readPacket(5_000);
            }
            assertThat(type).isEqualTo(PacketType.PUBLISH);
            assertThat(bridge.decoder().publish().topic().asString()).isEqualTo("work/1");
        }
    }
    @Test
    @DisplayName("MQTT-3.3.1-9: a 3.1.1 client that resumes a session whose 5.0 connection subscribed with Retain As "
        + "Published gets RETAIN 0 on live messages; only a 0x84 bridge keeps it")
    void plain311ResumingGetsRetainZero() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Paho5 five = new Paho5(port, "switcher");
        final org.eclipse.paho.mqttv5.client.MqttConnectionOptions kept = Paho5.options();
        kept.setCleanStart(false);
        kept.setSessionExpiryInterval(300L);
        five.client.connect(kept).waitForCompletion(10_000);
        final org.eclipse.paho.mqttv5.common.MqttSubscription rap =
            new org.eclipse.paho.mqttv5.common.MqttSubscription("state/#", 1);
        rap.setRetainAsPublished(true);
        five.subscribe(rap, 0);
        five.close();

        final Paho three = closeLater(Paho.connect(port, "switcher", Paho.options(false)));
        assertThat(three.sessionPresent()).isTrue();
        closeLater(Paho.connect(port, "publisher")).publish("state/door", "open", 1, true);
        final Paho.Received live = three.next();
        assertThat(live.topic()).isEqualTo("state/door");
        assertThat(live.retained()).as("RETAIN of a live message to a 3.1.1 client").isFalse();
    }
}
