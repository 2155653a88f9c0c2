package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.PersistenceReview2Test.Delivery;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Adversarial review of 20b4754 / aec5730 / 7d604c0: each copy of a message to one session is a record of its own
 * (route shards, mixed QoS, QoS 2 exchanges, a session moving shards, wills, re-dispatch, drops), restored copies go out
 * with DUP [MQTT-3.3.1-1], and retained records refused at recovery. Every test checks that no key was SingleDeleted
 * after being put more than once.
 */
@Timeout(60)
class CopyRecordsReviewTest
{
    private final PersistenceReview2Test.CheckingStore store = new PersistenceReview2Test.CheckingStore();
    private Supplier<BrokerContext> contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8));
    private PipelineHarness broker;

    private void start()
    {
        broker = new PipelineHarness(contexts.get(),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
    }

    @AfterEach
    void noViolations()
    {
        assertThat(store.violations).as("SingleDelete of a key put more than once").isEmpty();
    }

    private void packet(final int agent, final long connectionId, final byte[] packet)
    {
        broker.offer(agent, connectionId, true, packet, IngressEvent.PACKET);
    }

    private void lost(final int agent, final long connectionId)
    {
        broker.offer(agent, connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST);
    }

    static byte[] publish(final String topic, final int qos, final int packetId, final boolean retain)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).retain(retain)
            .topic(topic).payload(topic.getBytes());
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] willConnect(final String clientId, final String willTopic, final String willPayload)
    {
        final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
            .cleanStart(true).will(1, false, null);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap(willPayload);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private List<Delivery> publishes(final long connectionId)
    {
        return PersistenceReview2Test.publishes(broker, connectionId);
    }

    private static byte[] publish(final String topic, final int qos, final int packetId, final String payload)
    {
        return PersistenceReview2Test.publish(topic, qos, packetId, payload);
    }

    /**
     * Session "sub" on connection 1 subscribes to {@code filter} at {@code ownQos} (none when negative) and, in groups
     * g0, g1 ..., at each of {@code sharedQos}; its client goes when {@code offline}.
     */
    private void subscriber(final String filter, final int ownQos, final boolean offline, final int... sharedQos)
    {
        packet(0, 1, connect("sub", false));
        if (ownQos >= 0)
        {
            packet(0, 1, subscribe(filter, ownQos));
        }
        for (int g = 0; g < sharedQos.length; g++)
        {
            packet(0, 1, subscribe("$share/g" + g + "/" + filter, sharedQos[g]));
        }
        broker.outbound.takePackets(1);
        if (offline)
        {
            lost(0, 1);
        }
    }

    /**
     * "pub" publishes one message to {@code t}.
     */
    private void publishOne(final int qos, final String payload)
    {
        packet(0, 2, connect("pub", true));
        packet(0, 2, publish("t", qos, 1, payload));
    }

    /** QUEUED and EXCHANGE records in the store. */
    private List<String> messageRecords()
    {
        final List<String> keys = new ArrayList<>();
        store.inner.scan((key, keyLength, value, valueLength) ->
        {
            if (key.getByte(0) == Records.SESSIONS && keyLength == Records.MESSAGE_KEY_LENGTH &&
                (key.getByte(Records.SESSION_PREFIX_LENGTH) == Records.QUEUED ||
                key.getByte(Records.SESSION_PREFIX_LENGTH) == Records.EXCHANGE))
            {
                keys.add("kind " + key.getByte(Records.SESSION_PREFIX_LENGTH) + " number " +
                    Long.toHexString(Records.messageNumberOf(key)));
            }
        });
        return keys;
    }

    private void ackAll(final int agent, final long connectionId, final List<Delivery> sent)
    {
        for (final Delivery d : sent)
        {
            if (d.qos() == 1)
            {
                packet(agent, connectionId, ack(PacketType.PUBACK, d.packetId()));
            }
            else if (d.qos() == 2)
            {
                packet(agent, connectionId, ack(PacketType.PUBREC, d.packetId()));
                packet(agent, connectionId, ack(PacketType.PUBCOMP, d.packetId()));
            }
        }
    }

    @Test
    @DisplayName("route shards 2: own + shared copies of a QoS 1 message both survive a restart; acknowledged, no record stays")
    void routeShardsOwnAndShared()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8)).threads(t -> t.routeShards(2));
        start();
        subscriber("t", 1, true, 1);
        publishOne(1, "x");
        broker.settle();
        start();
        packet(0, 3, connect("sub", false));
        final List<Delivery> sent = publishes(3);
        assertThat(sent).extracting(Delivery::payload).containsExactly("x", "x");
        ackAll(0, 3, sent);
        broker.settle();
        assertThat(messageRecords()).as("records after both copies were acknowledged").isEmpty();
    }

    @Test
    @DisplayName("own QoS 0 + two shared QoS 1: two records; acknowledged, none stays")
    void ownQos0TwoSharedQos1()
    {
        start();
        subscriber("t", 0, true, 1, 1);
        publishOne(1, "x");
        broker.settle();
        assertThat(messageRecords()).hasSize(2);
        start();
        packet(0, 3, connect("sub", false));
        final List<Delivery> sent = publishes(3);
        assertThat(sent).extracting(Delivery::qos).containsExactly(1, 1);
        ackAll(0, 3, sent);
        broker.settle();
        assertThat(messageRecords()).isEmpty();
    }

    @Test
    @DisplayName("own QoS 2 + shared QoS 1 + shared QoS 2, online: PUBREC only the last; restart: own PUBLISH DUP, shared QoS1 DUP, PUBREL")
    void mixedQosOnlineRestart()
    {
        start();
        subscriber("t", 2, false, 1, 2);
        publishOne(2, "x");
        final List<Delivery> sent = publishes(1);
        assertThat(sent).extracting(Delivery::qos).containsExactly(2, 1, 2);
        packet(0, 1, ack(PacketType.PUBREC, sent.get(2).packetId()));
        broker.outbound.takePackets(1);
        broker.settle();
        start();
        packet(0, 3, connect("sub", false));
        final List<byte[]> out = broker.outbound.takePackets(3);
        final List<Integer> types = out.stream().map(p -> (p[0] & 0xFF) >>> 4).toList();
        assertThat(types).containsExactly(PacketType.CONNACK, PacketType.PUBLISH, PacketType.PUBLISH,
            PacketType.PUBREL);
        for (final byte[] p : out.subList(1, 3))
        {
            assertThat((p[0] & 0x08) != 0).as("restored PUBLISH carries DUP").isTrue();
        }
    }

    @Test
    @DisplayName("two I/O agents: a session with own + shared copies moves to shard 1, acknowledges only the shared copy; after a restart the own copy comes back")
    void movedSessionKeepsCopiesApart()
    {
        contexts = () -> new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED))
            .limits(l -> l.maxInflight(8)).threads(t -> t.ioThreads(2));
        start();
        subscriber("t", 1, false, 1);
        publishOne(1, "x");
        final List<Delivery> first = publishes(1);
        assertThat(first).hasSize(2);
        lost(0, 1);
        packet(1, 3, connect("sub", false)); // moves to shard 1
        final List<Delivery> resent = publishes(3);
        assertThat(resent).hasSize(2);
        assertThat(resent).extracting(Delivery::dup).containsExactly(true, true);
        packet(1, 3, ack(PacketType.PUBACK, resent.get(1).packetId()));
        broker.settle();
        assertThat(messageRecords()).hasSize(1);
        start();
        packet(0, 4, connect("sub", false));
        assertThat(publishes(4)).extracting(Delivery::payload).containsExactly("x");
    }

    @Test
    @DisplayName("a will to a session's own and shared subscriptions: both copies stored and restored")
    void willToOwnAndShared()
    {
        start();
        subscriber("w", 1, true, 1);
        packet(0, 2, willConnect("willer", "w", "bye"));
        lost(0, 2);
        broker.settle();
        assertThat(messageRecords()).hasSize(2);
        start();
        packet(0, 3, connect("sub", false));
        final List<Delivery> sent = publishes(3);
        assertThat(sent).extracting(Delivery::payload).containsExactly("bye", "bye");
        ackAll(0, 3, sent);
        broker.settle();
        assertThat(messageRecords()).isEmpty();
    }

    @Test
    @DisplayName("after a restart: restored copies go with DUP, a live message queued behind them goes without")
    void liveMessageAfterRestartHasNoDup()
    {
        start();
        subscriber("t", 1, true, 1);
        publishOne(1, "old");
        broker.settle();
        start();
        packet(0, 2, connect("pub", true));
        packet(0, 2, publish("t", 1, 1, "new"));
        packet(0, 3, connect("sub", false));
        final List<Delivery> sent = publishes(3);
        assertThat(sent).extracting(Delivery::payload).containsExactly("old", "old", "new", "new");
        assertThat(sent).extracting(Delivery::dup).containsExactly(true, true, false, false);
    }

    @Test
    @DisplayName("redispatch: m2 (own + shared) gets its own copy and the copy m1 handed back; after a restart both come back")
    void redispatchToMemberWithOwnCopy()
    {
        start();
        packet(0, 1, connect("m1", false));
        packet(0, 1, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(1);
        packet(0, 2, connect("m2", false));
        packet(0, 2, subscribe("t", 1));
        packet(0, 2, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(2);
        packet(0, 3, connect("pub", true));
        // publish until the group picks m1
        int n = 0;
        while (publishes(1).isEmpty() && n < 4)
        {
            packet(0, 3, publish("t", 1, ++n, "x" + n));
        }
        final String toM1 = "x" + n;
        final List<Delivery> m2 = publishes(2);
        ackAll(0, 2, m2); // m2 acknowledges everything it has so far
        packet(0, 4, connect("m1", true)); // m1's session ends: its copy goes to m2
        final List<Delivery> redispatched = new ArrayList<>();
        final long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (redispatched.isEmpty() && System.nanoTime() - deadline < 0)
        {
            broker.step(); // the re-dispatch goes out with a tick
            redispatched.addAll(publishes(2));
        }
        assertThat(redispatched).extracting(Delivery::payload).containsExactly(toM1);
        lost(0, 2);
        broker.settle();
        start();
        packet(0, 5, connect("m2", false));
        assertThat(publishes(5)).extracting(Delivery::payload).containsExactly(toM1);
    }

    @Test
    @DisplayName("QoS 2 own + shared: both PUBRECed, only the own PUBCOMPed: after a restart a PUBREL for the shared copy only")
    void qos2CopiesPubrelApart()
    {
        start();
        subscriber("t", 2, false, 2);
        publishOne(2, "x");
        final List<Delivery> sent = publishes(1);
        assertThat(sent).hasSize(2);
        packet(0, 1, ack(PacketType.PUBREC, sent.get(0).packetId()));
        packet(0, 1, ack(PacketType.PUBREC, sent.get(1).packetId()));
        packet(0, 1, ack(PacketType.PUBCOMP, sent.get(0).packetId()));
        broker.outbound.takePackets(1);
        broker.settle();
        start();
        packet(0, 3, connect("sub", false));
        final List<byte[]> out = broker.outbound.takePackets(3);
        assertThat(out.stream().map(p -> (p[0] & 0xFF) >>> 4).toList()).containsExactly(PacketType.CONNACK,
            PacketType.PUBREL);
        assertThat(((out.get(1)[2] & 0xFF) << 8) | (out.get(1)[3] & 0xFF)).isEqualTo(sent.get(1).packetId());
        packet(0, 3, ack(PacketType.PUBCOMP, sent.get(1).packetId()));
        broker.settle();
        assertThat(messageRecords()).isEmpty();
    }

    @Test
    @DisplayName("own + shared, queue holds one (maxQueued 1), offline: the own copy queued, the shared copy dropped; no record of the dropped copy stays")
    void droppedFurtherCopyLeavesNoRecord()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxQueued(1));
        start();
        subscriber("t", 1, true, 1);
        publishOne(1, "x");
        broker.settle();
        assertThat(messageRecords()).hasSize(1);
    }

    private int retainedRecords()
    {
        final int[] count = {0};
        store.inner.scan((key, keyLength, value, valueLength) -> count[0] += key.getByte(0) == Records.RETAINED ? 1 : 0);
        return count[0];
    }

    @Test
    @DisplayName("control: with --strict-recovery, sessions past a smaller --max-sessions stop the start (LOST)")
    void strictRecoveryRefusesSessionsOverTheBound()
    {
        start();
        packet(0, 1, connect("s1", false));
        packet(0, 2, connect("s2", false));
        broker.settle();
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxSessions(1))
            .persistence(p -> p.strictRecovery(true));
        org.assertj.core.api.Assertions.assertThatThrownBy(this::start)
            .isInstanceOf(io.ringmq.pipeline.persistence.StoreException.class);
    }

    @Test
    @DisplayName("with --strict-recovery, retained messages past a smaller --max-retained are not deleted silently: "
        + "the start is refused as for sessions past --max-sessions, the records kept")
    void strictRecoveryDoesNotSilentlyDeleteRetained()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxRetained(3, 1 << 20));
        start();
        packet(0, 1, connect("pub", true));
        packet(0, 1, publish("a", 1, 1, true));
        packet(0, 1, publish("b", 1, 2, true));
        packet(0, 1, publish("c", 1, 3, true));
        broker.settle();
        assertThat(retainedRecords()).isEqualTo(3);
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxRetained(1, 1 << 20))
            .persistence(p -> p.strictRecovery(true));
        org.assertj.core.api.Assertions.assertThatThrownBy(this::start)
            .isInstanceOf(io.ringmq.pipeline.persistence.StoreException.class)
            .hasMessageContaining("2 retained message(s) over --max-retained");
        assertThat(retainedRecords()).as("nothing deleted").isEqualTo(3);
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxRetained(1, 1 << 20));
        start();
        assertThat(broker.pipeline.recovered()).as("without it: a loss, said").contains(
            "LOST: 2 retained message(s) over --max-retained");
        broker.settle();
        assertThat(retainedRecords()).isEqualTo(1);
    }

    @Test
    @DisplayName("route shards 2, same --max-retained (count and bytes near the bound) at a restart: every retained record is kept")
    void retainedKeptUnderTheSameBoundWithRouteShards()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(8).maxRetained(3, 700))
            .threads(t -> t.routeShards(2));
        start();
        packet(0, 1, connect("pub", true));
        packet(0, 1, publish("x/a", 1, 1, true));
        packet(0, 1, publish("x/b/c", 1, 2, true));
        packet(0, 1, publish("y", 1, 3, true));
        packet(0, 1, publish("z/refused/by/bytes/or/count", 1, 4, true));
        broker.settle();
        final int before = retainedRecords();
        start();
        broker.settle();
        assertThat(retainedRecords()).isEqualTo(before);
        assertThat(broker.pipeline.recovered()).doesNotContain("over --max-retained");
    }
}
