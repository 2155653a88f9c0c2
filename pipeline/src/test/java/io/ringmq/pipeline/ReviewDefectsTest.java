package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Defects an attack review of the MQTT 5.0 work found, each kept as a test.
 */
class ReviewDefectsTest
{
    private static byte[] publish(final String topic, final int packetId, final String payload)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(packetId).topic(topic)
            .payload(payload.getBytes(StandardCharsets.UTF_8));
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    @Test
    @DisplayName("a subscriber over its queued bytes drops its copy without recycling the one another subscriber holds")
    void droppedCopyIsNotRecycledWhileHeld()
    {
        final PipelineHarness h = new PipelineHarness(
            new BrokerContext().limits(l -> l.maxInflight(1).maxQueued(1_000).maxQueuedBytes(1_024)),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null));
        h.packet(1, connect("s1", true));
        h.packet(1, subscribe("t", 1));
        h.packet(1, subscribe("big", 1));
        h.packet(2, connect("s2", true));
        h.packet(2, subscribe("t", 1));
        h.packet(3, connect("pub", true));
        h.packet(3, publish("t", 1, "first"));
        h.packet(3, publish("big", 2, "x".repeat(1015)));
        h.packet(3, publish("t", 3, "SECRET-m3"));
        h.packet(3, publish("t", 4, "m4-other"));
        h.outbound.takePackets(2);
        h.packet(2, ack(PacketType.PUBACK, 1));
        h.packet(2, ack(PacketType.PUBACK, 2));
        final List<byte[]> received = h.outbound.takePackets(2);
        final StringBuilder text = new StringBuilder();
        for (final byte[] packet : received)
        {
            text.append(new String(packet, StandardCharsets.ISO_8859_1)).append('|');
        }
        assertThat(text.toString()).contains("SECRET-m3").contains("m4-other");
    }

    @Test
    @DisplayName("MQTT-3.3.4-3 subscription identifiers of interleaved targets take linear room in the routing entry")
    void interleavedIdentifiersStayLinear()
    {
        final int k = 3_000;
        final RouteOutput.Writer writer = new RouteOutput.Writer();
        writer.reset();
        writer.addTarget(1, 1, false, 0, 1);
        writer.addTarget(2, 1, false, 0, 1);
        for (int i = 2; i <= k; i++)
        {
            writer.addTargetSubscriptionId(0, i);
            writer.addTargetSubscriptionId(1, i);
        }
        assertThat(writer.length(0)).as("two targets, and for each a count and its k identifiers")
            .isEqualTo(2 * RouteOutput.TARGET_LENGTH + 2 * (1 + k) * 4);
    }

    @Test
    @DisplayName("MQTT-3.3.4-3 every target reads back every one of its subscription identifiers, however the lists "
        + "interleave and grow")
    void identifiersReadBack()
    {
        for (int extra = 0; extra < 4; extra++) // shifts where the chained lists' storage has to grow
        {
            identifiersReadBack(extra);
        }
    }

    private static void identifiersReadBack(final int extra)
    {
        final int targets = 40;
        final int k = 50;
        final RouteOutput.Writer writer = new RouteOutput.Writer();
        writer.reset();
        writer.addTarget(99, 1, false, 0, 7);
        for (int i = 0; i < extra; i++)
        {
            writer.addTargetSubscriptionId(0, 8 + i);
        }
        for (int t = 1; t <= targets; t++)
        {
            writer.addTarget(t, 1, false, 0, 1_000 * t + 1);
        }
        for (int n = 2; n <= k; n++)
        {
            for (int t = 1; t <= targets; t++)
            {
                writer.addTargetSubscriptionId(t, 1_000 * t + n);
            }
        }
        final MessageLog log = new MessageLog(1 << 20);
        final IngressEvent event = new IngressEvent(64);
        final int length = writer.length(0);
        final long end = log.claim(length);
        writer.write(log.buffer(), log.indexOf(end, length), new org.agrona.collections.IntArrayList(), 0, event);
        event.routeLogEnd = end;
        event.routeLogLength = length;
        final RouteOutput route = new RouteOutput().wrap(log, event);
        assertThat(route.targetSubscriptionIdCount(0)).isEqualTo(1 + extra);
        for (int t = 1; t <= targets; t++)
        {
            assertThat(route.targetSubscriptionIdCount(t)).isEqualTo(k);
            for (int n = 0; n < k; n++)
            {
                assertThat(route.targetSubscriptionId(t, n)).as("extra " + extra).isEqualTo(1_000 * t + n + 1);
            }
        }
    }
}
