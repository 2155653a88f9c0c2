package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --queue-qos0-messages} (Mosquitto's {@code queue_qos0_messages}): QoS 0 messages for a persistent session
 * whose client is away are queued with its QoS 1 and 2 messages, in order, within {@code --max-queued}, and sent at
 * QoS 0 when it comes back, all of them, past the high-water mark that sheds live QoS 0; a later QoS 0 message goes
 * behind none of them (all go at the reconnect, those behind a full window too), and a retained copy neither; a
 * live QoS 0 message never takes a connected client's queue; the burst never ends a 5.0 connection told a new topic
 * alias while it reads; off (the default, as in Mosquitto) they are not. With Paho 3.1.1 and HiveMQ 5.0 clients.
 * The publisher's last message is QoS 1: its PUBACK means the broker has routed everything it sent before.
 */
@Timeout(120)
class QueueQos0MessagesTest extends InProcessBrokerTest
{
    private static BrokerContext context(final boolean queueQos0)
    {
        return TestBrokers.v5Context().limits(l -> l.queueQos0Messages(queueQos0));
    }

    /** A persistent 3.1.1 session subscribed to q/# at QoS 1, its client gone. */
    private void sleeper(final int port) throws Exception
    {
        try (Paho sleeper = Paho.connect(port, "sleeper", Paho.options(false)))
        {
            sleeper.client.subscribe("q/#", 1);
        }
    }

    /** Publishes at the QoS given, then a QoS 1 barrier to a topic the sleeper does not read. */
    private void publish(final int port, final int... qos) throws Exception
    {
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            for (int i = 0; i < qos.length; i++)
            {
                publisher.publish("q/" + i, "m" + i + "@" + qos[i], qos[i], false);
            }
            publisher.publish("barrier", "b", 1, false);
        }
    }

    /** Reconnects the sleeper and reads what comes until a live QoS 0 marker arrives. */
    private List<String> wake(final int port) throws Exception
    {
        final Paho sleeper = closeLater(Paho.connect(port, "sleeper", Paho.options(false)));
        try (Paho marker = Paho.connect(port, "marker"))
        {
            marker.publish("q/marker", "marker", 0, false);
        }
        final List<String> got = new ArrayList<>();
        for (Paho.Received message = sleeper.next(); null != message; message = sleeper.next())
        {
            if (message.payload().equals("marker"))
            {
                return got;
            }
            got.add(message.payload() + " as " + message.qos());
        }
        throw new AssertionError("no marker after " + got);
    }

    @Test
    @DisplayName("on: QoS 0 messages for a sleeping persistent session come when it wakes, at QoS 0, in order with its "
        + "QoS 1 messages")
    void queuedInOrder() throws Exception
    {
        final int port = launch(context(true));
        sleeper(port);
        publish(port, 0, 1, 0, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0", "m1@1 as 1", "m2@0 as 0", "m3@0 as 0");
    }

    @Test
    @DisplayName("off (the default, as Mosquitto): only the QoS 1 message comes")
    void notQueuedByDefault() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        sleeper(port);
        publish(port, 0, 1, 0);
        assertThat(wake(port)).containsExactly("m1@1 as 1");
    }

    @Test
    @DisplayName("--max-queued counts them: past it the newest are dropped and counted")
    void withinMaxQueued() throws Exception
    {
        final int port = launch(context(true).limits(l -> l.maxQueued(2)));
        sleeper(port);
        publish(port, 0, 0, 0, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0", "m1@0 as 0");
        assertThat(broker.counters().get(BrokerCounters.QUEUE_FULL_DROPPED)).isEqualTo(2);
    }

    @Test
    @DisplayName("a 5.0 session with an expiry, subscribed at QoS 0, across 2 I/O agents and 2 routing shards")
    void mqtt5Session() throws Exception
    {
        final int port = launch(context(true)
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2).routeShards(2)));
        final Hive5 five = closeLater(new Hive5(port, "five"));
        five.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send();
        five.subscribe("q/#", 0);
        five.client.disconnect();
        publish(port, 0, 0, 0);
        final Hive5 back = closeLater(new Hive5(port, "five"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(600).send().isSessionPresent())
            .isTrue();
        final List<String> got = new ArrayList<>();
        for (int i = 0; i < 3; i++)
        {
            got.add(Hive5.text(back.next()));
        }
        assertThat(got).containsExactly("m0@0", "m1@0", "m2@0");
    }

    @Test
    @DisplayName("a reload turns it on for the messages that come from then on")
    void reloadTurnsItOn() throws Exception
    {
        final int port = launch(context(false));
        sleeper(port);
        publish(port, 0);
        assertThat(broker.reload(context(true))).contains("queue-qos0-messages");
        publish(port, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0");
    }

    /** Publishes {@code count} QoS 0 messages of {@code size} bytes to q/i, then a QoS 1 barrier. */
    private void publishLarge(final int port, final int count, final int size) throws Exception
    {
        final String body = "x".repeat(size);
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            for (int i = 0; i < count; i++)
            {
                publisher.publish("q/" + i, i + ":" + body, 0, false);
            }
            publisher.publish("barrier", "b", 1, false);
        }
    }

    @Test
    @DisplayName("review: 600 queued 8 KiB QoS 0 messages (4.8 MB, past the 1 MiB high-water mark) all arrive at the "
        + "reconnect")
    void queuedQos0AllArriveAtReconnectWithinDefaultLimits() throws Exception
    {
        final int port = launch(context(true));
        try (Paho sleeper = Paho.connect(port, "sleeper", Paho.options(false)))
        {
            sleeper.client.subscribe("q/#", 1);
        }
        // 600 x 8 KiB = 4.8 MB: within --max-queued 1000 and --max-queued-bytes 16 MiB, all queued
        publishLarge(port, 600, 8 * 1024);
        assertThat(broker.counters().get(BrokerCounters.QUEUE_FULL_DROPPED)).isZero();
        assertThat(broker.counters().get(BrokerCounters.QUEUED_BYTES_DROPPED)).isZero();
        assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        assertThat(wake(port)).hasSize(600);
        assertThat(broker.counters().get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER)).isZero();
    }

    /** A persistent 3.1.1 session "sleeper" subscribed to each "filter:qos", its client gone (DISCONNECT). */
    private static void rawSleeper(final int port, final String... filters) throws Exception
    {
        try (RawClient sleeper = new RawClient(port))
        {
            sleeper.handshake(RawClient.connect("sleeper", false, 60));
            for (int i = 0; i < filters.length; i++)
            {
                final int colon = filters[i].lastIndexOf(':');
                sleeper.send(RawClient.subscribe(i + 1, filters[i].substring(0, colon),
                    Integer.parseInt(filters[i].substring(colon + 1))));
                assertThat(sleeper.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            }
            sleeper.send(new byte[]{(byte)0xE0, 0x00});
        }
    }

    private static String describe(final PublishFlyweight p)
    {
        return p.topic().asString() + "=" + p.payload().asString() + "@" + p.qos() + (p.isRetain() ? "r" : "");
    }

    /** Reads {@code count} PUBLISHes (acknowledging none), as "topic=payload@qos[r]". */
    private static List<String> publishes(final RawClient client, final int count) throws Exception
    {
        final List<String> got = new ArrayList<>();
        while (got.size() < count)
        {
            final int type = client.readPacket(5_000);
            if (type == PacketType.PUBLISH)
            {
                got.add(describe(client.decoder().publish()));
            }
        }
        return got;
    }

    @Test
    @DisplayName("review: MQTT-4.6.0-7: a queued QoS 0 message waiting behind a full window is not overtaken by a "
        + "later live QoS 0 message of the same publisher and topic")
    void queuedQos0KeepsItsOrderWithLaterQos0OfTheSameTopicAndPublisher() throws Exception
    {
        final int port = launch(context(true).limits(l -> l.maxInflight(1)));
        rawSleeper(port, "t/#:1");
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            publisher.publish("t/a", "A1", 1, false);
            publisher.publish("t/a", "A2", 1, false);
            publisher.publish("t/b", "B-old", 0, false); // queued behind A2 for the sleeping session
            publisher.publish("barrier", "x", 1, false);
            final RawClient sleeper = closeLater(new RawClient(port));
            sleeper.handshake(RawClient.connect("sleeper", false, 60));
            // the window (max-inflight 1) takes A1, A2 waits for its PUBACK; B-old needs no slot and follows A1
            assertThat(publishes(sleeper, 1)).containsExactly("t/a=A1@1");
            publisher.publish("t/b", "B-new", 0, false); // the same publisher, topic and QoS, published later
            publisher.publish("barrier", "y", 1, false); // routed and sent: B-new went out already
            sleeper.send(RawClient.ack(PacketType.PUBACK, 1));
            final List<String> rest = publishes(sleeper, 3);
            assertThat(rest.stream().filter(m -> m.startsWith("t/b=")).toList())
                .containsExactly("t/b=B-old@0", "t/b=B-new@0");
        }
    }

    @Test
    @DisplayName("review: MQTT-4.6.0-6: a retained QoS 0 copy sent on SUBSCRIBE comes after the queued QoS 0 "
        + "messages of its topic, which go at the reconnect even behind a full window")
    void retainedQos0OnSubscribeComesAfterQueuedQos0() throws Exception
    {
        final int port = launch(context(true).limits(l -> l.maxInflight(1)));
        rawSleeper(port, "t/a:1", "t/b:0");
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            publisher.publish("t/a", "A1", 1, false);
            publisher.publish("t/a", "A2", 1, false);
            publisher.publish("t/b", "B1", 0, false); // queued for the sleeping session
            publisher.publish("t/b", "B2", 0, true);  // queued too, and retained
            publisher.publish("barrier", "x", 1, false);
        }
        final RawClient sleeper = closeLater(new RawClient(port));
        sleeper.handshake(RawClient.connect("sleeper", false, 60));
        // window 1: A1 takes it, A2 waits; the queued QoS 0 need no slot and go at once, in order
        final List<String> got = new ArrayList<>(publishes(sleeper, 3));
        sleeper.send(RawClient.subscribe(3, "t/b", 0)); // re-subscribe: the retained B2 is sent again
        int type;
        while ((type = sleeper.readPacket(5_000)) != PacketType.SUBACK)
        {
            assertThat(type).isEqualTo(PacketType.PUBLISH);
            got.add(describe(sleeper.decoder().publish()));
        }
        sleeper.send(RawClient.ack(PacketType.PUBACK, 1));
        got.addAll(publishes(sleeper, got.contains("t/b=B2@0r") ? 1 : 2)); // the retained copy may follow the SUBACK
        // B1 was published before B2 on the same topic at the same QoS [MQTT-4.6.0-6]: B1 comes first
        assertThat(got).startsWith("t/a=A1@1", "t/b=B1@0", "t/b=B2@0").endsWith("t/a=A2@1")
            .contains("t/b=B2@0r");
    }

    private static byte[] connect5(final boolean cleanStart, final MqttProperties properties)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(cleanStart)
            .keepAlive(60).properties(properties);
        encoder.clientId().wrap("aliased");
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("review: a 5.0 client with topic aliases reads a 4.8 MB drained queue and then a live message on a "
        + "new topic (a new alias): not disconnected with 0x97")
    void drainedQueueDoesNotEndANewAliasSubscriber() throws Exception
    {
        final int port = launch(context(true));
        final MqttProperties properties = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, 1024)
            .setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 600);
        try (RawClient first = new RawClient(port).v5())
        {
            assertThat(first.handshake(connect5(true, properties))).isZero();
            first.send(RawClient.subscribe5(1, "q/#", 0));
            assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            first.send(new byte[]{(byte)0xE0, 0x00});
        }
        final int count = 300;
        final String body = "x".repeat(16 * 1024); // 4.8 MB queued: within --max-queued and --max-queued-bytes
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            for (int i = 0; i < count; i++)
            {
                publisher.publish("q/same", i + ":" + body, 0, false); // one topic: one alias
            }
            publisher.publish("barrier", "b", 1, false);
        }
        assertThat(broker.counters().get(BrokerCounters.QUEUE_FULL_DROPPED)).isZero();
        assertThat(broker.counters().get(BrokerCounters.QUEUED_BYTES_DROPPED)).isZero();
        // the client comes back; the drain writes its queue, unshed, and the client reads it at its own pace
        final RawClient back = closeLater(new RawClient(port, 4096).v5());
        assertThat(back.handshake(connect5(false, properties))).isZero();
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            publisher.publish("q/new", "live", 0, false); // one live QoS 0 on a new topic while it catches up
            publisher.publish("barrier", "b", 1, false);
        }
        final List<String> got = new ArrayList<>();
        while (true)
        {
            final int type = back.readPacketOrClosed(10_000);
            if (type != PacketType.PUBLISH)
            {
                got.add("packet type " + type + (type == PacketType.DISCONNECT ? " reason 0x" +
                    Integer.toHexString(back.decoder().disconnect().reasonCode()) : ""));
                break;
            }
            final PublishFlyweight p = back.decoder().publish();
            got.add(p.payload().asString().startsWith("live") ? "live" : "queued");
            if (got.size() == count + 1)
            {
                break;
            }
        }
        assertThat(got).as("the subscriber reads everything: its queue, then the live message").hasSize(count + 1)
            .endsWith("live");
    }

    @Test
    @DisplayName("review: live QoS 0 for a connected client with a full window is sent, not queued: --max-queued "
        + "stays for its QoS 1 messages")
    void liveQos0LeavesTheQueueToQos1() throws Exception
    {
        final int port = launch(context(true).limits(l -> l.maxInflight(1).maxQueued(3)));
        rawSleeper(port, "t/#:1");
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            publisher.publish("t/a", "A1", 1, false);
            publisher.publish("t/a", "A2", 1, false);
            publisher.publish("t/b", "B0", 0, false); // queued while away
            publisher.publish("barrier", "x", 1, false);
            final RawClient sleeper = closeLater(new RawClient(port));
            sleeper.handshake(RawClient.connect("sleeper", false, 60));
            assertThat(publishes(sleeper, 1)).containsExactly("t/a=A1@1"); // the window; A2 waits, B0 follows
            // connected now: live QoS 0 traffic, then a QoS 1 message
            publisher.publish("t/c", "C0", 0, false);
            publisher.publish("t/c", "D0", 0, false);
            publisher.publish("t/e", "E1", 1, false);
            publisher.publish("barrier", "y", 1, false);
            sleeper.send(RawClient.ack(PacketType.PUBACK, 1));
            final List<String> got = new ArrayList<>();
            while (true)
            {
                final int type;
                try
                {
                    type = sleeper.readPacketOrClosed(3_000);
                }
                catch (final java.net.SocketTimeoutException nothingMore)
                {
                    break;
                }
                if (type != PacketType.PUBLISH)
                {
                    break;
                }
                final PublishFlyweight p = sleeper.decoder().publish();
                got.add(p.topic().asString() + "=" + p.payload().asString());
                if (p.qos() > 0)
                {
                    sleeper.send(RawClient.ack(PacketType.PUBACK, p.packetId()));
                }
                if (got.contains("t/e=E1"))
                {
                    break;
                }
            }
            assertThat(got).as("the QoS 1 message E1 for a connected client, %s", broker.counters().describe(false))
                .contains("t/e=E1");
        }
    }
}
