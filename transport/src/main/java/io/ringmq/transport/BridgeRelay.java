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
 * messages beyond the target's receive maximum wait here in order, up to {@code bridge_receive_maximum} of them;
 * QoS 0 goes at once (blocking writes hold the source back when the target does not read).
 * <p>
 * The exchanges in flight toward the target outlive a connection ({@link #attach}): when both sessions are still
 * there, a message the source sends again goes out again under the packet id it had, and a PUBREL the target was
 * owed is sent again [MQTT-4.4.0-1]; an id the target may still hold is never given to another message.
 * <p>
 * A message whose topic no topic line of this direction matches, or whose renamed topic the line's filter on the
 * other side would not match (a prefix that makes a {@code $} topic), is acknowledged and dropped: a remote broker
 * cannot write outside what the bridge subscribed to (the local {@code $SYS} included).
 * <p>
 * Called by the source's reader ({@link #onPublish}) and the target's reader ({@link #onAck}); one lock.
 */
final class BridgeRelay
{
    private static final System.Logger LOG = System.getLogger(BridgeRelay.class.getName());
    /** The most bytes of messages held for the target's window, whatever the count. */
    static final long MAX_PENDING_BYTES = 64L * 1024 * 1024;
    /** {@link #sourceIdOf}: the target acknowledged receipt (PUBREC), its PUBCOMP is still to come. */
    private static final int RELEASING = -1;

    private final String label;
    /** The topic lines of this direction, with their filters as each side sees them. */
    private final List<BridgeSettings.Topic> topics;
    private final byte[][] sourceFilters;
    private final byte[][] targetFilters;
    private final byte[][] sourcePrefixes;
    private final byte[][] targetPrefixes;
    /** The topic {@link #map} made, in {@code [0, mappedLength)}. */
    private final ExpandableArrayBuffer mapped = new ExpandableArrayBuffer(256);
    private int mappedLength;
    private final boolean out;
    private final boolean keepRetain;
    private final int maxPending;
    /** Target packet id to the source's packet id (QoS 1 and 2 in flight toward the target); 0: free. */
    private final int[] sourceIdOf = new int[65_536];
    /** The QoS of what went out under a target packet id. */
    private final byte[] qosOf = new byte[65_536];
    /** Source packet id to the target packet id its message went out under, while not acknowledged; 0: none. */
    private final int[] targetIdOf = new int[65_536];
    /**
     * Source packet ids of QoS 2 messages the source was sent PUBREC for and has not released (PUBREL): the same id
     * again (DUP, after a reconnect) is that message, already passed on, and gets its PUBREC again, nothing else.
     */
    private final boolean[] received = new boolean[65_536];
    private int nextId = 1;
    private int inflight;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private long pendingBytes;
    private final PublishEncoder encoder = new PublishEncoder();
    private final ExpandableArrayBuffer properties = new ExpandableArrayBuffer(256);
    private long dropped;
    private boolean dropLogged;
    private BridgeLink source;
    private BridgeLink target;
    private int window;
    private long targetMaxPacket;

    /**
     * @param out        true: from this broker to the remote one (the topics' out direction); false: in.
     * @param maxPending QoS 1/2 messages held beyond the window at most ({@code bridge_receive_maximum}).
     */
    BridgeRelay(final String label, final List<BridgeSettings.Topic> allTopics, final boolean out,
        final boolean keepRetain, final int maxPending)
    {
        this.label = label;
        this.topics = allTopics.stream().filter(t -> out ? t.direction.out() : t.direction.in()).toList();
        this.sourceFilters = new byte[topics.size()][];
        this.targetFilters = new byte[topics.size()][];
        this.sourcePrefixes = new byte[topics.size()][];
        this.targetPrefixes = new byte[topics.size()][];
        for (int i = 0; i < topics.size(); i++)
        {
            final BridgeSettings.Topic topic = topics.get(i);
            sourceFilters[i] = (out ? topic.localFilter() : topic.remoteFilter()).getBytes(StandardCharsets.UTF_8);
            targetFilters[i] = (out ? topic.remoteFilter() : topic.localFilter()).getBytes(StandardCharsets.UTF_8);
            sourcePrefixes[i] = (out ? topic.localPrefix : topic.remotePrefix).getBytes(StandardCharsets.UTF_8);
            targetPrefixes[i] = (out ? topic.remotePrefix : topic.localPrefix).getBytes(StandardCharsets.UTF_8);
        }
        this.out = out;
        this.keepRetain = keepRetain;
        this.maxPending = maxPending;
    }

    /**
     * @return the topic lines this direction subscribes to at its source.
     */
    List<BridgeSettings.Topic> topics()
    {
        return topics;
    }

    /**
     * A new connection each side: what waited for the old window is dropped (its source sends it again, it was never
     * acknowledged), and what was in flight is settled by what each side kept. Before the readers start.
     *
     * @param window          QoS 1/2 messages the target takes in flight (its receive maximum).
     * @param targetMaxPacket the largest packet the target takes.
     * @param sourcePresent   the source kept its session: it sends what it was not acknowledged again.
     * @param targetPresent   the target kept its session: the ids it holds still stand.
     */
    synchronized void attach(final BridgeLink source, final BridgeLink target, final int window,
        final long targetMaxPacket, final boolean sourcePresent, final boolean targetPresent) throws IOException
    {
        this.source = source;
        this.target = target;
        this.window = Math.max(1, Math.min(window, 65_535));
        this.targetMaxPacket = targetMaxPacket;
        pending.clear();
        pendingBytes = 0;
        dropLogged = false;
        if (!sourcePresent)
        {
            java.util.Arrays.fill(received, false); // a new session there: its ids are new messages
        }
        for (int id = 1; id <= 65_535; id++)
        {
            final int from = sourceIdOf[id];
            if (from == 0)
            {
                continue;
            }
            if (!targetPresent)
            {
                free(id); // a new session there: nothing it held stands
            }
            else if (from == RELEASING)
            {
                target.ack(PacketType.PUBREL, id); // owed to the session that kept it [MQTT-4.4.0-1]
            }
            else if (!sourcePresent)
            {
                if (qosOf[id] == 2)
                {
                    // its source is gone and will not send it again: release it there, so the id is free again
                    targetIdOf[from] = 0;
                    sourceIdOf[id] = RELEASING;
                    target.ack(PacketType.PUBREL, id);
                }
                else
                {
                    free(id);
                }
            }
            // else: the source sends it again, and it goes out again under this id (onPublish)
        }
    }

    /**
     * A PUBLISH from the source (its reader's thread), written to the target or held for its window.
     */
    synchronized void onPublish(final PublishFlyweight publish) throws IOException
    {
        final DirectBuffer buffer = publish.buffer();
        final int qos = publish.qos();
        final int sourceId = qos > 0 ? publish.packetId() : 0;
        if (qos == 2 && received[sourceId])
        {
            source.ack(PacketType.PUBREC, sourceId); // passed on already, not yet released [MQTT-4.3.3-9]
            return;
        }
        if (!map(buffer, publish.topic().offset(), publish.topic().length()))
        {
            drop(buffer, publish, "matches no topic line of this direction");
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
        final int resent = qos > 0 ? targetIdOf[sourceId] : 0;
        if (resent != 0 && sourceIdOf[resent] == sourceId && qosOf[resent] == qos)
        {
            // sent again by its source (a new connection): again under the id the target may hold it by
            send(mapped, mappedLength, buffer, publish.payload().offset(), publish.payload().length(), properties,
                propertiesLength, expiry, qos, retain, sourceId, resent);
            return;
        }
        if (qos > 0 && (inflight >= window || !pending.isEmpty()))
        {
            if (pending.size() >= maxPending || pendingBytes > MAX_PENDING_BYTES)
            {
                // a source that does not wait for acknowledgements (a 3.1.1 remote has no receive maximum to keep):
                // its connection ends, and its session sends the unacknowledged again later
                throw new IOException(label + ": the source sent more than " + maxPending + " unacknowledged " +
                    "messages beyond the target's window (or " + MAX_PENDING_BYTES + " bytes)");
            }
            final byte[] topicBytes = new byte[mappedLength];
            mapped.getBytes(0, topicBytes);
            final byte[] payload = new byte[publish.payload().length()];
            buffer.getBytes(publish.payload().offset(), payload);
            final byte[] props = new byte[propertiesLength];
            properties.getBytes(0, props);
            pending.add(new Pending(topicBytes, payload, props, expiry, qos, retain, sourceId));
            pendingBytes += topicBytes.length + payload.length + props.length;
            return;
        }
        send(mapped, mappedLength, buffer, publish.payload().offset(), publish.payload().length(), properties,
            propertiesLength, expiry, qos, retain, sourceId, 0);
    }

    /**
     * @param resentId the target packet id it went out under before (sent again with DUP), 0 for a new one.
     */
    private void send(final DirectBuffer topic, final int topicLength, final DirectBuffer payload,
        final int payloadOffset, final int payloadLength, final DirectBuffer props, final int propsLength,
        final long expiry, final int qos, final boolean retain, final int sourceId, final int resentId)
        throws IOException
    {
        encoder.reset().version(target.version).qos(qos).retain(retain).dup(resentId != 0)
            .topic(topic, 0, topicLength).payload(payload, payloadOffset, payloadLength);
        if (propsLength > 0)
        {
            encoder.forwardedProperties(props, 0, propsLength);
        }
        if (expiry >= 0)
        {
            encoder.messageExpiry(expiry);
        }
        final int id = resentId != 0 ? resentId : qos > 0 ? allocate() : 0;
        if (id != 0)
        {
            encoder.packetId(id);
        }
        if (encoder.encodedLength() > targetMaxPacket)
        {
            // larger than the target takes: it would close the link, and the message come again
            dropped++;
            logDrop("is larger than the target's maximum packet size");
            if (id != 0)
            {
                free(id);
            }
            acknowledgeSource(qos, sourceId);
            return;
        }
        if (id != 0 && resentId == 0)
        {
            sourceIdOf[id] = sourceId;
            qosOf[id] = (byte)qos;
            targetIdOf[sourceId] = id;
        }
        target.send(encoder);
    }

    private void acknowledgeSource(final int qos, final int sourceId) throws IOException
    {
        if (qos == 1)
        {
            source.ack(PacketType.PUBACK, sourceId);
        }
        else if (qos == 2)
        {
            received[sourceId] = true;
            source.ack(PacketType.PUBREC, sourceId); // its PUBREL is completed by onRelease
        }
    }

    /**
     * The source's PUBREL (its reader's thread): the target holds the message already (its PUBREC came first), so
     * the exchange with the source completes at once, and its id is a new message's from now on.
     */
    synchronized void onRelease(final int packetId) throws IOException
    {
        received[packetId] = false;
        source.ack(PacketType.PUBCOMP, packetId); // for an unknown id too [MQTT-4.3.3-11]
    }

    /**
     * An acknowledgement from the target (its reader's thread): the source's exchange goes on, and the window
     * takes what waited. One that does not fit the exchange under its id (a PUBREC for QoS 1, a PUBCOMP before its
     * PUBREC) is not passed on.
     */
    synchronized void onAck(final int packetType, final int packetId, final int reasonCode) throws IOException
    {
        final int sourceId = sourceIdOf[packetId];
        switch (packetType)
        {
            case PacketType.PUBACK:
                if (sourceId <= 0 || qosOf[packetId] != 1)
                {
                    return;
                }
                free(packetId);
                source.ack(PacketType.PUBACK, sourceId);
                break;
            case PacketType.PUBREC:
                if (sourceId <= 0 || qosOf[packetId] != 2)
                {
                    return;
                }
                targetIdOf[sourceId] = 0;
                // the target's side first: should a write fail, attach() still finds the PUBREL owed
                if (reasonCode >= ReasonCode.UNSPECIFIED_ERROR)
                {
                    free(packetId); // 5.0: a refusing PUBREC ends the exchange, no PUBREL [MQTT-4.3.3-4]
                }
                else
                {
                    sourceIdOf[packetId] = RELEASING;
                    target.ack(PacketType.PUBREL, packetId);
                }
                acknowledgeSource(2, sourceId); // the target holds it: the source may let go
                break;
            case PacketType.PUBCOMP:
                if (sourceId != RELEASING)
                {
                    return;
                }
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
            send(new UnsafeBuffer(next.topic), next.topic.length, new UnsafeBuffer(next.payload), 0,
                next.payload.length, new UnsafeBuffer(next.properties), next.properties.length, next.expiry, next.qos,
                next.retain, next.sourceId, 0);
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
        sourceIdOf[id] = RELEASING; // taken; its source id is written once it is sent
        inflight++;
        return id;
    }

    private void free(final int id)
    {
        final int from = sourceIdOf[id];
        if (from > 0 && targetIdOf[from] == id)
        {
            targetIdOf[from] = 0;
        }
        sourceIdOf[id] = 0;
        qosOf[id] = 0;
        inflight--;
    }

    /**
     * The topic at the target for a topic at the source, into {@link #mapped}: by the first topic line of this
     * direction whose filter matches, its source prefix replaced by its target prefix, when the line's filter on the
     * target side matches the result. Byte by byte, nothing allocated.
     *
     * @return whether a line did.
     */
    boolean map(final DirectBuffer buffer, final int offset, final int length)
    {
        for (int i = 0; i < sourceFilters.length; i++)
        {
            if (!AclMatch.matches(sourceFilters[i], buffer, offset, length)) // no wildcard-first filter matches $
            {
                continue;
            }
            final byte[] from = sourcePrefixes[i];
            final byte[] to = targetPrefixes[i];
            final int newLength = to.length + length - from.length;
            if (length < from.length || !startsWith(buffer, offset, from) || newLength == 0 || newLength > 65_535)
            {
                continue;
            }
            mapped.putBytes(0, to);
            mapped.putBytes(to.length, buffer, offset + from.length, length - from.length);
            // "r/$SYS/x" under "" and "r/" would be "$SYS/x", which "#" here does not match [MQTT-4.7.2-1]
            if (AclMatch.matches(targetFilters[i], mapped, 0, newLength))
            {
                mappedLength = newLength;
                return true;
            }
        }
        return false;
    }

    /**
     * @return the topic {@link #map} made last, as a string (tests).
     */
    String mappedTopic()
    {
        return mapped.getStringWithoutLengthUtf8(0, mappedLength);
    }

    private static boolean startsWith(final DirectBuffer buffer, final int offset, final byte[] prefix)
    {
        for (int i = 0; i < prefix.length; i++)
        {
            if (buffer.getByte(offset + i) != prefix[i])
            {
                return false;
            }
        }
        return true;
    }

    private void drop(final DirectBuffer buffer, final PublishFlyweight publish, final String why)
    {
        dropped++;
        logDrop("on " + buffer.getStringWithoutLengthUtf8(publish.topic().offset(),
            Math.min(publish.topic().length(), 200)) + " " + why);
    }

    private void logDrop(final String what)
    {
        if (!dropLogged)
        {
            dropLogged = true; // once per connection: a source that sends many must not flood the log
            LOG.log(System.Logger.Level.WARNING, label + ": a message " + what + ": acknowledged and dropped (" +
                "logged once per connection)");
        }
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
