package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;

/**
 * Encodes a delivery shard's outgoing PUBLISHes. For the message of one event it keeps a view of topic and payload,
 * a copy of the MQTT 5.0 properties that travel with it [MQTT-3.3.2-17], and when it expires; it encodes each
 * (protocol version, QoS, RETAIN) variant once and shares it among the subscribers that need nothing of their own
 * (only the packet identifier is patched per subscriber). A subscriber with Subscription Identifiers or topic
 * aliases gets its own encoding. Every encoding writes what remains of the Message Expiry Interval
 * [MQTT-3.3.2-6]. Owned by one delivery shard; allocation-free in steady state.
 */
final class PublishWriter
{
    /** No encoding: the packet would exceed what the client accepts [MQTT-3.1.2-25]. */
    static final int TOO_LARGE = -1;
    /**
     * No encoding: the topic is not under the session's mount point (it subscribed through another listener before
     * it came back through this one); not sent, as Mosquitto does not send it.
     */
    static final int NOT_MOUNTED = -2;
    private static final int VARIANTS = 2 * 3 * 2; // version × QoS × RETAIN

    private final PublishEncoder encoder = new PublishEncoder();
    private final ExpandableArrayBuffer[] variants = new ExpandableArrayBuffer[VARIANTS];
    private final int[] variantLength = new int[VARIANTS];
    private final int[] variantIdOffset = new int[VARIANTS];
    private final ExpandableArrayBuffer properties = new ExpandableArrayBuffer(256);
    private final ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(4096);
    private DirectBuffer topic;
    private int topicOffset;
    private int topicLength;
    private int propertiesLength;
    private DirectBuffer payload;
    private int payloadOffset;
    private int payloadLength;
    private long expiresAtMs;
    private long nowMs;
    /** The largest PUBLISH an I/O agent's outbound ring carries (an eighth of it, less the connection id). */
    private final int maxOutboundLength;

    PublishWriter()
    {
        this(Integer.MAX_VALUE);
    }

    /**
     * @param maxOutboundLength the largest packet the outbound rings take: a subscriber's own encoding (its
     *                          Subscription Identifiers, a 3.1.1 message's properties length) may be larger than
     *                          the PUBLISH that came in, and a ring refuses a message past an eighth of it.
     */
    PublishWriter(final int maxOutboundLength)
    {
        this.maxOutboundLength = maxOutboundLength;
        for (int i = 0; i < variants.length; i++)
        {
            variants[i] = new ExpandableArrayBuffer(256);
        }
    }

    /**
     * Sets the message of the event being delivered (views, valid for the event) and forgets the last one's
     * variants.
     *
     * @param rawProperties the message's properties as received (without length prefix); only those that travel
     *                      with it are kept.
     * @param expiresAtMs   when it expires, or {@link Message#NEVER}.
     * @param nowMs         the event's clock, for what remains of the expiry interval.
     */
    void message(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer rawProperties, final int rawPropertiesOffset, final int rawPropertiesLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs,
        final long nowMs)
    {
        this.topic = topic;
        this.topicOffset = topicOffset;
        this.topicLength = topicLength;
        this.payload = payload;
        this.payloadOffset = payloadOffset;
        this.payloadLength = payloadLength;
        this.expiresAtMs = expiresAtMs;
        this.nowMs = nowMs;
        propertiesLength = 0;
        if (rawPropertiesLength > 0)
        {
            properties.checkLimit(rawPropertiesLength);
            propertiesLength = MessageProperties.copyForwardable(rawProperties, rawPropertiesOffset,
                rawPropertiesLength, properties, 0);
        }
        java.util.Arrays.fill(variantLength, 0);
    }

    boolean isExpired()
    {
        return expiresAtMs != Message.NEVER && nowMs >= expiresAtMs;
    }

    /**
     * @return the bytes a copy of the event's message holds: topic, properties and payload.
     */
    int keptLength()
    {
        return topicLength + propertiesLength + payloadLength;
    }

    /**
     * @param publishedQos the QoS the message was published with.
     * @return a pooled copy of the event's message, with no reference yet.
     */
    SharedMessage copy(final SharedMessage.Pool pool, final int publishedQos)
    {
        return pool.copy(topic, topicOffset, topicLength, properties, 0, propertiesLength, payload, payloadOffset,
            payloadLength, expiresAtMs, publishedQos);
    }

    /**
     * Encodes the event's message once per (version, QoS, RETAIN).
     *
     * @return the variant's index, for {@link #variant}, {@link #variantLength} and {@link #patchPacketId}.
     */
    int variant(final int version, final int qos, final boolean retain)
    {
        final int v = ((version == MqttVersion.V5 ? 3 : 0) + qos) * 2 + (retain ? 1 : 0);
        if (variantLength[v] == 0)
        {
            prepare(version, qos, false, retain, 1, topic, topicOffset, topicLength, properties, 0,
                propertiesLength, payload, payloadOffset, payloadLength, expiresAtMs, null, 0, 0);
            final ExpandableArrayBuffer bytes = variants[v];
            bytes.checkLimit(encoder.encodedLength());
            variantLength[v] = encoder.encode(bytes, 0);
            variantIdOffset[v] = encoder.packetIdOffset();
        }
        return v;
    }

