package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The three stages in-process, without sockets: events go onto the real ingress ring as an I/O agent would put
 * them, one {@link StageAgent} is stepped by hand, and what the broker would send is recorded.
 */
class PipelineTest
{
    /** What the delivery stage sent, per connection. */
    static final class RecordingOutbound implements Outbound
    {
        final List<long[]> closed = new ArrayList<>();
        final List<Object[]> sent = new ArrayList<>();
        /** Acts as an I/O agent whose outbound ring is full: refuses everything. */
        boolean full;
        /**
         * Where a retained part's connection writes what it owes, as an I/O agent does: its client read everything
         * at once (null: nothing is written, and the routing stage waits {@code RetainedLine.UNCONFIRMED_WAIT_MS}
         * between parts).
         */
        RetainedDrains drains;

        public boolean sendWatched(final int agentIndex, final long connectionId, final int drainSlot,
            final DirectBuffer buffer, final int offset, final int length)
        {
            final boolean taken = send(agentIndex, connectionId, buffer, offset, length);
            if (taken && null != drains)
            {
                drains.report(drainSlot, connectionId, 0, true);
            }
            return taken;
        }

        public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            if (full)
            {
                return false;
            }
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            sent.add(new Object[]{connectionId, bytes});
            return true;
        }

        public boolean close(final int agentIndex, final long connectionId)
        {
            if (full)
            {
                return false;
            }
            closed.add(new long[]{agentIndex, connectionId});
            return true;
        }

        public void endOfBatch()
        {
        }

        /**
         * @return the packet types sent to a connection, in order, forgetting them.
         */
        List<Integer> takeTypes(final long connectionId)
        {
            final List<Integer> types = new ArrayList<>();
            sent.removeIf(entry ->
            {
                if ((long)entry[0] == connectionId)
                {
                    types.add((((byte[])entry[1])[0] & 0xFF) >>> 4);
                    return true;
                }
                return false;
            });
            return types;
        }

