package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Found by a reviewer (the test failed before the fix): an agent counts what its connections' alias tables hold by their topic arrays only; the slot arrays a high
 * alias grows the table to (byte[][] and int[], one entry per alias up to the one used) are not counted, so with
 * --topic-alias-maximum 65535 one PUBLISH per connection (alias 65535, a one-byte topic) makes the table hold about
 * half a MiB while the agent counts 32 bytes.
 */
class TopicAliasSlotsReviewTest
{
    private static PublishFlyweight decoded(final String topic, final int alias)
    {
        final byte[] bytes = RawClient.publish5(topic, new byte[] {1}, 0, 0,
            new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, alias));
        final PublishFlyweight publish = new PublishFlyweight();
        assertThat(publish.wrap(new UnsafeBuffer(bytes), 0, bytes.length, MqttVersion.V5)).isEqualTo(bytes.length);
        return publish;
    }

    private static long slotBytes(final TopicAliases aliases) throws Exception
    {
        final java.lang.reflect.Field topics = TopicAliases.class.getDeclaredField("topics");
        final java.lang.reflect.Field lengths = TopicAliases.class.getDeclaredField("lengths");
        topics.setAccessible(true);
        lengths.setAccessible(true);
        // at least 4 bytes a reference (compressed oops) and 4 bytes an int
        return 4L * ((Object[])topics.get(aliases)).length + 4L * ((int[])lengths.get(aliases)).length;
    }

    @Test
    @DisplayName("the alias tables of an agent's connections stay within its share of "
        + "--max-session-memory, slot arrays included")
    void slotArraysCounted() throws Exception
    {
        final BrokerContext context = new BrokerContext().memory(m -> m.maxSessionMemory(4L * 1024 * 1024))
            .threads(t -> t.ioThreads(1));
        final long share = TopicAliasResolver.maxBytesFor(context); // 1 MiB
        final TopicAliasResolver resolver = new TopicAliasResolver(65_535, context, new BrokerCounters());
        long tables = 0;
        int accepted = 0;
        for (int c = 0; c < 64; c++)
        {
            final Connection connection =
                new Connection(c, new Acceptor.Accepted(null, null, true, null, null), null, 0);
            final PublishFlyweight publish = decoded("t", 65_535);
            if (resolver.resolve(connection, publish) != 0)
            {
                break; // refused: the agent's share is used up
            }
            resolver.canonical(connection, publish);
            accepted++;
            tables += slotBytes(connection.topicAliases);
        }
        System.out.println("accepted=" + accepted + " counted=" + resolver.heldBytes() + " slot arrays held=" +
            tables + " share=" + share);
        assertThat(tables).as("what the accepted connections' alias tables hold, within the agent's share")
            .isLessThanOrEqualTo(share);
    }
}
