package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.Utf8;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import org.agrona.DirectBuffer;

/**
 * What the reading role of an I/O agent judges on a decoded PUBLISH before the pipeline sees it:
 * <ol>
 *   <li>its Topic Alias (MQTT 5.0), resolved by the agent's {@link TopicAliasResolver};</li>
 *   <li>{@code --max-topic-length} and {@code --max-topic-levels} on the resolved topic name (0x90 on 5.0);</li>
 *   <li>the client's Receive Maximum (MQTT 5.0): one QoS 1 or 2 PUBLISH more than the broker announced is 0x93
 *       [MQTT-3.3.4-7], counted per connection by its {@link InboundQuota};</li>
 * </ol>
 * then hands it on: its bytes as they came (no copy), or, when it had a Topic Alias, the canonical PUBLISH the
 * resolver wrote, so a stage never sees an alias.
 */
final class InboundPublishes
{
    /** The limits in force; a reload replaces them on the owning agent's thread. */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final IngressProxy ingress;
    private final ConnectionWriter.Closer closer;
    private final TopicAliasResolver aliases;
    /** Puts a PUBLISH's topic under its listener's mount point; this agent's. */
    private final MountPoints mountPoints;

    InboundPublishes(final BrokerContext context, final BrokerCounters counters, final IngressProxy ingress,
        final ConnectionWriter.Closer closer, final MountPoints mountPoints)
    {
        this.mountPoints = mountPoints;
        this.context = context;
        this.counters = counters;
        this.ingress = ingress;
        this.closer = closer;
        this.aliases = new TopicAliasResolver(context.limits().topicAliasMaximum(), context, counters);
    }

    /**
     * @param packet the PUBLISH's bytes from offset 0, as decoded into {@code publish}.
     * @return false when it could not be handed on now (the ingress ring is full: try again later); true when it
     * was handed on or the connection was ended for it.
     */
    boolean onPublish(final Connection connection, final PublishFlyweight publish, final DirectBuffer packet,
        final int length)
    {
        if (publish.qos() > connection.maxQos || (publish.isRetain() && !context.limits().retainAvailable()))
        {
            unsupported(connection, publish);
            return true;
        }
        if (connection.version == MqttVersion.V5 && !propertiesAllowed(connection, publish))
        {
            return true;
        }
        final boolean aliased = TopicAliasResolver.hasAlias(connection.version, publish);
        if (aliased)
        {
            final int reason = aliases.resolve(connection, publish);
            if (reason != 0)
            {
                PacketFramer.protocolViolation(counters, closer, connection,
                    reason == ReasonCode.TOPIC_ALIAS_INVALID ? "Topic Alias over the maximum [MQTT-3.3.2-9]" :
                    reason == ReasonCode.QUOTA_EXCEEDED ? "topic aliases past " + TopicAliases.MAX_BYTES +
                        " bytes, or past --max-session-memory / 2 for all connections" :
                        "empty topic with an unknown Topic Alias", reason);
                return true;
            }
            final DirectBuffer topic = aliases.topic();
            if (!topicWithinLimits(connection, topic, 0, topic.capacity()))
            {
                return true;
            }
        }
        else
        {
            final Slice topic = publish.topic();
            if (!topicWithinLimits(connection, topic.buffer(), topic.offset(), topic.length()))
            {
                return true;
            }
        }
        final boolean counted = connection.version == MqttVersion.V5 && publish.qos() > 0;
        if (counted && receiveMaximumExceeded(connection, publish))
        {
            return true;
        }
        final boolean handed;
        if (aliased)
        {
            final int canonicalLength = aliases.canonical(connection, publish); // sets the mapping [MQTT-3.3.2-12]
            if (canonicalLength > context.limits().maxPacketSize())
            {
                // with its topic in place of the alias it would pass --max-packet-size, which every log is sized for
                counters.increment(BrokerCounters.PACKET_TOO_LARGE);
                PacketFramer.protocolViolation(counters, closer, connection,
                    "PUBLISH over the maximum packet size once its topic alias is resolved", ReasonCode.PACKET_TOO_LARGE);
                return true;
            }
            handed = null != connection.mountPoint ?
                mounted(connection, aliases.packet(), canonicalLength) :
                ingress.packet(connection.id, connection.version, connection.loopback, PacketType.PUBLISH,
                aliases.packet(), canonicalLength);
        }
        else if (null != connection.mountPoint)
        {
            handed = mounted(connection, packet, length);
        }
        else
        {
            handed = ingress.publish(connection.id, connection.version, connection.loopback, packet, length, publish);
        }
        if (handed && counted)
        {
            connection.inboundQuota.onPublish(publish.qos(), publish.packetId());
        }
        return handed;
    }

