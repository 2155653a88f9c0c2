package io.ringmq.transport;

import io.ringmq.protocol.ConnackEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.SubackEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A bridge against a remote broker the test plays itself, byte by byte: what a hostile or broken remote sends must
 * not get past the bridge's topic lines (the local {@code $SYS} included), must not be lost when it is in them, and
 * a malformed packet ends only that connection, after which the bridge comes back.
 */
@Timeout(60)
class BridgeRemoteTest
{
    @TempDir
    Path directory;

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;

    @AfterEach
    void stop() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    private Broker local(final int remotePort, final String... lines) throws Exception
    {
        final Path conf = directory.resolve("bridge.conf");
        Files.writeString(conf, "listener 0 127.0.0.1\nallow_anonymous true\nconnection fake\naddress 127.0.0.1:" +
            remotePort + "\nremote_clientid fake-bridge\ntry_private false\nrestart_timeout 1\n" +
            String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        broker = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory", "--warmup", "0"}));
        return broker;
    }

    /**
     * Accepts the bridge, reads its CONNECT and SUBSCRIBE, grants them.
     *
     * @return the remote's side of the connection.
     */
    private RawClient acceptBridge(final ServerSocket server, final List<String> subscribed) throws Exception
    {
        server.setSoTimeout(10_000);
        final RawClient remote = new RawClient(server.accept());
        closeables.add(remote);
        assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.CONNECT);
        assertThat(remote.decoder().connect().protocolLevel()).isEqualTo(MqttVersion.V3_1_1);
        assertThat(remote.decoder().connect().clientId().asString()).isEqualTo("fake-bridge");
        final byte[] connack = new byte[4];
        ConnackEncoder.encode(new UnsafeBuffer(connack), 0, MqttVersion.V3_1_1, false, 0, null);
        remote.send(connack);
        assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.SUBSCRIBE);
        final int count = remote.decoder().subscribe().filters().count();
        for (int i = 0; i < count; i++)
        {
            subscribed.add(remote.decoder().subscribe().filters().filter(i).asString());
        }
        final int[] granted = new int[count];
        for (int i = 0; i < count; i++)
        {
            granted[i] = remote.decoder().subscribe().filters().options(i) & 3;
        }
        final byte[] suback = new byte[4 + count];
        SubackEncoder.encode(new UnsafeBuffer(suback), 0, PacketType.SUBACK, MqttVersion.V3_1_1,
            remote.decoder().subscribe().packetId(), null, granted, count);
        remote.send(suback);
        return remote;
    }

    @Test
    @DisplayName("a remote's PUBLISH outside the in topic lines (into $SYS too) is acknowledged and dropped; the "
        + "ones inside arrive, QoS 1 acknowledged to the remote only after the local broker took it, QoS 2 in full")
    void onlyTheInTopicsCross() throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()))
        {
            final Broker a = local(server.getLocalPort(), "topic cmd/# in 1", "notifications false");
            final List<String> subscribed = new ArrayList<>();
            final RawClient remote = acceptBridge(server, subscribed);
            assertThat(subscribed).containsExactly("cmd/#");
            TestBrokers.await("the bridge up", () -> a.bridges().get(0).isConnected());
            final Paho everything = closeables(Paho.connect(a.ports()[0], "everything"));
            everything.client.subscribe(new String[]{"#", "$SYS/#"}, new int[]{2, 2});

            remote.send(RawClient.publish("secret/x", bytes("no"), 1, 1));
            remote.send(RawClient.publish("$SYS/broker/fake", bytes("no"), 0, 0));
            remote.send(RawClient.publish("cmd/ok", bytes("yes"), 1, 2));
            remote.send(RawClient.publish("cmd/two", bytes("two"), 2, 3));
            assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            assertThat(remote.decoder().ack().packetId()).isEqualTo(1); // dropped, but never sent again
            assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            assertThat(remote.decoder().ack().packetId()).isEqualTo(2);
            assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
            assertThat(remote.decoder().ack().packetId()).isEqualTo(3);
            remote.send(RawClient.ack(PacketType.PUBREL, 3));
            assertThat(remote.readPacket(5_000)).isEqualTo(PacketType.PUBCOMP);
            assertThat(remote.decoder().ack().packetId()).isEqualTo(3);

            final Paho.Received first = everything.next();
            final Paho.Received second = everything.next();
            assertThat(List.of(first.topic(), second.topic())).containsExactly("cmd/ok", "cmd/two");
            assertThat(second.qos()).isEqualTo(2);
            assertThat(everything.nextWithin(300)).as("anything else").isNull();
        }
    }

    @Test
    @DisplayName("a malformed packet from the remote ends that connection, not the broker; the bridge comes back")
    void malformedRemoteReconnects() throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()))
        {
            final Broker a = local(server.getLocalPort(), "topic cmd/# in 1", "topic up/# out 1");
            final RawClient first = acceptBridge(server, new ArrayList<>());
            TestBrokers.await("the bridge up", () -> a.bridges().get(0).isConnected());
            first.send(new byte[]{(byte)0xF0, 0x00}); // packet type 15: reserved in 3.1.1 [MQTT-2.2.1]
            assertThat(first.closedWithin(5_000)).as("the bridge closed the bad connection").isTrue();
            final RawClient second = acceptBridge(server, new ArrayList<>());
            TestBrokers.await("the bridge back", () -> a.bridges().get(0).connections() == 2);
            final Paho publisher = closeables(Paho.connect(a.ports()[0], "publisher"));
            publisher.publish("up/x", "after", 1, false);
            int type;
            do
            {
                type = second.readPacket(5_000); // the state notification may come first
            }
            while (type == PacketType.PUBLISH && !second.decoder().publish().topic().asString().equals("up/x"));
            assertThat(type).isEqualTo(PacketType.PUBLISH);
        }
    }

    @Test
    @DisplayName("a remote that floods QoS 1 past the local window and bridge_receive_maximum is disconnected, not "
        + "held in memory without bound; the bridge comes back")
    void floodingRemoteIsCut() throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()))
        {
            final Broker a = local(server.getLocalPort(), "topic cmd/# in 1", "bridge_receive_maximum 5",
                "receive-maximum 1", "notifications false");
            final RawClient first = acceptBridge(server, new ArrayList<>());
            TestBrokers.await("the bridge up", () -> a.bridges().get(0).isConnected());
            final java.io.ByteArrayOutputStream flood = new java.io.ByteArrayOutputStream();
            for (int i = 1; i <= 2_000; i++)
            {
                flood.write(RawClient.publish("cmd/" + i, new byte[512], 1, i));
            }
            try
            {
                first.send(flood.toByteArray());
                assertThat(first.closedWithin(10_000)).as("the flooding connection cut").isTrue();
            }
            catch (final java.io.IOException cut)
            {
                // cut while the flood was still being written: as wanted
            }
            TestBrokers.await("the cut named", () -> String.valueOf(a.bridges().get(0).lastFailure())
                .contains("unacknowledged"));
            acceptBridge(server, new ArrayList<>());
            TestBrokers.await("the bridge back", () -> a.bridges().get(0).connections() == 2);
        }
    }

    @Test
    @DisplayName("the bridge's session here takes as many QoS 1 messages in flight as the bridge asks for "
        + "(bridge_receive_maximum), beyond --max-inflight: a slow remote round trip does not cap the bridge at 32")
    void bridgeWindowBeyondMaxInflight() throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()))
        {
            final Broker a = local(server.getLocalPort(), "topic up/# out 1", "topic down/# in 1",
                "notifications false", "max_inflight_messages 32");
            final RawClient remote = acceptBridge(server, new ArrayList<>());
            TestBrokers.await("the bridge up", () -> a.bridges().get(0).isConnected());
            final Paho publisher = closeables(Paho.connect(a.ports()[0], "publisher"));
            for (int i = 0; i < 100; i++)
            {
                publisher.client.publish("up/" + i, new byte[8], 1, false);
            }
            // the remote acknowledges nothing: all 100 reach it all the same
            for (int i = 0; i < 100; i++)
            {
                assertThat(remote.readPacket(5_000)).as("PUBLISH " + i).isEqualTo(PacketType.PUBLISH);
                assertThat(remote.decoder().publish().topic().asString()).isEqualTo("up/" + i);
            }
        }
    }

    private <T extends AutoCloseable> T closeables(final T closeable)
    {
        closeables.add(closeable);
        return closeable;
    }

    private static byte[] bytes(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