        List<byte[]> takePackets(final long connectionId)
        {
            final List<byte[]> packets = new ArrayList<>();
            sent.removeIf(entry ->
            {
                if ((long)entry[0] == connectionId)
                {
                    packets.add((byte[])entry[1]);
                    return true;
                }
                return false;
            });
            return packets;
        }
    }

    private final PipelineHarness harness = new PipelineHarness(new BrokerContext().limits(l -> l.maxInflight(2)
        .maxQueued(3)),
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null));
    private final RecordingOutbound outbound = harness.outbound;
    private final BrokerCounters counters = harness.counters;

    private void offer(final long connectionId, final boolean loopback, final byte[] packet, final int kind)
    {
        harness.offer(connectionId, loopback, packet, kind);
    }

    private void packet(final long connectionId, final byte[] packet)
    {
        harness.packet(connectionId, packet);
    }

    static byte[] connect(final String clientId, final boolean clean)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean);
        encoder.clientId().wrap(clientId);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] connectWithWill(final String clientId, final String willTopic, final String willPayload)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().will(0, false, null);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap(willPayload);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] subscribe(final String filter, final int qos)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(1);
        encoder.filters().add(filter, qos);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] unsubscribe(final String filter)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).packetId(2);
        encoder.filters().add(filter, 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] publish(final String topic, final int qos, final int packetId, final boolean retain)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).retain(retain)
            .topic(topic).payload(new byte[]{42});
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] ack(final int type, final int packetId)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
        AckEncoder.encode(buffer, 0, type, packetId);
        return buffer.byteArray();
    }

    @Test
    void connectSubscribePublish() throws Exception
    {
        packet(1, connect("sub", true));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.CONNACK);
        packet(1, subscribe("t/+", 0));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.SUBACK);
        packet(2, connect("pub", true));
        packet(2, publish("t/a", 0, 0, false));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.PUBLISH);
        assertThat(outbound.takeTypes(2)).containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("the in-flight window holds back QoS 1 messages until PUBACKs come; the queue is bounded")
    void inflightWindowAndBoundedQueue() throws Exception
    {
        packet(1, connect("sub", true));
        packet(1, subscribe("q", 1));
        packet(2, connect("pub", true));
        outbound.sent.clear();
        for (int i = 1; i <= 7; i++)
        {
            packet(2, publish("q", 1, i, false));
        }
        assertThat(outbound.takeTypes(2)).hasSize(7).containsOnly(PacketType.PUBACK);
        final List<byte[]> first = outbound.takePackets(1);
        assertThat(first).hasSize(2); // max-inflight 2; 3 queued; 2 dropped (max-queued 3)
        assertThat(counters.get(BrokerCounters.QUEUE_FULL_DROPPED)).isEqualTo(2);
        final PacketDecoder decoder = new PacketDecoder();
        decoder.decode(new UnsafeBuffer(first.get(0)), 0, first.get(0).length, MqttVersion.V3_1_1, 1 << 20);
        packet(1, ack(PacketType.PUBACK, decoder.publish().packetId()));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.PUBLISH);
    }

    @Test
    @DisplayName("a run of PUBACKs in one slot, as the I/O agent hands those read back to back, ends each message it "
        + "names: the window takes the queued ones; an unknown or repeated identifier in the run changes nothing")
    void aRunOfAcknowledgementsInOneSlot() throws Exception
    {
        packet(1, connect("sub", true));
        packet(1, subscribe("q", 1));
        packet(2, connect("pub", true));
        outbound.sent.clear();
        for (int i = 1; i <= 5; i++)
        {
            final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(i).topic("q")
                .payload(new byte[]{(byte)('0' + i)});
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
            encoder.encode(buffer, 0);
            packet(2, buffer.byteArray());
        }
        final List<byte[]> first = outbound.takePackets(1);
        assertThat(payloads(first)).containsExactly("1", "2"); // max-inflight 2; 3 queued
        final java.io.ByteArrayOutputStream run = new java.io.ByteArrayOutputStream();
        run.write(ack(PacketType.PUBACK, packetId(first.get(0))));
        run.write(ack(PacketType.PUBACK, 999)); // none in flight with it
        run.write(ack(PacketType.PUBACK, packetId(first.get(1))));
        run.write(ack(PacketType.PUBACK, packetId(first.get(1)))); // again: already ended
        packet(1, run.toByteArray());
        final List<byte[]> next = outbound.takePackets(1);
        assertThat(payloads(next)).containsExactly("3", "4");
        run.reset();
        run.write(ack(PacketType.PUBACK, packetId(next.get(0))));
        run.write(ack(PacketType.PUBACK, packetId(next.get(1))));
        packet(1, run.toByteArray());
        assertThat(payloads(outbound.takePackets(1))).containsExactly("5");
    }

    static int packetId(final byte[] publish)
    {
        final PacketDecoder decoder = new PacketDecoder();
        decoder.decode(new UnsafeBuffer(publish), 0, publish.length, MqttVersion.V3_1_1, 1 << 20);
        return decoder.publish().packetId();
    }

    /**
     * @return the first 8 bytes of each PUBLISH's payload.
     */
    static List<String> payloadsOf(final List<byte[]> publishes)
    {
        final List<String> heads = new java.util.ArrayList<>();
        for (final String payload : payloads(publishes))
        {
            heads.add(payload.substring(0, Math.min(8, payload.length())));
        }
        return heads;
    }

    static List<String> payloads(final List<byte[]> publishes)
    {
        final List<String> payloads = new java.util.ArrayList<>();
        for (final byte[] publish : publishes)
        {
            final PacketDecoder decoder = new PacketDecoder();
            decoder.decode(new UnsafeBuffer(publish), 0, publish.length, MqttVersion.V3_1_1, 1 << 20);
            payloads.add(decoder.publish().payload().asString());
        }
        return payloads;
    }

    @Test
    @DisplayName("anonymous clients from a non-loopback address are refused with return code 5 and closed")
    void anonymousNotFromLoopback() throws Exception
    {
        offer(9, false, connect("remote", true), IngressEvent.PACKET);
        final List<byte[]> packets = outbound.takePackets(9);
        assertThat(packets).hasSize(1);
        assertThat(packets.get(0)).containsExactly(0x20, 0x02, 0x00, 0x05);
        assertThat(outbound.closed).hasSize(1);
        assertThat(counters.get(BrokerCounters.AUTH_FAILURES)).isEqualTo(1);
    }

    @Test
    @DisplayName("a corrupt slot is ignored, and the stages go on")
    void corruptSlotsAreSurvived() throws Exception
    {
        packet(1, connect("c", true));
        packet(1, new byte[]{0x32, 0x05, 0x00, 0x01}); // truncated PUBLISH that no I/O agent would pass on
        packet(1, subscribe("x", 0));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.CONNACK, PacketType.SUBACK);
    }

    @Test
    @DisplayName("an exception in a stage is counted and logged once; the agent carries on")
    void stageErrorsAreContained() throws Exception
    {
        final ErrorLog errors = new ErrorLog(counters);
        final Stage failing = new Stage()
        {
            public boolean onEvent(final IngressEvent event)
            {
                throw new IllegalStateException("boom");
            }

            public String name()
            {
                return "failing";
            }
        };
        final com.lmax.disruptor.RingBuffer<IngressEvent> ring =
            com.lmax.disruptor.RingBuffer.createSingleProducer(() -> new IngressEvent(64), 8);
        final StagePoller poller = new StagePoller(ring);
        ring.addGatingSequences(poller.sequence());
        final StageAgent.Step step = new StageAgent.Step(failing, poller, errors, 1024);
        for (int i = 0; i < 3; i++)
        {
            ring.publish(ring.next());
        }
        assertThat(step.poll()).isEqualTo(3);
        assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isEqualTo(3);
    }

    @Test
    @DisplayName("a will is routed on a lost connection and not after DISCONNECT")
    void wills() throws Exception
    {
        packet(1, connect("watcher", true));
        packet(1, subscribe("will/#", 0));
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.CONNACK, PacketType.SUBACK);
        final UnsafeBuffer connect = new UnsafeBuffer(connectWithWill("mortal", "will/mortal", "bye"));
        packet(2, connect.byteArray());
        offer(2, true, new byte[0], IngressEvent.DISCONNECTED);
        assertThat(outbound.takeTypes(1)).as("no will after DISCONNECT [MQTT-3.1.2-10]").isEmpty();
        packet(3, connect.byteArray());
        offer(3, true, new byte[0], IngressEvent.CONNECTION_LOST);
        final List<byte[]> will = outbound.takePackets(1);
        assertThat(will).hasSize(1);
        final PacketDecoder decoder = new PacketDecoder();
        decoder.decode(new UnsafeBuffer(will.get(0)), 0, will.get(0).length, MqttVersion.V3_1_1, 1 << 20);
        assertThat(decoder.publish().topic().asString()).isEqualTo("will/mortal");
        assertThat(decoder.publish().payload().asString()).isEqualTo("bye");
    }
}
