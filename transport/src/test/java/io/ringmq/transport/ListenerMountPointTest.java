package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A listener's {@code mount_point} (Mosquitto's): its clients' topics live under the prefix, so two tenants on two
 * mounted listeners never see each other's messages, while a client of an unmounted listener sees them all under
 * their prefixes. PUBLISH, SUBSCRIBE (shared ones too), UNSUBSCRIBE, retained messages, wills and MQTT 5.0 topic
 * aliases both ways, with Paho 3.1.1 and 5.0 and raw packets. What a client did not get is shown by a marker
 * published after: the broker keeps a publisher's order per subscriber.
 */
@Timeout(60)
class ListenerMountPointTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;

    private int tenantA;
    private int tenantB;

    private void start() throws Exception
    {
        launch(new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .addListener(new ListenerSettings(0, "127.0.0.1").mountPoint("tenant-a/"))
            .addListener(new ListenerSettings(0, "127.0.0.1").mountPoint("tenant-b/")));
        tenantA = broker.ports()[1];
        tenantB = broker.ports()[2];
    }

    private Paho paho(final int port, final String clientId) throws Exception
    {
        return closeLater(Paho.connect(port, clientId));
    }

    /**
     * @return what {@code subscriber} received before a marker that {@code publisher} publishes on {@code topic},
     * as "topic payload".
     */
    private static List<String> receivedBefore(final Paho subscriber, final Paho publisher, final String topic)
        throws Exception
    {
        return subscriber.drainUntilMarker(publisher, topic).stream()
            .map(received -> received.topic() + " " + received.payload()).toList();
    }

    @Test
    @DisplayName("a mounted client publishes and subscribes under its listener's prefix: the open listener sees "
        + "tenant-a/..., tenant A sees its own names, tenant B sees nothing of A's")
    void tenantsAreIsolated() throws Exception
    {
        start();
        final Paho open = paho(broker.ports()[0], "open");
        open.client.subscribe("#", 1);
        final Paho a = paho(tenantA, "a");
        a.client.subscribe("sensors/#", 1);
        final Paho b = paho(tenantB, "b");
        b.client.subscribe("#", 1);

        a.publish("sensors/t", "from a", 1, false);
        assertThat(open.next().topic()).isEqualTo("tenant-a/sensors/t");
        assertThat(a.next().topic()).as("its own message, its own name").isEqualTo("sensors/t");
        open.publish("tenant-a/sensors/u", "from open", 1, false);
        open.publish("sensors/v", "unmounted: not A's", 1, false);
        assertThat(a.next().topic()).isEqualTo("sensors/u");
        final Paho bMarker = paho(tenantB, "b-marker");
        assertThat(receivedBefore(b, bMarker, "marker")).as("tenant B saw nothing of A's or the open listener's")
            .isEmpty();
        assertThat(receivedBefore(a, paho(tenantA, "a-marker"), "sensors/marker")).as("nor A of the unmounted topic")
            .isEmpty();

        a.client.unsubscribe("sensors/#");
        open.publish("tenant-a/sensors/w", "after unsubscribe", 1, false);
        a.client.subscribe("marker", 1);
        assertThat(receivedBefore(a, paho(tenantA, "a-marker-2"), "marker")).isEmpty();
    }

    @Test
    @DisplayName("retained messages and wills live under the prefix: a mounted client's retained message reaches a "
        + "new mounted subscriber under its own name and an open one under tenant-a/; its will likewise")
    void retainedAndWill() throws Exception
    {
        start();
        paho(tenantA, "a").publish("state", "on", 1, true);
        final Paho again = paho(tenantA, "a2");
        again.client.subscribe("#", 1);
        final Paho.Received retained = again.next();
        assertThat(retained.topic() + " " + retained.payload() + " " + retained.retained()).isEqualTo("state on true");
        final Paho open = paho(broker.ports()[0], "open");
        open.client.subscribe("tenant-a/#", 1);
        assertThat(open.next().topic()).isEqualTo("tenant-a/state");
        final Paho b = paho(tenantB, "b");
        b.client.subscribe("#", 1);
        assertThat(receivedBefore(b, paho(tenantB, "b-marker"), "marker")).as("no retained message of A's").isEmpty();

        final RawClient willing = closeLater(new RawClient(tenantA).v5());
        assertThat(willing.handshake(ServerCapabilitiesTest.connectWithWill(MqttVersion.V5, 1, false))).isZero();
        willing.kill(); // no DISCONNECT: its will goes out
        assertThat(again.next().topic()).isEqualTo("will/t");
        assertThat(open.next().topic()).isEqualTo("tenant-a/will/t");
    }

    @Test
    @DisplayName("a shared subscription of a mounted client is mounted after $share/{name}/: it shares tenant A's "
        + "messages only")
    void sharedSubscription() throws Exception
    {
        start();
        final Paho5 worker = closeLater(Paho5.connect(tenantA, "worker"));
        assertThat(worker.subscribe(new MqttSubscription("$share/g/jobs", 1), 0)).containsExactly(1);
        final Paho open = paho(broker.ports()[0], "open");
        open.publish("jobs", "not A's", 1, false);
        open.publish("tenant-a/jobs", "A's job", 1, false);
        final Paho5.Received job = worker.next();
        assertThat(job.topic() + " " + job.payload()).isEqualTo("jobs A's job");
    }

    @Test
    @DisplayName("MQTT 5.0 topic aliases both ways on a mounted listener: an inbound alias resolves to the client's "
        + "name and is mounted; an outbound alias names the client's name")
    void topicAliases() throws Exception
    {
        start();
        final Paho open = paho(broker.ports()[0], "open");
        open.client.subscribe("tenant-a/#", 1);
        try (RawClient v5 = new RawClient(tenantA).v5())
        {
            final MqttProperties connectProperties = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, 5);
            assertThat(v5.handshake(RawClient.connect5("aliased", connectProperties))).isZero();
            v5.send(RawClient.subscribe5(1, "alias/#", 0));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            v5.send(publish("alias/t", 3, "first"));
            v5.send(publish("", 3, "second"));
            assertThat(open.next().topic()).isEqualTo("tenant-a/alias/t");
            assertThat(open.next().topic()).isEqualTo("tenant-a/alias/t");
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(v5.decoder().publish().topic().asString()).isEqualTo("alias/t");
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            final String second = v5.decoder().publish().topic().asString();
            assertThat(second.isEmpty() ? "alias only" : second).isIn("alias only", "alias/t");
        }
        assertThat(broker.counters().get(BrokerCounters.OUTSIDE_MOUNT_POINT)).isZero();
    }

    private static byte[] publish(final String topic, final int alias, final String payload)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V5).qos(0)
            .topic(topic).payload(payload.getBytes(StandardCharsets.UTF_8)).topicAlias(alias);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("a persistent session that subscribed through the open listener and comes back through a mounted "
        + "one is not sent what lies outside the prefix (counted), as Mosquitto does not send it")
    void sessionComingBackThroughAnotherListener() throws Exception
    {
        start();
        final Paho first = closeLater(Paho.connect(broker.ports()[0], "roamer", Paho.options(false)));
        first.client.subscribe("plain/#", 1);
        first.close();
        final Paho open = paho(broker.ports()[0], "open");
        open.publish("plain/x", "queued", 1, false);
        final Paho back = closeLater(Paho.connect(tenantA, "roamer", Paho.options(false)));
        assertThat(back.sessionPresent()).isTrue();
        TestBrokers.await("the queued message dropped",
            () -> broker.counters().get(BrokerCounters.OUTSIDE_MOUNT_POINT) >= 1);
        back.client.subscribe("marker", 1);
        assertThat(receivedBefore(back, paho(tenantA, "marker"), "marker")).isEmpty();
    }

    @Test
    @DisplayName("a config file's mount_point is its listener's, and --listener takes it too; one with + or # stops "
        + "the start")
    void configuration() throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "listener 0 127.0.0.1\nmount_point tenant-a/\nallow_anonymous true\n",
            StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--listener",
            "0@127.0.0.1,mount_point=tenant-b/"});
        assertThat(context.listeners()).extracting(ListenerSettings::mountPoint)
            .containsExactly("tenant-a/", "tenant-b/");
        final BrokerContext wild = new BrokerContext().addListener(new ListenerSettings(0, null).mountPoint("a/+/"));
        org.assertj.core.api.Assertions.assertThatThrownBy(wild::conclude)
            .hasMessageContaining("mount_point must be up to 1024 bytes ending in /, not starting with $");
    }

    @Test
    @DisplayName("the topic limits count the mount point on a PUBLISH as on a SUBSCRIBE: under --max-topic-levels 3 "
        + "a mounted client's a/b (3 levels mounted) goes through, its a/b/c (4) ends the connection with 0x90")
    void topicLimitsCountThePrefix() throws Exception
    {
        launch(new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .limits(l -> l.maxTopicLevels(3)).addListener(new ListenerSettings(0, "127.0.0.1").mountPoint("t/")));
        try (RawClient v5 = new RawClient(broker.ports()[1]).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("levels", null))).isZero();
            v5.send(ServerCapabilitiesTest.publish(MqttVersion.V5, "a/b", 1, false));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            v5.send(ServerCapabilitiesTest.publish(MqttVersion.V5, "a/b/c", 1, false));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode())
                .isEqualTo(io.ringmq.protocol.ReasonCode.TOPIC_NAME_INVALID);
        }
    }
}
