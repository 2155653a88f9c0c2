package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.Collections;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One client subscribing to, and publishing (retained) on, a topic of 32,768 levels, through the real stages on a
 * thread with a small stack: routing matches it and stores it without recursion, and nothing throws out of a
 * stage.
 */
class DeepTopicPipelineTest
{
    private static final int LEVELS = 32_768;

    private static byte[] publish(final String topic)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(0).retain(true)
            .topic(topic).payload(new byte[]{42});
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    @Test
    @DisplayName("MQTT-4.7.1-2, MQTT-4.7.1-3: a 32,768-level topic is subscribed, published, retained and matched")
    void deepTopicThroughTheStages() throws Exception
    {
        final String topic = String.join("/", Collections.nCopies(LEVELS, "a"));
        final String allPlus = String.join("/", Collections.nCopies(LEVELS, "+"));
        assertThat(topic).hasSize(65_535);
        SmallStack.run(() ->
        {
            final PipelineHarness harness = new PipelineHarness(new BrokerContext()
                .limits(l -> l.maxTopicLevels(LEVELS)),
                new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null));
            final PipelineTest.RecordingOutbound outbound = harness.outbound;
            final BrokerCounters counters = harness.counters;

            harness.packet(1, PipelineTest.connect("deep", true));
            harness.packet(1, PipelineTest.subscribe(topic, 0));
            harness.packet(1, PipelineTest.subscribe(allPlus, 0));
            assertThat(outbound.takeTypes(1)).containsExactly(
                PacketType.CONNACK, PacketType.SUBACK, PacketType.SUBACK);

            harness.packet(1, publish(topic));
            assertThat(outbound.takeTypes(1)).as("one delivery, folded over two filters")
                .containsExactly(PacketType.PUBLISH);

            harness.packet(2, PipelineTest.connect("late", true));
            harness.packet(2, PipelineTest.subscribe("#", 0));
            assertThat(outbound.takeTypes(2)).as("the retained message for '#'")
                .containsExactly(PacketType.CONNACK, PacketType.SUBACK, PacketType.PUBLISH);

            // [MQTT-3.8.4-5] with that retained message stored, a SUBSCRIBE of two filters answers two codes
            final SubscribeEncoder two = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(3);
            two.filters().add(topic, 1);
            two.filters().add("other/#", 0);
            final UnsafeBuffer bytes = new UnsafeBuffer(new byte[two.encodedLength()]);
            two.encode(bytes, 0);
            harness.packet(3, PipelineTest.connect("two", true));
            harness.packet(3, bytes.byteArray());
            final java.util.List<byte[]> sent = outbound.takePackets(3);
            assertThat(sent.get(1)).as("SUBACK with one code per filter").containsExactly(0x90, 0x04, 0x00, 0x03,
                0x01, 0x00);
            assertThat(sent).hasSize(3); // CONNACK, SUBACK, the retained message
            assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
            assertThat(outbound.closed).isEmpty();
        });
    }
}
