package io.ringmq.transport;

import io.ringmq.pipeline.BridgeSettings;
import io.ringmq.pipeline.auth.AclMatch;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;

/**
 * One direction of a {@link Bridge}: the messages its source link receives go to its target link, renamed by the
 * bridge's topic lines, with the acknowledgements chained so that nothing is lost between the two brokers. A QoS 1
 * message is acknowledged to its source only when the target acknowledged it; a QoS 2 message's PUBREC goes back
 * when the target's PUBREC came (the target holds it then), and the source's PUBREL is completed at once. QoS 1/2
 * messages beyond the target's receive maximum wait here in order; QoS 0 goes at once (blocking writes hold the
 * source back when the target does not read).
 * <p>
 * A message whose topic no topic line of this direction matches is acknowledged and dropped: a remote broker
 * cannot write outside what the bridge subscribed to (the local {@code $SYS} included).
 * <p>
 * Called by the source's reader ({@link #onPublish}) and the target's reader ({@link #onAck}); one lock.
 */
final class BridgeRelay
{
    private final String label;
    private final BridgeLink source;
    private final BridgeLink target;
    /** The topic lines of this direction, with their filters as this direction's source sees them. */
    private final List<BridgeSettings.Topic> topics;
    private final byte[][] sourceFilters;
    private final boolean out;
    private final boolean keepRetain;
    private final int window;
    private final long targetMaxPacket;
    /** Target packet id to the source's packet id (QoS 1 and 2 in flight toward the target); 0: free. */
    private final int[] sourceIdOf = new int[65_536];
    private int nextId = 1;
    private int inflight;
    /** The most bytes of messages held for the target's window, whatever the count. */
    static final long MAX_PENDING_BYTES = 64L * 1024 * 1024;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private final int maxPending;
    private long pendingBytes;
    private final PublishEncoder encoder = new PublishEncoder();
    private final ExpandableArrayBuffer properties = new ExpandableArrayBuffer(256);
    private final UnsafeBuffer topicView = new UnsafeBuffer(new byte[0]);
    private long dropped;

    /**
     * @param out       true: from this broker to the remote one (the topics' out direction); false: in.
     * @param window    QoS 1/2 messages the target takes in flight (its receive maximum).
     * @param targetMaxPacket the largest packet the target takes.
     * @param maxPending QoS 1/2 messages held beyond the window at most ({@code bridge_receive_maximum}).
     */
    BridgeRelay(final String label, final BridgeLink source, final BridgeLink target,
        final List<BridgeSettings.Topic> allTopics, final boolean out, final boolean keepRetain, final int window,
        final long targetMaxPacket, final int maxPending)
    {
        this.maxPending = maxPending;
        this.label = label;
        this.source = source;
        this.target = target;
        this.topics = allTopics.stream().filter(t -> out ? t.direction.out() : t.direction.in()).toList();
        this.sourceFilters = new byte[topics.size()][];
        for (int i = 0; i < topics.size(); i++)
        {
            final BridgeSettings.Topic topic = topics.get(i);
            sourceFilters[i] = (out ? topic.localFilter() : topic.remoteFilter()).getBytes(StandardCharsets.UTF_8);
        }
        this.out = out;
        this.keepRetain = keepRetain;
        this.window = Math.max(1, Math.min(window, 65_535));
        this.targetMaxPacket = targetMaxPacket;
    }

    /**
     * @return the topic lines this direction subscribes to at its source.
     */
    List<BridgeSettings.Topic> topics()
    {
        return topics;
    }

