package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.connect.connack.Mqtt5ConnAck;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.mqttv5.client.MqttDisconnectResponse;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 CONNECT and CONNACK end to end with the HiveMQ client, Paho v5 and raw bytes: clean start and session
 * expiry, what the CONNACK announces (assigned client identifier, server keep alive, receive maximum, maximum packet
 * size, a capped session expiry), the limits a client sets on what it receives (Receive Maximum, Maximum Packet
 * Size, Topic Alias Maximum), and the DISCONNECT a session's old connection gets on takeover.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5ConnectTest extends InProcessBrokerTest
{
    @Test
    @DisplayName("MQTT-3.1.2-4, MQTT-3.1.2-5, MQTT-3.2.2-2, MQTT-3.2.2-3: session expiry 0 ends the session with the "
        + "connection; > 0 keeps it, resumed with session present 1 and its queued message; clean start 1 discards it")
    void cleanStartAndSessionExpiry() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));

        final Hive5 brief = closeLater(new Hive5(port, "brief"));
        assertThat(brief.client.connectWith().cleanStart(true).sessionExpiryInterval(0).send().isSessionPresent())
            .isFalse();
        brief.subscribe("se/#", 1);
        brief.client.disconnect();
        assertThat(brief.client.connectWith().cleanStart(false).sessionExpiryInterval(0).send().isSessionPresent())
            .as("session present after a session expiry of 0").isFalse();
        brief.client.disconnect();

        final Hive5 kept = closeLater(new Hive5(port, "kept"));
        assertThat(kept.client.connectWith().cleanStart(true).sessionExpiryInterval(60).send().isSessionPresent())
            .isFalse();
        kept.subscribe("se/#", 1);
        kept.client.disconnect();
        publisher.publish("se/1", "while-away", 1, false);
        assertThat(kept.client.connectWith().cleanStart(false).sessionExpiryInterval(60).send().isSessionPresent())
            .as("session present after a session expiry of 60 s").isTrue();
        assertThat(Hive5.text(kept.next())).isEqualTo("while-away");
        kept.client.disconnect();

        // a new client object: the HiveMQ client drops its publish flows when its session is not resumed
        final Hive5 fresh = closeLater(new Hive5(port, "kept"));
        assertThat(fresh.client.connectWith().cleanStart(true).sessionExpiryInterval(60).send().isSessionPresent())
            .as("session present with clean start 1").isFalse();
        fresh.subscribe("marker", 1);
        publisher.publish("se/2", "after-clean-start", 1, false);
        assertThat(fresh.drainUntilMarker(publisher, "marker")).as("through the discarded subscription").isEmpty();
    }

    @Test
    @DisplayName("3.2.2.3.2: a Session Expiry Interval of 0xFFFFFFFF is capped by --persistent-client-expiration and "
        + "the applied value announced in the CONNACK; one within the cap is not announced")
    void sessionExpiryCapped() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.persistentClientExpirationMs(3_600_000)));
        final Hive5 forever = closeLater(new Hive5(port, "forever"));
        final Mqtt5ConnAck capped = forever.client.connectWith().cleanStart(true).sessionExpiryInterval(0xFFFF_FFFFL)
            .send();
        assertThat(capped.getSessionExpiryInterval()).hasValue(3_600);

        final Hive5 modest = closeLater(new Hive5(port, "modest"));
        final Mqtt5ConnAck asked = modest.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send();
        assertThat(asked.getSessionExpiryInterval()).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.1.3-6, MQTT-3.2.2-16: a client with an empty client identifier is assigned one, announced in "
        + "the CONNACK and different for each client")
    void assignedClientIdentifier() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 first = closeLater(new Hive5(Hive5.builder(port, "x").identifier(""), false));
        final Hive5 second = closeLater(new Hive5(Hive5.builder(port, "x").identifier(""), false));
        final String firstId = first.client.connect().getAssignedClientIdentifier().orElseThrow().toString();
        final String secondId = second.client.connect().getAssignedClientIdentifier().orElseThrow().toString();
        assertThat(firstId).isNotEmpty().isNotEqualTo(secondId);

        final Hive5 named = closeLater(new Hive5(port, "named"));
        assertThat(named.client.connect().getAssignedClientIdentifier()).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.2.2-21: --max-keepalive caps a longer (or absent) keep alive, announced as Server Keep Alive; "
        + "a shorter one stands and is not announced")
    void serverKeepAlive() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxKeepAliveSeconds(30)));
        final Hive5 lazy = closeLater(new Hive5(port, "lazy"));
        assertThat(lazy.client.connectWith().keepAlive(120).send().getServerKeepAlive()).hasValue(30);
        final Hive5 none = closeLater(new Hive5(port, "none"));
        assertThat(none.client.connectWith().keepAlive(0).send().getServerKeepAlive()).hasValue(30);
        final Hive5 brisk = closeLater(new Hive5(port, "brisk"));
        assertThat(brisk.client.connectWith().keepAlive(10).send().getServerKeepAlive()).isEmpty();
    }

    @Test
    @DisplayName("3.2.2.3.3, 3.2.2.3.6: the CONNACK announces --receive-maximum and --max-packet-size, and a client "
        + "kept to a Receive Maximum of 2 still gets 20 QoS 1 messages through")
    void brokerLimitsAnnounced() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.receiveMaximum(2).maxPacketSize(4_096)));
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("rm/#", 1);
        final Hive5 publisher = closeLater(new Hive5(port, "pub"));
        final Mqtt5ConnAck connAck = publisher.client.connect();
        assertThat(connAck.getRestrictions().getReceiveMaximum()).isEqualTo(2);
        assertThat(connAck.getRestrictions().getMaximumPacketSize()).isEqualTo(4_096);
        final List<java.util.concurrent.CompletableFuture<?>> sent = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++)
        {
            sent.add(publisher.client.toAsync().publishWith().topic("rm/t").qos(Hive5.qos(1))
                .payload(("m" + i).getBytes()).send());
        }
        for (int i = 0; i < 20; i++)
        {
            assertThat(Hive5.text(subscriber.next())).isEqualTo("m" + i);
        }
        for (final java.util.concurrent.CompletableFuture<?> future : sent)
        {
            future.get(10, TimeUnit.SECONDS);
        }
    }

    @Test
    @DisplayName("MQTT-3.3.4-9: with the client's Receive Maximum of 2, never more than 2 QoS 1 messages are "
        + "unacknowledged; each acknowledgement lets the next one go")
    void clientReceiveMaximum() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 subscriber = closeLater(new Hive5(Hive5.builder(port, "slow"), true));
        subscriber.client.connectWith().restrictions().receiveMaximum(2).applyRestrictions().send();
        subscriber.subscribe("rm/#", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        for (int i = 0; i < 10; i++)
        {
            publisher.publish("rm/t", "m" + i, 1, false);
        }
        final ArrayDeque<Mqtt5Publish> unacknowledged = new ArrayDeque<>();
        int received = 0;
        while (received < 10 || !unacknowledged.isEmpty())
        {
            while (received < 10 && unacknowledged.size() < 2)
            {
                final Mqtt5Publish publish = subscriber.next();
                assertThat(publish).as("message %d", received).isNotNull();
                assertThat(Hive5.text(publish)).isEqualTo("m" + received);
                unacknowledged.add(publish);
                received++;
            }
            if (received < 10)
            {
                assertThat(subscriber.received.poll(200, TimeUnit.MILLISECONDS)).as("a third unacknowledged message")
                    .isNull();
            }
            unacknowledged.poll().acknowledge();
        }
        assertThat(subscriber.received).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.1.2-25: a client with a Maximum Packet Size of 200 gets the small messages, not the big one, "
        + "which is counted as PACKET_TOO_LARGE_FOR_CLIENT")
    void clientMaximumPacketSize() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 subscriber = closeLater(new Hive5(Hive5.builder(port, "small"), false));
        subscriber.client.connectWith().restrictions().maximumPacketSize(200).applyRestrictions().send();
        subscriber.subscribe("mp/#", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("mp/a", "small-1", 1, false);
        publisher.publish("mp/b", "x".repeat(500), 1, false);
        publisher.publish("mp/c", "small-2", 0, false);
        final List<Mqtt5Publish> before = subscriber.drainUntilMarker(publisher, "mp/marker");
        assertThat(before).extracting(Hive5::text).containsExactly("small-1", "small-2");
        assertThat(broker.counters().get(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.1.2-26, MQTT-3.3.2-12: a client allowing topic aliases gets every message on its right topic")
    void topicAliasesResolved() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 subscriber = closeLater(new Hive5(Hive5.builder(port, "aliased"), false));
        subscriber.client.connectWith().restrictions().topicAliasMaximum(2).applyRestrictions().send();
        subscriber.subscribe("ta/#", 0);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final String[] topics = {"ta/a", "ta/b", "ta/a", "ta/c", "ta/a", "ta/b", "ta/d", "ta/c", "ta/a"};
        for (int i = 0; i < topics.length; i++)
        {
            publisher.publish(topics[i], "m" + i, 1, false);
        }
        for (int i = 0; i < topics.length; i++)
        {
            final Mqtt5Publish publish = subscriber.next();
            assertThat(publish.getTopic().toString()).as("message %d", i).isEqualTo(topics[i]);
            assertThat(Hive5.text(publish)).isEqualTo("m" + i);
        }
    }

    @Test
    @DisplayName("MQTT-3.1.2-26, MQTT-3.3.2-11, MQTT-3.1.2-27: on the wire, the second message on a topic carries only "
        + "its alias (within the client's maximum) and an empty topic; a client without aliases gets none")
    void topicAliasOnTheWire() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final RawClient aliased = closeLater(new RawClient(port).version(MqttVersion.V5));
        assertThat(aliased.handshake(RawClient.connect5("raw-aliased",
            new MqttProperties().setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, 1)))).isZero();
        aliased.send(RawClient.subscribe5(1, "ta/#", 0));
        assertThat(aliased.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient plain = closeLater(new RawClient(port).version(MqttVersion.V5));
        assertThat(plain.handshake(RawClient.connect5("raw-plain", null))).isZero();
        plain.send(RawClient.subscribe5(1, "ta/#", 0));
        assertThat(plain.readPacket(5_000)).isEqualTo(PacketType.SUBACK);

        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("ta/first", "1", 1, false);
        publisher.publish("ta/first", "2", 1, false);
        publisher.publish("ta/second", "3", 1, false);

        final PublishFlyweight publish = aliased.decoder().publish();
        assertThat(aliased.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(publish.topic().asString()).isEqualTo("ta/first");
        final int alias = publish.properties().intValue(PropertyId.TOPIC_ALIAS, 0);
        assertThat(alias).isEqualTo(1);
        assertThat(aliased.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(publish.topic().length()).as("topic length with an alias").isZero();
        assertThat(publish.properties().intValue(PropertyId.TOPIC_ALIAS, 0)).isEqualTo(alias);
        assertThat(publish.payload().asString()).isEqualTo("2");
        assertThat(aliased.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(publish.payload().asString()).isEqualTo("3");
        if (publish.topic().length() == 0)
        {
            throw new AssertionError("a second topic cannot use the only alias without setting it");
        }
        assertThat(publish.topic().asString()).isEqualTo("ta/second");
        assertThat(publish.properties().intValue(PropertyId.TOPIC_ALIAS, 1)).as("alias beyond the maximum")
            .isLessThanOrEqualTo(1);

        for (int i = 1; i <= 3; i++)
        {
            assertThat(plain.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(plain.decoder().publish().properties().has(PropertyId.TOPIC_ALIAS)).isFalse();
            assertThat(plain.decoder().publish().topic().asString()).isNotEmpty();
            assertThat(plain.decoder().publish().payload().asString()).isEqualTo(Integer.toString(i));
        }
    }

    @Test
    @DisplayName("MQTT-3.1.4-3, MQTT-3.14.2-1: a second connection with the same client identifier takes the session "
        + "over; the old 5.0 connection gets DISCONNECT 0x8E (session taken over)")
    void takeover() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Paho5 first = closeLater(Paho5.connect(port, "twin"));
        final Paho5 second = closeLater(Paho5.connect(port, "twin"));
        final MqttDisconnectResponse response = first.disconnected.get(10, TimeUnit.SECONDS);
        assertThat(response.getReturnCode()).isEqualTo(ReasonCode.SESSION_TAKEN_OVER).isEqualTo(0x8E);
        assertThat(second.client.isConnected()).isTrue();
    }

    @Test
    @DisplayName("MQTT-3.1.4-3, MQTT-3.14.1-1: on the wire, the taken-over connection reads a DISCONNECT 0x8E as its "
        + "last packet")
    void takeoverOnTheWire() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final RawClient first = closeLater(new RawClient(port).version(MqttVersion.V5));
        assertThat(first.handshake(RawClient.connect5("twin", null))).isZero();
        final RawClient second = closeLater(new RawClient(port).version(MqttVersion.V5));
        assertThat(second.handshake(RawClient.connect5("twin", null))).isZero();
        assertThat(first.readPacketOrClosed(5_000)).isEqualTo(PacketType.DISCONNECT);
        assertThat(first.decoder().disconnect().reasonCode()).isEqualTo(0x8E);
        assertThat(first.closedWithin(5_000)).isTrue();
    }
}
