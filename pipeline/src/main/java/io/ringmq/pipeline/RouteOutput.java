package io.ringmq.pipeline;

import org.agrona.BitUtil;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.IntArrayList;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * What the routing stage decided about one event beyond what fits in the slot's fixed fields, laid out in one
 * entry of the routing stage's {@link MessageLog} (released by the last stage), so the ring's memory is fixed
 * however large a fan-out, a SUBSCRIBE or a will is. The slot records where the entry is and how many of each
 * part it holds; this class is the one place that writes ({@link Writer}) and reads the layout.
 * <pre>
 *   targets    targetCount × [ session id int | qos (bits 0-7), delivery shard (bits 8-31) int |
 *                              subscription identifier int (0: none; for MQTT 5) ]
 *   granted    grantedCount × [ return code byte ]                       padded to 4
 *   discarded  discardedCount × [ session id int ]    sessions the shards must forget
 *   message    [ qos int | topic length int | payload length int | topic | payload ]  padded to 4 (a will)
 *   retained   retainedCount × [ qos int | topic length int | payload length int | topic | payload ]  padded to 4
 * </pre>
 */
public final class RouteOutput
{
    static final int TARGET_LENGTH = 12;
    private static final int TARGET_INTS = TARGET_LENGTH / 4;
    static final int MESSAGE_HEADER_LENGTH = 12;

    private final UnsafeBuffer entry = new UnsafeBuffer(0, 0);
    private IngressEvent event;

    /**
     * Points at the entry of an event, read from the routing stage's log.
     *
     * @return this.
     */
    public RouteOutput wrap(final MessageLog log, final IngressEvent event)
    {
        this.event = event;
        if (event.routeLogEnd >= 0)
        {
            log.wrap(entry, event.routeLogEnd, event.routeLogLength);
        }
        else
        {
            entry.wrap(0, 0);
        }
        return this;
    }

