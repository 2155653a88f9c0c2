package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What happens to the messages of a shared subscription member whose session ends before it acknowledged them
 * (5.0 section 4.8.2), and an aliased PUBLISH that would pass the maximum packet size once resolved.
 */
@Timeout(60)
class SharedRedispatchTest extends InProcessBrokerTest
{
    private static final String GROUP = "$share/g/t/#";

    private RawClient member(final int port, final String id, final int qos) throws Exception
    {
        final RawClient client = closeLater(new RawClient(port).v5());
        assertThat(client.handshake(RawClient.connect5(id, null))).isZero();
        client.send(RawClient.subscribe5(1, GROUP, qos));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        return client;
    }

    /**
     * @return payload to QoS of the next {@code count} PUBLISHes (not acknowledged).
     */
    private static Map<String, Integer> read(final RawClient client, final int count) throws Exception
    {
        final Map<String, Integer> got = new HashMap<>();
        while (got.size() < count)
        {
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            got.put(client.decoder().publish().payload().asString(), client.decoder().publish().qos());
        }
        return got;
    }

    private void awaitCounter(final int counter, final long value)
    {
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (broker.counters().get(counter) < value && System.nanoTime() < deadline)
        {
            Thread.onSpinWait();
        }
        assertThat(broker.counters().get(counter)).as(BrokerCounters.label(counter)).isEqualTo(value);
    }

    private RawClient publishSix(final int port) throws Exception
    {
        final RawClient publisher = closeLater(new RawClient(port).v5());
        assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
        for (int i = 0; i < 6; i++)
        {
            publisher.send(RawClient.publish5("t/x", ("m" + i).getBytes(StandardCharsets.UTF_8), 2, i + 1, null));
        }
        return publisher;
    }

