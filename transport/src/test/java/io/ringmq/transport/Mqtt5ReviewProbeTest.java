package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeEncoder;
import io.ringmq.protocol.SubscriptionOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.ringmq.transport.RawClient.scram;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review probes: MQTT 5.0 behaviour of a real in-process broker against unusual clients.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5ReviewProbeTest
{
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;
    private RingMq ringMq;

    @TempDir
    Path directory;

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, false);
        if (null != ringMq)
        {
            ringMq.close();
        }
    }

    private int port()
    {
        return null != broker ? broker.port() : ringMq.port();
    }

    private RawClient raw() throws Exception
    {
        final RawClient client = new RawClient(port()).v5();
        closeables.add(client);
        return client;
    }

    private static byte[] subscribe5(final int packetId, final MqttProperties properties, final String[] filters,
        final int options)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(MqttVersion.V5)
            .packetId(packetId).properties(properties);
        for (final String filter : filters)
        {
            encoder.filters().add(filter, options);
        }
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a SUBACK larger than the client's Maximum Packet Size is not sent")
    void subackWithinClientMaximumPacketSize() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final RawClient client = raw();
        final int maximum = 32;
        assertThat(client.handshake(RawClient.connect5("small", 60,
            new MqttProperties().setInt(PropertyId.MAXIMUM_PACKET_SIZE, maximum)))).isZero();
        final String[] filters = new String[64];
        for (int i = 0; i < filters.length; i++)
        {
            filters[i] = "f/" + i;
        }
        client.send(subscribe5(1, null, filters, 1));
        final int type = client.readPacketOrClosed(5_000);
        final int length = type < 0 ? 0 : client.lastPacket().length;
        assertThat(length).as("%s of %d bytes: no packet over the client's Maximum Packet Size (%d) "
            + "[MQTT-3.1.2-24]", type < 0 ? "closed" : PacketType.name(type), length, maximum)
            .isLessThanOrEqualTo(maximum);
        assertThat(type).as("the SUBACK it cannot take is not sent: DISCONNECT 0x95 instead")
            .isEqualTo(PacketType.DISCONNECT);
        assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.PACKET_TOO_LARGE);
        assertThat(client.closedWithin(5_000)).isTrue();

        // the same for an UNSUBACK (one reason code per filter on 5.0)
        final RawClient other = raw();
        assertThat(other.handshake(RawClient.connect5("small-unsub", 60,
            new MqttProperties().setInt(PropertyId.MAXIMUM_PACKET_SIZE, maximum)))).isZero();
        final SubscribeEncoder unsubscribe = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE)
            .version(MqttVersion.V5).packetId(2);
        for (final String filter : filters)
        {
            unsubscribe.filters().add(filter, 0);
        }
        other.send(RawClient.encode(unsubscribe.encodedLength(), buffer -> unsubscribe.encode(buffer, 0)));
        final int unsubType = other.readPacketOrClosed(5_000);
        final int unsubLength = unsubType < 0 ? 0 : other.lastPacket().length;
        assertThat(unsubLength).as("%s of %d bytes [MQTT-3.1.2-24]",
            unsubType < 0 ? "closed" : PacketType.name(unsubType), unsubLength).isLessThanOrEqualTo(maximum);
    }

    @Test
    @DisplayName("MQTT-3.2.0-1: an AUTH sent right behind a password CONNECT (no Authentication Method) gets "
        + "nothing before the CONNACK")
    void authBehindPasswordConnect() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "bob", PasswordHash.create("builder", 100_000));
        ringMq = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> context.observability(o -> o.sysIntervalMs(0))).start();
        final RawClient client = raw();
        final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
            .version(MqttVersion.V5).cleanStart(true).keepAlive(60);
        encoder.clientId().wrap("bob-client");
        encoder.userName().wrap("bob");
        encoder.password().wrap("builder");
        final byte[] connect = RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
        final byte[] auth = RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.RE_AUTHENTICATE,
            new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "SCRAM-SHA-256"));
        final byte[] both = new byte[connect.length + auth.length];
        System.arraycopy(connect, 0, both, 0, connect.length);
        System.arraycopy(auth, 0, both, connect.length, auth.length);
        client.send(both);
        final int first = client.readPacketOrClosed(10_000);
        System.out.printf("AUTH-behind-CONNECT probe: first packet %s%n",
            first < 0 ? "closed" : PacketType.name(first) + " " + (first == PacketType.DISCONNECT ?
            Integer.toHexString(client.decoder().disconnect().reasonCode()) : ""));
        assertThat(first).as("the CONNACK comes before anything else [MQTT-3.2.0-1]")
            .isIn(PacketType.CONNACK, -1);
    }

    @Test
    @DisplayName("probe: Subscription Identifier 0, No Local on a shared subscription, Retain Handling 3")
    void subscribeProtocolErrors() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final String[][] cases = {{"subid0"}, {"nolocal-shared"}, {"rh3"}};
        for (final String[] c : cases)
        {
            final RawClient client = raw();
            assertThat(client.handshake(RawClient.connect5(c[0], 60, null))).isZero();
            final byte[] packet;
            switch (c[0])
            {
                case "subid0":
                    final byte[] ok = subscribe5(1, new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 1),
                        new String[]{"a/b"}, 1);
                    packet = ok.clone();
                    // the identifier is the VBI byte after 0x0B: make it 0
                    for (int i = 0; i < packet.length - 1; i++)
                    {
                        if (packet[i] == 0x0B && packet[i + 1] == 1)
                        {
                            packet[i + 1] = 0;
                            break;
                        }
                    }
                    break;
                case "nolocal-shared":
                    packet = subscribe5(1, null, new String[]{"$share/g/a"},
                        SubscriptionOptions.of(1, true, false, 0));
                    break;
                default:
                    packet = subscribe5(1, null, new String[]{"a/b"}, 1 | (3 << 4));
            }
            client.send(packet);
            final int type = client.readPacketOrClosed(5_000);
            System.out.printf("probe %s: %s %s%n", c[0], type < 0 ? "closed" : PacketType.name(type),
                type == PacketType.DISCONNECT ? Integer.toHexString(client.decoder().disconnect().reasonCode()) :
                type == PacketType.SUBACK ? Integer.toHexString(client.decoder().suback().reasonCode(0)) : "");
        }
    }

    @Test
    @DisplayName("probe: $SYS stays read-only through a Topic Alias: PUBACK 0x87 for the PUBLISH that sets it and "
        + "the one that uses it, nothing delivered")
    void sysThroughTopicAlias() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final RawClient subscriber = raw();
        assertThat(subscriber.handshake(RawClient.connect5("sys-sub", 60, null))).isZero();
        subscriber.send(subscribe5(1, null, new String[]{"$SYS/#", "marker"}, 1));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect5("sys-pub", 60, null))).isZero();
        final MqttProperties alias = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, 3);
        publisher.send(RawClient.publish5("$SYS/broker/uptime", "fake".getBytes(), 1, 1, alias));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(publisher.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        publisher.send(RawClient.publish5("", "fake2".getBytes(), 1, 2, alias));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(publisher.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        publisher.send(RawClient.publish5("marker", "m".getBytes(), 1, 3, null));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(subscriber.decoder().publish().topic().asString()).isEqualTo("marker");
    }

    @Test
    @DisplayName("probe: Subscription Identifier 268,435,455 (the largest) comes back on the message, on a plain "
        + "and a shared subscription")
    void largestSubscriptionIdentifier() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final RawClient subscriber = raw();
        assertThat(subscriber.handshake(RawClient.connect5("id-sub", 60, null))).isZero();
        subscriber.send(subscribe5(1, new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 268_435_455),
            new String[]{"ids/plain"}, 1));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        subscriber.send(subscribe5(2, new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 7),
            new String[]{"$share/g/ids/shared"}, 1));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect5("id-pub", 60, null))).isZero();
        publisher.send(RawClient.publish5("ids/plain", "p".getBytes(), 1, 1, null));
        publisher.send(RawClient.publish5("ids/shared", "s".getBytes(), 1, 2, null));
        for (final int expected : new int[]{268_435_455, 7})
        {
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            final MqttProperties properties = subscriber.decoder().publish().properties();
            assertThat(properties.subscriptionIdentifierCount()).isEqualTo(1);
            assertThat(properties.subscriptionIdentifier(0)).isEqualTo(expected);
            subscriber.send(RawClient.ack(PacketType.PUBACK, subscriber.decoder().publish().packetId()));
        }
    }

    @Test
    @DisplayName("MQTT-3.3.4-3, review: a PUBLISH of --max-packet-size 262080 (bin/ringmq's below 512m, which sizes "
        + "the outbound ring to fit it with 64 bytes to spare) to a subscriber whose 20 matching subscriptions carry "
        + "identifiers, one more property per subscription: the delivery shard neither fails nor stalls")
    void maxSizePublishWithManySubscriptionIdentifiers() throws Exception
    {
        final int maxPacketSize = 262_080;
        // as bin/ringmq below 512m: --max-packet-size 262080 --outbound-ring-bytes 2097152 (an eighth: 262144)
        broker = Broker.launch(TestBrokers.v5Context().limits(l -> l.maxPacketSize(maxPacketSize))
            .memory(m -> m.outboundRingBytes(2 * 1024 * 1024))
            .threads(t -> t.threading(BrokerContext.Threading.SHARED_NETWORK)));
        final RawClient subscriber = raw();
        assertThat(subscriber.handshake(RawClient.connect5("ids-sub", 60, null))).isZero();
        final String[] filters = {"#", "a/#", "+/#", "a/b/#", "a/+/#", "+/b/#", "+/+/#", "a/b/c", "a/b/+", "a/+/c",
            "+/b/c", "a/+/+", "+/b/+", "+/+/c", "+/+/+", "a/b/c/#", "a/b/+/#", "a/+/c/#", "+/b/c/#", "+/+/+/#"};
        for (int i = 0; i < filters.length; i++)
        {
            subscriber.send(subscribe5(i + 1, new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER,
                268_435_455 - i), new String[]{filters[i]}, 0));
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        }
        final RawClient plain = raw();
        assertThat(plain.handshake(RawClient.connect5("plain-sub", 60, null))).isZero();
        plain.send(RawClient.subscribe5(1, "a/b/c", 0));
        assertThat(plain.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect5("ids-pub", 60, null))).isZero();
        // fixed header 1 + remaining length 3 + topic 2 + 5 + packet id 2 + properties length 1 + payload
        final byte[] big = new byte[maxPacketSize - 1 - 3 - 7 - 2 - 1];
        final byte[] packet = RawClient.publish5("a/b/c", big, 1, 1, null);
        assertThat(packet).hasSize(maxPacketSize);
        publisher.send(packet);
        final int acked = publisher.readPacketOrClosed(5_000);
        assertThat(acked).as("the publisher's PUBACK, not %s", acked == PacketType.DISCONNECT ? "DISCONNECT 0x" +
            Integer.toHexString(publisher.decoder().disconnect().reasonCode()) : acked < 0 ? "a close" :
            PacketType.name(acked)).isEqualTo(PacketType.PUBACK);
        assertThat(plain.readPacket(5_000)).as("a subscriber without identifiers gets it")
            .isEqualTo(PacketType.PUBLISH);
        assertThat(plain.decoder().publish().payload().length()).isEqualTo(big.length);
        publisher.send(RawClient.publish5("a/b/c", "small".getBytes(), 0, 0, null));
        int type = subscriber.readPacketOrClosed(10_000);
        if (type == PacketType.PUBLISH && subscriber.decoder().publish().payload().length() == big.length)
        {
            assertThat(subscriber.decoder().publish().properties().subscriptionIdentifierCount())
                .isEqualTo(filters.length);
            type = subscriber.readPacketOrClosed(10_000);
        }
        assertThat(type).as("the small message after the big one arrives").isEqualTo(PacketType.PUBLISH);
        assertThat(subscriber.decoder().publish().payload().asString()).isEqualTo("small");
        broker.close();
        final StringBuilder seen = new StringBuilder();
        org.agrona.concurrent.errors.ErrorLogReader.read(broker.counters().file().errorLogBuffer(),
            (count, first, last, text) -> seen.append(count).append(" x ").append(text).append('\n'));
        assertThat(broker.counters().get(io.ringmq.pipeline.status.BrokerCounters.UNEXPECTED_ERRORS))
            .as("unexpected errors in the broker:%n%s", seen).isZero();
        broker = null;
    }

    private static byte[] retained5(final String topic, final String payload, final int qos, final int packetId,
        final MqttProperties properties)
    {
        final io.ringmq.protocol.PublishEncoder encoder = new io.ringmq.protocol.PublishEncoder().reset()
            .version(MqttVersion.V5).qos(qos).packetId(packetId).retain(true).topic(topic)
            .payload(payload.getBytes(java.nio.charset.StandardCharsets.UTF_8)).properties(properties);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("MQTT-3.3.2-5, MQTT-3.3.1-5, review: retained messages whose Message Expiry Interval has passed no "
        + "longer hold places under --max-retained-messages: a new retained message is kept, not refused")
    void expiredRetainedMessagesFreeTheirPlaces() throws Exception
    {
        final int limit = 10;
        broker = Broker.launch(TestBrokers.v5Context().limits(l -> l.maxRetained(limit, 1024 * 1024)));
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect5("expiring-pub", 60, null))).isZero();
        final MqttProperties oneSecond = new MqttProperties().setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, 1);
        for (int i = 0; i < limit; i++)
        {
            publisher.send(retained5("r/" + i, "short-lived", 1, i + 1, oneSecond));
            assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
        final long expired = System.currentTimeMillis() + 1_500;
        TestBrokers.await("the retained messages' expiry", () -> System.currentTimeMillis() > expired);

        publisher.send(retained5("r/kept", "long-lived", 1, 100, null));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        final RawClient late = raw();
        assertThat(late.handshake(RawClient.connect5("late", 60, null))).isZero();
        late.send(subscribe5(1, null, new String[]{"r/#"}, 1));
        assertThat(late.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        int type;
        try
        {
            type = late.readPacketOrClosed(2_000);
        }
        catch (final java.net.SocketTimeoutException nothing)
        {
            type = 0; // nothing retained came
        }
        assertThat(type).as("the retained message published after the others expired is kept and sent "
            + "(refused at the limit: %d)", broker.counters().get(
            io.ringmq.pipeline.status.BrokerCounters.RETAINED_REFUSED_LIMIT)).isEqualTo(PacketType.PUBLISH);
        assertThat(late.decoder().publish().topic().asString()).isEqualTo("r/kept");
    }

    @Test
    @DisplayName("probe MQTT-3.3.4-9, MQTT-3.1.2-25: retained QoS 1 messages on SUBSCRIBE to a client with Receive "
        + "Maximum 1 and Maximum Packet Size 200: the one too large is skipped, the others come one at a time")
    void retainedOnSubscribeWithinClientLimits() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect5("ret-pub", 60, null))).isZero();
        publisher.send(retained5("q/a", "x".repeat(500), 1, 1, null));
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        for (int i = 0; i < 4; i++)
        {
            publisher.send(retained5("q/s" + i, "small" + i, 1, 2 + i, null));
            assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
        final RawClient subscriber = raw();
        assertThat(subscriber.handshake(RawClient.connect5("ret-sub", 60, new MqttProperties()
            .setInt(PropertyId.RECEIVE_MAXIMUM, 1).setInt(PropertyId.MAXIMUM_PACKET_SIZE, 200)))).isZero();
        subscriber.send(subscribe5(1, null, new String[]{"q/#"}, 1));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final List<String> got = new ArrayList<>();
        for (int i = 0; i < 4; i++)
        {
            assertThat(subscriber.readPacket(5_000)).as("retained message %d (got %s)", i, got)
                .isEqualTo(PacketType.PUBLISH);
            got.add(subscriber.decoder().publish().topic().asString());
            final int packetId = subscriber.decoder().publish().packetId();
            assertThat(subscriber.hasBytes()).as("nothing more before the PUBACK [MQTT-3.3.4-9]").isFalse();
            subscriber.send(RawClient.ack(PacketType.PUBACK, packetId));
        }
        assertThat(got).containsExactlyInAnyOrder("q/s0", "q/s1", "q/s2", "q/s3");
    }

    @Test
    @DisplayName("probe MQTT-4.12.1-1: a client admitted as alice by SCRAM that re-authenticates as bob, with bob's "
        + "right password, is refused with DISCONNECT 0x87: re-authentication never changes who a client is")
    void reauthenticationAsAnotherUser() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        PasswordFile.write(file, "bob", PasswordHash.createScram("builder", 4096));
        ringMq = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> context.observability(o -> o.sysIntervalMs(0))).start();
        final RawClient client = raw();
        final io.ringmq.pipeline.auth.ScramClient alice =
            new io.ringmq.pipeline.auth.ScramClient("alice", "wonderland", "nonce-alice-1");
        client.send(RawClient.connect5("who", 60, scram(alice.first())));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION, scram(alice.last(
            client.decoder().auth().properties().slice(PropertyId.AUTHENTICATION_DATA).toByteArray()))));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        assertThat(client.decoder().connack().reasonCode()).isZero();

        final io.ringmq.pipeline.auth.ScramClient bob =
            new io.ringmq.pipeline.auth.ScramClient("bob", "builder", "nonce-bob-1");
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.RE_AUTHENTICATE, scram(bob.first())));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION, scram(bob.last(
            client.decoder().auth().properties().slice(PropertyId.AUTHENTICATION_DATA).toByteArray()))));
        final int type = client.readPacketOrClosed(5_000);
        assertThat(type).isEqualTo(PacketType.DISCONNECT);
        assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(client.closedWithin(5_000)).isTrue();
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: no CONNACK (here with an Assigned Client Identifier) larger than the client's "
        + "Maximum Packet Size of 16: not sent, the connection ends, counted")
    void connackWithinClientMaximumPacketSize() throws Exception
    {
        broker = Broker.launch(TestBrokers.v5Context());
        final RawClient client = raw();
        client.send(RawClient.connect5("", 60, new MqttProperties().setInt(PropertyId.MAXIMUM_PACKET_SIZE, 16)));
        final int type = client.readPacketOrClosed(5_000);
        final int length = type < 0 ? 0 : client.lastPacket().length;
        assertThat(length).as("%s of %d bytes to a client whose Maximum Packet Size is 16 [MQTT-3.1.2-24]",
            type < 0 ? "closed" : PacketType.name(type), length).isLessThanOrEqualTo(16);
        assertThat(type).as("the connection ends: nothing may come before a CONNACK [MQTT-3.2.0-1]").isNegative();
        TestBrokers.await("counted", () -> broker.counters().get(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT) == 1);
    }
}
