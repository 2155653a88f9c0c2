package io.ringmq.transport;

import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * Resolves the topic aliases of inbound MQTT 5.0 PUBLISHes for one I/O agent, so that the pipeline only ever sees a
 * canonical PUBLISH: the full topic name and no Topic Alias. A PUBLISH with a Topic Alias and a topic sets the
 * mapping; one with an empty topic uses it [MQTT-3.3.2-12]. Such a PUBLISH is encoded once more, into this agent's
 * scratch buffer, with every other property as it came (user properties in their order); a PUBLISH without an
 * alias is never touched. Nothing is allocated per message once the scratch buffer and the connection's
 * {@link TopicAliases} have grown to what the client sends.
 * <p>
 * Use: {@link #resolve}, then judge {@link #topic()} (the topic limits), then {@link #canonical}; and
 * {@link #release} when a connection closes.
 * <p>
 * What the topics of all its connections' aliases hold is bounded too: each connection's are bounded
 * ({@link TopicAliases#MAX_BYTES}), but 835 connections at that bound took a 64 MiB heap; this agent's share of a
 * quarter of {@code --max-session-memory} holds them all together. Past either, the client is disconnected with Quota
 * exceeded (0x97).
 */
final class TopicAliasResolver
{
    private final int maximum;
    /** What this agent's connections' aliases hold, and may hold. */
    private long heldBytes;
    private long maxBytes;
    private final BrokerCounters counters;
    private final UnsafeBuffer topic = new UnsafeBuffer(0, 0);
    private final MqttProperties properties = new MqttProperties();
    private final PublishEncoder encoder = new PublishEncoder();
    private ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(Buffers.INITIAL_CAPACITY);
    private int alias;

    /**
     * @param maximum the Topic Alias Maximum the broker announces in CONNACK (0: none).
     */
    TopicAliasResolver(final int maximum, final BrokerContext context, final BrokerCounters counters)
    {
        this.maximum = maximum;
        this.counters = counters;
        limits(context);
    }

    /**
     * @return this agent's share of what all connections' aliases may hold: a quarter of {@code --max-session-memory},
     * split between the I/O agents.
     */
    static long maxBytesFor(final BrokerContext context)
    {
        return context.memory().sessionMemoryBytes() / 4 / Math.max(1, context.threads().ioThreads());
    }

    /**
     * Takes a reloaded {@code --max-session-memory}: from the next mapping on; aliases held past a lowered bound stay.
     */
    void limits(final BrokerContext context)
    {
        this.maxBytes = maxBytesFor(context);
    }

    /**
     * A connection closed: what its aliases held is free.
     */
    void release(final Connection connection)
    {
        if (null != connection.topicAliases)
        {
            heldBytes -= connection.topicAliases.bytes();
            connection.topicAliases = null;
        }
    }

    /**
     * @return what this agent's connections' aliases hold now.
     */
    long heldBytes()
    {
        return heldBytes;
    }

    /**
     * @return whether the PUBLISH carries a Topic Alias to resolve (MQTT 5.0 only).
     */
    static boolean hasAlias(final int version, final PublishFlyweight publish)
    {
        return version == MqttVersion.V5 && publish.properties().has(PropertyId.TOPIC_ALIAS);
    }

    /**
     * Finds the topic a PUBLISH with a Topic Alias stands for, without changing any mapping yet.
     *
     * @return 0 when {@link #topic()} holds it, or the reason code to disconnect with.
     */
    int resolve(final Connection connection, final PublishFlyweight publish)
    {
        alias = publish.properties().intValue(PropertyId.TOPIC_ALIAS, 0);
        if (alias > maximum) // 0 was refused by the decoder [MQTT-3.3.2-8]
        {
            return ReasonCode.TOPIC_ALIAS_INVALID; // [MQTT-3.3.2-9]
        }
        final Slice name = publish.topic();
        if (name.length() > 0)
        {
            if (null == connection.topicAliases)
            {
                connection.topicAliases = new TopicAliases(maximum);
                heldBytes += connection.topicAliases.bytes(); // its first slots, given back when it closes
            }
            final TopicAliases held = connection.topicAliases;
            final int growth = held.growth(alias, name.length());
            if (!held.fits(alias, name.length()))
            {
                return ReasonCode.QUOTA_EXCEEDED; // the aliases' topics are bounded per connection
            }
            if (heldBytes + growth > maxBytes)
            {
                counters.increment(BrokerCounters.SESSION_MEMORY_REFUSED);
                return ReasonCode.QUOTA_EXCEEDED; // and all connections' together
            }
            topic.wrap(name.buffer(), name.offset(), name.length());
            return 0;
        }
        final TopicAliases aliases = connection.topicAliases;
        final int length = null == aliases ? -1 : aliases.length(alias);
        if (length < 0)
        {
            return ReasonCode.PROTOCOL_ERROR; // an empty topic with an alias that stands for nothing
        }
        topic.wrap(aliases.bytes(alias), 0, length);
        return 0;
    }

    /**
     * @return the topic name of the last {@link #resolve} (valid until the next).
     */
    DirectBuffer topic()
    {
        return topic;
    }

    /**
     * Records the mapping a PUBLISH with a topic sets [MQTT-3.3.2-12] and writes the canonical PUBLISH: the
     * resolved topic, the Topic Alias removed, everything else as it came.
     *
     * @return its length in {@link #packet()}.
     */
    int canonical(final Connection connection, final PublishFlyweight publish)
    {
        final Slice name = publish.topic();
        if (name.length() > 0)
        {
            heldBytes += connection.topicAliases.set(alias, name.buffer(), name.offset(), name.length());
        }
        properties.copyFrom(publish.properties()).remove(PropertyId.TOPIC_ALIAS);
        final Slice payload = publish.payload();
        encoder.reset().version(MqttVersion.V5).dup(publish.isDup()).qos(publish.qos()).retain(publish.isRetain())
            .packetId(publish.packetId()).topic(topic, 0, topic.capacity())
            .payload(payload.buffer(), payload.offset(), payload.length())
            .properties(properties.isEmpty() ? null : properties);
        final int length = encoder.encodedLength();
        if (length <= Buffers.SHRINK_ABOVE && scratch.capacity() > Buffers.SHRINK_ABOVE)
        {
            scratch = new ExpandableArrayBuffer(Buffers.INITIAL_CAPACITY); // a burst of large packets is over
        }
        scratch.checkLimit(length);
        return encoder.encode(scratch, 0);
    }

    /**
     * @return the buffer {@link #canonical} wrote into, from offset 0.
     */
    DirectBuffer packet()
    {
        return scratch;
    }
}