    @Test
    @DisplayName("MQTT-4.8.2-5 QoS 2 messages sent to a member whose session ends are never sent to another member")
    void qos2NotRedispatched() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.sharedSubscriptionStrategy("round-robin")));
        final RawClient keeper = member(port, "keeper", 2);
        final RawClient taker = member(port, "taker", 2);
        final RawClient publisher = publishSix(port);
        final Set<String> taken = read(taker, 3).keySet(); // received, never PUBRECed
        final Set<String> kept = new HashSet<>(read(keeper, 3).keySet());
        taker.kill();
        awaitCounter(BrokerCounters.SHARED_QOS2_NOT_REDISPATCHED, 3);
        publisher.send(RawClient.publish5("t/marker", "marker".getBytes(StandardCharsets.UTF_8), 0, 0, null));
        while (!kept.contains("marker"))
        {
            assertThat(keeper.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            kept.add(keeper.decoder().publish().payload().asString());
        }
        assertThat(kept).doesNotContainAnyElementsOf(taken);
        assertThat(broker.counters().get(BrokerCounters.SHARED_REDISPATCHED)).isZero();
    }

    @Test
    @DisplayName("4.8.2: a QoS 1 delivery the leaving member never acknowledged goes to another member at the QoS "
        + "it was published with, not the leaving member's lower one")
    void qos1RedispatchedAtPublishedQos() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.sharedSubscriptionStrategy("round-robin")));
        final RawClient keeper = member(port, "keeper", 2);
        final RawClient taker = member(port, "taker", 1);
        publishSix(port);
        final Set<String> taken = read(taker, 3).keySet(); // at QoS 1, never PUBACKed
        final Map<String, Integer> kept = read(keeper, 3);
        taker.kill();
        awaitCounter(BrokerCounters.SHARED_REDISPATCHED, 3);
        kept.putAll(read(keeper, 3));
        assertThat(kept).hasSize(6).containsKeys(taken.toArray(new String[0]));
        assertThat(kept.values()).as("QoS 2 publications to a QoS 2 member").containsOnly(2);
    }

    @Test
    @DisplayName("4.8.2: a member whose session expires after its connection hands what it never acknowledged to "
        + "another member as it expires, with no other traffic to carry the news to its delivery shard")
    void expiredSessionHandsBackInAnIdleBroker() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.sharedSubscriptionStrategy("round-robin")));
        final RawClient keeper = member(port, "keeper", 1);
        final RawClient taker = closeLater(new RawClient(port).v5());
        assertThat(taker.handshake(RawClient.connect5("taker",
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 1)))).isZero();
        taker.send(RawClient.subscribe5(1, GROUP, 1));
        assertThat(taker.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        try (RawClient publisher = new RawClient(port).v5())
        {
            assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
            for (int i = 0; i < 4; i++)
            {
                publisher.send(RawClient.publish5("t/x", ("m" + i).getBytes(StandardCharsets.UTF_8), 1, i + 1, null));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
        }
        final Set<String> taken = read(taker, 2).keySet(); // never PUBACKed
        final Set<String> kept = new HashSet<>(read(keeper, 2).keySet());
        taker.kill(); // its session outlives the connection by 1 s; nothing else reaches the broker after it
        final Set<String> handedOn = read(keeper, 2).keySet();
        assertThat(handedOn).containsExactlyInAnyOrderElementsOf(taken).doesNotContainAnyElementsOf(kept);
        assertThat(broker.counters().get(BrokerCounters.SHARED_REDISPATCHED)).isEqualTo(2);
    }

    @Test
    @DisplayName("4.8.2: messages handed back wait within a quarter of --max-message-memory; past it they are "
        + "dropped and counted, and the rest reach another member")
    void handBackBoundedByBytes() throws Exception
    {
        final int payload = 180_000; // 5 fit in a quarter of 4 MiB (with topic and allowance), 6 do not
        final int port = launch(TestBrokers.v5Context().limits(l -> l.sharedSubscriptionStrategy("round-robin")
            .maxInflightBytes(0)) // all 6 in flight to the taker, as the count allows
            .memory(m -> m.maxMessageMemory(4L << 20)));
        final RawClient keeper = member(port, "keeper", 1);
        final RawClient taker = member(port, "taker", 1);
        final RawClient publisher = closeLater(new RawClient(port).v5());
        assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
        for (int i = 0; i < 12; i++)
        {
            final byte[] body = new byte[payload];
            body[0] = (byte)('a' + i);
            publisher.send(RawClient.publish5("t/x", body, 1, i + 1, null));
            assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
        final Set<String> taken = read(taker, 6).keySet(); // never PUBACKed
        final Map<String, Integer> kept = read(keeper, 6);
        taker.kill();
        awaitCounter(BrokerCounters.SHARED_REDISPATCH_DROPPED, 1);
        awaitCounter(BrokerCounters.SHARED_REDISPATCHED, 5);
        final Map<String, Integer> handedOn = read(keeper, 5);
        assertThat(taken).containsAll(handedOn.keySet());
        assertThat(kept.keySet()).doesNotContainAnyElementsOf(handedOn.keySet());
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: an aliased PUBLISH within --max-packet-size that would pass it once its topic is "
        + "put back is refused with DISCONNECT 0x95, and nothing breaks")
    void aliasedPublishTooLargeOnceResolved() throws Exception
    {
        final int max = 64 * 1024;
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxPacketSize(max)));
        final RawClient client = closeLater(new RawClient(port).v5());
        assertThat(client.handshake(RawClient.connect5("big", null))).isZero();
        final MqttProperties alias = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, 1);
        client.send(RawClient.publish5("t/" + "x".repeat(2_000), new byte[1], 1, 1, alias));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        client.send(RawClient.publish5("", new byte[max - 64], 1, 2, alias));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
        assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.PACKET_TOO_LARGE);
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        try (RawClient next = new RawClient(port))
        {
            assertThat(next.handshake(RawClient.connect("after", true, 60))).as("the broker goes on").isZero();
        }
    }
}
