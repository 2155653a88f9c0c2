package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
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

    private PipelineTest.RecordingOutbound outbound;
    private Pipeline pipeline;
    private StageAgent agent;

    private void packet(final long connectionId, final byte[] packet) throws Exception
    {
        final long sequence = pipeline.ring().next();
        final IngressEvent event = pipeline.ring().get(sequence);
        event.kind = IngressEvent.PACKET;
        event.agentIndex = 0;
        event.connectionId = connectionId;
        event.version = MqttVersion.V3_1_1;
        event.loopback = true;
        event.packetType = (packet[0] & 0xFF) >>> 4;
        event.packetLength = packet.length;
        event.packet.putBytes(0, packet);
        pipeline.ring().publish(sequence);
        while (agent.doWork() > 0)
        {
            // step until every stage has seen it
        }
    }

    private static byte[] connect(final String clientId)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true);
        encoder.clientId().wrap(clientId);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static byte[] subscribe(final String filter)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(1);
        encoder.filters().add(filter, 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

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
            final BrokerCounters counters = new BrokerCounters();
            outbound = new PipelineTest.RecordingOutbound();
            pipeline = new Pipeline(new BrokerContext(),
                new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), outbound, counters,
                new ErrorLog(counters));
            agent = pipeline.agent("test", 0, pipeline.stageCount());

            packet(1, connect("deep"));
            packet(1, subscribe(topic));
            packet(1, subscribe(allPlus));
            assertThat(outbound.takeTypes(1)).containsExactly(
                PacketType.CONNACK, PacketType.SUBACK, PacketType.SUBACK);

            packet(1, publish(topic));
            assertThat(outbound.takeTypes(1)).as("one delivery, folded over two filters")
                .containsExactly(PacketType.PUBLISH);

            packet(2, connect("late"));
            packet(2, subscribe("#"));
            assertThat(outbound.takeTypes(2)).as("the retained message for '#'")
                .containsExactly(PacketType.CONNACK, PacketType.SUBACK, PacketType.PUBLISH);

            assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
            assertThat(outbound.closed).isEmpty();
        });
    }
}
