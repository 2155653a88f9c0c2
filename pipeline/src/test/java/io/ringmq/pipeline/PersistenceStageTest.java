package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.Durability;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static io.ringmq.pipeline.PipelineTest.unsubscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The persistence stage and recovery, stepped in-process on a store kept in memory: a "restart" is a new pipeline
 * on the same store, so what a restart restores is seen packet by packet.
 */
class PersistenceStageTest
{
    private final MemoryStore store = MemoryStore.retaining();
    /** The fsync interval, and so how long the shards' journals may hold the ends of messages. */
    private long fsyncIntervalMs = 10;
    private PipelineHarness broker = start(store);

    private PipelineHarness start(final DurableStore store)
    {
        return new PipelineHarness(new BrokerContext().limits(l -> l.maxInflight(4))
            .persistence(p -> p.durability(Durability.PERIODIC, fsyncIntervalMs)),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
    }

    private void restart()
    {
        broker = start(store);
    }

    /**
     * A start whose journals hold the ends of messages for a minute: a crash in the test comes before they are
     * written, however slow the machine. The starts after it hold them 10 ms again.
     */
    private void endsWaitAMinute()
    {
        fsyncIntervalMs = 60_000;
        restart();
        fsyncIntervalMs = 10;
    }

    @Test
    @DisplayName("the recovery line says whether the store is new, the last stop was clean, or it crashed")
    void recoveryLineSaysHowTheLastRunEnded()
    {
        assertThat(broker.pipeline.recovered()).startsWith("ringmq recovered (a new store) 0 session(s)");
        packet(1, connect("sub", false));
        restart();
        assertThat(broker.pipeline.recovered()).startsWith("ringmq recovered (after a crash) 1 session(s)");
        broker.pipeline.stopped();
        restart();
        assertThat(broker.pipeline.recovered()).startsWith("ringmq recovered 1 session(s)").endsWith("nothing lost");
    }

    @Test
    @DisplayName("after a crash, a session that was connected counts its expiry from when the broker was last alive, "
        + "not from the restart [MQTT-3.1.2-23]")
    void expiryAfterACrashCountsFromTheLastSignOfLife()
    {
        final java.util.function.Supplier<PipelineHarness> expiring = () -> new PipelineHarness(
            new BrokerContext().limits(l -> l.maxInflight(4).persistentClientExpirationMs(5_000)),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
        broker = expiring.get();
        packet(1, connect("sub", false)); // connected when the broker dies
        packet(2, connect("kept", false));
        lost(2);
        // the broker was last seen alive 10 s ago: its heartbeat record says so
        final StoreWriter writer = store.writer(true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[32]);
        key.putLong(16, System.currentTimeMillis() - 10_000);
        writer.put(key, 0, io.ringmq.pipeline.persistence.Records.aliveKey(key), key, 16, 8);
        writer.commit();
        broker = expiring.get(); // a crash: no clean stop was recorded
        broker.step(); // the expiry timer, due 5 s after the last sign of life, fires at once
        packet(3, connect("sub", false));
        assertThat(broker.outbound.takePackets(3).get(0)[2]).as("session present").isEqualTo((byte)0);
        packet(4, connect("kept", false)); // it went away just now, at its DISCONNECT: its 5 s have not run
        assertThat(broker.outbound.takePackets(4).get(0)[2]).as("session present").isEqualTo((byte)1);
    }

    private void packet(final long connectionId, final byte[] packet)
    {
        broker.packet(connectionId, packet);
    }

    private void lost(final long connectionId)
    {
        broker.offer(connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST);
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

    /** What a PUBLISH sent to a client says: payload, packet id, DUP. */
    private record Delivery(String payload, int packetId, boolean dup)
    {
    }

    private List<Delivery> publishes(final long connectionId)
    {
        final List<Delivery> out = new ArrayList<>();
        for (final byte[] packet : broker.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xFF) >>> 4 != PacketType.PUBLISH)
            {
                continue;
            }
            final int qos = (packet[0] >> 1) & 3;
            int at = 1;
            int remaining = 0;
            int shift = 0;
            byte b;
            do
            {
                b = packet[at++];
                remaining |= (b & 0x7F) << shift;
                shift += 7;
            }
            while ((b & 0x80) != 0);
            final int topicLength = ((packet[at] & 0xFF) << 8) | (packet[at + 1] & 0xFF);
            at += 2 + topicLength;
            int packetId = 0;
            if (qos > 0)
            {
                packetId = ((packet[at] & 0xFF) << 8) | (packet[at + 1] & 0xFF);
                at += 2;
            }
            out.add(new Delivery(new String(packet, at, packet.length - at), packetId, (packet[0] & 0x08) != 0));
        }
        return out;
    }

    private List<String> payloads(final long connectionId)
    {
        return publishes(connectionId).stream().map(Delivery::payload).toList();
    }

    private void offlineSubscriber(final String clientId, final String filter, final int qos)
    {
        packet(1, connect(clientId, false));
        packet(1, subscribe(filter, qos));
        lost(1);
        broker.outbound.takePackets(1);
    }

    @Test
    @DisplayName("QoS 1 messages acknowledged to the publisher reach an offline persistent subscriber after a restart, in order [MQTT-4.3.2] [MQTT-3.1.2-4]")
    void queuedMessagesSurviveARestart()
    {
        offlineSubscriber("sub", "t/#", 1);
        packet(2, connect("pub", true));
        for (int i = 1; i <= 3; i++)
        {
            packet(2, publish("t/a", 1, i, false, "m" + i));
        }
        assertThat(broker.outbound.takeTypes(2)).containsExactly(PacketType.CONNACK, PacketType.PUBACK,
            PacketType.PUBACK, PacketType.PUBACK);

        restart();
        packet(3, connect("sub", false));
        assertThat(broker.outbound.sent.get(0)).satisfies(connack ->
            assertThat(((byte[])connack[1])[2]).as("session present").isEqualTo((byte)1));
        final List<Delivery> first = publishes(3);
        assertThat(first).extracting(Delivery::payload).containsExactly("m1", "m2", "m3");
        packet(3, ack(PacketType.PUBACK, first.get(0).packetId())); // m1 done with; m2 and m3 still in flight
        broker.settle(); // its end written
        lost(3);
        restart();
        packet(4, connect("sub", false));
        assertThat(payloads(4)).containsExactly("m2", "m3");
        // the subscription came back too: a new message reaches it
        packet(5, connect("pub", true));
        packet(5, publish("t/b", 1, 9, false, "m4"));
        assertThat(payloads(4)).containsExactly("m4");
    }

    /**
     * A QoS 1 message stored for an offline persistent subscriber, delivered when it comes back (connection 3), and
     * acknowledged.
     */
    private void acknowledgedOnce()
    {
        offlineSubscriber("sub", "t", 1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "once"));
        packet(3, connect("sub", false));
        final List<Delivery> first = publishes(3);
        assertThat(first).extracting(Delivery::payload).containsExactly("once");
        packet(3, ack(PacketType.PUBACK, first.get(0).packetId()));
    }

