package io.ringmq.pipeline;

import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.protocol.MessageProperties;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableDirectByteBuffer;

/**
 * The persistence stage's message records ({@link Records}): one per persistent target of a QoS 1 or 2 message, with
 * that target's QoS, RETAIN as it will be delivered and subscription identifiers, and one per retained message. The
 * message (a PUBLISH in the slot, or a will or re-dispatched message in the routing output) is laid out once per
 * event and only the per-target head changes between records. Persistence stage only.
 */
final class PersistedMessages
{
    private final StoreWriter writer;
    private final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(256);
    private final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(1024);
    private final org.agrona.ExpandableArrayBuffer properties = new org.agrona.ExpandableArrayBuffer(128);
    private RouteOutput route;
    /** Where {@link #messageValue} put the message in {@link #value}. */
    private int messageAt;

    PersistedMessages(final StoreWriter writer)
    {
        this.writer = writer;
    }

    /**
     * A QoS 1 or 2 message for persistent sessions: one record per such target, in the order routed, each under
     * {@code number} plus its copy ordinal ({@link RouteOutput#copyOrdinal}).
     *
     * @param keys   the stored key of a session id's persistent session, or 0.
     * @param number the message's number, if it is stored for anyone; the numbers up to {@code number} plus the
     *               target count less one are free for its further copies.
     * @return how many numbers from {@code number} on it took: 0 when it was stored for no target.
     */
    int forTargets(final IngressEvent event, final RouteOutput route, final java.util.function.IntToLongFunction keys,
        final long number)
    {
        this.route = route;
        boolean stored = false;
        int valueLength = 0;
        int copies = 0;
        int shared = 0; // targets so far that came through shared subscription groups: the index of the next key
        for (int i = 0; i < event.targetCount; i++)
        {
            final int groupKeyIndex = route.targetGroup(i) == 0 ? -1 : shared++;
            final int qos = route.targetQos(i);
            final long sessionKey = qos == 0 ? 0 : keys.applyAsLong(route.targetSession(i));
            if (sessionKey == 0)
            {
                continue;
            }
            final int copy = route.copyOrdinal(i);
            copies = Math.max(copies, copy + 1);
            if (!stored)
            {
                stored = true;
                valueLength = messageValue(event);
            }
            final int idsCount = route.targetSubscriptionIdCount(i);
            value.putByte(0, (byte)qos);
            value.putByte(1, (byte)(event.retain && route.targetRetainAsPublished(i) ? 1 : 0));
            value.putInt(11, idsCount);
            placeMessage(i, idsCount, valueLength);
            int length = 15 + idsCount * 4 + valueLength;
            if (groupKeyIndex >= 0)
            {
                // the group it came through, by a key that outlives the broker: after a restart it is tied to that
                // group again, so it goes to another member if its session ends (5.0 section 4.8.2)
                value.putLong(length, route.targetGroupKey(groupKeyIndex));
                length += 8;
            }
            writer.put(key, 0, Records.messageKey(key, sessionKey, Records.QUEUED, number + copy), value, 0,
                length);
        }
        return copies;
    }

    /**
     * Writes the message itself after a gap for the largest identifier list it will carry.
     *
     * @return the message's length.
     */
    private int messageValue(final IngressEvent event)
    {
        final int at = 15 + maxIds(event) * 4;
        final int end;
        if (event.messageOffset != IngressEvent.NONE)
        {
            final int m = event.messageOffset;
            final DirectBuffer b = route.buffer();
            value.checkLimit(at + Records.MESSAGE_HEADER_LENGTH + route.topicLengthAt(m) +
                route.propertiesLengthAt(m) + route.payloadLengthAt(m));
            value.putByte(2, (byte)route.qosAt(m));
            value.putLong(3, route.expiresAtMsAt(m));
            end = Records.putMessage(value, at, b, route.topicOffsetAt(m), route.topicLengthAt(m), b,
                route.propertiesOffsetAt(m), route.propertiesLengthAt(m), b, route.payloadOffsetAt(m),
                route.payloadLengthAt(m));
        }
        else
        {
            value.checkLimit(at + Records.MESSAGE_HEADER_LENGTH + event.topicLength + event.propertiesLength +
                event.payloadLength);
            final long expiry = event.propertiesLength == 0 ? -1 :
                MessageProperties.messageExpiry(event.packet, event.propertiesOffset, event.propertiesLength);
            value.putByte(2, (byte)event.qos);
            value.putLong(3, expiry < 0 ? Message.NEVER : System.currentTimeMillis() + expiry * 1000);
            // the properties that travel with it, as a will's and a retained message's are kept: its expiry is in
            // the record's own field, its topic alias and subscription identifiers are per hop
            int propertiesLength = 0;
            if (event.propertiesLength > 0)
            {
                properties.checkLimit(event.propertiesLength);
                propertiesLength = MessageProperties.copyForwardable(event.packet, event.propertiesOffset,
                    event.propertiesLength, properties, 0);
            }
            end = Records.putMessage(value, at, event.packet, event.topicOffset, event.topicLength, properties, 0,
                propertiesLength, event.packet, event.payloadOffset, event.payloadLength);
        }
        messageAt = at;
        return end - at;
    }

    private int maxIds(final IngressEvent event)
    {
        int max = 0;
        for (int i = 0; i < event.targetCount; i++)
        {
            max = Math.max(max, route.targetSubscriptionIdCount(i));
        }
        return max;
    }

    /**
     * Puts target {@code i}'s identifiers just before the message, moving the message so that it follows them (the
     * gap left is for the longest list of the event).
     */
    private void placeMessage(final int i, final int idsCount, final int messageLength)
    {
        final int at = 15 + idsCount * 4;
        if (at != messageAt)
        {
            value.putBytes(at, value, messageAt, messageLength);
            messageAt = at;
        }
        for (int n = 0; n < idsCount; n++)
        {
            value.putInt(15 + n * 4, route.targetSubscriptionId(i, n));
        }
    }

    /**
     * A retained PUBLISH or will: kept, replaced, or with an empty payload cleared [MQTT-3.3.1-10].
     */
    /**
     * A retained message's record, or its topic's clear.
     *
     * @return whether it was kept with an expiry.
     */
    boolean retained(final IngressEvent event, final RouteOutput route)
    {
        this.route = route;
        final int keyLength;
        final int payloadLength;
        if (event.messageOffset != IngressEvent.NONE)
        {
            final int m = event.messageOffset;
            keyLength = Records.retainedKey(key, route.buffer(), route.topicOffsetAt(m), route.topicLengthAt(m));
            payloadLength = route.payloadLengthAt(m);
        }
        else
        {
            keyLength = Records.retainedKey(key, event.packet, event.topicOffset, event.topicLength);
            payloadLength = event.payloadLength;
        }
        if (payloadLength == 0)
        {
            writer.delete(key, 0, keyLength);
            return false;
        }
        final int length = messageValue(event);
        // the retained layout: qos byte | expires at long | message, right after them | its source, if kept
        value.putByte(0, value.getByte(2));
        value.putLong(1, value.getLong(3));
        value.putBytes(9, value, messageAt, length);
        final int end = null == event.retainedSource ? 9 + length :
            Records.putSource(value, 9 + length, event.retainedSource);
        writer.put(key, 0, keyLength, value, 0, end);
        return value.getLong(1) != Message.NEVER;
    }

}