    public int targetSession(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH);
    }

    public int targetQos(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 4) & 0xFF;
    }

    public int targetShard(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 4) >>> 8;
    }

    /**
     * @return the subscription identifier to send with the message, 0 for none.
     */
    public int targetSubscriptionId(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 8);
    }

    public int granted(final int i)
    {
        return entry.getByte(grantedOffset(event.targetCount) + i) & 0xFF;
    }

    public int discarded(final int i)
    {
        return entry.getInt(discardedOffset(event.targetCount, event.grantedCount) + i * 4);
    }

    /**
     * @return the buffer holding the entry, for the message views below.
     */
    public DirectBuffer buffer()
    {
        return entry;
    }

    /**
     * @param at the offset of a message: {@link IngressEvent#messageOffset} or one returned by {@link #next}.
     */
    public int qosAt(final int at)
    {
        return entry.getInt(at);
    }

    public int topicLengthAt(final int at)
    {
        return entry.getInt(at + 4);
    }

    public int payloadLengthAt(final int at)
    {
        return entry.getInt(at + 8);
    }

    public int topicOffsetAt(final int at)
    {
        return at + MESSAGE_HEADER_LENGTH;
    }

    public int payloadOffsetAt(final int at)
    {
        return at + MESSAGE_HEADER_LENGTH + topicLengthAt(at);
    }

    /**
     * @return the offset of the message after the one at {@code at}.
     */
    public int next(final int at)
    {
        return at + messageLength(topicLengthAt(at), payloadLengthAt(at));
    }

    static int grantedOffset(final int targetCount)
    {
        return targetCount * TARGET_LENGTH;
    }

    static int discardedOffset(final int targetCount, final int grantedCount)
    {
        return grantedOffset(targetCount) + BitUtil.align(grantedCount, 4);
    }

    static int messageLength(final int topicLength, final int payloadLength)
    {
        return BitUtil.align(MESSAGE_HEADER_LENGTH + topicLength + payloadLength, 4);
    }

    /**
     * The routing stage's side: gathers one event's output part by part (in any order), then writes it as one
     * entry. Its buffers are reused and shrink back after a burst. Routing stage only.
     */
    static final class Writer
    {
        private static final int SHRINK_ABOVE = 1024 * 1024;

        private int[] targets = new int[32 * TARGET_INTS];
        private int targetCount;
        private byte[] granted = new byte[16];
        private int grantedCount;
        private ExpandableArrayBuffer message = new ExpandableArrayBuffer(256);
        private int messageLength;
        private ExpandableArrayBuffer retained = new ExpandableArrayBuffer(256);
        private int retainedLength;
        private int retainedCount;

        void reset()
        {
            targetCount = 0;
            grantedCount = 0;
            messageLength = 0;
            retainedLength = 0;
            retainedCount = 0;
            if (targets.length * 4 > SHRINK_ABOVE)
            {
                targets = new int[32 * TARGET_INTS];
            }
            if (granted.length > SHRINK_ABOVE)
            {
                granted = new byte[16];
            }
            if (message.capacity() > SHRINK_ABOVE)
            {
                message = new ExpandableArrayBuffer(256);
            }
            if (retained.capacity() > SHRINK_ABOVE)
            {
                retained = new ExpandableArrayBuffer(256);
            }
        }

        int targetCount()
        {
            return targetCount;
        }

        void addTarget(final int sessionId, final int qos, final int shard, final int subscriptionId)
        {
            if ((targetCount + 1) * TARGET_INTS > targets.length)
            {
                targets = java.util.Arrays.copyOf(targets, targets.length * 2);
            }
            final int at = targetCount * TARGET_INTS;
            targets[at] = sessionId;
            targets[at + 1] = qos | (shard << 8);
            targets[at + 2] = subscriptionId;
            targetCount++;
        }

        /**
         * Raises the QoS of a target already added (a session matched by several filters).
         */
        void targetQos(final int index, final int qos)
        {
            final int at = index * TARGET_INTS + 1;
            targets[at] = (targets[at] & ~0xFF) | qos;
        }

        void addGranted(final int code)
        {
            if (grantedCount == granted.length)
            {
                granted = java.util.Arrays.copyOf(granted, granted.length * 2);
            }
            granted[grantedCount++] = (byte)code;
        }

        /**
         * Sets the event's message (a will) from its parts.
         */
        void message(final int qos, final DirectBuffer topic, final int topicOffset, final int topicLength,
            final DirectBuffer payload, final int payloadOffset, final int payloadLength)
        {
            messageLength = putMessage(message, 0, qos, topic, topicOffset, topicLength, payload, payloadOffset,
                payloadLength);
        }

        /**
         * @return false when the retained messages of this event would pass {@code limit} bytes (not added).
         */
        boolean addRetained(final int qos, final DirectBuffer topic, final int topicOffset, final int topicLength,
            final DirectBuffer payload, final int payloadOffset, final int payloadLength, final int limit)
        {
            if (retainedLength + messageLength(topicLength, payloadLength) > limit)
            {
                return false;
            }
            retainedLength += putMessage(retained, retainedLength, qos, topic, topicOffset, topicLength, payload,
                payloadOffset, payloadLength);
            retainedCount++;
            return true;
        }

        /**
         * @return the entry's length for this output and {@code discarded} ids; 0 when there is nothing to write.
         */
        int length(final int discardedCount)
        {
            return discardedOffset(targetCount, grantedCount) + discardedCount * 4 + messageLength + retainedLength;
        }

        /**
         * Writes the entry at {@code index} and records its shape in the slot.
         */
        void write(final MutableDirectBuffer buffer, final int index, final IntArrayList discarded,
            final int discardedCount, final IngressEvent event)
        {
            for (int i = 0, n = targetCount * TARGET_INTS; i < n; i++)
            {
                buffer.putInt(index + i * 4, targets[i]);
            }
            buffer.putBytes(index + grantedOffset(targetCount), granted, 0, grantedCount);
            int at = discardedOffset(targetCount, grantedCount);
            for (int i = 0; i < discardedCount; i++)
            {
                buffer.putInt(index + at, discarded.getInt(i));
                at += 4;
            }
            event.messageOffset = messageLength > 0 ? at : -1;
            buffer.putBytes(index + at, message, 0, messageLength);
            at += messageLength;
            event.retainedOffset = at;
            buffer.putBytes(index + at, retained, 0, retainedLength);
            event.targetCount = targetCount;
            event.grantedCount = grantedCount;
            event.discardedCount = discardedCount;
            event.retainedCount = retainedCount;
        }

        private static int putMessage(final ExpandableArrayBuffer buffer, final int at, final int qos,
            final DirectBuffer topic, final int topicOffset, final int topicLength, final DirectBuffer payload,
            final int payloadOffset, final int payloadLength)
        {
            buffer.putInt(at, qos);
            buffer.putInt(at + 4, topicLength);
            buffer.putInt(at + 8, payloadLength);
            buffer.putBytes(at + MESSAGE_HEADER_LENGTH, topic, topicOffset, topicLength);
            buffer.putBytes(at + MESSAGE_HEADER_LENGTH + topicLength, payload, payloadOffset, payloadLength);
            return messageLength(topicLength, payloadLength);
        }
    }
}