    @Test
    @DisplayName("a message the subscriber acknowledged is gone from the store: it is not delivered again after a restart")
    void acknowledgedMessagesAreForgotten()
    {
        acknowledgedOnce();
        broker.settle(); // the shard's journal writes the ends of messages within the fsync interval
        lost(3);
        restart();
        packet(4, connect("sub", false));
        assertThat(payloads(4)).isEmpty();
    }

    @Test
    @DisplayName("an acknowledgement whose end was not written yet when the broker crashed: the message comes again, on " +
        "the new connection, as QoS 1 allows [MQTT-4.3.2]; at a clean stop the end is written and nothing comes again")
    void acknowledgedJustBeforeACrashComesAgain()
    {
        endsWaitAMinute();
        acknowledgedOnce();
        lost(3);
        restart(); // a crash before the journal wrote the end

        packet(4, connect("sub", false));
        final List<Delivery> again = publishes(4);
        assertThat(again).extracting(Delivery::payload).containsExactly("once");
        packet(4, ack(PacketType.PUBACK, again.get(0).packetId()));
        lost(4);
        broker.pipeline.stopped(); // at once: the stop writes what the journal batched
        restart();
        packet(5, connect("sub", false));
        assertThat(payloads(5)).isEmpty();
    }

    /**
     * Two QoS 2 messages, "a" and "b", stored for an offline persistent subscriber and sent when it comes back
     * (connection 3).
     */
    private List<Delivery> twoQos2Sent()
    {
        offlineSubscriber("sub", "t", 2);
        packet(2, connect("pub", true));
        packet(2, publish("t", 2, 1, false, "a"));
        packet(2, publish("t", 2, 2, false, "b"));
        packet(3, connect("sub", false));
        final List<Delivery> sent = publishes(3);
        assertThat(sent).extracting(Delivery::payload).containsExactly("a", "b");
        return sent;
    }

