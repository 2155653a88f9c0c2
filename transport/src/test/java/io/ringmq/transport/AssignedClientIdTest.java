package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5PubAckException;
import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5SubAckException;
import com.hivemq.client.mqtt.mqtt5.message.connect.connack.Mqtt5ConnAck;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.suback.Mqtt5SubAckReasonCode;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Client ids the broker assigns to a CONNECT without one [MQTT-3.1.3-6]: random (a UUID after
 * {@code --auto-id-prefix}, Mosquitto's {@code auto_id_prefix}), so that no client can learn the next one from its own
 * and take that session over; chosen by the auth stage before the client's rules are compiled, so that an ACL
 * {@code %c} pattern stands for it as in Mosquitto, on every routing shard and after a restart.
 */
@Timeout(90)
class AssignedClientIdTest extends InProcessBrokerTest
{
    private static final String ACL = String.join("\n", "pattern readwrite devices/%c/#", "user publisher",
        "topic write devices/#", "");

    @TempDir
    Path directory;

    private BrokerContext context() throws Exception
    {
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, ACL, StandardCharsets.UTF_8);
        final Path passwords = directory.resolve("passwd");
        if (!Files.exists(passwords))
        {
            assertThat(Main.run("passwd", passwords.toString(), "publisher", "--password", "pw", "--iterations",
                "1000")).isZero();
        }
        return TestBrokers.v5Context().auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK)
            .passwordFile(passwords).aclFile(acl));
    }

    /** A client that may write anywhere under devices/. */
    private Hive5 publisher(final int port)
    {
        final Hive5 publisher = closeLater(new Hive5(port, "publisher"));
        publisher.client.connectWith().simpleAuth().username("publisher")
            .password("pw".getBytes(StandardCharsets.UTF_8)).applySimpleAuth().send();
        return publisher;
    }

    private Hive5 anonymous(final int port)
    {
        return closeLater(new Hive5(Hive5.builder(port, "x").identifier(""), false));
    }

    private static String assigned(final Mqtt5ConnAck connAck)
    {
        return connAck.getAssignedClientIdentifier().orElseThrow().toString();
    }

    @Test
    @DisplayName("MQTT-3.1.3-6, MQTT-3.2.2-16: an assigned id is the prefix and a random UUID, different for each of "
        + "200 clients: no client can tell the next one from its own")
    void assignedIdsAreRandom() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Set<String> ids = new HashSet<>();
        for (int i = 0; i < 200; i++)
        {
            try (RawClient client = new RawClient(port).v5())
            {
                assertThat(client.handshake(RawClient.connect5("", null))).isZero();
            }
        }
        for (int i = 0; i < 20; i++)
        {
            final Hive5 client = anonymous(port);
            final String id = assigned(client.client.connect());
            assertThat(id).startsWith("auto-");
            final UUID uuid = UUID.fromString(id.substring("auto-".length()));
            assertThat(uuid.version()).as("a random UUID").isEqualTo(4);
            ids.add(id);
            client.client.disconnect();
        }
        assertThat(ids).hasSize(20);
    }

    @Test
    @DisplayName("an ACL pattern's %c stands for the assigned id: a 5.0 client without one may publish and subscribe "
        + "under devices/{its id}/ and nowhere else")
    void percentCIsTheAssignedId() throws Exception
    {
        final int port = launch(context());
        final Hive5 device = anonymous(port);
        final String id = assigned(device.client.connect());
        assertThat(device.client.subscribeWith().topicFilter("devices/" + id + "/#").send().getReasonCodes())
            .containsExactly(Mqtt5SubAckReasonCode.GRANTED_QOS_2);
        assertThatThrownBy(() -> device.client.subscribeWith().topicFilter("devices/other/#").send())
            .isInstanceOfSatisfying(Mqtt5SubAckException.class, refused -> assertThat(refused.getMqttMessage()
                .getReasonCodes()).containsExactly(Mqtt5SubAckReasonCode.NOT_AUTHORIZED));
        device.publish("devices/" + id + "/state", "on", 1, false);
        assertThat(Hive5.text(device.next())).isEqualTo("on");

        final Hive5 other = anonymous(port);
        final String otherId = assigned(other.client.connect());
        assertThatThrownBy(() -> other.publish("devices/" + id + "/state", "not mine", 1, false))
            .as("another client's id: PUBACK 0x87").isInstanceOf(Mqtt5PubAckException.class);
        other.publish("devices/" + otherId + "/state", "mine", 1, false); // its own: PUBACK 0
        device.publish("devices/" + id + "/state", "marker", 0, false);
        assertThat(Hive5.text(device.next())).isEqualTo("marker");
        assertThat(device.received).isEmpty();
    }

    @Test
    @DisplayName("--route-shards 3: every shard knows an assigned id's session; its client resumes it (session present)"
        + " and gets what was published to it while away, on many topics")
    void routeShardsShareTheAssignedId() throws Exception
    {
        final int port = launch(context()
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2).routeShards(3)));
        final Hive5 device = anonymous(port);
        final String id = assigned(device.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send());
        device.subscribe("devices/" + id + "/#", 1);
        device.client.disconnect();

        final Hive5 publisher = publisher(port);
        for (int i = 0; i < 30; i++)
        {
            publisher.publish("devices/" + id + "/t" + i, "m" + i, 1, false);
        }
        final Hive5 back = closeLater(new Hive5(Hive5.builder(port, id), false));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(600).send().isSessionPresent())
            .isTrue();
        final Set<String> got = new HashSet<>();
        for (int i = 0; i < 30; i++)
        {
            got.add(Hive5.text(back.next()));
        }
        assertThat(got).hasSize(30);
    }

    @Test
    @DisplayName("after a restart on RocksDB an assigned id's session keeps its rules: %c is still its id")
    void restartKeepsTheAssignedIdsRules() throws Exception
    {
        final BrokerContext persistent = context()
            .persistence(p -> p.persistent(true).dataDir(directory.resolve("data")));
        int port = launch(persistent);
        final Hive5 device = anonymous(port);
        final String id = assigned(device.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send());
        device.subscribe("devices/" + id + "/#", 1);
        device.client.disconnect();
        broker.close();

        port = launch(context().persistence(p -> p.persistent(true).dataDir(directory.resolve("data"))));
        final Hive5 publisher = publisher(port);
        publisher.publish("devices/" + id + "/state", "after the restart", 1, false);
        final Hive5 back = closeLater(new Hive5(Hive5.builder(port, id), false));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(600).send().isSessionPresent())
            .isTrue();
        assertThat(Hive5.text(back.next())).isEqualTo("after the restart");
    }

    @Test
    @DisplayName("--auto-id-prefix (auto_id_prefix) starts every assigned id; with --clientid-prefixes an empty id is "
        + "judged by the id it would get, as in Mosquitto")
    void prefixes() throws Exception
    {
        int port = launch(TestBrokers.v5Context().limits(l -> l.autoIdPrefix("tenant-a-").clientIdPrefix("tenant-")));
        assertThat(assigned(anonymous(port).client.connect())).startsWith("tenant-a-").hasSize(9 + 36);
        broker.close();

        port = launch(TestBrokers.v5Context().limits(l -> l.clientIdPrefix("tenant-")));
        try (RawClient client = new RawClient(port).v5())
        {
            assertThat(client.handshake(RawClient.connect5("", null))).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        }
    }

    @Test
    @DisplayName("MQTT-3.1.3-5: under --max-client-id-length 23 an assigned id is the prefix and 18 random hex digits, "
        + "and its client resumes its session with it")
    void shortestLongestId() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxClientIdLength(23)));
        final Hive5 device = anonymous(port);
        final String id = assigned(device.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send());
        assertThat(id).hasSize(23).matches("auto-[0-9a-f]{18}");
        device.client.disconnect();
        final Hive5 back = closeLater(new Hive5(Hive5.builder(port, id), false));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(600).send().isSessionPresent())
            .isTrue();
    }

    @Test
    @DisplayName("an --auto-id-prefix that could widen an ACL pattern (+, #, /), holds a control character, or leaves no "
        + "room for 16 random characters within --max-client-id-length is refused at start")
    void badPrefixesRefused()
    {
        for (final String bad : new String[] {"a+", "#", "a/", "a\u0000", "x".repeat(1_024 - 16 + 1)})
        {
            assertThatThrownBy(() -> launch(TestBrokers.v5Context().limits(l -> l.autoIdPrefix(bad))))
                .as(bad.length() > 10 ? "a long prefix" : bad)
                .hasMessageContaining("--auto-id-prefix");
        }
    }
}