    ExpandableArrayBuffer variant(final int variant)
    {
        return variants[variant];
    }

    int variantLength(final int variant)
    {
        return variantLength[variant];
    }

    void patchPacketId(final int variant, final int packetId)
    {
        PublishEncoder.putPacketId(variants[variant], variantIdOffset[variant], packetId);
    }

    /**
     * @return whether a session needs an encoding of its own: a mount point to take off its topics, or
     * Subscription Identifiers or topic aliases (5.0).
     */
    static boolean needsOwnEncoding(final DeliverySession session, final int subscriptionIdCount)
    {
        return null != session.mountPoint ||
            session.version == MqttVersion.V5 && (subscriptionIdCount > 0 || null != session.aliases());
    }

    /**
     * Encodes the event's message for one session into {@link #scratch()}.
     *
     * @return the length, or {@link #TOO_LARGE}.
     */
    int encodeEvent(final DeliverySession session, final int qos, final boolean retain, final int packetId,
        final int[] subscriptionIds, final int subscriptionIdCount)
    {
        return encode(session, qos, false, retain, packetId, topic, topicOffset, topicLength, properties, 0,
            propertiesLength, payload, payloadOffset, payloadLength, expiresAtMs, subscriptionIds,
            subscriptionIdCount);
    }

    /**
     * Encodes a kept message (in flight or queued) for its session into {@link #scratch()}.
     *
     * @return the length, or {@link #TOO_LARGE}.
     */
    int encodeKept(final DeliverySession session, final SharedMessage message, final int qos, final boolean dup,
        final boolean retain, final int packetId, final int[] subscriptionIds, final long nowMs)
    {
        this.nowMs = nowMs;
        return encode(session, qos, dup, retain, packetId, message.buffer(), 0, message.topicLength(),
            message.buffer(), message.propertiesOffset(), message.propertiesLength(), message.buffer(),
            message.payloadOffset(), message.payloadLength(), message.expiresAtMs(), subscriptionIds,
            null == subscriptionIds ? 0 : subscriptionIds.length);
    }

    int maxOutboundLength()
    {
        return maxOutboundLength;
    }

    ExpandableArrayBuffer scratch()
    {
        return scratch;
    }

    /**
     * @return whether the last {@link #encodeEvent} or {@link #encodeKept} told the client a new topic alias: that
     * packet must reach it, or later ones would name an alias it never learnt.
     */
    boolean assignedAlias()
    {
        return assignedAlias;
    }

    private boolean assignedAlias;

    private int encode(final DeliverySession session, final int qos, final boolean dup, final boolean retain,
        final int packetId, final DirectBuffer topic, final int mountedOffset, final int mountedLength,
        final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs,
        final int[] subscriptionIds, final int subscriptionIdCount)
    {
        assignedAlias = false;
        int topicOffset = mountedOffset;
        int topicLength = mountedLength;
        final byte[] mount = session.mountPoint;
        if (null != mount)
        {
            if (!under(mount, topic, mountedOffset, mountedLength))
            {
                return NOT_MOUNTED;
            }
            topicOffset += mount.length; // the client names it without its listener's prefix
            topicLength -= mount.length;
        }
        int alias = 0;
        final OutboundTopicAliases aliases = session.version == MqttVersion.V5 ? session.aliases() : null;
        if (null != aliases)
        {
            alias = aliases.aliasFor(topic, topicOffset, topicLength);
            assignedAlias = alias < 0;
        }
        prepare(session.version, qos, dup, retain, packetId, topic, topicOffset, alias > 0 ? 0 : topicLength,
            properties, propertiesOffset, propertiesLength, payload, payloadOffset, payloadLength, expiresAtMs,
            subscriptionIds, subscriptionIdCount, Math.abs(alias));
        final int length = encoder.encodedLength();
        if (length > session.maxPacketSize || length > maxOutboundLength)
        {
            if (assignedAlias)
            {
                aliases.undoLast(); // never told to the client
                assignedAlias = false;
            }
            return TOO_LARGE;
        }
        scratch.checkLimit(length);
        return encoder.encode(scratch, 0);
    }

    /**
     * @return whether {@code topic[offset, offset + length)} is below {@code mount}: it starts with it and goes on.
     */
    private static boolean under(final byte[] mount, final DirectBuffer topic, final int offset, final int length)
    {
        if (length <= mount.length)
        {
            return false;
        }
        for (int i = 0; i < mount.length; i++)
        {
            if (topic.getByte(offset + i) != mount[i])
            {
                return false;
            }
        }
        return true;
    }

    private void prepare(final int version, final int qos, final boolean dup, final boolean retain,
        final int packetId, final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs,
        final int[] subscriptionIds, final int subscriptionIdCount, final int alias)
    {
        encoder.reset().version(version).qos(qos).dup(dup).retain(retain).packetId(packetId)
            .topic(topic, topicOffset, topicLength).payload(payload, payloadOffset, payloadLength);
        if (version == MqttVersion.V5)
        {
            encoder.forwardedProperties(properties, propertiesOffset, propertiesLength)
                .messageExpiry(Message.remainingSeconds(expiresAtMs, nowMs))
                .subscriptionIds(subscriptionIds, subscriptionIdCount)
                .topicAlias(alias);
        }
    }
}
