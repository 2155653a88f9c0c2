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
 *   targets    targetCount × [ session id int | qos (bits 0-1), retain as published (bit 2), delivery shard
 *                              (bits 8-31) int | subscription identifier int: 0 none, &gt; 0 the one,
 *                              &lt; 0 -(1 + offset of its list [count | id ...] in the ids part) |
 *                              shared subscription group id int (0: not through a shared subscription) ]
 *   granted    grantedCount × [ return code byte ]                       padded to 4
 *   discarded  discardedCount × [ session id int ]    sessions the shards must forget
 *   ids        idsCount × [ int ]                     lists of several subscription identifiers of one target
 *   client id  assignedClientIdLength × [ byte ]      an assigned client identifier (MQTT 5.0)  padded to 4
 *   message    [ qos (bits 0-1), retain (bit 8) int | topic length int | payload length int | properties
 *                length int | expires at ms long | topic | properties | payload ]  padded to 4 (a will)
 *   retained   retainedCount × [ the same as message ]                 padded to 4
 *   group keys one long per target with a shared subscription group, in target order: its group's key
 *              ({@code SharedGroup#key()}), which the persistence stage stores with the message
 * </pre>
 */
public final class RouteOutput
{
    static final int TARGET_LENGTH = 16;
    private static final int TARGET_INTS = TARGET_LENGTH / 4;
    static final int MESSAGE_HEADER_LENGTH = 24;
    /** The most ints of subscription identifier lists one entry holds. */
    public static final int MAX_ID_INTS = 65_536;
    /** A message's RETAIN flag in its first int. */
    static final int RETAIN_FLAG = 0x100;
    /** A target's retain-as-published option in its flags. */
    static final int RETAIN_AS_PUBLISHED = 0x4;

    private final UnsafeBuffer entry = new UnsafeBuffer(0, 0);
    private IngressEvent event;

    /**
     * Points at the entry of an event, read from the routing stage's log.
     *
     * @return this.
     */
    public RouteOutput wrap(final MessageLog[] logs, final IngressEvent event)
    {
        return wrap(logs[event.routeShard], event); // the log of the routing shard that routed it
    }

    /**
     * Points at the entry of an event, read from one routing stage's log.
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

    /**
     * @return which of its session's stored copies of the message target {@code i} is: 0 for the first QoS 1 or 2
     * target of its session, n for a shared subscription's target after n such targets of the same session (its own
     * subscriptions, folded into one target, or other groups). Each copy is stored under its own message number, the
     * event's plus this ({@code PersistenceStage}), so that each is resent after a restart until it is itself
     * acknowledged, and no key is put twice (RocksDB's SingleDelete needs that). A session's own target comes before
     * its shared ones, so only shared targets walk back, each over every target before it: a message to persistent
     * sessions through shared subscriptions costs the shared targets times the targets before them, called only for
     * a message that was stored.
     */
    public int copyOrdinal(final int i)
    {
        if (targetGroup(i) == 0)
        {
            return 0;
        }
        final int session = targetSession(i);
        int earlier = 0;
        for (int j = 0; j < i; j++)
        {
            if (targetSession(j) == session && targetQos(j) > 0)
            {
                earlier++;
            }
        }
        return earlier;
    }

    /**
     * @param shared which of the entry's targets with a shared subscription group: 0 for the first.
     * @return the key of that target's group ({@code SharedGroup#key()}).
     */
    public long targetGroupKey(final int shared)
    {
        return entry.getLong(event.groupKeysOffset + shared * 8);
    }

    public int targetSession(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH);
    }

    public int targetQos(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 4) & 0x3;
    }

    /**
     * @return whether the target's subscription keeps the RETAIN flag as published [MQTT-3.3.1-12].
     */
    public boolean targetRetainAsPublished(final int i)
    {
        return (entry.getInt(i * TARGET_LENGTH + 4) & RETAIN_AS_PUBLISHED) != 0;
    }

    public int targetShard(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 4) >>> 8;
    }

    /**
     * @return the shared subscription group the target was chosen from, 0 for none.
     */
    public int targetGroup(final int i)
    {
        return entry.getInt(i * TARGET_LENGTH + 12);
    }

    /**
     * @return how many subscription identifiers go with the message to the target [MQTT-3.3.4-3].
     */
    public int targetSubscriptionIdCount(final int i)
    {
        final int id = entry.getInt(i * TARGET_LENGTH + 8);
        return id == 0 ? 0 : id > 0 ? 1 : entry.getInt(idsOffset() + (-id - 1) * 4);
    }

    /**
     * @return the target's {@code n}th subscription identifier.
     */
    public int targetSubscriptionId(final int i, final int n)
    {
        final int id = entry.getInt(i * TARGET_LENGTH + 8);
        return id > 0 ? id : entry.getInt(idsOffset() + (-id - 1 + 1 + n) * 4);
    }

    private int idsOffset()
    {
        return discardedOffset(event.targetCount, event.grantedCount) + event.discardedCount * 4;
    }

    /**
     * @return the client identifier the broker assigned on a CONNECT, or null.
     */
    public String assignedClientId()
    {
        if (event.assignedClientIdLength == 0)
        {
            return null;
        }
        return entry.getStringWithoutLengthUtf8(idsOffset() + event.idsCount * 4, event.assignedClientIdLength);
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
        return entry.getInt(at) & 0x3;
    }

    public boolean retainAt(final int at)
    {
        return (entry.getInt(at) & RETAIN_FLAG) != 0;
    }

    public int propertiesLengthAt(final int at)
    {
        return entry.getInt(at + 12);
    }

    /**
     * @return when the message's expiry interval runs out, or {@link Message#NEVER}.
     */
    public long expiresAtMsAt(final int at)
    {
        return entry.getLong(at + 16);
    }

    public int propertiesOffsetAt(final int at)
    {
        return at + MESSAGE_HEADER_LENGTH + topicLengthAt(at);
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
        return at + MESSAGE_HEADER_LENGTH + topicLengthAt(at) + propertiesLengthAt(at);
    }

    /**
     * @return the offset of the message after the one at {@code at}.
     */
    public int next(final int at)
    {
        return at + messageLength(topicLengthAt(at), propertiesLengthAt(at), payloadLengthAt(at));
    }

    static int grantedOffset(final int targetCount)
    {
        return targetCount * TARGET_LENGTH;
    }

    static int discardedOffset(final int targetCount, final int grantedCount)
    {
        return grantedOffset(targetCount) + BitUtil.align(grantedCount, 4);
    }

    static int messageLength(final int topicLength, final int propertiesLength, final int payloadLength)
    {
        return BitUtil.align(MESSAGE_HEADER_LENGTH + topicLength + propertiesLength + payloadLength, 4);
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
        /** The group keys of the targets with a shared subscription group, in target order. */
        private long[] groupKeys = new long[8];
        private int groupKeyCount;
        private byte[] granted = new byte[16];
        private int grantedCount;
        private ExpandableArrayBuffer message = new ExpandableArrayBuffer(256);
        private int messageLength;
        private ExpandableArrayBuffer retained = new ExpandableArrayBuffer(256);
        private int retainedLength;
        private int retainedCount;
        /** Chained identifiers: pairs of (identifier, next node or -1). */
        private int[] nodes = new int[32];
        private int nodeCount;
        /** Per target with several identifiers: its chain's last node and length. */
        private int[] idTail = new int[32];
        private int[] idListLength = new int[32];
        /** Ints the ids part will take. */
        private int idsCount;
        private int maxTargets = Integer.MAX_VALUE;
        private byte[] assignedClientId;

        void reset()
        {
            targetCount = 0;
            groupKeyCount = 0;
            grantedCount = 0;
            idsCount = 0;
            nodeCount = 0;
            assignedClientId = null;
            if (nodes.length > 4096)
            {
                nodes = new int[32];
            }
            if (idTail.length > 4096)
            {
                idTail = new int[32];
                idListLength = new int[32];
            }
            messageLength = 0;
            retainedLength = 0;
            retainedCount = 0;
            if (targets.length * 4 > SHRINK_ABOVE)
            {
                targets = new int[32 * TARGET_INTS];
            }
            if (groupKeys.length * 8 > SHRINK_ABOVE)
            {
                groupKeys = new long[8];
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

        /**
         * Bounds the targets of one entry: the routing log is sized for one per session, 16 bytes each, and a target
         * chosen from a shared subscription group takes 8 more for its group's key, so an entry holds at most
         * {@code maxTargets} × 16 bytes of targets and keys (a fan-out that only shared groups make is cut a third
         * shorter).
         */
        void maxTargets(final int maxTargets)
        {
            this.maxTargets = maxTargets;
        }

        /**
         * @return false when the entry holds {@link #maxTargets} already: the target is left out.
         */
        boolean addTarget(final int sessionId, final int qos, final boolean retainAsPublished, final int shard,
            final int subscriptionId)
        {
            return addTarget(sessionId, qos, retainAsPublished, shard, subscriptionId, 0, 0);
        }

        /**
         * @param groupId  the shared subscription group the target was chosen from, 0 for none.
         * @param groupKey that group's {@code SharedGroup#key()} (for a group only).
         * @return false when the entry holds {@link #maxTargets} already: the target is left out.
         */
        boolean addTarget(final int sessionId, final int qos, final boolean retainAsPublished, final int shard,
            final int subscriptionId, final int groupId, final long groupKey)
        {
            if ((targetCount + 1L) * TARGET_LENGTH + (groupKeyCount + (groupId != 0 ? 1L : 0L)) * 8 >
                (long)maxTargets * TARGET_LENGTH)
            {
                return false;
            }
            if ((targetCount + 1) * TARGET_INTS > targets.length)
            {
                targets = java.util.Arrays.copyOf(targets, targets.length * 2);
            }
            if (targetCount >= idTail.length)
            {
                idTail = java.util.Arrays.copyOf(idTail, idTail.length * 2);
                idListLength = java.util.Arrays.copyOf(idListLength, idListLength.length * 2);
            }
            final int at = targetCount * TARGET_INTS;
            targets[at] = sessionId;
            targets[at + 1] = qos | (retainAsPublished ? RETAIN_AS_PUBLISHED : 0) | (shard << 8);
            targets[at + 2] = subscriptionId;
            targets[at + 3] = groupId;
            targetCount++;
            if (groupId != 0)
            {
                if (groupKeyCount == groupKeys.length)
                {
                    groupKeys = java.util.Arrays.copyOf(groupKeys, groupKeys.length * 2);
                }
                groupKeys[groupKeyCount++] = groupKey;
            }
            return true;
        }

        /**
         * Adds one more subscription identifier to a target already added (a session matched by several
         * subscriptions that carry identifiers [MQTT-3.3.4-3]). The identifiers of one target are chained here and
         * laid out contiguously only when the entry is written, so adding is O(1) however targets interleave; past
         * {@link #MAX_ID_INTS} in one entry further identifiers are left out.
         */
        void addTargetSubscriptionId(final int index, final int subscriptionId)
        {
            final int at = index * TARGET_INTS + 2;
            final int current = targets[at];
            if (current == 0)
            {
                targets[at] = subscriptionId;
                return;
            }
            if (idsCount + 2 > MAX_ID_INTS)
            {
                return;
            }
            if (current > 0)
            {
                final int head = node(current);
                final int second = node(subscriptionId); // before indexing nodes: node() may grow the array
                nodes[head * 2 + 1] = second;
                targets[at] = -(head + 1);
                idTail[index] = head + 1;
                idListLength[index] = 2;
                idsCount += 3; // a count and two identifiers
                return;
            }
            final int added = node(subscriptionId);
            nodes[idTail[index] * 2 + 1] = added;
            idTail[index] = added;
            idListLength[index]++;
            idsCount++;
        }

        private int node(final int id)
        {
            if ((nodeCount + 1) * 2 > nodes.length)
            {
                nodes = java.util.Arrays.copyOf(nodes, nodes.length * 2);
            }
            nodes[nodeCount * 2] = id;
            nodes[nodeCount * 2 + 1] = -1;
            return nodeCount++;
        }

        /**
         * Sets the client identifier the broker assigned to a CONNECT (sent in its CONNACK [MQTT-3.2.2-16]).
         */
        void assignedClientId(final byte[] clientId)
        {
            this.assignedClientId = clientId;
        }

        /**
         * Sets the QoS of a target already added (a session matched by several filters: the highest of them), and
         * keeps the RETAIN flag as published when any of them asks for it.
         */
        void targetFlags(final int index, final int qos, final boolean retainAsPublished)
        {
            final int at = index * TARGET_INTS + 1;
            targets[at] = (targets[at] & ~0x3) | qos | (retainAsPublished ? RETAIN_AS_PUBLISHED : 0);
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
        void message(final Message will)
        {
            messageLength = putMessage(message, 0, will);
        }

        /**
         * @return the retained messages added to this output.
         */
        int retainedCount()
        {
            return retainedCount;
        }

        /**
         * @return the bytes the retained messages added to this output take in it.
         */
        int retainedLength()
        {
            return retainedLength;
        }

        /**
         * @return false when the retained messages of this event would pass {@code limit} bytes (not added).
         */
        boolean addRetained(final Message message, final int qos, final int limit)
        {
            if (retainedLength + messageLength(message.topic().length, message.properties().length,
                message.payload().length) > limit)
            {
                return false;
            }
            retainedLength += putMessage(retained, retainedLength, qos, message);
            retainedCount++;
            return true;
        }

        /**
         * @return the entry's length for this output and {@code discarded} ids; 0 when there is nothing to write.
         */
        int length(final int discardedCount)
        {
            return discardedOffset(targetCount, grantedCount) + discardedCount * 4 + idsCount * 4 +
                assignedLength() + messageLength + retainedLength + groupKeyCount * 8;
        }

        private int assignedLength()
        {
            return null == assignedClientId ? 0 : BitUtil.align(assignedClientId.length, 4);
        }

        /**
         * Writes the entry at {@code index} and records its shape in the slot.
         */
        void write(final MutableDirectBuffer buffer, final int index, final IntArrayList discarded,
            final int discardedCount, final IngressEvent event)
        {
            int list = 0; // where the next target's identifiers go in the ids part, in ints
            for (int t = 0; t < targetCount; t++)
            {
                final int at = t * TARGET_INTS;
                buffer.putInt(index + at * 4, targets[at]);
                buffer.putInt(index + at * 4 + 4, targets[at + 1]);
                final int ids = targets[at + 2];
                buffer.putInt(index + at * 4 + 8, ids >= 0 ? ids : -(list + 1));
                buffer.putInt(index + at * 4 + 12, targets[at + 3]);
                if (ids < 0)
                {
                    list += 1 + idListLength[t];
                }
            }
            buffer.putBytes(index + grantedOffset(targetCount), granted, 0, grantedCount);
            int at = discardedOffset(targetCount, grantedCount);
            for (int i = 0; i < discardedCount; i++)
            {
                buffer.putInt(index + at, discarded.getInt(i));
                at += 4;
            }
            for (int t = 0; t < targetCount; t++)
            {
                final int ids = targets[t * TARGET_INTS + 2];
                if (ids < 0)
                {
                    buffer.putInt(index + at, idListLength[t]);
                    at += 4;
                    for (int node = -ids - 1; node >= 0; node = nodes[node * 2 + 1])
                    {
                        buffer.putInt(index + at, nodes[node * 2]);
                        at += 4;
                    }
                }
            }
            event.idsCount = idsCount;
            event.assignedClientIdLength = null == assignedClientId ? 0 : assignedClientId.length;
            if (null != assignedClientId)
            {
                buffer.putBytes(index + at, assignedClientId);
                at += assignedLength();
            }
            event.messageOffset = messageLength > 0 ? at : -1;
            buffer.putBytes(index + at, message, 0, messageLength);
            at += messageLength;
            event.retainedOffset = at;
            buffer.putBytes(index + at, retained, 0, retainedLength);
            at += retainedLength;
            event.groupKeysOffset = at;
            for (int k = 0; k < groupKeyCount; k++)
            {
                buffer.putLong(index + at + k * 8, groupKeys[k]);
            }
            event.targetCount = targetCount;
            event.grantedCount = grantedCount;
            event.discardedCount = discardedCount;
            event.retainedCount = retainedCount;
        }

        private static int putMessage(final ExpandableArrayBuffer buffer, final int at, final Message message)
        {
            return putMessage(buffer, at, message.qos(), message);
        }

        private static int putMessage(final ExpandableArrayBuffer buffer, final int at, final int qos,
            final Message message)
        {
            final int topicLength = message.topic().length;
            final int propertiesLength = message.properties().length;
            final int payloadLength = message.payload().length;
            buffer.putInt(at, qos | (message.retain() ? RETAIN_FLAG : 0));
            buffer.putInt(at + 4, topicLength);
            buffer.putInt(at + 8, payloadLength);
            buffer.putInt(at + 12, propertiesLength);
            buffer.putLong(at + 16, message.expiresAtMs());
            int pos = at + MESSAGE_HEADER_LENGTH;
            buffer.putBytes(pos, message.topic());
            pos += topicLength;
            buffer.putBytes(pos, message.properties());
            pos += propertiesLength;
            buffer.putBytes(pos, message.payload());
            final int length = messageLength(topicLength, propertiesLength, payloadLength);
            // the padding to the aligned length is copied with the message: it must lie inside the buffer too
            // (fuzz finding: a buffer grown to 4,374 bytes held a message ending at 4,373, padded to 4,376)
            buffer.checkLimit(at + length);
            return length;
        }
    }
}