    /**
     * A PUBLISH from the source (its reader's thread), written to the target or held for its window.
     */
    synchronized void onPublish(final PublishFlyweight publish) throws IOException
    {
        final DirectBuffer buffer = publish.buffer();
        final int topicOffset = publish.topic().offset();
        final int topicLength = publish.topic().length();
        final String targetTopic = map(buffer, topicOffset, topicLength);
        final int qos = publish.qos();
        final int sourceId = qos > 0 ? publish.packetId() : 0;
        if (null == targetTopic)
        {
            dropped++;
            acknowledgeSource(qos, sourceId);
            return;
        }
        final boolean retain = publish.isRetain() && keepRetain;
        int propertiesLength = 0;
        long expiry = -1;
        if (source.version == MqttVersion.V5 && target.version == MqttVersion.V5 && publish.propertiesLength() > 0)
        {
            final int start = MessageProperties.sectionStart(buffer, publish.propertiesOffset());
            final int length = MessageProperties.sectionLength(buffer, publish.propertiesOffset());
            properties.checkLimit(length);
            // what travels with the message; Topic Alias and Subscription Identifier were one hop's
            propertiesLength = MessageProperties.copyForwardable(buffer, start, length, properties, 0);
            expiry = MessageProperties.messageExpiry(buffer, start, length);
        }
        final byte[] topicBytes = targetTopic.getBytes(StandardCharsets.UTF_8);
        if (qos > 0 && (inflight >= window || !pending.isEmpty()))
        {
            if (pending.size() >= maxPending || pendingBytes > MAX_PENDING_BYTES)
            {
                // a source that does not wait for acknowledgements (a 3.1.1 remote has no receive maximum to keep):
                // its connection ends, and its session sends the unacknowledged again later
                throw new IOException(label + ": the source sent more than " + maxPending + " unacknowledged " +
                    "messages beyond the target's window (or " + MAX_PENDING_BYTES + " bytes)");
            }
            final byte[] payload = new byte[publish.payload().length()];
            buffer.getBytes(publish.payload().offset(), payload);
            final byte[] props = new byte[propertiesLength];
            properties.getBytes(0, props);
            pending.add(new Pending(topicBytes, payload, props, expiry, qos, retain, sourceId));
            pendingBytes += topicBytes.length + payload.length + props.length;
            return;
        }
        send(topicBytes, buffer, publish.payload().offset(), publish.payload().length(), properties,
            propertiesLength, expiry, qos, retain, sourceId);
    }

    private void send(final byte[] topic, final DirectBuffer payload, final int payloadOffset, final int payloadLength,
        final DirectBuffer props, final int propsLength, final long expiry, final int qos, final boolean retain,
        final int sourceId) throws IOException
    {
        topicView.wrap(topic);
        encoder.reset().version(target.version).qos(qos).retain(retain).topic(topicView, 0, topic.length)
            .payload(payload, payloadOffset, payloadLength);
        if (propsLength > 0)
        {
            encoder.forwardedProperties(props, 0, propsLength);
        }
        if (expiry >= 0)
        {
            encoder.messageExpiry(expiry);
        }
        int id = 0;
        if (qos > 0)
        {
            id = allocate();
            encoder.packetId(id);
        }
        if (encoder.encodedLength() > targetMaxPacket)
        {
            dropped++; // larger than the target takes: it would close the link, and the message come again
            if (id != 0)
            {
                free(id);
            }
            acknowledgeSource(qos, sourceId);
            return;
        }
        if (id != 0)
        {
            sourceIdOf[id] = sourceId;
        }
        target.publish(encoder);
    }

    private void acknowledgeSource(final int qos, final int sourceId) throws IOException
    {
        if (qos == 1)
        {
            source.ack(PacketType.PUBACK, sourceId);
        }
        else if (qos == 2)
        {
            source.ack(PacketType.PUBREC, sourceId); // its PUBREL is completed at once (Bridge)
        }
    }

