package io.ringmq.pipeline;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Regressions for the faults an attacker found in the first pipeline: each test fails on the code before the
 * fix. The stages are stepped in-process through {@link PipelineHarness}.
 */
class PipelineFaultsTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    @Test
    @DisplayName("fail closed: an exception in the auth stage refuses the CONNECT and closes the connection")
    void authStageErrorRefuses(@TempDir final Path dir) throws Exception
    {
        final Path file = dir.resolve("passwd");
        Files.writeString(file, "eve:$7$1000$$AAAA\n", StandardCharsets.UTF_8); // a malformed line: empty salt
        final PipelineHarness harness = new PipelineHarness(new BrokerContext(),
            new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, PasswordFile.load(file)));
        harness.packet(1, connectWithCredentials("eve", "eve", "anything"));
        final List<byte[]> sent = harness.outbound.takePackets(1);
        assertThat(sent).hasSize(1);
        assertThat(sent.get(0)[0] & 0xFF).isEqualTo(0x20);
        assertThat(sent.get(0)[3]).as("refused, never accepted").isNotEqualTo((byte)0);
        assertThat(harness.outbound.closed).hasSize(1);
        assertThat(harness.pipeline.routing().sessionCount()).isZero();
        // and whether it threw or refused, nothing was admitted: a PUBLISH on that connection goes nowhere
        harness.packet(2, connect("watcher", true));
        harness.packet(2, subscribe("#", 0));
        harness.outbound.takePackets(2);
        harness.packet(1, publish("x", 0, 0, false));
        assertThat(harness.outbound.takePackets(2)).isEmpty();
    }

    @Test
    @DisplayName("a failed slot: later stages skip it (onFailed, never onEvent) and the connection is closed")
    void failedSlotIsSkippedByLaterStages()
    {
        final List<String> seen = new ArrayList<>();
        final Stage failing = new RecordingStage("first", seen, true);
        final Stage later = new RecordingStage("later", seen, false);
        final RingBuffer<IngressEvent> ring = RingBuffer.createSingleProducer(() -> new IngressEvent(64), 8);
        final StagePoller first = new StagePoller(ring);
        final StagePoller second = new StagePoller(ring, first.sequence());
        ring.addGatingSequences(second.sequence());
        final BrokerCounters counters = new BrokerCounters();
        final ErrorLog errors = new ErrorLog(counters);
        final StageAgent.Step one = new StageAgent.Step(failing, first, errors, 1024);
        final StageAgent.Step two = new StageAgent.Step(later, second, errors, 1024);
        final long sequence = ring.next();
        ring.get(sequence).end(IngressEvent.CONNECTION_LOST, 0, 7, MqttVersion.V3_1_1);
        ring.publish(sequence);
        one.poll();
        two.poll();
        assertThat(seen).containsExactly("first.onEvent", "first.onFailed", "later.onFailed");
        assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isEqualTo(1);
    }

    /**
     * A stage handles at most its batch limit per duty cycle, so a thread it shares is not held; in shared threading,
     * where the one I/O agent cannot have handed on more than the ring holds, a turn runs up to four batches.
     */
    @ParameterizedTest(name = "{0}: {1} events per stage per duty cycle")
    @CsvSource({"SHARED_NETWORK, 2", "DEDICATED, 2", "SHARED, 8"})
    void batchLimit(final BrokerContext.Threading threading, final int perStage)
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .threads(t -> t.threading(threading).stageBatchLimit(2)), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        harness.packet(1, subscribe("t", 0));
        harness.packet(2, connect("pub", true));
        harness.outbound.sent.clear();
        final RingBuffer<IngressEvent> ring = harness.pipeline.ring();
        for (int i = 0; i < 10; i++)
        {
            final byte[] packet = publish("t", 0, 0, false);
            final long sequence = ring.next();
            ring.get(sequence).packet(0, 2, MqttVersion.V3_1_1, true, PacketType.PUBLISH, new UnsafeBuffer(packet),
                packet.length, null, -1);
            ring.publish(sequence);
        }
        assertThat(harness.agent.doWork()).as("per stage: auth, route, one shard, release").isEqualTo(4 * perStage);
        harness.step();
        assertThat(harness.outbound.takeTypes(1)).hasSize(10);
    }

    @Test
    @DisplayName("a full outbound ring never parks delivery; QoS 1 waits in order and none is lost")
    void fullOutboundRingBacklogs()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext(), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        harness.packet(1, subscribe("q", 1));
        harness.packet(2, connect("pub", true));
        harness.outbound.sent.clear();
        harness.outbound.full = true;
        for (int i = 1; i <= 5; i++)
        {
            harness.packet(2, publish("q", 1, i, false));
        }
        harness.packet(2, publish("q", 0, 0, false)); // QoS 0 meanwhile: dropped and counted
        assertThat(harness.outbound.sent).isEmpty();
        assertThat(harness.counters.get(BrokerCounters.OUTBOUND_BACKLOGGED)).isEqualTo(10); // 5 PUBACK, 5 PUBLISH
        assertThat(harness.counters.get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER)).isEqualTo(1);
        harness.outbound.full = false;
        harness.step();
        assertThat(harness.outbound.takeTypes(2)).containsExactly(PacketType.PUBACK, PacketType.PUBACK,
            PacketType.PUBACK, PacketType.PUBACK, PacketType.PUBACK);
        final List<byte[]> delivered = harness.outbound.takePackets(1);
        assertThat(delivered).hasSize(5);
        final PacketDecoder decoder = new PacketDecoder();
        for (int i = 0; i < delivered.size(); i++)
        {
            decoder.decode(new UnsafeBuffer(delivered.get(i)), 0, delivered.get(i).length, MqttVersion.V3_1_1, 1 << 20);
            assertThat(decoder.publish().packetId()).as("in order").isEqualTo(i + 1);
        }
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: a session resumed through another agent moves to that agent's shard with its "
        + "in-flight and queued messages, even when that shard is polled first and must wait for it")
    void sessionMovesToAShardPolledFirst()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .limits(l -> l.maxInflight(1)), ANONYMOUS);
        harness.offer(1, 10, true, connect("mover", false), IngressEvent.PACKET); // on agent 1: shard 1
        harness.offer(1, 10, true, subscribe("m", 1), IngressEvent.PACKET);
        harness.offer(0, 20, true, connect("pub", true), IngressEvent.PACKET);
        for (int i = 1; i <= 3; i++)
        {
            harness.offer(0, 20, true, publish("m", 1, i, false), IngressEvent.PACKET);
        }
        final List<byte[]> first = harness.outbound.takePackets(10);
        assertThat(first).hasSize(3); // CONNACK, SUBACK, one PUBLISH in flight; two queued
        final int inflight = packetId(first.get(2));
        harness.offer(1, 10, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.offer(0, 30, true, connect("mover", false), IngressEvent.PACKET); // back on agent 0: shard 0
        final List<byte[]> resumed = harness.outbound.takePackets(30);
        assertThat(resumed).hasSize(2);
        assertThat(resumed.get(0)).startsWith(0x20, 0x02, 0x01, 0x00); // session present
        assertThat(resumed.get(1)[0] & 0x08).as("DUP").isEqualTo(0x08);
        assertThat(packetId(resumed.get(1))).isEqualTo(inflight);
        harness.offer(0, 30, true, ack(PacketType.PUBACK, inflight), IngressEvent.PACKET);
        final List<byte[]> next = harness.outbound.takePackets(30);
        assertThat(next).hasSize(1);
        harness.offer(0, 30, true, ack(PacketType.PUBACK, packetId(next.get(0))), IngressEvent.PACKET);
        assertThat(harness.outbound.takePackets(30)).hasSize(1);
        assertThat(harness.counters.get(BrokerCounters.SESSIONS_MOVED)).isEqualTo(1);
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("MQTT-4.3.3-1: PUBCOMP is not accepted while PUBREC is awaited; a QoS 1 id gets no PUBREL")
    void qos2StateMachine()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .limits(l -> l.maxInflight(1)), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        harness.packet(1, subscribe("q", 2));
        harness.packet(2, connect("pub", true));
        harness.packet(2, publish("q", 2, 1, false));
        harness.packet(2, ack(PacketType.PUBREL, 1));
        harness.packet(2, publish("q", 2, 2, false));
        harness.packet(2, ack(PacketType.PUBREL, 2));
        final List<byte[]> first = harness.outbound.takePackets(1);
        assertThat(first).hasSize(3); // CONNACK, SUBACK, one PUBLISH (window of 1)
        final int id = packetId(first.get(2));
        harness.packet(1, ack(PacketType.PUBCOMP, id)); // too early: PUBREC not sent yet
        assertThat(harness.outbound.takePackets(1)).as("the window is still full").isEmpty();
        harness.packet(1, ack(PacketType.PUBREC, id));
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.PUBREL);
        harness.packet(1, ack(PacketType.PUBCOMP, id));
        assertThat(harness.outbound.takeTypes(1)).as("the second message").containsExactly(PacketType.PUBLISH);

        harness.packet(3, connect("sub1", true));
        harness.packet(3, subscribe("one", 1));
        harness.packet(2, publish("one", 1, 3, false));
        final List<byte[]> qos1 = harness.outbound.takePackets(3);
        harness.packet(3, ack(PacketType.PUBREC, packetId(qos1.get(qos1.size() - 1))));
        assertThat(harness.outbound.takeTypes(3)).as("no PUBREL for a QoS 1 message").isEmpty();
    }

    @Test
    @DisplayName("a taken-over connection's will is published (as Mosquitto does) [MQTT-3.1.4-2]")
    void takeoverPublishesWill()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext(), ANONYMOUS);
        harness.packet(1, connect("watcher", true));
        harness.packet(1, subscribe("will/#", 0));
        harness.outbound.takePackets(1);
        harness.packet(2, PipelineTest.connectWithWill("mortal", "will/mortal", "bye"));
        harness.packet(3, connect("mortal", true)); // the same client id, from a new connection
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.PUBLISH);
        assertThat(harness.outbound.closed).extracting(c -> c[1]).containsExactly(2L);
        harness.offer(2, true, new byte[0], IngressEvent.CONNECTION_LOST); // the old connection's end, later
        assertThat(harness.outbound.takeTypes(1)).as("published once").isEmpty();
        assertThat(harness.pipeline.routing().sessionCount()).isEqualTo(2);
    }

    @Test
    @DisplayName("limits: subscriptions per client get 0x80 beyond the limit [MQTT-3.9.3-1], counted")
    void subscriptionsPerClient()
    {
        final PipelineHarness harness =
            new PipelineHarness(new BrokerContext().limits(l -> l.maxSubscriptionsPerClient(2)), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(9);
        encoder.filters().add("a", 0);
        encoder.filters().add("b", 1);
        encoder.filters().add("c", 1);
        encoder.filters().add("a", 1); // a replacement is not a new subscription
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        harness.packet(1, buffer.byteArray());
        final List<byte[]> sent = harness.outbound.takePackets(1);
        final byte[] suback = sent.get(sent.size() - 1);
        assertThat(suback).containsExactly(0x90, 0x06, 0x00, 0x09, 0x00, 0x01, 0x80, 0x01);
        assertThat(harness.counters.get(BrokerCounters.SUBSCRIPTIONS_REFUSED_LIMIT)).isEqualTo(1);
    }

    @Test
    @DisplayName("limits: a topic filter deeper or longer than a topic may be gets 0x80 [MQTT-3.9.3-1], counted")
    void topicFilterLimits()
    {
        final PipelineHarness harness =
            new PipelineHarness(new BrokerContext().limits(l -> l.maxTopicLevels(3).maxTopicLength(64)), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(7);
        encoder.filters().add("a/b/c", 1);
        encoder.filters().add("a/b/c/d", 1);
        encoder.filters().add("x".repeat(65), 0);
        encoder.filters().add("+/#", 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        harness.packet(1, buffer.byteArray());
        final List<byte[]> sent = harness.outbound.takePackets(1);
        assertThat(sent.get(sent.size() - 1)).containsExactly(0x90, 0x06, 0x00, 0x07, 0x01, 0x80, 0x80, 0x00);
        assertThat(harness.counters.get(BrokerCounters.TOPIC_FILTERS_REFUSED)).isEqualTo(2);
        assertThat(harness.pipeline.routing().index().size()).isEqualTo(2);
    }

    @Test
    @DisplayName("limits: a client id longer than the limit is refused with 0x02 [MQTT-3.1.3-9], counted")
    void clientIdLength()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .limits(l -> l.maxClientIdLength(23)), ANONYMOUS);
        harness.packet(1, connect("x".repeat(24), true));
        assertThat(harness.outbound.takePackets(1).get(0)).containsExactly(0x20, 0x02, 0x00,
            ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(harness.counters.get(BrokerCounters.CLIENT_ID_TOO_LONG)).isEqualTo(1);
        harness.packet(2, connect("x".repeat(64 * 1024 - 1), true));
        assertThat(harness.outbound.takePackets(2).get(0)[3]).isEqualTo((byte)ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(harness.pipeline.routing().sessionCount()).isZero();
    }

    @Test
    @DisplayName("limits: QoS 1 bytes queued for a slow subscriber are bounded, the newest dropped and counted")
    void queuedBytes()
    {
        final PipelineHarness harness = new PipelineHarness(
            new BrokerContext().limits(l -> l.maxInflight(1).maxQueued(1_000).maxQueuedBytes(1_024)), ANONYMOUS);
        harness.packet(1, connect("slow", true));
        harness.packet(1, subscribe("q", 1));
        harness.packet(2, connect("pub", true));
        for (int i = 1; i <= 10; i++)
        {
            harness.packet(2, bigPublish("q", 1, i, 300));
        }
        // one in flight, three queued (3 × 301 bytes <= 1024), six dropped
        assertThat(harness.counters.get(BrokerCounters.QUEUED_BYTES_DROPPED)).isEqualTo(6);
    }

    @Test
    @DisplayName("limits: retained messages past the count are not kept (counted) but still delivered live")
    void retainedLimit()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .limits(l -> l.maxRetained(2, 1 << 20)), ANONYMOUS);
        harness.packet(1, connect("live", true));
        harness.packet(1, subscribe("r/#", 0));
        harness.packet(2, connect("pub", true));
        for (int i = 0; i < 3; i++)
        {
            harness.packet(2, publish("r/" + i, 0, 0, true));
        }
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.CONNACK, PacketType.SUBACK,
            PacketType.PUBLISH, PacketType.PUBLISH, PacketType.PUBLISH);
        assertThat(harness.counters.get(BrokerCounters.RETAINED_REFUSED_LIMIT)).isEqualTo(1);
        harness.packet(3, connect("late", true));
        harness.packet(3, subscribe("r/#", 0));
        assertThat(harness.outbound.takeTypes(3)).containsExactly(PacketType.CONNACK, PacketType.SUBACK,
            PacketType.PUBLISH, PacketType.PUBLISH);
    }

    @Test
    @DisplayName("a packet larger than a slot goes through the message log, which is released by the last stage")
    void largePacketsUseTheMessageLog()
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext(), ANONYMOUS);
        harness.packet(1, connect("sub", true));
        harness.packet(1, subscribe("big", 0));
        harness.packet(2, connect("pub", true));
        harness.outbound.sent.clear();
        for (int i = 0; i < 100; i++)
        {
            harness.packet(2, bigPublish("big", 0, 0, 100_000)); // 10 MB through a 16 MiB log
        }
        assertThat(harness.outbound.takePackets(1)).hasSize(100).allSatisfy(p -> assertThat(p.length)
            .isGreaterThan(100_000));
        assertThat(harness.pipeline.messageLog(0).used()).isZero();
    }

    @Test
    @DisplayName("persistent sessions whose clients never come back expire (persistent_client_expiration)")
    void persistentSessionsExpire() throws Exception
    {
        final PipelineHarness harness =
            new PipelineHarness(new BrokerContext().limits(l -> l.persistentClientExpirationMs(2_000)), ANONYMOUS);
        harness.packet(1, connect("gone", false));
        harness.packet(1, subscribe("x", 1));
        harness.offer(1, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.packet(2, connect("back", false));
        harness.offer(2, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.packet(3, connect("back", false)); // came back in time: its timer is cancelled
        assertThat(harness.pipeline.routing().sessionCount()).isEqualTo(2);
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (harness.pipeline.routing().sessionCount() > 1 && System.nanoTime() < deadline)
        {
            harness.agent.doWork(); // the routing stage polls its expiry timers each duty cycle
            Thread.onSpinWait();
        }
        assertThat(harness.pipeline.routing().sessionCount()).isEqualTo(1);
        assertThat(harness.counters.get(BrokerCounters.SESSIONS_EXPIRED)).isEqualTo(1);
        assertThat(harness.pipeline.routing().index().size()).isZero();
    }

    private static byte[] bigPublish(final String topic, final int qos, final int packetId, final int size)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).topic(topic)
            .payload(new byte[size]);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static int packetId(final byte[] publish)
    {
        final PacketDecoder decoder = new PacketDecoder();
        decoder.decode(new UnsafeBuffer(publish), 0, publish.length, MqttVersion.V3_1_1, 1 << 20);
        return decoder.publish().packetId();
    }

    static byte[] connectWithCredentials(final String clientId, final String user, final String password)
    {
        final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
            .cleanStart(true);
        encoder.clientId().wrap(clientId);
        encoder.userName().wrap(user);
        encoder.password().wrap(password.getBytes(StandardCharsets.UTF_8));
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    /**
     * Records what a stage was asked to do; the first one may throw on every event.
     */
    private static final class RecordingStage implements Stage
    {
        private final String name;
        private final List<String> seen;
        private final boolean fails;

        RecordingStage(final String name, final List<String> seen, final boolean fails)
        {
            this.name = name;
            this.seen = seen;
            this.fails = fails;
        }

        public boolean onEvent(final IngressEvent event)
        {
            seen.add(name + ".onEvent");
            if (fails)
            {
                throw new IllegalStateException("boom");
            }
            return true;
        }

        public void onFailed(final IngressEvent event)
        {
            seen.add(name + ".onFailed");
        }

        public String name()
        {
            return name;
        }
    }
}
