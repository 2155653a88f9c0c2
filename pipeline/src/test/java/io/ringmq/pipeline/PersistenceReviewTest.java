package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import static io.ringmq.pipeline.PipelineTest.ack;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of the durable persistence change: each test shows one defect (it fails on the change as reviewed).
 * A "restart" is a new harness on the same {@link MemoryStore#retaining()} store, with no clean-stop record (a
 * crash) unless the test says so.
 */
@Timeout(60)
class PersistenceReviewTest
{
    private final MemoryStore store = MemoryStore.retaining();
    private Supplier<BrokerContext> contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4));
    private PipelineHarness broker = start(store);

    private PipelineHarness start(final DurableStore store)
    {
        return new PipelineHarness(contexts.get(),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
    }

    private void restart()
    {
        broker = start(store);
    }

    // ---- 3.1.1 packets

    private void packet(final long connectionId, final byte[] packet)
    {
        broker.packet(connectionId, packet);
    }

    private void lost(final long connectionId)
    {
        broker.offer(connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST);
    }

    private static byte[] connect(final String clientId, final boolean clean)
    {
        return PipelineTest.connect(clientId, clean);
    }

    private static byte[] subscribe(final String filter, final int qos)
    {
        return PipelineTest.subscribe(filter, qos);
    }

    private static byte[] publish(final String topic, final int qos, final int packetId, final boolean retain,
        final String payload)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).retain(retain)
            .topic(topic).payload(payload.getBytes());
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    // ---- 5.0 packets (offered with version 5)

    private void packet5(final long connectionId, final byte[] packet)
    {
        broker.offer(0, connectionId, true, packet, IngressEvent.PACKET, MqttVersion.V5, 0, IngressEvent.NONE);
    }

    private void lost5(final long connectionId)
    {
        broker.offer(0, connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST, MqttVersion.V5, 0,
            IngressEvent.NONE);
    }

    private static byte[] connect5(final String clientId, final boolean clean, final int sessionExpiry,
        final String willTopic, final int willQos, final boolean willRetain, final int willDelay)
    {
        final MqttProperties properties = new MqttProperties();
        if (sessionExpiry > 0)
        {
            properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, sessionExpiry);
        }
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(clean)
            .keepAlive(60).properties(properties);
        if (null != willTopic)
        {
            encoder.will(willQos, willRetain, new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, willDelay));
            encoder.willTopic().wrap(willTopic);
            encoder.willPayload().wrap("will");
        }
        encoder.clientId().wrap(clientId);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static byte[] subscribe5(final String filter, final int qos)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(MqttVersion.V5)
            .packetId(1);
        encoder.filters().add(filter, qos);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static byte[] publish5(final String topic, final int qos, final int packetId, final String payload,
        final int expirySeconds)
    {
        return publish5(topic, qos, packetId, false, payload, expirySeconds);
    }

    /**
     * @param expirySeconds its Message Expiry Interval; 0: none.
     */
    static byte[] publish5(final String topic, final int qos, final int packetId, final boolean retain,
        final String payload, final int expirySeconds)
    {
        final MqttProperties properties = expirySeconds == 0 ? null :
            new MqttProperties().setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, expirySeconds);
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V5).qos(qos).retain(retain)
            .packetId(packetId).topic(topic).payload(payload.getBytes()).properties(properties);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    // ---- what the broker sent

    /** A PUBLISH sent to a client. */
    private record Delivery(String payload, int qos, int packetId, boolean dup, byte[] packet)
    {
    }

    private List<Delivery> publishes(final long connectionId, final int version)
    {
        final List<Delivery> out = new ArrayList<>();
        for (final byte[] packet : broker.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xFF) >>> 4 != PacketType.PUBLISH)
            {
                continue;
            }
            final PublishFlyweight publish = new PublishFlyweight();
            final UnsafeBuffer buffer = new UnsafeBuffer(packet);
            final int result = publish.wrap(buffer, 0, packet.length, version);
            assertThat(result).as("a well-formed PUBLISH (wrap result)").isPositive();
            out.add(new Delivery(publish.payload().asString(), publish.qos(), publish.packetId(), publish.isDup(),
                packet));
        }
        return out;
    }

    private List<String> payloads(final long connectionId)
    {
        return publishes(connectionId, MqttVersion.V3_1_1).stream().map(Delivery::payload).toList();
    }

    private static int countProperty(final byte[] publishPacket, final int propertyId)
    {
        // fixed header, remaining length, topic, packet id (QoS > 0), properties length (one byte here), properties
        int at = 1;
        while ((publishPacket[at++] & 0x80) != 0)
        {
            // remaining length
        }
        final int topicLength = ((publishPacket[at] & 0xFF) << 8) | (publishPacket[at + 1] & 0xFF);
        at += 2 + topicLength;
        if (((publishPacket[0] >> 1) & 3) > 0)
        {
            at += 2;
        }
        final int length = publishPacket[at++] & 0x7F;
        int count = 0;
        for (int p = at; p < at + length; p++)
        {
            final int id = publishPacket[p] & 0xFF;
            if (id == propertyId)
            {
                count++;
            }
            p += switch (id)
            {
                case PropertyId.MESSAGE_EXPIRY_INTERVAL -> 4;
                case PropertyId.PAYLOAD_FORMAT_INDICATOR -> 1;
                case PropertyId.TOPIC_ALIAS -> 2;
                case PropertyId.SUBSCRIPTION_IDENTIFIER -> 1; // small ids only in these tests
                default -> length; // not expected here: stop
            };
        }
        return count;
    }

    private void stepFor(final long millis) throws InterruptedException
    {
        final long until = System.currentTimeMillis() + millis;
        while (System.currentTimeMillis() < until)
        {
            broker.step();
            Thread.sleep(20);
        }
        broker.step();
    }

    // =================================================================================================
    // 1. Message Expiry Interval twice in a PUBLISH restored from the store
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-3.3.2-5] [MQTT-2.2.2-?] a restored QoS 1 message is sent with ONE Message Expiry Interval (the remaining time), not the publisher's raw property plus the remaining one")
    void restoredMessageCarriesMessageExpiryIntervalOnce()
    {
        packet5(1, connect5("sub", false, 3600, null, 0, false, 0));
        packet5(1, subscribe5("t", 1));
        lost5(1);
        packet5(2, connect5("pub", true, 0, null, 0, false, 0));
        packet5(2, publish5("t", 1, 1, "expiring", 600));
        broker.outbound.takePackets(2);
        restart();
        packet5(3, connect5("sub", false, 3600, null, 0, false, 0));
        final List<byte[]> sent = broker.outbound.takePackets(3).stream()
            .filter(p -> (p[0] & 0xFF) >>> 4 == PacketType.PUBLISH).toList();
        assertThat(sent).hasSize(1);
        assertThat(countProperty(sent.get(0), PropertyId.MESSAGE_EXPIRY_INTERVAL))
            .as("Message Expiry Interval properties in the resent PUBLISH (a Protocol Error when more than one)")
            .isEqualTo(1);
        assertThat(new PublishFlyweight().wrap(new UnsafeBuffer(sent.get(0)), 0, sent.get(0).length, MqttVersion.V5))
            .as("the client's decoder accepts it").isPositive();
    }

    // =================================================================================================
    // 2. Delayed wills: published twice across a restart; not persisted when they fire
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-3.1.3-9] a delayed will that was published before a restart is not published again after it")
    void delayedWillPublishedOnceAcrossRestart() throws InterruptedException
    {
        packet(1, connect("watcher", false));
        packet(1, subscribe("will/w", 1));
        broker.outbound.takePackets(1);
        packet5(2, connect5("w", false, 3600, "will/w", 1, false, 1));
        lost5(2); // abnormal: the will is due in 1 s
        stepFor(1_300);
        final List<Delivery> before = publishes(1, MqttVersion.V3_1_1);
        assertThat(before).extracting(Delivery::payload).containsExactly("will");
        packet(1, ack(PacketType.PUBACK, before.get(0).packetId()));
        broker.settle(); // the will's end written

        restart(); // a crash: the watcher's connection is gone with the broker
        packet(3, connect("watcher", false));
        stepFor(300);
        assertThat(payloads(3)).as("the will of 'w' was published already, before the restart").isEmpty();
    }

    @Test
    @DisplayName("[MQTT-3.1.3-9] [MQTT-4.3.2] a delayed QoS 1 will routed to an offline persistent subscriber survives a restart (it was stored for nobody)")
    void delayedWillToOfflineSubscriberSurvivesRestart() throws InterruptedException
    {
        packet(1, connect("watcher", false));
        packet(1, subscribe("will/w", 1));
        lost(1);
        // session expiry 1 s = will delay 1 s: the session ends and its will goes, once
        packet5(2, connect5("w", false, 1, "will/w", 1, false, 1));
        lost5(2);
        stepFor(1_500);
        restart();
        packet(3, connect("watcher", false));
        stepFor(200);
        assertThat(payloads(3)).as("the will, queued for the offline watcher before the restart").containsExactly(
            "will");
    }

    @Test
    @DisplayName("[MQTT-3.3.1-5] a retained delayed will is still retained after a restart")
    void retainedDelayedWillSurvivesRestart() throws InterruptedException
    {
        packet5(2, connect5("w", false, 1, "will/w", 1, true, 1));
        lost5(2);
        stepFor(1_500);
        packet(1, connect("reader1", true));
        packet(1, subscribe("will/#", 1));
        assertThat(payloads(1)).as("retained before the restart").containsExactly("will");
        restart();
        packet(3, connect("reader2", true));
        packet(3, subscribe("will/#", 1));
        assertThat(payloads(3)).as("retained after the restart").containsExactly("will");
    }

    // =================================================================================================
    // 3. Shared subscriptions: a re-dispatched message is stored for nobody
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.3.2] [5.0 4.8.2] a PUBACKed QoS 1 message re-dispatched to another persistent member of a shared group survives a restart")
    void redispatchedSharedMessageSurvivesRestart() throws InterruptedException
    {
        packet(1, connect("m1", false));
        packet(1, subscribe("$share/g/t", 1));
        packet(2, connect("m2", false));
        packet(2, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(1);
        broker.outbound.takePackets(2);
        packet(3, connect("pub", true));
        packet(3, publish("t", 1, 1, false, "m"));
        assertThat(broker.outbound.takeTypes(3)).contains(PacketType.PUBACK);
        final boolean toFirst = !payloads(1).isEmpty();
        final long holder = toFirst ? 1 : 2;
        final long other = toFirst ? 2 : 1;
        assertThat(payloads(other)).isEmpty();
        // the member that has it (unacknowledged) ends its session: a clean start
        packet(4, connect(toFirst ? "m1" : "m2", true));
        stepFor(100);
        assertThat(payloads(other)).as("re-dispatched to the other member").containsExactly("m");
        restart(); // unacknowledged by it
        packet(5, connect(toFirst ? "m2" : "m1", false));
        stepFor(100);
        assertThat(payloads(5)).as("still unacknowledged: resent after the restart").containsExactly("m");
        assertThat(holder).isPositive();
    }

    // =================================================================================================
    // 4. Order after a restart: an in-flight QoS 1 message is resent after a later QoS 2 one
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.6.0-2] [MQTT-4.6.0-3] unacknowledged messages are resent after a restart in the order they were first sent (QoS 1 then QoS 2)")
    void restoredInflightOrderKept()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 2));
        broker.outbound.takePackets(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "first"));
        packet(2, publish("t", 2, 2, false, "second"));
        assertThat(payloads(1)).containsExactly("first", "second");
        restart();
        packet(3, connect("sub", false));
        assertThat(payloads(3)).containsExactly("first", "second");
    }

    // =================================================================================================
    // 5. QoS 2 exactly once: a PUBRECed message restored with no room in flight is sent again as a NEW PUBLISH
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.3.3] [MQTT-4.4.0-1] a QoS 2 message the client PUBRECed gets only a PUBREL after a restart, even when --max-inflight is lower now (never a new PUBLISH)")
    void pubrecedMessageNeverResentAsNewPublish()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 2));
        broker.outbound.takePackets(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 2, 1, false, "a"));
        packet(2, publish("t", 2, 2, false, "b"));
        final List<Delivery> sent = publishes(1, MqttVersion.V3_1_1);
        assertThat(sent).extracting(Delivery::payload).containsExactly("a", "b");
        packet(1, ack(PacketType.PUBREC, sent.get(0).packetId()));
        packet(1, ack(PacketType.PUBREC, sent.get(1).packetId())); // both delivered to the application
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(1));
        restart();
        packet(3, connect("sub", false));
        final List<byte[]> first = broker.outbound.takePackets(3);
        // the client has both (it PUBRECed each): a PUBREL for each, never "b" again as a new PUBLISH, which the
        // client would deliver a second time; the window holds both whatever --max-inflight is now
        assertThat(first).extracting(p -> (p[0] & 0xFF) >>> 4).containsExactly(PacketType.CONNACK,
            PacketType.PUBREL, PacketType.PUBREL);
        assertThat(first.subList(1, 3)).extracting(p -> ((p[2] & 0xFF) << 8) | (p[3] & 0xFF))
            .containsExactly(sent.get(0).packetId(), sent.get(1).packetId());
        packet(3, ack(PacketType.PUBCOMP, sent.get(0).packetId()));
        packet(3, ack(PacketType.PUBCOMP, sent.get(1).packetId()));
        assertThat(broker.outbound.takeTypes(3)).doesNotContain(PacketType.PUBLISH);
    }

    // =================================================================================================
    // 6. Retained limit: what a restart restores differs from what was retained
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-3.3.1-5] with --max-retained-messages, a restart keeps the retained messages the broker kept, not ones it refused")
    void refusedRetainedMessageNotRestoredInsteadOfKeptOne()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxRetained(1, 1 << 20));
        broker = start(store);
        packet(1, connect("pub", true));
        packet(1, publish("b/kept", 1, 1, true, "kept"));
        packet(1, publish("a/refused", 1, 2, true, "refused")); // over the limit: delivered live, not kept
        packet(2, connect("reader1", true));
        packet(2, subscribe("#", 1));
        assertThat(payloads(2)).as("before the restart").containsExactly("kept");
        restart();
        packet(3, connect("reader2", true));
        packet(3, subscribe("#", 1));
        assertThat(payloads(3)).as("after the restart").containsExactly("kept");
    }

    @Test
    @DisplayName("[MQTT-3.3.1-5] retained messages past a smaller --max-retained at a restart are dropped with their "
        + "records: a later restart with the larger bound does not bring back what the broker refused")
    void retainedMessagesRefusedAtRecoveryLeaveTheStore()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxRetained(3, 1 << 20));
        broker = start(store);
        packet(1, connect("pub", true));
        packet(1, publish("a", 1, 1, true, "a"));
        packet(1, publish("b", 1, 2, true, "b"));
        packet(1, publish("c", 1, 3, true, "c"));
        broker.settle();
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxRetained(1, 1 << 20));
        restart();
        packet(2, connect("reader1", true));
        packet(2, subscribe("#", 1));
        assertThat(payloads(2)).as("under the smaller bound: the first in key order").containsExactly("a");
        broker.settle();
        final int[] retainedRecords = new int[1];
        store.scan((key, keyLength, value, valueLength) -> retainedRecords[0] += key.getByte(0) == 2 ? 1 : 0);
        assertThat(retainedRecords[0]).as("retained records left in the store").isEqualTo(1);
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxRetained(3, 1 << 20));
        restart();
        packet(3, connect("reader2", true));
        packet(3, subscribe("#", 1));
        assertThat(payloads(3)).as("the larger bound again").containsExactly("a");
    }

    // =================================================================================================
    // 7. Message numbers wrap within an epoch: keys collide and sort out of order
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.6.0-5] message numbers of one run never wrap: after 2^32 stored messages, the next sorts before the last and restores out of order")
    void messageNumberWrapKeepsOrder() throws Exception
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        lost(1);
        // as after 2^32 - 1 messages stored in this run (about 70 minutes at a million a second)
        nextMessage(-2);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "one"));
        packet(2, publish("t", 1, 2, false, "two"));
        restart();
        packet(3, connect("sub", false));
        assertThat(payloads(3)).containsExactly("one", "two");
    }

    @Test
    @DisplayName("[MQTT-4.6.0-5] a message stored as three copies for one session (its own and two shared "
        + "subscriptions) takes three numbers: they never wrap within an epoch, and restore in order")
    void messageCopiesNeverWrapWithinAnEpoch() throws Exception
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        packet(1, subscribe("$share/a/t", 1));
        packet(1, subscribe("$share/b/t", 1));
        lost(1);
        // as after 2^32 - 3 numbers taken in this run: the first message's third copy would take number 2^32
        nextMessage(-3);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "one"));
        packet(2, publish("t", 1, 2, false, "two"));
        restart();
        packet(3, connect("sub", false));
        // the harness's window is four messages: the rest wait for acknowledgements
        assertThat(payloads(3)).containsExactly("one", "one", "one", "two");
    }

    /**
     * Sets the persistence stage's message counter, as after that many numbers (unsigned) taken in this run.
     */
    private void nextMessage(final int next) throws Exception
    {
        final java.lang.reflect.Field field = PersistenceStage.class.getDeclaredField("nextMessage");
        field.setAccessible(true);
        field.setInt(persistenceStage(broker), next);
    }

    static PersistenceStage persistenceStage(final PipelineHarness harness) throws Exception
    {
        final java.lang.reflect.Field persist = Pipeline.class.getDeclaredField("persist");
        persist.setAccessible(true);
        final Object step = persist.get(harness.pipeline);
        final java.lang.reflect.Field stage = step.getClass().getDeclaredField("stage");
        stage.setAccessible(true);
        return (PersistenceStage)stage.get(step);
    }

    // =================================================================================================
    // 8. Garbled records that recovery throws on (it must skip and report, unless --strict-recovery)
    // =================================================================================================

    @Test
    @DisplayName("a queued-message record with a negative topic length is skipped and reported: recovery never throws")
    void garbledNegativeLengthRecordIsSkipped()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        lost(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "good"));
        packet(2, publish("t", 1, 2, false, "bad"));
        // garble the second message's record: its topic length (right after the 15-byte header) negative
        final List<byte[][]> queued = new ArrayList<>();
        store.scan((key, keyLength, value, valueLength) ->
        {
            if (keyLength == 18 && key.getByte(9) == 5)
            {
                final byte[] k = new byte[keyLength];
                final byte[] v = new byte[valueLength];
                key.getBytes(0, k);
                value.getBytes(0, v);
                queued.add(new byte[][]{k, v});
            }
        });
        assertThat(queued).hasSize(2);
        final byte[][] bad = queued.get(1);
        new UnsafeBuffer(bad[1]).putInt(15, -5);
        final StoreWriter writer = store.writer(true);
        writer.put(new UnsafeBuffer(bad[0]), 0, bad[0].length, new UnsafeBuffer(bad[1]), 0, bad[1].length);
        writer.commit();
        restart();
        assertThat(broker.pipeline.recovered()).contains("LOST: 1 unreadable record(s)");
        packet(3, connect("sub", false));
        assertThat(payloads(3)).containsExactly("good");
    }

    @Test
    @DisplayName("a retained record whose topic length is garbled is skipped and reported: recovery never throws")
    void garbledRetainedRecordIsSkipped()
    {
        packet(1, connect("pub", true));
        packet(1, publish("r", 1, 1, true, "x"));
        final StoreWriter writer = store.writer(true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[2]);
        key.putByte(0, (byte)2);
        key.putByte(1, (byte)'z');
        final UnsafeBuffer value = new UnsafeBuffer(new byte[9 + 12]);
        value.putByte(0, (byte)1);
        value.putLong(1, Message.NEVER);
        value.putInt(9, -1); // topic length
        writer.put(key, 0, 2, value, 0, value.capacity());
        writer.commit();
        restart();
        assertThat(broker.pipeline.recovered()).contains("LOST: 1 unreadable record(s)");
    }

    // =================================================================================================
    // 9. Orphans: records that stay in the store forever
    // =================================================================================================

    @Test
    @DisplayName("a session resumed with expiry 0 that ends leaves nothing; a session that expires leaves nothing (no orphan records)")
    void expiredSessionLeavesNothing() throws InterruptedException
    {
        packet5(1, connect5("sub", false, 1, null, 0, false, 0));
        packet5(1, subscribe5("t", 1));
        lost5(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "m"));
        stepFor(1_300); // the session expires
        packet(2, publish("x", 0, 0, false, "an event, for the discard to travel"));
        assertThat(keys()).as("records left: only the epoch and the alive-at record").containsExactly("0061", "0065");
    }

    @Test
    @DisplayName("[MQTT-3.1.2-23] a persistent session resumed with Session Expiry Interval 0 keeps its records only while its connection is open: they go when it ends, and a crash meanwhile brings no session back (checked, holds)")
    void sessionResumedWithExpiryZeroLeavesNoGhost()
    {
        packet5(1, connect5("c", false, 60, null, 0, false, 0));
        packet5(1, subscribe5("t", 1));
        lost5(1);
        assertThat(storedSessions()).as("offline and persistent: stored").isEqualTo(1);
        packet5(2, connect5("c", false, 0, null, 0, false, 0)); // resumed; it now ends with this connection
        assertThat(sessionPresent(2)).as("resumed").isTrue();
        assertThat(broker.pipeline.routing().sessionCount()).as("routing holds it, online").isEqualTo(1);
        assertThat(broker.pipeline.routing().persistentSessionCount()).as("no longer persistent").isZero();
        assertThat(storedSessions()).as("its record stays (state: expiry 0) until its connection ends").isEqualTo(1);
        restart(); // a crash with that connection open
        assertThat(broker.pipeline.recovered()).contains(" 0 session(s)").endsWith("nothing lost");
        assertThat(storedSessions()).as("deleted by recovery").isZero();
        packet5(3, connect5("c", false, 60, null, 0, false, 0));
        assertThat(sessionPresent(3)).as("no session brought back").isFalse();
        lost5(3);
        packet5(4, connect5("c", false, 0, null, 0, false, 0));
        assertThat(sessionPresent(4)).as("resumed").isTrue();
        lost5(4);
        assertThat(broker.pipeline.routing().sessionCount()).as("ended with its connection").isZero();
        assertThat(storedSessions()).as("and so did its records").isZero();
    }

    @Test
    @DisplayName("a message stored for 50 sessions comes back as one shared copy; each session still gets it, on its "
        + "return, and its acknowledgement frees only its own")
    void aMessageStoredForManySessionsComesBackAsOneCopy()
    {
        for (int i = 0; i < 50; i++)
        {
            packet(1 + i, connect("s" + i, false));
            packet(1 + i, subscribe("fan/#", 1));
            lost(1 + i);
        }
        packet(100, connect("p", true));
        packet(100, publish("fan/a", 1, 1, false, "one"));
        packet(100, publish("fan/b", 1, 2, false, "two"));
        restart();
        assertThat(broker.pipeline.recovered()).contains(" 100 queued and 0 in-flight message(s) (2 distinct)")
            .endsWith("nothing lost");
        for (int i = 0; i < 50; i += 7)
        {
            packet(200 + i, connect("s" + i, false));
            final List<Delivery> got = publishes(200 + i, MqttVersion.V3_1_1);
            assertThat(got).extracting(Delivery::payload).as("session s" + i).containsExactly("one", "two");
            packet(200 + i, PipelineTest.ack(PacketType.PUBACK, got.get(0).packetId()));
        }
        packet(300, connect("s1", false)); // not yet back: its copy is whole after others acknowledged theirs
        assertThat(publishes(300, MqttVersion.V3_1_1)).extracting(Delivery::payload).containsExactly("one", "two");
    }

    @Test
    @DisplayName("[MQTT-4.1.0-2] a session whose expiry ran out while the broker was down is not restored with its "
        + "messages: it ends at once, its records go, and its client finds no session")
    void aSessionExpiredWhileDownIsNotRestored() throws Exception
    {
        restartAfterTheSessionExpired();
        assertThat(broker.pipeline.recovered())
            .contains(" 0 queued and 0 in-flight message(s) (0 distinct; 1 of sessions that expired while it was down, " +
                "dropped)").endsWith("nothing lost");
        final long deadline = System.currentTimeMillis() + 5_000;
        while (broker.pipeline.routing().sessionCount() > 0 && System.currentTimeMillis() < deadline)
        {
            broker.step(); // the routing stage's first poll ends it
        }
        assertThat(broker.pipeline.routing().sessionCount()).isZero();
        packet(4, connect("other", true)); // the stages learn of the ended session with the next event
        assertThat(storedSessions()).isZero();
        packet5(3, connect5("gone", false, 60, null, 0, false, 0));
        assertThat(sessionPresent(3)).isFalse();
    }

    @Test
    @DisplayName("[MQTT-3.2.2-2] with 2 routing shards, a CONNECT on the ring before the first expiry tick does not "
        + "resume a session that expired while the broker was down: no session present")
    void aSessionExpiredWhileDownIsNotResumedOnRouteShards() throws Exception
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4)).threads(t -> t.routeShards(2));
        broker = start(store);
        restartAfterTheSessionExpired();
        broker.put(0, 3, true, connect5("gone", false, 60, null, 0, false, 0), IngressEvent.PACKET, MqttVersion.V5,
            0, IngressEvent.NONE); // before any stage has run: before shard 0 puts an expiry tick on the ring
        broker.step();
        assertThat(sessionPresent(3)).isFalse();
        assertThat(publishes(3, MqttVersion.V5)).isEmpty();
        lost5(3);
        restart();
        assertThat(broker.pipeline.recovered()).contains(" 0 queued and 0 in-flight message(s)");
    }

    /**
     * Client "gone" (5.0, Session Expiry Interval 1 s) subscribes to t and goes; a QoS 1 message is queued for it; the
     * broker restarts once more than that second has passed, as if down meanwhile.
     */
    private void restartAfterTheSessionExpired() throws InterruptedException
    {
        packet5(1, connect5("gone", false, 1, null, 0, false, 0));
        packet5(1, subscribe5("t", 1));
        lost5(1);
        final long wentAwayMs = System.currentTimeMillis();
        packet(2, connect("p", true));
        packet(2, publish("t", 1, 1, false, "late"));
        while (System.currentTimeMillis() <= wentAwayMs + 1_100)
        {
            Thread.sleep(20); // the broker is down past the session's 1 s expiry
        }
        restart();
    }

    private int storedSessions()
    {
        final int[] count = new int[1];
        store.scan((key, keyLength, value, valueLength) ->
        {
            if (key.getByte(0) == io.ringmq.pipeline.persistence.Records.SESSIONS &&
                io.ringmq.pipeline.persistence.Records.kindOf(key) == io.ringmq.pipeline.persistence.Records.SESSION)
            {
                count[0]++;
            }
        });
        return count[0];
    }

    private boolean sessionPresent(final long connectionId)
    {
        final byte[] connack = broker.outbound.takePackets(connectionId).get(0);
        assertThat((connack[0] & 0xFF) >>> 4).as("CONNACK").isEqualTo(PacketType.CONNACK);
        assertThat(connack[3]).as("accepted").isEqualTo((byte)0);
        return (connack[2] & 1) != 0;
    }

    private List<String> keys()
    {
        final List<String> keys = new ArrayList<>();
        store.scan((key, keyLength, value, valueLength) ->
        {
            final StringBuilder hex = new StringBuilder();
            for (int i = 0; i < keyLength; i++)
            {
                hex.append(String.format("%02x", key.getByte(i)));
            }
            keys.add(hex.toString());
        });
        return keys;
    }

    @Test
    @DisplayName("an epoch record of a fresh store: the first epoch's keys do not collide with keys of a store whose epoch record was lost")
    void epochRecordLostReusesKeys()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        lost(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "first run"));
        // the epoch record is lost (a garbled record, deleted by hand here)
        final StoreWriter writer = store.writer(true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[2]);
        key.putByte(0, (byte)0);
        key.putByte(1, (byte)'e');
        writer.delete(key, 0, 2);
        writer.commit();
        restart();
        packet(3, connect("sub2", false));
        packet(3, subscribe("t", 1));
        lost(3);
        packet(4, connect("pub", true));
        packet(4, publish("t", 1, 1, false, "second run"));
        restart();
        packet(5, connect("sub", false));
        // sub is subscribed to t through both runs: it has both; what a reused key would lose is either of them
        assertThat(payloads(5)).containsExactly("first run", "second run");
        packet(6, connect("sub2", false));
        assertThat(payloads(6)).containsExactly("second run");
        assertThat(ByteOrder.nativeOrder()).isNotNull();
    }

    // =================================================================================================
    // 10. Two I/O agents: a restored session (in shard 0) taken by a client on agent 1
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.4.0-1] two I/O agents: restored messages reach a client that comes back through agent 1, and what it acknowledges there is not restored again")
    void restoredSessionMovesToAgentOne()
    {
        contexts = () -> new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED))
            .limits(l -> l.maxInflight(4)).threads(t -> t.ioThreads(2));
        broker = start(store);
        broker.offer(1, 1, true, connect("sub", false), IngressEvent.PACKET);
        broker.offer(1, 1, true, subscribe("t", 2), IngressEvent.PACKET);
        broker.offer(1, 1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        broker.outbound.takePackets(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "q1"));
        packet(2, publish("t", 2, 2, false, "q2"));
        restart();
        broker.offer(1, 3, true, connect("sub", false), IngressEvent.PACKET);
        final List<Delivery> sent = publishes(3, MqttVersion.V3_1_1);
        assertThat(sent).extracting(Delivery::payload).containsExactly("q1", "q2");
        broker.offer(1, 3, true, ack(PacketType.PUBACK, sent.get(0).packetId()), IngressEvent.PACKET);
        broker.offer(1, 3, true, ack(PacketType.PUBREC, sent.get(1).packetId()), IngressEvent.PACKET);
        broker.offer(1, 3, true, ack(PacketType.PUBCOMP, sent.get(1).packetId()), IngressEvent.PACKET);
        broker.settle(); // shard 1's journal writes both ends
        broker.offer(1, 3, true, new byte[0], IngressEvent.CONNECTION_LOST);
        restart();
        packet(4, connect("sub", false));
        assertThat(broker.outbound.takeTypes(4)).containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("[MQTT-4.3.3] [MQTT-4.4.0-1] two I/O agents: a session that moves to the other shard writes the ends its old shard's journal batched first, so a crash right after the move sends nothing again")
    void movingSessionWritesTheEndsItLeavesBehind()
    {
        // the journals hold ends for a minute: only the move writes them before the crash
        contexts = () -> new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED))
            .limits(l -> l.maxInflight(4)).threads(t -> t.ioThreads(2))
            .persistence(p -> p.durability(io.ringmq.pipeline.persistence.Durability.PERIODIC, 60_000));
        broker = start(store);
        broker.offer(0, 1, true, connect("sub", false), IngressEvent.PACKET);
        broker.offer(0, 1, true, subscribe("t", 2), IngressEvent.PACKET);
        broker.outbound.takePackets(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 2, 1, false, "a"));
        final List<Delivery> sent = publishes(1, MqttVersion.V3_1_1);
        assertThat(sent).extracting(Delivery::payload).containsExactly("a");
        broker.offer(0, 1, true, ack(PacketType.PUBREC, sent.get(0).packetId()), IngressEvent.PACKET);
        broker.offer(0, 1, true, ack(PacketType.PUBCOMP, sent.get(0).packetId()), IngressEvent.PACKET); // end waits
        broker.offer(0, 1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        broker.offer(1, 3, true, connect("sub", false), IngressEvent.PACKET); // the session moves to shard 1
        assertThat(broker.outbound.takeTypes(3)).containsExactly(PacketType.CONNACK);
        restart(); // a crash at once
        packet(4, connect("sub", false));
        assertThat(broker.outbound.takeTypes(4)).as("no PUBREL, no PUBLISH: 'a' was done with")
            .containsExactly(PacketType.CONNACK);
    }

    // =================================================================================================
    // 11. Session expiry across a clean stop
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-3.1.2-23] a session connected at a clean stop expires counting from the stop: after its expiry has passed while the broker was down, it is gone")
    void sessionExpiryCountsDowntimeAfterCleanStop() throws InterruptedException
    {
        packet5(1, connect5("sub", false, 1, null, 0, false, 0));
        packet5(1, subscribe5("t", 1));
        broker.pipeline.stopped();
        Thread.sleep(1_300);
        restart();
        stepFor(100);
        packet5(2, connect5("sub", false, 1, null, 0, false, 0));
        final byte[] connack = broker.outbound.takePackets(2).get(0);
        assertThat(connack[2]).as("session present").isEqualTo((byte)0);
    }

    // =================================================================================================
    // 12. A failed group commit: routing already applied what the slot changed
    // =================================================================================================


    @Test
    @DisplayName("[MQTT-4.3.3] a QoS 2 PUBLISH whose group commit failed (no PUBREC, connection closed) is delivered when its publisher resends it after reconnecting, not taken as a duplicate")
    void qos2PublishOfAFailedCommitIsNotLostOnResend()
    {
        final FailingStore flaky = new FailingStore();
        broker = start(flaky);
        packet(1, connect("sub", true));
        packet(1, subscribe("t", 1));
        broker.outbound.takePackets(1);
        packet(2, connect("pub", false));
        broker.outbound.takePackets(2);
        flaky.fail = true;
        packet(2, publish("t", 2, 7, false, "x"));
        flaky.fail = false;
        assertThat(broker.outbound.takeTypes(2)).doesNotContain(PacketType.PUBREC);
        assertThat(broker.closed(2)).isTrue();
        assertThat(payloads(1)).as("not delivered: its slot failed").isEmpty();
        lost(2);
        packet(3, connect("pub", false));
        final byte[] resend = publish("t", 2, 7, false, "x");
        resend[0] |= 0x08; // DUP
        packet(3, resend);
        packet(3, ack(PacketType.PUBREL, 7));
        assertThat(broker.outbound.takeTypes(3)).containsExactly(PacketType.CONNACK, PacketType.PUBREC,
            PacketType.PUBCOMP);
        assertThat(payloads(1)).as("the publisher got PUBCOMP: the message must have been delivered once")
            .containsExactly("x");
    }

    @Test
    @DisplayName("messages an offline session's full queue drops leave no record behind (checked, holds)")
    void queueFullDropsLeaveNoRecords()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxQueued(2));
        broker = start(store);
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        lost(1);
        packet(2, connect("pub", true));
        for (int i = 1; i <= 5; i++)
        {
            packet(2, publish("t", 1, i, false, "m" + i));
        }
        broker.settle(); // the ends of the dropped ones written
        final long queued = keys().stream().filter(k -> k.length() == 36 && k.startsWith("01") &&
            k.substring(18, 20).equals("05")).count();
        assertThat(queued).as("QUEUED records: the two the queue holds").isEqualTo(2);
    }
}