    /**
     * An acknowledgement from the target (its reader's thread): the source's exchange goes on, and the window
     * takes what waited.
     */
    synchronized void onAck(final int packetType, final int packetId, final int reasonCode) throws IOException
    {
        final int sourceId = sourceIdOf[packetId];
        if (packetType == PacketType.PUBCOMP ? sourceId != -1 : sourceId <= 0)
        {
            return; // not in that step (a retry after a reconnect, or the target's mistake): nothing to chain
        }
        switch (packetType)
        {
            case PacketType.PUBACK:
                free(packetId);
                source.ack(PacketType.PUBACK, sourceId);
                break;
            case PacketType.PUBREC:
                source.ack(PacketType.PUBREC, sourceId); // the target holds it: the source may let go
                if (reasonCode >= ReasonCode.UNSPECIFIED_ERROR)
                {
                    free(packetId); // 5.0: a refusing PUBREC ends the exchange, no PUBREL [MQTT-4.3.3-4]
                }
                else
                {
                    sourceIdOf[packetId] = -1; // only its PUBCOMP is still to come
                    target.ack(PacketType.PUBREL, packetId);
                }
                break;
            case PacketType.PUBCOMP:
                free(packetId);
                break;
            default:
                return;
        }
        drain();
    }

    private void drain() throws IOException
    {
        while (!pending.isEmpty() && inflight < window)
        {
            final Pending next = pending.poll();
            pendingBytes -= next.topic.length + next.payload.length + next.properties.length;
            final UnsafeBuffer payload = new UnsafeBuffer(next.payload);
            final UnsafeBuffer props = new UnsafeBuffer(next.properties);
            send(next.topic, payload, 0, next.payload.length, props, next.properties.length, next.expiry, next.qos,
                next.retain, next.sourceId);
        }
    }

    private int allocate()
    {
        while (sourceIdOf[nextId] != 0)
        {
            nextId = nextId == 65_535 ? 1 : nextId + 1;
        }
        final int id = nextId;
        nextId = nextId == 65_535 ? 1 : nextId + 1;
        sourceIdOf[id] = -1;
        inflight++;
        return id;
    }

    private void free(final int id)
    {
        sourceIdOf[id] = 0;
        inflight--;
    }

    /**
     * @return the topic at the target for a topic at the source: the first topic line of this direction whose filter
     * matches, its source prefix replaced by its target prefix; null when none matches.
     */
    String map(final DirectBuffer buffer, final int offset, final int length)
    {
        for (int i = 0; i < sourceFilters.length; i++)
        {
            if (AclMatch.matches(sourceFilters[i], buffer, offset, length)) // no wildcard-first filter matches $ topics
            {
                final BridgeSettings.Topic topic = topics.get(i);
                final String from = out ? topic.localPrefix : topic.remotePrefix;
                final String to = out ? topic.remotePrefix : topic.localPrefix;
                final String name = buffer.getStringWithoutLengthUtf8(offset, length);
                if (!name.startsWith(from))
                {
                    continue;
                }
                final String mapped = to + name.substring(from.length());
                if (mapped.isEmpty() || mapped.getBytes(StandardCharsets.UTF_8).length > 65_535)
                {
                    continue;
                }
                return mapped;
            }
        }
        return null;
    }

    /**
     * @return messages dropped: no topic line matched, or larger than the target takes.
     */
    synchronized long dropped()
    {
        return dropped;
    }

    /**
     * @return QoS 1/2 messages in flight toward the target and waiting for room.
     */
    synchronized int held()
    {
        return inflight + pending.size();
    }

    @Override
    public String toString()
    {
        return label;
    }

    /**
     * A QoS 1/2 message waiting for the target's window, copied out of the source's read buffer.
     */
    private static final class Pending
    {
        final byte[] topic;
        final byte[] payload;
        final byte[] properties;
        final long expiry;
        final int qos;
        final boolean retain;
        final int sourceId;

        Pending(final byte[] topic, final byte[] payload, final byte[] properties, final long expiry, final int qos,
            final boolean retain, final int sourceId)
        {
            this.topic = topic;
            this.payload = payload;
            this.properties = properties;
            this.expiry = expiry;
            this.qos = qos;
            this.retain = retain;
            this.sourceId = sourceId;
        }
    }
}
