package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The MQTT 5.0 edge of one I/O agent, stepped by the test ({@link SteppedEdge}): spec bytes from a raw client on
 * one side, the ingress slots and the outbound ring on the other, no stage in between. Topic aliases, the receive
 * maximum, the server's DISCONNECT and its reason codes, the client's DISCONNECT, AUTH and keep-alive; and the same
 * bad input from a 3.1.1 client, which is closed as before, without a DISCONNECT.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5EdgeTest
{
    private static final byte[] PAYLOAD = "hello".getBytes(StandardCharsets.UTF_8);

    private final PublishFlyweight seen = new PublishFlyweight();
    private SteppedEdge edge;

    private SteppedEdge edge(final Consumer<BrokerContext> settings) throws Exception
    {
        final BrokerContext context = new BrokerContext();
        settings.accept(context);
        edge = new SteppedEdge(context);
        return edge;
    }

    @AfterEach
    void tearDown() throws Exception
    {
        if (null != edge)
        {
            edge.close();
        }
    }

    private static MqttProperties alias(final int alias)
    {
        return new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, alias);
    }

    /**
     * @return the PUBLISH in the next slot, decoded: what the pipeline sees.
     */
    private PublishFlyweight nextPublish(final long connectionId)
    {
        final IngressEvent event = edge.next();
        assertThat(event.kind).isEqualTo(IngressEvent.PACKET);
        assertThat(event.packetType).isEqualTo(PacketType.PUBLISH);
        assertThat(event.connectionId).isEqualTo(connectionId);
        final byte[] bytes = new byte[event.packetLength];
        event.packet.getBytes(0, bytes);
        assertThat(seen.wrap(new UnsafeBuffer(bytes), 0, bytes.length, MqttVersion.V5)).isEqualTo(bytes.length);
        assertThat(seen.properties().has(PropertyId.TOPIC_ALIAS)).as("no Topic Alias reaches the pipeline").isFalse();
        return seen;
    }

    private static byte[] bytesOf(final IngressEvent event)
    {
        final byte[] bytes = new byte[event.packetLength];
        event.packet.getBytes(0, bytes);
        return bytes;
    }

    @Test
    @DisplayName("MQTT-3.3.2-10, MQTT-3.3.2-11, MQTT-3.3.2-12: a Topic Alias with a topic sets the mapping, with an "
        + "empty topic uses it, and a new topic replaces it; the pipeline sees the full topic, no alias, the other "
        + "properties as sent (user properties in order) and a PUBLISH without an alias byte for byte")
    void topicAliasesAreResolvedToCanonicalPublishes() throws Exception
    {
        edge(context -> context.limits(l -> l.topicAliasMaximum(4)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "alias", 60, null);

        final MqttProperties sent = alias(2).setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, 60)
            .addUserProperty("z", "1").addUserProperty("a", "2").addUserProperty("z", "3");
        client.send(RawClient.publish5("sensors/temp", PAYLOAD, 1, 7, sent));
        PublishFlyweight publish = nextPublish(id);
        assertThat(publish.topic().asString()).isEqualTo("sensors/temp");
        assertThat(publish.packetId()).isEqualTo(7);
        assertThat(publish.qos()).isEqualTo(1);
        assertThat(publish.payload().asString()).isEqualTo("hello");
        assertThat(publish.properties().longValue(PropertyId.MESSAGE_EXPIRY_INTERVAL, 0)).isEqualTo(60);
        assertThat(publish.properties().userPropertyCount()).isEqualTo(3);
        assertThat(publish.properties().userPropertyKey(0).asString()).isEqualTo("z");
        assertThat(publish.properties().userPropertyValue(0).asString()).isEqualTo("1");
        assertThat(publish.properties().userPropertyKey(1).asString()).isEqualTo("a");
        assertThat(publish.properties().userPropertyValue(2).asString()).isEqualTo("3");

        client.send(RawClient.publish5("", PAYLOAD, 0, 0, alias(2).addUserProperty("k", "v")));
        publish = nextPublish(id);
        assertThat(publish.topic().asString()).isEqualTo("sensors/temp");
        assertThat(publish.properties().userPropertyCount()).isEqualTo(1);

        client.send(RawClient.publish5("other", PAYLOAD, 0, 0, alias(2)));
        assertThat(nextPublish(id).topic().asString()).isEqualTo("other");
        client.send(RawClient.publish5("", PAYLOAD, 0, 0, alias(2)));
        assertThat(nextPublish(id).topic().asString()).isEqualTo("other");
        assertThat(seen.properties().isEmpty()).isTrue();

        final byte[] plain = RawClient.publish5("plain", PAYLOAD, 1, 8, new MqttProperties().addUserProperty("b", "c"));
        client.send(plain);
        assertThat(bytesOf(edge.next())).as("no alias: handed as it came").isEqualTo(plain);
    }

    @Test
    @DisplayName("MQTT-3.3.2-8: Topic Alias 0 is answered with DISCONNECT 0x94 (Topic Alias invalid), then the close; "
        + "the end carries 0x94")
    void topicAliasZeroIsInvalid() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "zero", 60, null);
        final byte[] publish = RawClient.publish5("t", PAYLOAD, 0, 0, alias(1));
        publish[publish.length - PAYLOAD.length - 1] = 0; // the alias's low byte: 23 00 01 -> 23 00 00
        client.send(publish);
        edge.expectDisconnect(client, id, ReasonCode.TOPIC_ALIAS_INVALID);
        assertThat(edge.counters.get(BrokerCounters.PROTOCOL_ERRORS)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.3.2-9: a Topic Alias over the Topic Alias Maximum (maximum + 1) is answered with "
        + "DISCONNECT 0x94")
    void topicAliasOverTheMaximumIsInvalid() throws Exception
    {
        edge(context -> context.limits(l -> l.topicAliasMaximum(8)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "over", 60, null);
        client.send(RawClient.publish5("t", PAYLOAD, 0, 0, alias(8)));
        assertThat(nextPublish(id).topic().asString()).isEqualTo("t");
        client.send(RawClient.publish5("t", PAYLOAD, 0, 0, alias(9)));
        edge.expectDisconnect(client, id, ReasonCode.TOPIC_ALIAS_INVALID);
    }

    @Test
    @DisplayName("MQTT-3.3.2-9: with --topic-alias-maximum 0 every Topic Alias is invalid")
    void noAliasesAllowed() throws Exception
    {
        edge(context -> context.limits(l -> l.topicAliasMaximum(0)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "none", 60, null);
        client.send(RawClient.publish5("t", PAYLOAD, 0, 0, alias(1)));
        edge.expectDisconnect(client, id, ReasonCode.TOPIC_ALIAS_INVALID);
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: an empty topic with an alias never set is a protocol error, DISCONNECT 0x82")
    void unknownAliasIsAProtocolError() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "unknown", 60, null);
        client.send(RawClient.publish5("a", PAYLOAD, 0, 0, alias(1)));
        nextPublish(id);
        client.send(RawClient.publish5("", PAYLOAD, 0, 0, alias(2)));
        edge.expectDisconnect(client, id, ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    @DisplayName("MQTT-3.3.4-6: a client's PUBLISH with a Subscription Identifier is a protocol error, DISCONNECT 0x82")
    void subscriptionIdentifierFromAClient() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "sub-id", 60, null);
        final io.ringmq.protocol.PublishEncoder encoder = new io.ringmq.protocol.PublishEncoder().reset()
            .version(io.ringmq.protocol.MqttVersion.V5).topic("a").payload(PAYLOAD).subscriptionIds(new int[]{7}, 1);
        final org.agrona.concurrent.UnsafeBuffer bytes =
            new org.agrona.concurrent.UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(bytes, 0);
        client.send(bytes.byteArray());
        edge.expectDisconnect(client, id, ReasonCode.PROTOCOL_ERROR, "MQTT-3.3.4-6");
    }

    @Test
    @DisplayName("MQTT-3.1.2-25: a DISCONNECT's Reason String is left out when it would pass the client's Maximum "
        + "Packet Size")
    void reasonStringWithinMaximumPacketSize() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "small", 60,
            new MqttProperties().setInt(PropertyId.MAXIMUM_PACKET_SIZE, 16));
        client.send(RawClient.publish5("", PAYLOAD, 0, 0, alias(3)));
        edge.expectDisconnect(client, id, ReasonCode.PROTOCOL_ERROR);
        assertThat(client.decoder().disconnect().properties().has(PropertyId.REASON_STRING)).isFalse();
    }

    @Test
    @DisplayName("5.0 section 3.3.2.3.2: a payload marked UTF-8 that is not is refused with DISCONNECT 0x99; a valid "
        + "one passes")
    void payloadFormatInvalid() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "utf8", 60, null);
        final MqttProperties utf8 = new MqttProperties().setInt(PropertyId.PAYLOAD_FORMAT_INDICATOR, 1);
        client.send(RawClient.publish5("a", "héllo".getBytes(StandardCharsets.UTF_8), 0, 0, utf8));
        nextPublish(id);
        client.send(RawClient.publish5("a", new byte[]{(byte)0xC3, (byte)0x28}, 0, 0, utf8));
        edge.expectDisconnect(client, id, ReasonCode.PAYLOAD_FORMAT_INVALID, "payload marked UTF-8 is not");
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: what one connection's aliases keep is bounded (64 KiB, its topics and its table's "
        + "slots): three topics of 16 KiB and the table fit, a fourth gets DISCONNECT 0x97")
    void aliasBytesBounded() throws Exception
    {
        edge(context -> context.limits(l -> l.topicAliasMaximum(64)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "greedy", 60, null);
        final String long16k = "t".repeat(16 * 1024 - 10);
        for (int alias = 1; alias <= 3; alias++)
        {
            client.send(RawClient.publish5(long16k + alias, PAYLOAD, 0, 0, alias(alias)));
            nextPublish(id);
        }
        client.send(RawClient.publish5(long16k + 4, PAYLOAD, 0, 0, alias(4)));
        edge.expectDisconnect(client, id, ReasonCode.QUOTA_EXCEEDED);
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: alias table churn: 20,000 PUBLISHes remap 16 aliases over 2,000 topics of growing "
        + "length; every one reaches the pipeline with the topic its alias stood for then")
    void aliasTableChurn() throws Exception
    {
        edge(context -> context.limits(l -> l.topicAliasMaximum(16)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "churn", 60, null);
        final String[] current = new String[17];
        final java.util.Random random = new java.util.Random(42);
        final int batch = 200;
        for (int sent = 0; sent < 20_000; sent += batch)
        {
            final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            final String[] expected = new String[batch];
            for (int i = 0; i < batch; i++)
            {
                final int alias = 1 + random.nextInt(16);
                if (null == current[alias] || random.nextBoolean())
                {
                    final int topic = random.nextInt(2_000);
                    current[alias] = "t/" + topic + "/" + "x".repeat(topic % 97);
                    bytes.writeBytes(RawClient.publish5(current[alias], PAYLOAD, 0, 0, alias(alias)));
                }
                else
                {
                    bytes.writeBytes(RawClient.publish5("", PAYLOAD, 0, 0, alias(alias)));
                }
                expected[i] = current[alias];
            }
            client.send(bytes.toByteArray());
            for (int i = 0; i < batch; i++)
            {
                assertThat(nextPublish(id).topic().asString()).isEqualTo(expected[i]);
            }
        }
    }

    @Test
    @DisplayName("MQTT-3.3.2-10: the topic limits apply to the topic an alias stands for: over --max-topic-length "
        + "is DISCONNECT 0x90 (Topic Name invalid), and the alias is not set")
    void topicLimitsApplyToAliasedTopics() throws Exception
    {
        edge(context -> context.limits(l -> l.maxTopicLength(20).maxTopicLevels(3)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "limits", 60, null);
        client.send(RawClient.publish5("a/b/c/d", PAYLOAD, 0, 0, alias(1)));
        edge.expectDisconnect(client, id, ReasonCode.TOPIC_NAME_INVALID);
        assertThat(edge.counters.get(BrokerCounters.TOPIC_TOO_MANY_LEVELS)).isEqualTo(1);

        final RawClient second = edge.client();
        final long secondId = edge.connect5(second, "limits2", 60, null);
        second.send(RawClient.publish5("x".repeat(21), PAYLOAD, 0, 0, null));
        edge.expectDisconnect(second, secondId, ReasonCode.TOPIC_NAME_INVALID);
        assertThat(edge.counters.get(BrokerCounters.TOPIC_TOO_LONG)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.3.4-7: one QoS 1/2 PUBLISH more than the Receive Maximum is DISCONNECT 0x93; a PUBACK sent "
        + "to the client frees its place")
    void receiveMaximumOverflowByOne() throws Exception
    {
        edge(context -> context.limits(l -> l.receiveMaximum(3)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "quota", 60, null);
        for (int packetId = 1; packetId <= 3; packetId++)
        {
            client.send(RawClient.publish5("t", PAYLOAD, 1, packetId, null));
            nextPublish(id);
        }
        edge.answer(id, RawClient.ack(PacketType.PUBACK, 2), client, PacketType.PUBACK);
        client.send(RawClient.publish5("t", PAYLOAD, 0, 0, null)); // QoS 0 never counts
        nextPublish(id);
        client.send(RawClient.publish5("t", PAYLOAD, 1, 4, null)); // takes the freed place: 3 unanswered
        nextPublish(id);
        client.send(RawClient.publish5("t", PAYLOAD, 2, 5, null)); // the fourth
        edge.expectDisconnect(client, id, ReasonCode.RECEIVE_MAXIMUM_EXCEEDED);
    }

    @Test
    @DisplayName("MQTT-3.3.4-7: a QoS 2 PUBLISH sent again with its unanswered packet id counts once; PUBCOMP and a "
        + "failing PUBREC (>= 0x80) free the place, a successful PUBREC does not")
    void qos2ResendIsNotCountedTwice() throws Exception
    {
        edge(context -> context.limits(l -> l.receiveMaximum(2)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "qos2", 60, null);
        client.send(RawClient.publish5("t", PAYLOAD, 2, 1, null));
        nextPublish(id);
        final byte[] again = RawClient.publish5("t", PAYLOAD, 2, 1, null);
        again[0] |= 0x08; // DUP
        client.send(again);
        nextPublish(id);
        client.send(RawClient.publish5("t", PAYLOAD, 2, 2, null));
        nextPublish(id);
        edge.answer(id, RawClient.ack(PacketType.PUBREC, 1), client, PacketType.PUBREC); // still unanswered
        edge.answer(id, new byte[]{0x50, 0x03, 0x00, 0x02, (byte)0x80}, client, PacketType.PUBREC); // 2 failed
        client.send(RawClient.publish5("t", PAYLOAD, 1, 3, null));
        nextPublish(id);
        edge.answer(id, RawClient.ack(PacketType.PUBCOMP, 1), client, PacketType.PUBCOMP);
        client.send(RawClient.publish5("t", PAYLOAD, 2, 4, null));
        nextPublish(id);
        client.send(RawClient.publish5("t", PAYLOAD, 2, 5, null)); // 3 and 4 unanswered: one too many
        edge.expectDisconnect(client, id, ReasonCode.RECEIVE_MAXIMUM_EXCEEDED);
    }

    @Test
    @DisplayName("MQTT-3.14.4-3: a DISCONNECT with reason 0x04 (with will message) ends the connection as "
        + "DISCONNECTED carrying 0x04; a plain one carries 0x00 and no session expiry")
    void disconnectWithWillMessage() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "will", 60, null);
        client.send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.DISCONNECT_WITH_WILL_MESSAGE, null));
        edge.expectEnd(id, IngressEvent.DISCONNECTED, ReasonCode.DISCONNECT_WITH_WILL_MESSAGE);
        SteppedEdge.expectClosed(client);

        final RawClient plain = edge.client();
        final long plainId = edge.connect5(plain, "plain", 60, null);
        plain.send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.NORMAL_DISCONNECTION, null));
        final IngressEvent end = edge.expectEnd(plainId, IngressEvent.DISCONNECTED, 0);
        assertThat(end.sessionExpiryInterval).isEqualTo(IngressEvent.NONE);
    }

    @Test
    @DisplayName("MQTT-3.14.2-2: a DISCONNECT's Session Expiry Interval goes to the pipeline; non-zero where the "
        + "CONNECT's was 0 is a protocol error: DISCONNECT 0x82 and a lost connection")
    void disconnectSessionExpiry() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "expiry", 60,
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 10));
        client.send(RawClient.reasonPacket5(PacketType.DISCONNECT, 0,
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 0xFFFF_FFFF)));
        final IngressEvent end = edge.expectEnd(id, IngressEvent.DISCONNECTED, 0);
        assertThat(end.sessionExpiryInterval).isEqualTo(0xFFFF_FFFFL);

        final RawClient zero = edge.client();
        final long zeroId = edge.connect5(zero, "zero", 60, null); // no interval: 0
        zero.send(RawClient.reasonPacket5(PacketType.DISCONNECT, 0,
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 30)));
        final IngressEvent lost = edge.expectDisconnect(zero, zeroId, ReasonCode.PROTOCOL_ERROR);
        assertThat(lost.sessionExpiryInterval).isEqualTo(IngressEvent.NONE);

        final RawClient keep = edge.client();
        final long keepId = edge.connect5(keep, "keep", 60, null);
        keep.send(RawClient.reasonPacket5(PacketType.DISCONNECT, 0,
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 0)));
        assertThat(edge.expectEnd(keepId, IngressEvent.DISCONNECTED, 0).sessionExpiryInterval).isZero();
    }

    @Test
    @DisplayName("MQTT 5.0 4.12: an AUTH goes to the pipeline even before the CONNACK, while a PINGREQ waits for it "
        + "[MQTT-3.2.0-1]; the server's AUTH reaches the client before its CONNACK")
    void authPassesBeforeConnack() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client().v5();
        final MqttProperties method = new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "SCRAM-SHA-1");
        client.send(RawClient.connect5("auth", 60, method));
        final IngressEvent connect = edge.next();
        final long id = connect.connectionId;
        edge.answer(id, RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION, method), client,
            PacketType.AUTH);
        final byte[] auth = RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION, method);
        client.send(RawClient.ping());
        client.send(auth);
        // the PINGREQ is held, and the AUTH behind it with it; after the CONNACK both go on in order
        edge.answer(id, SteppedEdge.CONNACK_V5, client, PacketType.CONNACK);
        assertThat(edge.read(client)).isEqualTo(PacketType.PINGRESP);
        final IngressEvent handed = edge.next();
        assertThat(handed.packetType).isEqualTo(PacketType.AUTH);
        assertThat(bytesOf(handed)).isEqualTo(auth);

        final RawClient early = edge.client().v5();
        early.send(RawClient.connect5("early", 60, method));
        final long earlyId = edge.next().connectionId;
        early.send(auth);
        final IngressEvent before = edge.next();
        assertThat(before.packetType).as("AUTH before the CONNACK").isEqualTo(PacketType.AUTH);
        assertThat(before.connectionId).isEqualTo(earlyId);
    }

    @Test
    @DisplayName("MQTT 5.0 4.13: a packet over --max-packet-size is DISCONNECT 0x95 (Packet too large), counted")
    void packetTooLarge() throws Exception
    {
        edge(context -> context.limits(l -> l.maxPacketSize(1024)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "large", 60, null);
        client.send(new byte[]{0x30, (byte)0x81, 0x08}); // a PUBLISH claiming 1,025 bytes, judged by its header
        edge.expectDisconnect(client, id, ReasonCode.PACKET_TOO_LARGE);
        assertThat(edge.counters.get(BrokerCounters.PACKET_TOO_LARGE)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT 5.0 4.13: a malformed packet is DISCONNECT 0x81; a second CONNECT [MQTT-3.1.0-2] and a packet "
        + "only servers send are DISCONNECT 0x82")
    void malformedAndProtocolErrors() throws Exception
    {
        edge(context -> { });
        final RawClient malformed = edge.client();
        final long malformedId = edge.connect5(malformed, "malformed", 60, null);
        malformed.send(new byte[]{0x36, 0x05, 0x00, 0x01, 't', 0x00, 0x01}); // QoS 3 [MQTT-3.3.1-4]
        edge.expectDisconnect(malformed, malformedId, ReasonCode.MALFORMED_PACKET);

        final RawClient twice = edge.client();
        final long twiceId = edge.connect5(twice, "twice", 60, null);
        twice.send(RawClient.connect5("twice", 60, null));
        edge.expectDisconnect(twice, twiceId, ReasonCode.PROTOCOL_ERROR);

        final RawClient server = edge.client();
        final long serverId = edge.connect5(server, "server", 60, null);
        server.send(new byte[]{(byte)0x90, 0x04, 0x00, 0x01, 0x00, 0x00}); // a SUBACK
        edge.expectDisconnect(server, serverId, ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    @DisplayName("3.1.1 is unchanged: a second CONNECT, an AUTH and a topic over the limits just close the "
        + "connection, no DISCONNECT; the end still carries the reason")
    void mqtt311ConnectionsAreJustClosed() throws Exception
    {
        edge(context -> context.limits(l -> l.maxTopicLength(8)));
        final RawClient twice = edge.client();
        final long twiceId = edge.connect3(twice, "twice");
        twice.send(RawClient.connect("twice", true, 60));
        edge.expectEnd(twiceId, IngressEvent.CONNECTION_LOST, ReasonCode.PROTOCOL_ERROR);
        SteppedEdge.expectClosed(twice);

        final RawClient auth = edge.client();
        final long authId = edge.connect3(auth, "auth");
        auth.send(new byte[]{(byte)0xF0, 0x00});
        edge.expectEnd(authId, IngressEvent.CONNECTION_LOST, ReasonCode.MALFORMED_PACKET);
        SteppedEdge.expectClosed(auth);

        final RawClient topic = edge.client();
        final long topicId = edge.connect3(topic, "topic");
        topic.send(RawClient.publish("much/too/long", PAYLOAD, 0, 0));
        edge.expectEnd(topicId, IngressEvent.CONNECTION_LOST, ReasonCode.TOPIC_NAME_INVALID);
        SteppedEdge.expectClosed(topic);

        final RawClient plain = edge.client();
        final long plainId = edge.connect3(plain, "plain");
        plain.send(new byte[]{(byte)0xE0, 0x00});
        edge.expectEnd(plainId, IngressEvent.DISCONNECTED, 0);
    }

    @Test
    @DisplayName("--max-keepalive: a 3.1.1 CONNECT asking for more, or for none, is refused by the edge with CONNACK "
        + "0x02 and closed, as Mosquitto does; one within is admitted; a 5.0 CONNECT is always admitted")
    void keepAliveMaximum() throws Exception
    {
        edge(context -> context.limits(l -> l.maxKeepAliveSeconds(60)));
        for (final int keepAlive : new int[]{0, 61, 65_535})
        {
            final RawClient refused = edge.client();
            refused.send(RawClient.connect("k" + keepAlive, true, keepAlive));
            assertThat(edge.read(refused)).isEqualTo(PacketType.CONNACK);
            assertThat(refused.decoder().connack().reasonCode()).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
            SteppedEdge.expectClosed(refused);
        }
        assertThat(edge.hasNext()).as("the pipeline never saw them").isFalse();
        assertThat(edge.counters.get(BrokerCounters.PROTOCOL_ERRORS)).isEqualTo(3);

        final RawClient within = edge.client();
        within.send(RawClient.connect("within", true, 60));
        assertThat(edge.next().packetType).isEqualTo(PacketType.CONNECT);
        final RawClient v5 = edge.client().v5();
        v5.send(RawClient.connect5("v5", 0, null));
        assertThat(edge.next().packetType).isEqualTo(PacketType.CONNECT);
    }

    @Test
    @DisplayName("MQTT-3.1.2-22: a 5.0 client silent for 1.5 times its keep-alive is sent DISCONNECT 0x8D (Keep Alive "
        + "timeout) and closed; the end carries 0x8D")
    void keepAliveTimeout() throws Exception
    {
        edge(context -> { });
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "silent", 1, null);
        edge.expectDisconnect(client, id, ReasonCode.KEEP_ALIVE_TIMEOUT);
        assertThat(edge.counters.get(BrokerCounters.KEEP_ALIVE_TIMEOUTS)).isEqualTo(1);
    }

    @Test
    @DisplayName("--max-keepalive on 5.0: a client asking for no keep-alive gets the maximum (announced as Server "
        + "Keep Alive by the CONNACK) and is timed out by it with 0x8D")
    void serverKeepAliveApplies() throws Exception
    {
        edge(context -> context.limits(l -> l.maxKeepAliveSeconds(1)));
        final RawClient client = edge.client();
        final long id = edge.connect5(client, "zero", 0, null);
        edge.expectDisconnect(client, id, ReasonCode.KEEP_ALIVE_TIMEOUT);
    }

    @Test
    @DisplayName("MQTT 5.0 4.13: shutting down, the agent sends every 5.0 client DISCONNECT 0x8B (Server shutting "
        + "down) and closes; a 3.1.1 client is just closed; no end reaches the pipeline")
    void shutdownSendsServerShuttingDown() throws Exception
    {
        edge(context -> { });
        final RawClient v5 = edge.client();
        edge.connect5(v5, "v5", 60, null);
        final RawClient v3 = edge.client();
        edge.connect3(v3, "v3");
        edge.agent.onClose();
        assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
        assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.SERVER_SHUTTING_DOWN);
        SteppedEdge.expectClosed(v5);
        SteppedEdge.expectClosed(v3);
        assertThat(edge.hasNext()).isFalse();
    }
}
