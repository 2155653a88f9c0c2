package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review probes of listener mount points: ways a mounted client might read or write outside its prefix, or upset
 * the broker. What a client did not get is shown by a marker published after it (the broker keeps a publisher's
 * order per subscriber).
 */
@Timeout(90)
class MountPointReviewTest extends InProcessBrokerTest
{
    private int open;
    private int tenantA;
    private int tenantB;

    private void start(final String prefixA, final String prefixB, final UnaryOperator<BrokerContext> tune)
        throws Exception
    {
        launch(tune.apply(new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .addListener(new ListenerSettings(0, "127.0.0.1").mountPoint(prefixA))
            .addListener(new ListenerSettings(0, "127.0.0.1").mountPoint(prefixB))));
        open = broker.ports()[0];
        tenantA = broker.ports()[1];
        tenantB = broker.ports()[2];
    }

    private void start() throws Exception
    {
        start("tenant-a/", "tenant-b/", c -> c);
    }

    private Paho paho(final int port, final String clientId) throws Exception
    {
        return closeLater(Paho.connect(port, clientId));
    }

    private static List<String> before(final Paho subscriber, final Paho publisher, final String topic)
        throws Exception
    {
        return subscriber.drainUntilMarker(publisher, topic).stream().map(r -> r.topic() + " " + r.payload()).toList();
    }