    /**
     * Hands on a PUBLISH of a client of a listener with a mount point, its topic under it (one that would then pass
     * the maximum packet size, or a topic of 65,535 bytes, ends the connection with 0x95).
     *
     * @return as {@link #onPublish}.
     */
    private boolean mounted(final Connection connection, final DirectBuffer packet, final int length)
    {
        final int mountedLength = mountPoints.publish(connection.mountPoint, packet, length, connection.version,
            context.limits().maxPacketSize());
        if (mountedLength == MountPoints.TOO_LONG)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE);
            PacketFramer.protocolViolation(counters, closer, connection,
                "PUBLISH over the maximum packet size (or its topic over 65,535 bytes) with the listener's mount_point",
                ReasonCode.PACKET_TOO_LARGE);
            return true;
        }
        return ingress.packet(connection.id, connection.version, connection.loopback, PacketType.PUBLISH,
            mountPoints.packet(), mountedLength);
    }

    /**
     * A PUBLISH above its connection's maximum QoS ({@code --max-qos}, or its listener's lower {@code max_qos}; a
     * 5.0 client, told so in CONNACK, must not send it [MQTT-3.2.2-11]) ends the connection with 0x9B; a retained
     * one under {@code --retain-available false} [MQTT-3.2.2-14] with 0x9A, as Mosquitto's {@code max_qos} and
     * {@code retain_available} do (a 3.1.1 connection is closed).
     */
    private void unsupported(final Connection connection, final PublishFlyweight publish)
    {
        if (publish.qos() > connection.maxQos)
        {
            PacketFramer.protocolViolation(counters, closer, connection, "PUBLISH at QoS " + publish.qos() +
                " over the maximum QoS " + connection.maxQos, ReasonCode.QOS_NOT_SUPPORTED);
        }
        else
        {
            PacketFramer.protocolViolation(counters, closer, connection,
                "retained PUBLISH with --retain-available false", ReasonCode.RETAIN_NOT_SUPPORTED);
        }
    }

    /**
     * A client's PUBLISH carries no Subscription Identifier [MQTT-3.3.4-6] (0x82), and a payload it marks as UTF-8
     * must be UTF-8 (0x99, which a receiver may check: 5.0 section 3.3.2.3.2).
     *
     * @return false when the connection was ended for it.
     */
    private boolean propertiesAllowed(final Connection connection, final PublishFlyweight publish)
    {
        if (publish.properties().subscriptionIdentifierCount() > 0)
        {
            PacketFramer.protocolViolation(counters, closer, connection,
                "Subscription Identifier from a client [MQTT-3.3.4-6]", ReasonCode.PROTOCOL_ERROR);
            return false;
        }
        if (publish.properties().intValue(PropertyId.PAYLOAD_FORMAT_INDICATOR, 0) == 1)
        {
            final Slice payload = publish.payload();
            if (Utf8.validate(payload.buffer(), payload.offset(), payload.length()) < 0)
            {
                PacketFramer.protocolViolation(counters, closer, connection,
                    "payload marked UTF-8 is not (5.0 section 3.3.2.3.2)", ReasonCode.PAYLOAD_FORMAT_INVALID);
                return false;
            }
        }
        return true;
    }

    /**
     * @return true when the connection was ended for one more unanswered QoS 1 or 2 PUBLISH than the Receive
     * Maximum allows (0x93) [MQTT-3.3.4-7].
     */
    private boolean receiveMaximumExceeded(final Connection connection, final PublishFlyweight publish)
    {
        if (null == connection.inboundQuota)
        {
            connection.inboundQuota = new InboundQuota();
        }
        if (!connection.inboundQuota.exceeds(publish.qos(), publish.packetId(), context.limits().receiveMaximum()))
        {
            return false;
        }
        PacketFramer.protocolViolation(counters, closer, connection, "over the receive maximum [MQTT-3.3.4-7]",
            ReasonCode.RECEIVE_MAXIMUM_EXCEEDED);
        return true;
    }

    /**
     * {@code --max-topic-length} and {@code --max-topic-levels} on a PUBLISH's (resolved) topic name; over either
     * ends the connection (on 5.0 with Topic Name invalid, 0x90), counted apart from other protocol errors.
     *
     * @return false when the connection was ended for it.
     */
    private boolean topicWithinLimits(
        final Connection connection, final DirectBuffer buffer, final int offset, final int topicLength)
    {
        // a mounted client's topic is judged as the stages see it, its listener's prefix in front (as its filters)
        final byte[] mount = connection.mountPoint;
        final int mountLength = null == mount ? 0 : mount.length;
        if (topicLength + mountLength > context.limits().maxTopicLength())
        {
            counters.increment(BrokerCounters.TOPIC_TOO_LONG);
            closer.disconnect(connection, ReasonCode.TOPIC_NAME_INVALID);
            return false;
        }
        final int maxTopicLevels = context.limits().maxTopicLevels();
        if (topicLength + mountLength >= maxTopicLevels &&
            levels(buffer, offset, topicLength) + (null == mount ? 0 : separators(mount)) > maxTopicLevels)
        {
            counters.increment(BrokerCounters.TOPIC_TOO_MANY_LEVELS);
            closer.disconnect(connection, ReasonCode.TOPIC_NAME_INVALID);
            return false;
        }
        return true;
    }

    private static int separators(final byte[] mount)
    {
        int separators = 0;
        for (final byte b : mount)
        {
            separators += b == '/' ? 1 : 0;
        }
        return separators;
    }

    /**
     * @return the levels of a topic name: one more than its separators.
     */
    static int levels(final DirectBuffer buffer, final int offset, final int length)
    {
        int levels = 1;
        for (int i = offset, end = offset + length; i < end; i++)
        {
            if (buffer.getByte(i) == '/')
            {
                levels++;
            }
        }
        return levels;
    }

    /**
     * @param next the limits from now on (a reload; the owning agent's thread).
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
        aliases.limits(next);
    }

    /**
     * A connection closed: what it held here is free.
     */
    void release(final Connection connection)
    {
        aliases.release(connection);
    }

    /**
     * @return what this agent's connections' topic aliases hold.
     */
    long aliasBytes()
    {
        return aliases.heldBytes();
    }
}