    /**
     * The subscriber of connection 4 goes away once its shard's journal has written what it acknowledged, and the
     * broker crashes: when it comes back nothing is owed to it, no PUBLISH and no PUBREL.
     */
    private void nothingOwedAfterACrash()
    {
        broker.settle();
        lost(4);
        restart();
        packet(5, connect("sub", false));
        assertThat(broker.outbound.takeTypes(5)).containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("QoS 2 across a restart: a PUBRECed message gets its PUBREL with the same packet id, never the PUBLISH again [MQTT-4.4.0-1] [MQTT-4.3.3]")
    void qos2ExchangeSurvivesARestart()
    {
        final List<Delivery> sent = twoQos2Sent();
        packet(3, ack(PacketType.PUBREC, sent.get(0).packetId())); // "a": PUBREL awaited from here on
        assertThat(broker.outbound.takeTypes(3)).containsExactly(PacketType.PUBREL);

        restart();
        packet(4, connect("sub", false));
        final List<byte[]> packets = broker.outbound.takePackets(4);
        assertThat(packets).extracting(p -> (p[0] & 0xFF) >>> 4).containsExactly(PacketType.CONNACK,
            PacketType.PUBREL, PacketType.PUBLISH);
        assertThat(((packets.get(1)[2] & 0xFF) << 8) | (packets.get(1)[3] & 0xFF)).isEqualTo(sent.get(0).packetId());
        // "b" again, with DUP and its packet id
        assertThat((packets.get(2)[0] & 0x08) != 0).as("DUP").isTrue();
        packet(4, ack(PacketType.PUBCOMP, sent.get(0).packetId()));
        packet(4, ack(PacketType.PUBREC, sent.get(1).packetId()));
        packet(4, ack(PacketType.PUBCOMP, sent.get(1).packetId()));
        nothingOwedAfterACrash();
    }

    @Test
    @DisplayName("QoS 2, a crash just after PUBCOMP, before the journal wrote the message's end: only its PUBREL comes " +
        "again, with the same packet id, never the PUBLISH [MQTT-4.3.3] [MQTT-4.4.0-1]; an exchange record written " +
        "later takes the ends waiting with it")
    void qos2CompletedJustBeforeACrash()
    {
        endsWaitAMinute();
        final List<Delivery> sent = twoQos2Sent();
        packet(3, ack(PacketType.PUBREC, sent.get(0).packetId()));
        packet(3, ack(PacketType.PUBCOMP, sent.get(0).packetId())); // "a" done with: its end waits
        packet(3, ack(PacketType.PUBREC, sent.get(1).packetId())); // "b" released: written with "a"'s end
        packet(3, ack(PacketType.PUBCOMP, sent.get(1).packetId())); // "b" done with: its end waits
        lost(3);
        restart();

        packet(4, connect("sub", false));
        final List<byte[]> packets = broker.outbound.takePackets(4);
        assertThat(packets).extracting(p -> (p[0] & 0xFF) >>> 4).as("'a' not again; 'b' only its PUBREL")
            .containsExactly(PacketType.CONNACK, PacketType.PUBREL);
        assertThat(((packets.get(1)[2] & 0xFF) << 8) | (packets.get(1)[3] & 0xFF)).isEqualTo(sent.get(1).packetId());
        packet(4, ack(PacketType.PUBCOMP, sent.get(1).packetId())); // a client answers a PUBREL it knows no more
        nothingOwedAfterACrash();
    }

    @Test
    @DisplayName("a QoS 2 PUBLISH received before a restart and resent after it is not delivered twice [MQTT-4.3.3-9]")
    void inboundQos2SurvivesARestart()
    {
        offlineSubscriber("sub", "t", 1);
        packet(2, connect("pub", false));
        packet(2, publish("t", 2, 7, false, "x"));
        assertThat(broker.outbound.takeTypes(2)).containsExactly(PacketType.CONNACK, PacketType.PUBREC);
        restart();
        packet(3, connect("pub", false));
        packet(3, publish("t", 2, 7, false, "x")); // its PUBREC was lost with the broker: the client resends
        packet(3, ack(PacketType.PUBREL, 7));
        assertThat(broker.outbound.takeTypes(3)).containsExactly(PacketType.CONNACK, PacketType.PUBREC,
            PacketType.PUBCOMP);
        packet(4, connect("sub", false));
        assertThat(payloads(4)).containsExactly("x");
    }

    @Test
    @DisplayName("retained messages survive a restart; a cleared one stays cleared [MQTT-3.3.1-5] [MQTT-3.3.1-10]")
    void retainedMessagesSurviveARestart()
    {
        packet(1, connect("pub", true));
        packet(1, publish("r/1", 1, 1, true, "one"));
        packet(1, publish("r/2", 0, 0, true, "two"));
        packet(1, publish("r/2", 0, 0, true, ""));
        packet(1, publish("r/3", 1, 2, true, "old"));
        packet(1, publish("r/3", 1, 3, true, "new"));
        restart();
        packet(2, connect("reader", true));
        packet(2, subscribe("r/#", 1));
        assertThat(payloads(2)).containsExactlyInAnyOrder("one", "new");
    }

    @Test
    @DisplayName("nothing of a clean session or of QoS 0 is stored; an unsubscribed filter gets nothing after a restart")
    void cleanSessionsAndUnsubscribedFiltersAreNotKept()
    {
        packet(1, connect("clean", true));
        packet(1, subscribe("t", 1));
        packet(2, connect("sub", false));
        packet(2, subscribe("t", 1));
        packet(2, subscribe("u", 1));
        packet(2, unsubscribe("t"));
        lost(2);
        packet(3, connect("pub", true));
        packet(3, publish("t", 1, 1, false, "not for sub"));
        packet(3, publish("u", 0, 0, false, "qos 0"));
        restart();
        packet(4, connect("sub", false));
        assertThat(payloads(4)).isEmpty();
        packet(5, connect("pub", true));
        packet(5, publish("t", 1, 1, false, "after"));
        packet(5, publish("u", 1, 2, false, "still subscribed"));
        assertThat(payloads(4)).containsExactly("still subscribed");
    }

    @Test
    @DisplayName("a session that ends (clean start) takes every record of it along")
    void anEndedSessionLeavesNothing()
    {
        offlineSubscriber("sub", "t", 1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "m"));
        assertThat(store.size()).isGreaterThan(2);
        packet(3, connect("sub", true)); // a clean start ends the old session
        lost(3);
        assertThat(store.size()).as("only the epoch and the alive-at record are left").isEqualTo(2);
    }