    private static byte[] payload(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    // ---------------------------------------------------------------------------------------------------------------
    // what the review found (each failed before its fix)

    @Test
    @DisplayName("a mount_point the stages could not keep its clients under is refused at start: one without a "
        + "trailing '/' (a SUBSCRIBE of '#' or '+/x' became an invalid filter, never answered), one starting with $ "
        + "($share/g/ made a plain SUBSCRIBE join other clients' shared group; $SYS/ would open the broker's topics)")
    void prefixesThatCannotHoldAreRefused()
    {
        for (final String prefix : List.of("tenant-a", "$share/g/", "$SYS/", "a/+/", "a/#/"))
        {
            final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
                .addListener(new ListenerSettings(0, "127.0.0.1").mountPoint(prefix));
            org.assertj.core.api.Assertions.assertThatThrownBy(context::conclude).as(prefix)
                .hasMessageContaining("mount_point must be up to 1024 bytes ending in /, not starting with $");
        }
    }

    @Test
    @DisplayName("a CONNECT at the maximum packet size with a will, on a mounted listener whose message log holds "
        + "exactly two such packets: refused or served, never an unexpected error in the I/O agent")
    void connectAtMaxSizeWithWillOnMountedListener() throws Exception
    {
        start("tenant-a/", "tenant-b/", c -> c.limits(l -> l.maxPacketSize(65_536))
            .memory(m -> m.messageLogBytes(131_072)));
        final ConnectEncoder probe = new ConnectEncoder().reset().cleanStart(true).keepAlive(60).will(0, false, null);
        probe.clientId().wrap("big-will");
        probe.willTopic().wrap("w");
        probe.willPayload().wrap("");
        final int room = 65_536 - probe.encodedLength();
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60).will(0, false, null);
        encoder.clientId().wrap("big-will");
        encoder.willTopic().wrap("w");
        encoder.willPayload().wrap("x".repeat(room - 2)); // the remaining length takes one more byte
        final int length = encoder.encodedLength();
        assertThat(length).isBetween(65_530, 65_536);
        final byte[] connect = RawClient.encode(length, buffer -> encoder.encode(buffer, 0));
        try (RawClient raw = new RawClient(tenantA))
        {
            raw.send(connect);
            raw.readPacketOrClosed(5_000); // a CONNACK, or closed: either will do
        }
        catch (final java.net.SocketTimeoutException ignore)
        {
            // neither: the agent's unexpected error shows in the counters below
        }
        final Paho after = paho(tenantA, "after");
        after.client.subscribe("x", 1);
        assertThat(before(after, paho(tenantA, "after-marker"), "x")).isEmpty();
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).as("unexpected errors").isZero();
    }

    // ---------------------------------------------------------------------------------------------------------------
    // probes that hold

    @Test
    @DisplayName("wildcard filters of a mounted client ('#', '+', '+/#', '$SYS/#', '+/+/#') match only its own "
        + "tenant's topics, never the open listener's or tenant B's")
    void wildcardsStayInside() throws Exception
    {
        start();
        final Paho a = paho(tenantA, "a");
        for (final String filter : new String[] {"#", "+", "+/#", "$SYS/#", "+/+/#"})
        {
            a.client.subscribe(filter, 1);
        }
        final Paho openPublisher = paho(open, "open-pub");
        final Paho b = paho(tenantB, "b");
        openPublisher.publish("x", "open plain", 1, false);
        openPublisher.publish("tenant-b/x", "b's via open", 1, false);
        openPublisher.publish("tenant-bx/y", "lookalike", 1, false);
        openPublisher.publish("$SYS/x", "sys", 1, false);
        openPublisher.publish("tenant-a", "the prefix without its slash", 1, false);
        final Paho watcher = paho(open, "watcher");
        watcher.client.subscribe("tenant-b/#", 1);
        b.publish("x", "b's", 1, false);
        b.publish("tenant-a/x", "b naming a's prefix", 1, false);
        assertThat(watcher.next().topic()).isEqualTo("tenant-b/x");
        assertThat(watcher.next().topic()).as("B's messages routed before the marker").isEqualTo("tenant-b/tenant-a/x");
        assertThat(before(a, openPublisher, "tenant-a/marker")).isEmpty();
        openPublisher.publish("tenant-a/in", "inside", 1, false);
        assertThat(a.next().topic()).isEqualTo("in");
    }

    @Test
    @DisplayName("3.1.1 filters that look shared ($share//x, $share/+/#, $share/g/, $share/g/#) stay under the "
        + "prefix: nothing from outside arrives, a message inside does")
    void oddShareFiltersOn311() throws Exception
    {
        start();
        final Paho a = paho(tenantA, "a311");
        for (final String filter : new String[] {"$share//x", "$share/+/#", "$share/g/", "$share/g/#"})
        {
            a.client.subscribe(filter, 1);
        }
        final Paho openPublisher = paho(open, "open-pub");
        for (final String topic : new String[] {"x", "$share//x", "tenant-b/x", "$share/g/", "y/z",
            "tenant-a/$share//x/no"})
        {
            openPublisher.publish(topic, "outside " + topic, 1, false);
        }
        final List<String> got = before(a, openPublisher, "tenant-a/zz");
        assertThat(got).as("only what lies under tenant-a/ matched a mounted filter").allMatch(s -> !s.startsWith(
            "tenant-") && !s.contains("outside x") && !s.contains("outside y/z"));
        openPublisher.publish("tenant-a/x", "inside", 1, false);
        Paho.Received inside;
        do
        {
            inside = a.next(); // the marker came twice: once per matching group ($share/+/#, $share/g/#)
            assertThat(inside).isNotNull();
        }
        while (!"inside".equals(inside.payload()));
        assertThat(inside.topic()).isEqualTo("x");
    }

    @Test
    @DisplayName("5.0: shared groups of the same name in two tenants ($share/g/#) stay apart, each member getting "
        + "only its own tenant's messages, under its own names")
    void sharedGroupsOfTwoTenants() throws Exception
    {
        start();
        final Paho5 a = closeLater(Paho5.connect(tenantA, "wa"));
        final Paho5 b = closeLater(Paho5.connect(tenantB, "wb"));
        assertThat(a.subscribe(new MqttSubscription("$share/g/#", 1), 0)).containsExactly(1);
        assertThat(b.subscribe(new MqttSubscription("$share/g/#", 1), 0)).containsExactly(1);
        final Paho openPublisher = paho(open, "open-pub");
        for (int i = 0; i < 6; i++)
        {
            openPublisher.publish("tenant-a/j", "a" + i, 1, false);
            openPublisher.publish("tenant-b/j", "b" + i, 1, false);
        }
        for (int i = 0; i < 6; i++)
        {
            final Paho5.Received fromA = a.next();
            assertThat(fromA.topic() + " " + fromA.payload()).isEqualTo("j a" + i);
            final Paho5.Received fromB = b.next();
            assertThat(fromB.topic() + " " + fromB.payload()).isEqualTo("j b" + i);
        }
    }

    @Test
    @DisplayName("a tenant-a persistent session resumed through tenant B's listener gets nothing of tenant A's "
        + "(queued or live), and what it subscribes there is tenant B's")
    void sessionRoamingBetweenTenants() throws Exception
    {
        start();
        final Paho first = closeLater(Paho.connect(tenantA, "roamer", Paho.options(false)));
        first.client.subscribe("data/#", 1);
        first.close();
        final Paho aPub = paho(tenantA, "a-pub");
        aPub.publish("data/queued", "a's queued", 1, false);
        final Paho back = closeLater(Paho.connect(tenantB, "roamer", Paho.options(false)));
        assertThat(back.sessionPresent()).isTrue();
        aPub.publish("data/live", "a's live", 1, false);
        TestBrokers.await("both of A's messages dropped",
            () -> broker.counters().get(BrokerCounters.OUTSIDE_MOUNT_POINT) >= 2);
        back.client.subscribe("data/#", 1);
        final Paho bPub = paho(tenantB, "b-pub");
        bPub.publish("data/b", "b's", 1, false);
        final Paho.Received own = back.next();
        assertThat(own.topic() + " " + own.payload()).isEqualTo("data/b b's");
        assertThat(before(back, bPub, "data/marker")).isEmpty();
    }

    @Test
    @DisplayName("a QoS 1 message in flight to a mounted client is resent with DUP on its reconnect, under the "
        + "client's own name")
    void inflightResendWithDup() throws Exception
    {
        start();
        try (RawClient raw = new RawClient(tenantA))
        {
            assertThat(raw.handshake(RawClient.connect("resend", false, 60))).isZero();
            raw.send(RawClient.subscribe(1, "r/#", 1));
            assertThat(raw.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            paho(open, "open-pub").publish("tenant-a/r/1", "one", 1, false);
            assertThat(raw.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(raw.decoder().publish().topic().asString()).isEqualTo("r/1");
            raw.kill(); // never acknowledged
        }
        try (RawClient raw = new RawClient(tenantA))
        {
            assertThat(raw.handshake(RawClient.connect("resend", false, 60))).isZero();
            assertThat(raw.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(raw.decoder().publish().isDup()).isTrue();
            assertThat(raw.decoder().publish().topic().asString()).isEqualTo("r/1");
        }
    }

    @Test
    @DisplayName("two routing shards, dedicated threads and 64-byte slots (PUBLISHes through the message log): a "
        + "mounted client's large PUBLISH reaches the open listener mounted and its tenant unmounted")
    void routeShardsAndMessageLog() throws Exception
    {
        start("tenant-a/", "tenant-b/", c -> c.threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
            .routeShards(2)).memory(m -> m.slotInlineBytes(64)));
        final Paho openSub = paho(open, "open");
        openSub.client.subscribe("#", 1);
        final Paho a = paho(tenantA, "a");
        a.client.subscribe("big/#", 1);
        final Paho b = paho(tenantB, "b");
        b.client.subscribe("#", 1);
        final String big = "y".repeat(20_000);
        for (int i = 0; i < 20; i++)
        {
            a.publish("big/" + i, big, i % 2, false);
        }
        for (int i = 0; i < 20; i++)
        {
            final Paho.Received atOpen = openSub.next();
            assertThat(atOpen.topic()).isEqualTo("tenant-a/big/" + i);
            assertThat(atOpen.payload()).hasSize(20_000);
            assertThat(a.next().topic()).isEqualTo("big/" + i);
        }
        assertThat(before(b, paho(tenantB, "b-marker"), "m")).isEmpty();
    }

    @Test
    @DisplayName("MQTT 5.0: a PUBLISH naming only a Topic Alias set by an earlier PUBLISH is mounted; outbound aliases "
        + "on a mounted client carry its own names")
    void aliasOnlyPublish() throws Exception
    {
        start();
        final Paho openSub = paho(open, "open");
        openSub.client.subscribe("#", 1);
        try (RawClient v5 = new RawClient(tenantA).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("aliaser", new MqttProperties()
                .setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, 2)))).isZero();
            v5.send(RawClient.publish5("t/1", payload("p0"), 1, 1, new MqttProperties()
                .setInt(PropertyId.TOPIC_ALIAS, 1)));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            for (int i = 1; i <= 3; i++)
            {
                v5.send(RawClient.publish5("", payload("p" + i), 1, 1 + i, new MqttProperties()
                    .setInt(PropertyId.TOPIC_ALIAS, 1)));
                assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
            for (int i = 0; i <= 3; i++)
            {
                final Paho.Received r = openSub.next();
                assertThat(r.topic() + " " + r.payload()).isEqualTo("tenant-a/t/1 p" + i);
            }
        }
    }

    @Test
    @DisplayName("a mounted PUBLISH of exactly the maximum packet size ends the connection with 0x95 (the prefix "
        + "pushes it over), without an unexpected error; one a prefix short of it goes through")
    void publishAtMaxPacketSize() throws Exception
    {
        start("tenant-a/", "tenant-b/", c -> c.limits(l -> l.maxPacketSize(4_096)));
        final Paho openSub = paho(open, "open");
        openSub.client.subscribe("#", 0);
        final PublishEncoder probe = new PublishEncoder().reset().qos(0).topic("m").payload(new byte[0]);
        final int room = 4_096 - probe.encodedLength() - 1; // the remaining length's second byte
        try (RawClient raw = new RawClient(tenantA))
        {
            assertThat(raw.handshake(RawClient.connect("fits", true, 60))).isZero();
            final byte[] fits = RawClient.publish("m", new byte[room - "tenant-a/".length()], 0, 0);
            raw.send(fits);
            assertThat(openSub.next().topic()).isEqualTo("tenant-a/m");
            final byte[] full = RawClient.publish("m", new byte[room], 0, 0);
            assertThat(full.length).isEqualTo(4_096);
            raw.send(full);
            assertThat(raw.closedWithin(5_000)).isTrue();
        }
    }
}
