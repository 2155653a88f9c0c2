package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class TopicAliasDropTest
{
    @Test
    @DisplayName("MQTT-3.1.2-25 a PUBLISH too large for the client assigns no topic alias it never learns")
    void tooLargeAssignsNoAlias()
    {
        final PublishWriter writer = new PublishWriter();
        final DeliverySession session = new DeliverySession(1, true, 10, new SessionWindows(4));
        session.version = MqttVersion.V5;
        session.maxPacketSize = 100;
        session.topicAliasMaximum(10, new OutboundAliasBudget(Long.MAX_VALUE));
        final UnsafeBuffer topic = new UnsafeBuffer("some/topic".getBytes(StandardCharsets.UTF_8));
        writer.message(topic, 0, topic.capacity(), topic, 0, 0, new UnsafeBuffer(new byte[500]), 0, 500,
            Message.NEVER, 0);
        assertThat(writer.encodeEvent(session, 0, false, 0, null, 0)).isEqualTo(PublishWriter.TOO_LARGE);
        writer.message(topic, 0, topic.capacity(), topic, 0, 0, new UnsafeBuffer(new byte[5]), 0, 5,
            Message.NEVER, 0);
        final int length = writer.encodeEvent(session, 0, false, 0, null, 0);
        final PacketDecoder decoder = new PacketDecoder();
        assertThat(decoder.decode(writer.scratch(), 0, length, MqttVersion.V5, 1 << 20)).isEqualTo(length);
        assertThat(decoder.publish().topic().asString()).as("the topic, with the alias it assigns").isEqualTo(
            "some/topic");
    }
}
