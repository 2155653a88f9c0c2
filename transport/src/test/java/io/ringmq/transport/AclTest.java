package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.client.MqttDisconnectResponse;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Access control with real clients (Paho 3.1.1 and 5.0, raw bytes): Mosquitto's ACL file, SUBSCRIBE refused per
 * filter, PUBLISH refused as each protocol version says, patterns, the anonymous section, deny precedence, wide
 * filters, retained messages re-checked, {@code $SYS} read-only, a reload that revokes, and client ids tied to user
 * names.
 */
class AclTest extends InProcessBrokerTest
{
    private static final String ACL = String.join("\n",
        "# anonymous clients",
        "topic read public/#",
        "topic readwrite anon/#",
        "topic read $SYS/custom/#",
        "user alice",
        "topic readwrite alice/#",
        "topic readwrite shared/#",
        "topic read news/#",
        "topic deny news/secret/#",
        "user bob",
        "topic readwrite bob/#",
        "topic readwrite shared/#",
        "user admin",
        "topic readwrite news/#",
        "topic readwrite public/#",
        "topic write $SYS/custom/#",
        "pattern readwrite users/%u/#",
        "pattern readwrite clients/%c/#");

    @TempDir
    Path directory;
    private Path aclFile;

    private int start(final String acl, final boolean useUserNameAsClientId) throws Exception
    {
        return launch(context(acl).auth(a -> a.useUserNameAsClientId(useUserNameAsClientId)));
    }

