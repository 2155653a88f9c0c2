package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How a bridge renames a topic on its way, each direction by its own topic lines, byte by byte: the source prefix
 * replaced by the target prefix, the first matching line winning, and nothing that the line's filter on the other
 * side would not match (a prefix cannot make a {@code $} topic) [MQTT-4.7.2-1].
 */
class BridgeRelayMapTest
{
    private static final List<BridgeSettings.Topic> TOPICS = List.of(
        new BridgeSettings.Topic("sensors/#", BridgeSettings.Direction.OUT, 1, "", ""),
        new BridgeSettings.Topic("cmd/+", BridgeSettings.Direction.IN, 1, "edge/", "cloud/site-7/"),
        new BridgeSettings.Topic("", BridgeSettings.Direction.BOTH, 0, "local/one", "remote/two"),
        new BridgeSettings.Topic("#", BridgeSettings.Direction.IN, 0, "", "r/"));

    private static String map(final BridgeRelay relay, final String topic)
    {
        final byte[] bytes = topic.getBytes(StandardCharsets.UTF_8);
        return relay.map(new UnsafeBuffer(bytes), 0, bytes.length) ? relay.mappedTopic() : null;
    }

    @Test
    @DisplayName("out: local topics to remote ones by the out and both lines; in: remote to local by the in and both")
    void bothDirections()
    {
        final BridgeRelay out = new BridgeRelay("out", TOPICS, true, true, 10);
        final BridgeRelay in = new BridgeRelay("in", TOPICS, false, true, 10);
        assertThat(map(out, "sensors/a/b")).isEqualTo("sensors/a/b");
        assertThat(map(out, "local/one")).isEqualTo("remote/two");
        assertThat(map(out, "edge/cmd/x")).as("an in line").isNull();
        assertThat(map(out, "other")).isNull();

        assertThat(map(in, "cloud/site-7/cmd/open")).isEqualTo("edge/cmd/open");
        assertThat(map(in, "remote/two")).isEqualTo("local/one");
        assertThat(map(in, "r/anything/here")).isEqualTo("anything/here");
        assertThat(map(in, "sensors/a")).as("an out line; the catch-all wants r/").isNull();
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: a remote topic whose renaming would start with $ is not taken, nor a $ topic by #")
    void noDollarTopicsByRenaming()
    {
        final BridgeRelay in = new BridgeRelay("in", TOPICS, false, true, 10);
        assertThat(map(in, "r/$SYS/broker/clients/connected")).isNull();
        assertThat(map(in, "$SYS/broker/x")).isNull();
        assertThat(map(in, "r/")).as("an empty topic").isNull();
    }
}