    @Test
    @DisplayName("a garbled record is counted as lost, and everything else is restored")
    void garbledRecordIsReportedAndSkipped()
    {
        offlineSubscriber("sub", "t", 1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, false, "good"));
        final StoreWriter writer = store.writer(true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[32]);
        final UnsafeBuffer value = new UnsafeBuffer(new byte[4]);
        key.putByte(0, (byte)7); // no such record kind
        writer.put(key, 0, 3, value, 0, 4);
        writer.commit();
        restart();
        assertThat(broker.pipeline.recovered()).contains("1 session(s)").contains("1 queued")
            .contains("LOST: 1 unreadable record(s)");
        packet(3, connect("sub", false));
        assertThat(payloads(3)).containsExactly("good");
    }

    @Test
    @DisplayName("with --strict-recovery a damaged store stops the start")
    void strictRecoveryRefuses()
    {
        final StoreWriter writer = store.writer(true);
        final UnsafeBuffer key = new UnsafeBuffer(new byte[4]);
        key.putByte(0, (byte)9);
        writer.put(key, 0, 1, key, 0, 0);
        writer.commit();
        final BrokerContext strict = new BrokerContext().persistence(p -> p.strictRecovery(true));
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new PipelineHarness(strict,
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store))
            .isInstanceOf(StoreException.class).hasMessageContaining("strict-recovery");
    }

    @Test
    @DisplayName("a group commit that fails acknowledges nothing: the publisher gets no PUBACK and is disconnected")
    void failedCommitAcknowledgesNothing()
    {
        final FailingStore failing = new FailingStore();
        broker = start(failing);
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        lost(1);
        packet(2, connect("pub", true));
        broker.outbound.takePackets(2);
        failing.fail = true;
        packet(2, publish("t", 1, 1, false, "m"));
        assertThat(broker.outbound.takeTypes(2)).doesNotContain(PacketType.PUBACK);
        assertThat(broker.closed(2)).isTrue();
        assertThat(broker.counters.get(BrokerCounters.PERSISTENCE_WRITE_FAILED)).isEqualTo(1);
    }
}
