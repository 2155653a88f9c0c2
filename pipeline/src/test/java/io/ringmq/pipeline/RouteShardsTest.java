package io.ringmq.pipeline;

import io.ringmq.protocol.Slice;
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
        final Slice slice = new Slice();
        slice.wrap(new UnsafeBuffer(bytes), 0, bytes.length);
        return shards.ownerOf(slice);
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
    @DisplayName("assigned client ids are the same on every shard and different for every CONNECT")
    void assignedClientIds()
    {
        final RouteShards shards = new RouteShards(2, new BrokerContext());
        assertThat(shards.assignedClientId(1)).isEqualTo(shards.assignedClientId(1)).startsWith("ringmq-")
            .isNotEqualTo(shards.assignedClientId(2));
    }
}
