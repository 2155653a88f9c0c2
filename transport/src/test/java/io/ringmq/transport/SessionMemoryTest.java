package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5SubAckException;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.suback.Mqtt5SubAckReasonCode;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --max-session-memory}: what sessions hold in client ids, user names, wills and filters is bounded as a
 * whole. Before it, 927 anonymous connections from one machine, each with a 60 KB will (within
 * {@code --max-connect-size}), took a {@code bin/ringmq} broker's 64 MiB heap and it exited on
 * {@code OutOfMemoryError}; 835 connections mapping 64 topic aliases of 1 KB each did the same; and one client could
 * hold 10,000 filters of 64 KiB.
 */
@Timeout(120)
class SessionMemoryTest extends InProcessBrokerTest
{
    private static final long BOUND = 1024 * 1024;
    private static final String BIG = "x".repeat(60_000);

    /**
     * A broker whose sessions may hold {@link #BOUND}, one session as much as all of them (the tests of the bound as
     * a whole; {@link #oneClientsShare} has its own).
     */
    private int launchBounded() throws Exception
    {
        return launch(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(BOUND).maxClientSessionMemory(BOUND))
            .maxConnectSize(128 * 1024));
    }

    private void awaitGauge(final int counter, final java.util.function.LongPredicate done)
    {
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (!done.test(broker.counters().get(counter)) && System.nanoTime() < deadline)
        {
            Thread.onSpinWait();
        }
        assertThat(done.test(broker.counters().get(counter))).as(BrokerCounters.label(counter)).isTrue();
    }

    @Test
    @DisplayName("3.2.2.2: CONNECTs whose 60 KB wills would take the sessions past --max-session-memory are refused "
        + "with CONNACK 0x97 Quota exceeded (3.1.1: 3 Server unavailable) and counted; once others leave, they get in")
    void willsPastTheBound() throws Exception
    {
        final int port = launchBounded();
        final List<RawClient> accepted = new ArrayList<>();
        int refused = 0;
        for (int i = 0; i < 40 && refused == 0; i++)
        {
            final RawClient client = closeLater(new RawClient(port).v5());
            final int code = client.handshake(RawClient.connect5WithWill("w" + i, null, "will/" + i, BIG, null));
            if (code == ReasonCode.SUCCESS)
            {
                accepted.add(client);
            }
            else
            {
                assertThat(code).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
                refused++;
            }
        }
        assertThat(accepted.size()).as("wills of 60 KB within 1 MiB").isBetween(15, 17);
        assertThat(refused).isEqualTo(1);
        final RawClient v3 = closeLater(new RawClient(port));
        assertThat(v3.handshake(RawClient.connectWithWill("v3", "will/v3", BIG, 1)))
            .isEqualTo(ReasonCode.V3_SERVER_UNAVAILABLE);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(2);
        awaitGauge(BrokerCounters.SESSION_MEMORY, held -> held > BOUND - 61_000 && held <= BOUND);

        for (int i = 0; i < 5; i++)
        {
            accepted.get(i).send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.SUCCESS, null));
            accepted.get(i).close();
        }
        awaitGauge(BrokerCounters.SESSION_MEMORY, held -> held < BOUND - 5 * 60_000);
        for (int i = 0; i < 4; i++)
        {
            final RawClient again = closeLater(new RawClient(port).v5());
            assertThat(again.handshake(RawClient.connect5WithWill("again" + i, null, "will/a" + i, BIG, null)))
                .as("room again once sessions ended").isEqualTo(ReasonCode.SUCCESS);
        }
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("3.9.3: filters that would take the sessions past three quarters of --max-session-memory get 0x97 "
        + "Quota exceeded (3.1.1: 0x80) one by one, the others in the same SUBSCRIBE are granted; an UNSUBSCRIBE "
        + "gives the room back")
    void filtersPastTheBound() throws Exception
    {
        final int port = launchBounded();
        final RawClient client = closeLater(new RawClient(port).v5());
        assertThat(client.handshake(RawClient.connect5("filters", null))).isZero();
        final String half = "f/" + "y".repeat(30_000) + "/"; // 2 x 30 KB and allowances: 12 fit in 768 KiB
        int granted = 0;
        int quota = 0;
        for (int i = 0; i < 20; i++)
        {
            client.send(RawClient.subscribe5(i + 1, half + i, 1));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            final int code = client.decoder().suback().reasonCode(0);
            if (code == 1)
            {
                granted++;
            }
            else
            {
                assertThat(code).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
                quota++;
            }
        }
        assertThat(granted).isEqualTo(12);
        assertThat(quota).isEqualTo(8);
        final RawClient v3 = closeLater(new RawClient(port));
        assertThat(v3.handshake(RawClient.connect("filters3", true, 60))).isZero();
        v3.send(RawClient.subscribe(1, List.of("small/a", half + "v3"), 1));
        assertThat(v3.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        assertThat(v3.decoder().suback().reasonCode(0)).as("a small filter still fits").isEqualTo(1);
        assertThat(v3.decoder().suback().reasonCode(1)).isEqualTo(ReasonCode.V3_SUBACK_FAILURE);

        client.send(RawClient.unsubscribe5(100, half + 0));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.UNSUBACK);
        client.send(RawClient.subscribe5(101, half + "back", 1));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        assertThat(client.decoder().suback().reasonCode(0)).as("room again after UNSUBSCRIBE").isEqualTo(1);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(9);
        assertThat(broker.counters().get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED)).isZero();
    }

    /**
     * Publishes QoS 2 messages with ids 1 to {@code count} on "q/x" and never sends PUBREL: each PUBREC read.
     */
    private static void publishQos2WithoutPubrel(final RawClient flooder, final int count) throws Exception
    {
        final byte[] payload = {1};
        for (int id = 1; id <= count; id++)
        {
            flooder.send(RawClient.publish("q/x", payload, 2, id, false));
        }
        for (int id = 1; id <= count; id++)
        {
            assertThat(flooder.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        }
    }

    @Test
    @DisplayName("4.3.3: inbound QoS 2 packet ids awaiting PUBREL count too: past the bound a QoS 2 PUBLISH is not "
        + "taken (5.0: PUBREC 0x97 Quota exceeded; 3.1.1: PUBREC, dropped), and PUBREL gives the room back")
    void qos2AwaitingPubrelPastTheBound() throws Exception
    {
        final int count = 6_000; // 12 bytes each: about 4,000 fit in three quarters of 64 KiB
        final int port = launch(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(64 * 1024)));
        final RawClient subscriber = closeLater(new RawClient(port).v5());
        assertThat(subscriber.handshake(RawClient.connect5("sub", null))).isZero();
        subscriber.send(RawClient.subscribe5(1, "q/#", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient flooder = closeLater(new RawClient(port));
        assertThat(flooder.handshake(RawClient.connect("flooder", true, 60))).isZero();
        final byte[] payload = {1};
        publishQos2WithoutPubrel(flooder, count);
        final long refused = broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED);
        assertThat(count - refused).as("taken").isBetween(3_700L, 4_096L);
        flooder.send(RawClient.publish("q/marker", payload, 0, 0, false));
        long delivered = 0;
        while (true)
        {
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            if (subscriber.decoder().publish().topic().asString().equals("q/marker"))
            {
                break;
            }
            delivered++;
        }
        assertThat(delivered).as("only those taken reach the subscriber").isEqualTo(count - refused);

        final RawClient v5 = closeLater(new RawClient(port).v5());
        assertThat(v5.handshake(RawClient.connect5("v5", null))).isZero();
        v5.send(RawClient.publish5("q/y", payload, 2, 1, null));
        assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        assertThat(v5.decoder().ack().reasonCode()).isEqualTo(ReasonCode.QUOTA_EXCEEDED);

        for (int id = 1; id <= count; id++)
        {
            flooder.send(RawClient.ack(PacketType.PUBREL, id));
        }
        for (int id = 1; id <= count; id++)
        {
            assertThat(flooder.readPacket(5_000)).isEqualTo(PacketType.PUBCOMP);
        }
        awaitGauge(BrokerCounters.SESSION_MEMORY, held -> held < 1_000);
        v5.send(RawClient.publish5("q/y", payload, 2, 2, null));
        assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        assertThat(v5.decoder().ack().reasonCode()).as("room again after PUBREL").isEqualTo(ReasonCode.SUCCESS);
    }

    /**
     * Maps 16 aliases to topics of 1,000 bytes (a 1 KiB array each).
     *
     * @return the packet that ended it (DISCONNECT), or -1 when all were taken.
     */
    private static int mapSixteen(final RawClient client, final int connection) throws Exception
    {
        final byte[] payload = {1};
        for (int alias = 1; alias <= 16; alias++)
        {
            final String topic = "a/" + connection + "/" + alias + "/" + "z".repeat(1_000);
            client.send(RawClient.publish5(topic.substring(0, 1_000), payload, 1, alias,
                new io.ringmq.protocol.MqttProperties().setInt(io.ringmq.protocol.PropertyId.TOPIC_ALIAS, alias)));
            final int type = client.readPacket(5_000);
            if (type != PacketType.PUBACK)
            {
                return type;
            }
        }
        return -1;
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: the topics of every connection's aliases together stay within a quarter of "
        + "--max-session-memory; a mapping past it ends that connection with DISCONNECT 0x97, and a closed "
        + "connection gives its room back")
    void topicAliasesPastTheBound() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(576 * 1024))
            .threads(t -> t.ioThreads(1)));
        final List<RawClient> mapped = new ArrayList<>();
        int ended = -1;
        for (int i = 0; i < 12 && ended < 0; i++)
        {
            final RawClient client = closeLater(new RawClient(port).v5());
            assertThat(client.handshake(RawClient.connect5("alias" + i, null))).isZero();
            if (mapSixteen(client, i) < 0)
            {
                mapped.add(client);
            }
            else
            {
                assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
                ended = i;
            }
        }
        assertThat(mapped).as("16 KiB and a table each within 144 KiB").hasSize(8);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isEqualTo(1);
        mapped.get(0).send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.SUCCESS, null));
        mapped.get(0).close();
        // its agent gave its aliases back when it closed the socket, before routing counted the client gone
        awaitGauge(BrokerCounters.CLIENTS_CONNECTED, connected -> connected == 7);
        final RawClient next = closeLater(new RawClient(port).v5());
        assertThat(next.handshake(RawClient.connect5("alias-next", null))).isZero();
        assertThat(mapSixteen(next, 99)).as("room again once a connection closed").isEqualTo(-1);
    }

    @Test
    @DisplayName("MQTT-3.3.2-7: a subscriber allowing 65,535 outbound topic aliases gets aliases for 64 KiB of "
        + "topics at most; later topics arrive in full, every message intact")
    void outboundAliasesBounded() throws Exception
    {
        final int port = launchBounded();
        final RawClient subscriber = closeLater(new RawClient(port).v5());
        assertThat(subscriber.handshake(RawClient.connect5("all", new io.ringmq.protocol.MqttProperties()
            .setInt(io.ringmq.protocol.PropertyId.TOPIC_ALIAS_MAXIMUM, 65_535)))).isZero();
        subscriber.send(RawClient.subscribe5(1, "#", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = closeLater(new RawClient(port).v5());
        assertThat(publisher.handshake(RawClient.connect5("long-topics", null))).isZero();
        int aliased = 0;
        for (int i = 0; i < 20; i++)
        {
            final String topic = ("t" + i + "/" + "x".repeat(30_000)).substring(0, 30_000); // two levels
            publisher.send(RawClient.publish5(topic, new byte[] {(byte)i}, 0, 0, null));
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(subscriber.decoder().publish().topic().asString()).as("the topic, first time").isEqualTo(topic);
            aliased += subscriber.decoder().publish().properties().has(io.ringmq.protocol.PropertyId.TOPIC_ALIAS) ?
                1 : 0;
        }
        assertThat(aliased).as("two topics of 30 KB fit 64 KiB").isEqualTo(2);
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("the default is a quarter of the heap, and a reload moves the bound")
    void defaultAndReload() throws Exception
    {
        assertThat(new BrokerContext().memory().sessionMemoryBytes()).isEqualTo(Runtime.getRuntime().maxMemory() / 4);
        final int port = launchBounded();
        assertThat(broker.reload(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(4 * BOUND))
            .maxConnectSize(128 * 1024)
            .conclude())).contains("max-session-memory");
        int accepted = 0;
        for (int i = 0; i < 40; i++)
        {
            final RawClient client = closeLater(new RawClient(port).v5());
            if (client.handshake(RawClient.connect5WithWill("r" + i, null, "will/" + i, BIG, null)) == 0)
            {
                accepted++;
            }
        }
        assertThat(accepted).as("4 MiB after the reload").isEqualTo(40);
    }

    /**
     * @return the SUBACK reason code of one filter (HiveMQ's client throws on a refusal: its SUBACK is in it).
     */
    private static Mqtt5SubAckReasonCode subscribe(final Hive5 client, final String filter)
    {
        try
        {
            return client.client.subscribeWith().topicFilter(filter).qos(Hive5.qos(1)).send().getReasonCodes().get(0);
        }
        catch (final Mqtt5SubAckException refused)
        {
            return refused.getMqttMessage().getReasonCodes().get(0);
        }
    }

    @Test
    @DisplayName("MQTT-3.9.3-1: one client's filters stop at --max-client-session-memory (SUBACK 0x97 Quota "
        + "exceeded, counted apart), other clients still subscribe; an UNSUBSCRIBE gives it room back (HiveMQ client)")
    void oneClientsShare() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(4 * BOUND)
            .maxClientSessionMemory(256 * 1024)));
        final String filter = "share/" + "z".repeat(10_000) + "/"; // 2 x 10 KB and allowances: 12 fit in 256 KiB
        final Hive5 greedy = closeLater(Hive5.connect(port, "greedy"));
        int granted = 0;
        Mqtt5SubAckReasonCode code = Mqtt5SubAckReasonCode.GRANTED_QOS_1;
        while (code == Mqtt5SubAckReasonCode.GRANTED_QOS_1 && granted < 40)
        {
            code = subscribe(greedy, filter + granted);
            granted += code == Mqtt5SubAckReasonCode.GRANTED_QOS_1 ? 1 : 0;
        }
        assertThat(code).isEqualTo(Mqtt5SubAckReasonCode.QUOTA_EXCEEDED);
        assertThat(granted).isEqualTo(12);
        assertThat(broker.counters().get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED)).isEqualTo(1);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isZero();

        final Hive5 other = closeLater(Hive5.connect(port, "other"));
        for (int i = 0; i < granted; i++)
        {
            assertThat(subscribe(other, filter + i)).as("another client's filters")
                .isEqualTo(Mqtt5SubAckReasonCode.GRANTED_QOS_1);
        }
        greedy.client.unsubscribeWith().topicFilter(filter + 0).send();
        assertThat(subscribe(greedy, filter + "back")).as("room again after UNSUBSCRIBE")
            .isEqualTo(Mqtt5SubAckReasonCode.GRANTED_QOS_1);
        other.publish(filter + "back", "to-greedy", 1, false);
        assertThat(Hive5.text(greedy.next())).isEqualTo("to-greedy");
    }

    @Test
    @DisplayName("4.3.3: one client's QoS 2 packet ids awaiting PUBREL stop at --max-client-session-memory (3.1.1: "
        + "PUBREC, dropped; counted apart); another client's QoS 2 PUBLISH is still taken (5.0: PUBREC 0x00)")
    void qos2WithinOneClientsShare() throws Exception
    {
        final int count = 6_000; // 12 bytes each: about 5,400 fit in 64 KiB
        final int port = launch(TestBrokers.v5Context().memory(m -> m.maxSessionMemory(4 * BOUND)
            .maxClientSessionMemory(64 * 1024)));
        final RawClient flooder = closeLater(new RawClient(port));
        assertThat(flooder.handshake(RawClient.connect("flooder", true, 60))).isZero();
        final byte[] payload = {1};
        publishQos2WithoutPubrel(flooder, count);
        final long refused = broker.counters().get(BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED);
        assertThat(count - refused).as("taken").isBetween(5_000L, 5_460L);
        assertThat(broker.counters().get(BrokerCounters.SESSION_MEMORY_REFUSED)).isZero();

        final RawClient v5 = closeLater(new RawClient(port).v5());
        assertThat(v5.handshake(RawClient.connect5("v5", null))).isZero();
        v5.send(RawClient.publish5("q/y", payload, 2, 1, null));
        assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
        assertThat(v5.decoder().ack().reasonCode()).as("another client's QoS 2 is taken (no subscriber: 0x10)")
            .isEqualTo(ReasonCode.NO_MATCHING_SUBSCRIBERS);
    }
}