    private BrokerContext context(final String acl) throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        for (final String user : List.of("alice", "bob", "admin"))
        {
            assertThat(Main.run("passwd", passwords.toString(), user, "--password", "pw", "--iterations", "1000"))
                .isZero();
        }
        aclFile = directory.resolve("acl");
        Files.writeString(aclFile, acl, StandardCharsets.UTF_8);
        return base().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK).passwordFile(passwords).aclFile(aclFile));
    }

    /**
     * @return the broker's settings before the ACL's (a subclass runs these tests on another layout).
     */
    BrokerContext base()
    {
        return new BrokerContext();
    }

    private Paho paho(final int port, final String clientId, final String user) throws Exception
    {
        return paho(port, clientId, user, true);
    }

    private Paho paho(final int port, final String clientId, final String user, final boolean clean)
        throws Exception
    {
        final MqttConnectOptions options = Paho.options(clean);
        if (null != user)
        {
            options.setUserName(user);
            options.setPassword("pw".toCharArray());
        }
        return closeLater(Paho.connect(port, clientId, options));
    }

    private Paho5 paho5(final int port, final String clientId, final String user) throws Exception
    {
        final Paho5 client = closeLater(new Paho5(port, clientId));
        final MqttConnectionOptions options = Paho5.options();
        if (null != user)
        {
            options.setUserName(user);
            options.setPassword("pw".getBytes(StandardCharsets.UTF_8));
        }
        client.client.connect(options).waitForCompletion(10_000);
        return client;
    }

    private RawClient raw(final int port, final String clientId, final String user, final int version)
        throws Exception
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(version).cleanStart(true).keepAlive(60);
        encoder.clientId().wrap(clientId);
        if (null != user)
        {
            encoder.userName().wrap(user);
            encoder.password().wrap("pw");
        }
        // right after a reload, a CONNECT whose password was checked under the file it replaced is refused with
        // server unavailable (3.1.1: 3, 5.0: 0x88): a client tries again
        for (int attempt = 0; attempt < 20; attempt++)
        {
            final RawClient client = closeLater(new RawClient(port)).version(version);
            final int code = client.handshake(encoded(encoder));
            if (code != ReasonCode.V3_SERVER_UNAVAILABLE && code != ReasonCode.SERVER_UNAVAILABLE)
            {
                assertThat(code).isZero();
                return client;
            }
        }
        throw new AssertionError("refused as unavailable 20 times");
    }

    /**
     * @return bob, subscribed at QoS 2 to his own topics and to those he shares with alice (where a marker that
     * follows refused messages arrives).
     */
    private Paho bobListening(final int port) throws Exception
    {
        final Paho bob = paho(port, "b", "bob");
        bob.client.subscribe(new String[] {"bob/#", "shared/#"}, new int[] {2, 2});
        return bob;
    }

    private static byte[] encoded(final ConnectEncoder encoder)
    {
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * @return the SUBACK's return codes for one SUBSCRIBE of {@code filters} at QoS 1.
     */
    private static int[] subscribe(final RawClient client, final int packetId, final String... filters)
        throws Exception
    {
        client.send(RawClient.subscribe(packetId, List.of(filters), 1));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final int[] codes = new int[client.decoder().suback().reasonCodeCount()];
        for (int i = 0; i < codes.length; i++)
        {
            codes[i] = client.decoder().suback().reasonCode(i);
        }
        return codes;
    }

    private static byte[] bytes(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    @Timeout(60)
    @DisplayName("[MQTT-3.9.3-1] 3.1.1 SUBSCRIBE: each refused filter gets 0x80, the others their QoS; a wide "
        + "filter is granted")
    void subscribeRefusedPerFilterV3() throws Exception
    {
        final int port = start(ACL, false);
        final RawClient alice = raw(port, "a1", "alice", MqttVersion.V3_1_1);
        assertThat(subscribe(alice, 1, "alice/x", "bob/x", "news/#", "news/secret/x", "#", "$share/g/bob/#"))
            .containsExactly(1, 0x80, 1, 0x80, 1, 0x80);
        assertThat(broker.counters().get(BrokerCounters.ACL_SUBSCRIBE_DENIED)).isEqualTo(3);
    }

    @Test
    @Timeout(60)
    @DisplayName("[MQTT-3.9.3-1] 5.0 SUBSCRIBE: a refused filter gets 0x87 Not authorized")
    void subscribeRefusedV5() throws Exception
    {
        final int port = start(ACL, false);
        final Paho5 bob = paho5(port, "b5", "bob");
        assertThat(bob.subscribe(new MqttSubscription("alice/#", 1), 0)).containsExactly(0x87);
        assertThat(bob.subscribe(new MqttSubscription("bob/#", 1), 0)).containsExactly(1);
        final RawClient raw = raw(port, "b6", "bob", MqttVersion.V5);
        raw.send(RawClient.subscribe5(7, "news/#", 0));
        assertThat(raw.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        assertThat(raw.decoder().suback().reasonCode(0)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
    }

    @Test
    @Timeout(60)
    @DisplayName("3.1.1 PUBLISH the ACL refuses, QoS 0, 1 and 2: acknowledged as the protocol requires, delivered "
        + "to nobody [MQTT-4.3.2-1] [MQTT-4.3.3-1]")
    void publishRefusedV3() throws Exception
    {
        final int port = start(ACL, false);
        final Paho bob = bobListening(port);
        final RawClient alice = raw(port, "a", "alice", MqttVersion.V3_1_1);
        alice.send(RawClient.publish("bob/x", bytes("q0"), 0, 0));
        alice.send(RawClient.publish("bob/x", bytes("q1"), 1, 1));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        alice.send(RawClient.publish("bob/x", bytes("q2"), 2, 2));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        alice.send(RawClient.ack(PacketType.PUBREL, 2));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBCOMP);
        alice.send(RawClient.publish("shared/m", bytes("marker"), 1, 3));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        final Paho.Received first = bob.next();
        assertThat(first.payload()).as("only the allowed message, after the refused ones").isEqualTo("marker");
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(3);
    }

    @Test
    @Timeout(60)
    @DisplayName("5.0 PUBLISH the ACL refuses: PUBACK and PUBREC with 0x87 [MQTT-3.4.2-1] [MQTT-3.5.2-1], QoS 0 dropped")
    void publishRefusedV5() throws Exception
    {
        final int port = start(ACL, false);
        final Paho bob = bobListening(port);
        final RawClient alice = raw(port, "a", "alice", MqttVersion.V5);
        alice.send(RawClient.publish5("bob/x", bytes("q0"), 0, 0, null));
        alice.send(RawClient.publish5("bob/x", bytes("q1"), 1, 1, null));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(alice.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        alice.send(RawClient.publish5("bob/x", bytes("q2"), 2, 2, null));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        assertThat(alice.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        alice.send(RawClient.publish5("shared/m", bytes("marker"), 1, 3, null));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(alice.decoder().ack().reasonCode()).isEqualTo(ReasonCode.SUCCESS);
        assertThat(bob.next().payload()).isEqualTo("marker");
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(3);
    }

    @Test
    @Timeout(60)
    @DisplayName("pattern: %u is the user name, %c the client id; a pattern with %u is not for anonymous clients")
    void patterns() throws Exception
    {
        final int port = start(ACL, false);
        final Paho alice = paho(port, "dev1", "alice");
        alice.client.subscribe(new String[] {"users/alice/#", "clients/dev1/#"}, new int[] {1, 1});
        alice.publish("users/alice/x", "mine", 1, false);
        assertThat(alice.next().payload()).isEqualTo("mine");
        alice.publish("clients/dev1/x", "by client id", 1, false);
        assertThat(alice.next().payload()).isEqualTo("by client id");
        final RawClient bob = raw(port, "dev2", "bob", MqttVersion.V3_1_1);
        assertThat(subscribe(bob, 1, "users/alice/#", "users/bob/#", "clients/dev1/#", "clients/dev2/#"))
            .containsExactly(0x80, 1, 0x80, 1);
        final RawClient anonymous = raw(port, "dev3", null, MqttVersion.V3_1_1);
        assertThat(subscribe(anonymous, 1, "users/+/#", "clients/dev3/x")).containsExactly(0x80, 1);
    }

    @Test
    @Timeout(60)
    @DisplayName("the anonymous section: the lines before the first user are for clients without a user name")
    void anonymousSection() throws Exception
    {
        final int port = start(ACL, false);
        final Paho anonymous = paho(port, "anon", null);
        anonymous.client.subscribe(new String[] {"anon/#", "public/#"}, new int[] {1, 1});
        anonymous.publish("public/x", "read only", 1, false); // refused: only read
        anonymous.publish("anon/x", "mine", 1, false);
        assertThat(anonymous.next().payload()).isEqualTo("mine");
        final RawClient raw = raw(port, "anon2", null, MqttVersion.V3_1_1);
        assertThat(subscribe(raw, 1, "alice/#", "public/a")).containsExactly(0x80, 1);
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("deny wins inside a wide filter: # and news/# reach alice only where she may read, retained "
        + "messages on subscribe too")
    void wideFiltersAndRetained() throws Exception
    {
        final int port = start(ACL, false);
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("news/secret/r", "retained secret", 1, true);
        admin.publish("news/open/r", "retained open", 1, true);
        final Paho alice = paho(port, "a", "alice");
        alice.client.subscribe("news/#", 1);
        final Paho.Received retained = alice.next();
        assertThat(retained.payload()).isEqualTo("retained open");
        assertThat(retained.retained()).isTrue();
        final Paho wide = paho(port, "a2", "alice");
        wide.client.subscribe("#", 1);
        assertThat(wide.next().payload()).as("the retained message she may read").isEqualTo("retained open");
        admin.publish("news/a", "first", 1, false);
        admin.publish("news/secret/b", "secret", 1, false);
        admin.publish("public/c", "not hers", 1, false);
        admin.publish("news/c", "last", 1, false);
        assertThat(alice.next().payload()).isEqualTo("first");
        assertThat(alice.next().payload()).isEqualTo("last");
        assertThat(wide.next().payload()).isEqualTo("first");
        assertThat(wide.next().payload()).isEqualTo("last");
        assertThat(broker.counters().get(BrokerCounters.ACL_READ_FILTERED)).isGreaterThanOrEqualTo(5);
    }

    @Test
    @Timeout(60)
    @DisplayName("3.1.1 $share//news/# (no share name: a plain filter to 3.1.1) is judged as the filter it subscribes, "
        + "not as news/#: alice, who reads news/#, may not read $share//news/x; $share/g/news/# is hers")
    void emptyShareNameIsJudgedAsWritten() throws Exception
    {
        final int port = start(ACL + "\nuser admin\ntopic readwrite $share/#", false);
        final RawClient alice = raw(port, "a", "alice", MqttVersion.V3_1_1);
        assertThat(subscribe(alice, 1, "$share//news/#")).as("refused: she may read nothing under it")
            .containsExactly(0x80);
        assertThat(subscribe(alice, 2, "$share/g/news/#")).containsExactly(1);
        final RawClient admin = raw(port, "admin", "admin", MqttVersion.V3_1_1);
        admin.send(RawClient.publish("$share//news/x", bytes("not hers"), 0, 0));
        admin.send(RawClient.publish("news/x", bytes("hers"), 0, 0));
        assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(alice.decoder().publish().topic().asString()).as("only the shared group's news/x")
            .isEqualTo("news/x");
        alice.send(RawClient.ping());
        assertThat(alice.readPacket(5_000)).as("nothing else came first").isEqualTo(PacketType.PINGRESP);
    }

    @Test
    @Timeout(60)
    @DisplayName("$SYS is read-only for clients without an ACL file: 3.1.1 dropped, 5.0 PUBACK 0x87")
    void sysWriteRefusedWithoutAclFile() throws Exception
    {
        final int port = launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)));
        final Paho reader = paho(port, "reader", null);
        reader.client.subscribe(new String[] {"$SYS/fake/#", "t"}, new int[] {1, 1});
        final RawClient v5 = raw(port, "w5", null, MqttVersion.V5);
        v5.send(RawClient.publish5("$SYS/fake/x", bytes("forged"), 1, 1, null));
        assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(v5.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        final RawClient v3 = raw(port, "w3", null, MqttVersion.V3_1_1);
        v3.send(RawClient.publish("$SYS/fake/y", bytes("forged"), 1, 1, true));
        assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        v3.send(RawClient.publish("t", bytes("marker"), 1, 2));
        assertThat(reader.next().payload()).isEqualTo("marker");
        assertThat(broker.counters().get(BrokerCounters.SYS_PUBLISH_REFUSED)).isEqualTo(2);
    }

    @Test
    @Timeout(60)
    @DisplayName("$SYS: writable only where an ACL rule grants write explicitly")
    void sysWriteGrantedExplicitly() throws Exception
    {
        final int port = start(ACL, false);
        final Paho reader = paho(port, "reader", null);
        reader.client.subscribe("$SYS/custom/#", 1);
        final Paho alice = paho(port, "a", "alice");
        alice.publish("$SYS/custom/x", "forged", 1, false);
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("$SYS/custom/y", "granted", 1, false);
        assertThat(reader.next().payload()).isEqualTo("granted");
        assertThat(broker.counters().get(BrokerCounters.SYS_PUBLISH_REFUSED)).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("a will on a topic its client may not write is not published")
    void willRefused() throws Exception
    {
        final int port = start(ACL, false);
        final Paho bob = bobListening(port);
        final RawClient alice = closeLater(new RawClient(port));
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60)
            .will(1, false, null);
        encoder.clientId().wrap("a");
        encoder.willTopic().wrap("bob/will");
        encoder.willPayload().wrap("forged will");
        encoder.userName().wrap("alice");
        encoder.password().wrap("pw");
        assertThat(alice.handshake(encoded(encoder))).isZero();
        alice.kill();
        final Paho writer = paho(port, "shared-writer", "alice");
        writer.publish("shared/m", "marker", 1, false);
        assertThat(bob.next().payload()).isEqualTo("marker");
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(1);
    }

    /**
     * @return alice connected with a will on {@code willTopic}; 5.0 with a session and the will delayed when
     * {@code delaySeconds} is above 0.
     */
    private RawClient aliceWithWill(final int port, final String clientId, final String willTopic,
        final int delaySeconds) throws Exception
    {
        final int version = delaySeconds > 0 ? MqttVersion.V5 : MqttVersion.V3_1_1;
        final RawClient alice = closeLater(new RawClient(port)).version(version);
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(version).cleanStart(true).keepAlive(60)
            .will(1, false, delaySeconds > 0 ?
                new io.ringmq.protocol.MqttProperties().setInt(io.ringmq.protocol.PropertyId.WILL_DELAY_INTERVAL,
                    delaySeconds) : null);
        if (delaySeconds > 0)
        {
            encoder.properties(new io.ringmq.protocol.MqttProperties()
                .setInt(io.ringmq.protocol.PropertyId.SESSION_EXPIRY_INTERVAL, 60));
        }
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap("open");
        encoder.userName().wrap("alice");
        encoder.password().wrap("pw");
        assertThat(alice.handshake(encoded(encoder))).isZero();
        return alice;
    }

    @Test
    @Timeout(60)
    @DisplayName("a will its client could write at CONNECT, but an ACL reload since refuses, is not published: not "
        + "when the connection is lost, nor when it is taken over, nor when its delay runs out")
    void willJudgedByTheRulesInForceWhenItGoesOut() throws Exception
    {
        final String before = "user alice\ntopic readwrite cmd/#\nuser bob\ntopic readwrite bob/#\ntopic read cmd/#";
        final int port = start(before, false);
        final Paho bob = paho(port, "b", "bob");
        bob.client.subscribe(new String[] {"cmd/#", "bob/#"}, new int[] {1, 1});
        final RawClient lost = aliceWithWill(port, "a-lost", "cmd/lost", 0);
        aliceWithWill(port, "a-taken", "cmd/taken", 0);
        final RawClient delayed = aliceWithWill(port, "a-delayed", "cmd/delayed", 1);
        Files.writeString(aclFile, "user alice\ntopic readwrite alice/#\nuser bob\ntopic readwrite bob/#\n" +
            "topic read cmd/#", StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
        lost.kill();
        delayed.kill();
        raw(port, "a-taken", "alice", MqttVersion.V3_1_1); // takes the connection with the will over
        TestBrokers.await("three wills refused",
            () -> broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED) >= 3);
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(3);
        bob.publish("bob/marker", "marker", 1, false);
        final Paho.Received first = bob.next();
        assertThat(first.topic() + " " + first.payload()).as("no will on cmd/# came before the marker")
            .isEqualTo("bob/marker marker");
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a connected client's PUBLISHes are judged by the new rules from then on, both ways: a topic "
        + "they take away is refused (5.0: 0x87), one they give goes through")
    void reloadReachesAConnectedPublisher() throws Exception
    {
        final int port = start(ACL, false);
        final Paho bob = bobListening(port);
        final RawClient alice = raw(port, "a", "alice", MqttVersion.V5);
        assertThat(publishReason(alice, "shared/before", 1)).isEqualTo(ReasonCode.SUCCESS);
        assertThat(bob.next().payload()).isEqualTo("shared/before");

        Files.writeString(aclFile, ACL.replace("user alice\ntopic readwrite alice/#\ntopic readwrite shared/#",
            "user alice\ntopic readwrite alice/#\ntopic readwrite bob/#"), StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
        int packetId = 2;
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (publishReason(alice, "shared/during", packetId++) == ReasonCode.SUCCESS)
        {
            // the auth stage takes the reload at its next cycle
            assertThat(System.nanoTime()).as("the reload is taken").isLessThan(deadline);
        }
        assertThat(publishReason(alice, "shared/after", packetId++)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(publishReason(alice, "bob/given", packetId)).isEqualTo(ReasonCode.SUCCESS);
        final java.util.List<String> received = new java.util.ArrayList<>();
        String payload;
        while (!"bob/given".equals(payload = bob.next().payload()))
        {
            received.add(payload);
        }
        assertThat(received).as("only what was published before the reload was taken")
            .allMatch("shared/during"::equals);
    }

    @Test
    @Timeout(60)
    @DisplayName("5.0 PUBLISH by Topic Alias: judged by the topic it stands for, refused with 0x87 where the rules "
        + "refuse it, when the alias is set and when only the alias is sent [MQTT-3.3.2-12]")
    void topicAliasJudgedByItsTopic() throws Exception
    {
        final int port = start(ACL, false);
        final Paho bob = bobListening(port);
        final RawClient alice = raw(port, "a", "alice", MqttVersion.V5);
        assertThat(aliasedReason(alice, "bob/x", 1, 1)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(aliasedReason(alice, "", 1, 2)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(aliasedReason(alice, "shared/x", 2, 3)).isEqualTo(ReasonCode.SUCCESS);
        assertThat(aliasedReason(alice, "", 2, 4)).isEqualTo(ReasonCode.SUCCESS);
        assertThat(bob.next().payload()).isEqualTo("shared/x");
        assertThat(bob.next().payload()).isEmpty();
        assertThat(broker.counters().get(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(2);
    }

    /**
     * @return the reason code of the PUBACK to a 5.0 QoS 1 PUBLISH whose payload is its topic.
     */
    private static int publishReason(final RawClient client, final String topic, final int packetId)
        throws Exception
    {
        return pubackReason(client, RawClient.publish5(topic, bytes(topic), 1, packetId, null));
    }

    /**
     * @return the reason code of the PUBACK to a 5.0 QoS 1 PUBLISH with Topic Alias {@code alias} (an empty topic:
     * the alias alone), its payload its topic.
     */
    private static int aliasedReason(final RawClient client, final String topic, final int alias, final int packetId)
        throws Exception
    {
        return pubackReason(client, RawClient.publish5(topic, bytes(topic), 1, packetId,
            new io.ringmq.protocol.MqttProperties().setInt(io.ringmq.protocol.PropertyId.TOPIC_ALIAS, alias)));
    }

    private static int pubackReason(final RawClient client, final byte[] publish) throws Exception
    {
        client.send(publish);
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        return client.decoder().ack().reasonCode();
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a client with a subscription the new rules refuse is disconnected (5.0: 0x87), others "
        + "stay; a bad file keeps the old rules and says which line")
    void reloadRevokes() throws Exception
    {
        final int port = start(ACL, false);
        final Paho5 alice = paho5(port, "a", "alice");
        assertThat(alice.subscribe(new MqttSubscription("news/#", 1), 0)).containsExactly(1);
        final Paho bob = paho(port, "b", "bob");
        bob.client.subscribe("bob/#", 1);

        Files.writeString(aclFile, ACL.replace("topic read news/#", "topic read other/#"), StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
        final MqttDisconnectResponse response = alice.disconnected.get(10, TimeUnit.SECONDS);
        assertThat(response.getReturnCode()).isEqualTo(0x87);
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_REVOKED)).isEqualTo(1);
        bob.publish("bob/x", "still here", 1, false);
        assertThat(bob.next().payload()).isEqualTo("still here");
        final RawClient again = raw(port, "a2", "alice", MqttVersion.V3_1_1);
        assertThat(subscribe(again, 1, "news/#", "other/x")).containsExactly(0x80, 1);

        Files.writeString(aclFile, "user alice\ntopic sideways alice/#\n", StandardCharsets.UTF_8);
        assertThatThrownBy(() -> broker.reload()).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("line 2");
        assertThat(subscribe(again, 2, "other/y")).as("the old rules hold").containsExactly(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("--use-username-as-clientid: one user cannot take over another's session, a client without a "
        + "user name is refused (0x05)")
    void userNameAsClientId() throws Exception
    {
        final int port = start("user alice\ntopic alice/#\nuser bob\ntopic bob/#\npattern readwrite c/%c/#\n", true);
        final Paho alice = paho(port, "same-id", "alice");
        alice.client.subscribe("c/alice/#", 1);
        final Paho bob = paho(port, "same-id", "bob");
        bob.publish("bob/x", "hello", 1, false);
        alice.publish("c/alice/x", "mine", 1, false);
        assertThat(alice.next().payload()).as("alice kept her session: bob's same id is his user name")
            .isEqualTo("mine");
        assertThat(alice.client.isConnected()).isTrue();
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_TAKEN_OVER)).isZero();
        final RawClient anonymous = closeLater(new RawClient(port));
        assertThat(anonymous.handshake(RawClient.connect("x", true, 60)))
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        final Paho aliceAgain = paho(port, "other-id", "alice");
        assertThat(alice.lost.await(10, TimeUnit.SECONDS)).as("alice's own new connection takes hers over").isTrue();
        assertThat(aliceAgain.client.isConnected()).isTrue();
    }

    private BrokerContext persistentContext(final String acl) throws Exception
    {
        return context(acl).persistence(p -> p.persistent(true).dataDir(directory.resolve("data")));
    }

    /**
     * Alice's persistent session, subscribed to {@code news/#} (of which she may not read {@code news/secret/#}),
     * stored by a broker that then stops.
     */
    private void aliceSubscribedThenStopped() throws Exception
    {
        launch(persistentContext(ACL));
        final Paho first = paho(broker.port(), "ap", "alice", false);
        first.client.subscribe("news/#", 1);
        first.close();
        broker.close();
    }

    /**
     * @return alice back on her session, once the broker has filtered one message.
     */
    private Paho aliceBackAfterOneFiltered(final int port) throws Exception
    {
        TestBrokers.await("one message filtered", () -> broker.counters().get(BrokerCounters.ACL_READ_FILTERED) >= 1);
        final Paho alice = paho(port, "ap", "alice", false);
        assertThat(alice.sessionPresent()).isTrue();
        return alice;
    }

    /**
     * Alice, back on her wide {@code news/#} subscription, gets {@code news/c} and not the secret before it (the
     * second message filtered).
     */
    private void secretFilteredThenBack(final Paho admin, final Paho alice) throws Exception
    {
        admin.publish("news/secret/b", "secret", 1, false);
        admin.publish("news/c", "back", 1, false);
        assertThat(alice.next().payload()).isEqualTo("back");
        assertThat(broker.counters().get(BrokerCounters.ACL_READ_FILTERED)).isEqualTo(2);
    }

    @Test
    @Timeout(90)
    @DisplayName("a persistent session restored from the store is judged by its stored user's rules before its client "
        + "comes back: it queues what that user may read and nothing else")
    void restoredSessionIsJudgedByItsStoredUser() throws Exception
    {
        aliceSubscribedThenStopped();

        final int port = launch(persistentContext(ACL));
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("news/a", "while away", 1, false);
        admin.publish("news/secret/a", "secret while away", 1, false);
        final Paho alice = aliceBackAfterOneFiltered(port);
        assertThat(alice.next().payload()).isEqualTo("while away");
        secretFilteredThenBack(admin, alice);
    }

    @Test
    @Timeout(90)
    @DisplayName("a restored session is judged again by a reload before its client comes back: a subscription the "
        + "new rules refuse receives nothing")
    void restoredSessionFollowsAReload() throws Exception
    {
        aliceSubscribedThenStopped();

        final int port = launch(persistentContext(ACL));
        final Paho5 probe = paho5(port, "a-probe", "alice");
        assertThat(probe.subscribe(new MqttSubscription("news/#", 1), 0)).containsExactly(1);
        Files.writeString(aclFile, ACL.replace("topic read news/#", "topic read other/#"), StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
        assertThat(probe.disconnected.get(10, TimeUnit.SECONDS).getReturnCode()).as("routing took the new rules")
            .isEqualTo(0x87);
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("news/a", "refused now", 1, false);
        final Paho alice = aliceBackAfterOneFiltered(port);
        alice.client.subscribe("alice/#", 1);
        alice.publish("alice/y", "own again", 1, false);
        assertThat(alice.next().payload()).isEqualTo("own again");
    }

    @Test
    @Timeout(90)
    @DisplayName("a session stored by a build before the owner was stored is restored failing closed: it receives "
        + "nothing under an ACL file until its client reconnects, then its wide subscription is filtered again")
    void sessionOfABuildBeforeFailsClosedUntilReconnect() throws Exception
    {
        aliceSubscribedThenStopped();
        SessionRecords.dropOwners(directory.resolve("data"));

        final int port = launch(persistentContext(ACL));
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("news/a", "while away", 1, false);
        final Paho alice = aliceBackAfterOneFiltered(port);
        secretFilteredThenBack(admin, alice);
    }

    @org.junit.jupiter.params.ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = BrokerContext.Threading.class,
        names = {"SHARED", "SHARED_NETWORK", "DEDICATED"})
    @Timeout(60)
    @DisplayName("across threading modes: a wide filter filtered, a 5.0 PUBLISH refused with 0x87, a reload that "
        + "revokes")
    void acrossThreadingModes(final BrokerContext.Threading threading) throws Exception
    {
        final int port = launch(context(ACL).threads(t -> t.threading(threading)));
        final Paho5 alice = paho5(port, "a", "alice");
        assertThat(alice.subscribe(new MqttSubscription("news/#", 1), 0)).containsExactly(1);
        final Paho admin = paho(port, "admin", "admin");
        admin.publish("news/secret/x", "secret", 1, false);
        admin.publish("news/x", "open", 1, false);
        assertThat(alice.next().payload()).isEqualTo("open");
        final RawClient bob = raw(port, "b", "bob", MqttVersion.V5);
        bob.send(RawClient.publish5("news/x", bytes("not his"), 1, 1, null));
        assertThat(bob.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        assertThat(bob.decoder().ack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        Files.writeString(aclFile, ACL.replace("topic read news/#", ""), StandardCharsets.UTF_8);
        broker.reload();
        assertThat(alice.disconnected.get(10, TimeUnit.SECONDS).getReturnCode()).isEqualTo(0x87);
    }

    @Test
    @Timeout(60)
    @DisplayName("--acl-file with a malformed line: the broker does not start, and says which file and line")
    void malformedFileStopsTheStart() throws Exception
    {
        final Path bad = directory.resolve("bad.acl");
        Files.writeString(bad, "topic read ok/#\ntopic read a/#/b\n", StandardCharsets.UTF_8);
        final java.io.PrintStream err = System.err;
        final java.io.ByteArrayOutputStream captured = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(captured, true, StandardCharsets.UTF_8));
        try
        {
            assertThat(Main.run("--acl-file", bad.toString(), "--port", "0", "--bind", "127.0.0.1",
                "--counters-dir", directory.resolve("counters").toString())).isEqualTo(1);
        }
        finally
        {
            System.setErr(err);
        }
        assertThat(captured.toString(StandardCharsets.UTF_8)).contains(bad + " line 2: invalid topic 'a/#/b'");
    }
}
