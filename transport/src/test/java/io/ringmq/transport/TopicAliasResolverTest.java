package io.ringmq.transport;

import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The agent's topic alias resolver and a connection's alias table, without a socket: resolution, the canonical
 * PUBLISH, the bounds, and a million rewrites that allocate nothing once warm.
 */
class TopicAliasResolverTest
{
    private static final int MAXIMUM = 64;

    private final TopicAliasResolver resolver = new TopicAliasResolver(MAXIMUM,
        new io.ringmq.pipeline.BrokerContext(), new io.ringmq.pipeline.status.BrokerCounters());
    private final Connection connection = new Connection(1, new Acceptor.Accepted(null, null, true, null, null), null, 0);
    private final PublishFlyweight canonical = new PublishFlyweight();

    private static PublishFlyweight decoded(final String topic, final int alias, final int qos, final int packetId)
    {
        final MqttProperties properties = new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, alias)
            .addUserProperty("k", "v").setInt(PropertyId.PAYLOAD_FORMAT_INDICATOR, 1);
        final byte[] bytes = RawClient.publish5(topic, "payload".getBytes(StandardCharsets.UTF_8), qos, packetId,
            properties);
        final PublishFlyweight publish = new PublishFlyweight();
        assertThat(publish.wrap(new UnsafeBuffer(bytes), 0, bytes.length, MqttVersion.V5)).isEqualTo(bytes.length);
        return publish;
    }

    private String resolveAndDecode(final PublishFlyweight publish)
    {
        assertThat(resolver.resolve(connection, publish)).isZero();
        final int length = resolver.canonical(connection, publish);
        assertThat(canonical.wrap(resolver.packet(), 0, length, MqttVersion.V5)).isEqualTo(length);
        assertThat(canonical.properties().has(PropertyId.TOPIC_ALIAS)).isFalse();
        return canonical.topic().asString();
    }

    @Test
    @DisplayName("MQTT-3.3.2-12: a topic sets the alias, an empty topic uses it; the alias table is made lazily")
    void setsAndUses()
    {
        assertThat(connection.topicAliases).isNull();
        assertThat(resolveAndDecode(decoded("a/b", 3, 1, 9))).isEqualTo("a/b");
        assertThat(connection.topicAliases).isNotNull();
        assertThat(canonical.packetId()).isEqualTo(9);
        assertThat(canonical.properties().intValue(PropertyId.PAYLOAD_FORMAT_INDICATOR, 0)).isEqualTo(1);
        assertThat(canonical.payload().asString()).isEqualTo("payload");
        assertThat(resolveAndDecode(decoded("", 3, 0, 0))).isEqualTo("a/b");
    }

    @Test
    @DisplayName("MQTT-3.3.2-9: an alias over the maximum is 0x94; an unknown alias with an empty topic is 0x82; "
        + "neither changes the table")
    void bounds()
    {
        assertThat(resolver.resolve(connection, decoded("t", MAXIMUM + 1, 0, 0)))
            .isEqualTo(ReasonCode.TOPIC_ALIAS_INVALID);
        assertThat(resolver.resolve(connection, decoded("", 1, 0, 0))).isEqualTo(ReasonCode.PROTOCOL_ERROR);
        assertThat(connection.topicAliases).isNull();
        resolveAndDecode(decoded("t", MAXIMUM, 0, 0));
        assertThat(resolver.resolve(connection, decoded("", MAXIMUM - 1, 0, 0))).isEqualTo(ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    @DisplayName("a million alias rewrites over 64 aliases and 512 topics finish in bounded time and, once warm, "
        + "allocate nothing per message")
    void aMillionRewrites()
    {
        final PublishFlyweight[] setting = new PublishFlyweight[512];
        for (int i = 0; i < setting.length; i++)
        {
            setting[i] = decoded("fleet/" + i + "/" + "y".repeat(i % 61), 1 + i % MAXIMUM, 1, 1 + i);
        }
        final PublishFlyweight[] using = new PublishFlyweight[MAXIMUM];
        for (int alias = 1; alias <= MAXIMUM; alias++)
        {
            using[alias - 1] = decoded("", alias, 0, 0);
        }
        rewrite(setting, using, 100_000); // warm: every slot has held its longest topic
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        final long before = threads.getCurrentThreadAllocatedBytes();
        final long total = rewrite(setting, using, 1_000_000);
        final long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(total).isPositive();
        assertThat(allocated).as("bytes allocated by a million rewrites").isLessThan(64 * 1024);
    }

    private long rewrite(final PublishFlyweight[] setting, final PublishFlyweight[] using, final int count)
    {
        long total = 0;
        for (int i = 0; i < count; i++)
        {
            final PublishFlyweight publish = (i & 1) == 0 ? setting[(i >>> 1) % setting.length] :
                using[(i >>> 1) % using.length];
            if (resolver.resolve(connection, publish) == 0)
            {
                total += resolver.canonical(connection, publish);
            }
        }
        return total;
    }
}
