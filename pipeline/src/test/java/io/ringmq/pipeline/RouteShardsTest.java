package io.ringmq.pipeline;

import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How routing shards split PUBLISHes by topic, and what they share.
 */
class RouteShardsTest
{
    private static int ownerOf(final RouteShards shards, final String topic)
    {
        final byte[] bytes = topic.getBytes(StandardCharsets.UTF_8);
        return shards.ownerOfTopic(new UnsafeBuffer(bytes), 0, bytes.length);
    }

    private static byte[] publish(final String topic, final int qos, final boolean retain)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V3_1_1).qos(qos)
            .packetId(qos > 0 ? 7 : 0).retain(retain).topic(topic).payload(new byte[3]);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    @Test
    @DisplayName("a topic always goes to the same shard, and 10,000 topics spread over 4 shards within 20-30 % each")
    void topicsSpreadEvenly()
    {
        final RouteShards shards = new RouteShards(4, new BrokerContext());
        final int[] counts = new int[4];
        for (int i = 0; i < 10_000; i++)
        {
            final String topic = "sensors/" + i + "/temperature";
            final int owner = ownerOf(shards, topic);
            assertThat(ownerOf(shards, topic)).isEqualTo(owner);
            counts[owner]++;
        }
        assertThat(java.util.Arrays.stream(counts).boxed()).allSatisfy(count -> assertThat(count).isBetween(2_000, 3_000));
    }

    @Test
    @DisplayName("an empty topic, a 65,535-byte topic and one shard: an owner in range, never an exception")
    void extremeTopics()
    {
        final RouteShards one = new RouteShards(1, new BrokerContext());
        final RouteShards seven = new RouteShards(7, new BrokerContext());
        assertThat(ownerOf(one, "a/b")).isZero();
        assertThat(ownerOf(seven, "")).isBetween(0, 6);
        assertThat(ownerOf(seven, "x".repeat(65_535))).isBetween(0, 6);
        assertThat(ownerOf(seven, "\u00ff\u0080/\uffff")).isBetween(0, 6); // bytes above 127: negative in Java
    }

    @Test
    @DisplayName("a PUBLISH goes to its topic's shard at QoS 0 and 1, to shard 0 with RETAIN or at QoS 2; a slot cut "
        + "short anywhere in its header or topic goes to shard 0")
    void ownerOfAPublish()
    {
        final RouteShards shards = new RouteShards(5, new BrokerContext());
        final String topic = "a/long/topic/" + "x".repeat(300); // a remaining length of 2 bytes
        final int owner = ownerOf(shards, topic);
        for (final int qos : new int[]{0, 1})
        {
            final byte[] packet = publish(topic, qos, false);
            assertThat(shards.ownerOf(new UnsafeBuffer(packet), packet.length)).isEqualTo(owner);
            final byte[] retained = publish(topic, qos, true);
            assertThat(shards.ownerOf(new UnsafeBuffer(retained), retained.length)).isZero();
        }
        final byte[] exactlyOnce = publish(topic, 2, false);
        assertThat(shards.ownerOf(new UnsafeBuffer(exactlyOnce), exactlyOnce.length)).isZero();
        final byte[] packet = publish(topic, 1, false);
        for (int cut = 1; cut < 5 + topic.length(); cut++) // 5: the fixed header, 2 bytes of length, the topic length
        {
            assertThat(shards.ownerOf(new UnsafeBuffer(packet), cut)).as("cut at " + cut).isZero();
        }
    }
}
