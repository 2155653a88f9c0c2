package io.ringmq.pipeline;

import io.ringmq.pipeline.status.ErrorLog;
import io.ringmq.protocol.PacketType;
import org.agrona.DirectBuffer;

import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * What the routing shards of one pipeline share ({@code --route-shards N}), and the rule that splits the slots
 * between them.
 * <pre>
 *   auth ──▶ route-0 ──┬──▶ route-1 ──┐
 *              │       ├──▶ route-2 ──┼──▶ persistence, delivery shards (each waits for every routing shard)
 *              └───────┴──────────────┘
 * </pre>
 * Shard 0 sees every slot first and stamps it ({@link IngressEvent#routeShard}, {@link IngressEvent#routeTimeMs},
 * {@link IngressEvent#routeEpoch}). A QoS 0 or 1 PUBLISH without RETAIN from a client is routed by the shard its
 * topic hashes to (per-topic order is the ring's order, which every later stage keeps); everything else (CONNECT,
 * SUBSCRIBE, the end of a connection, ticks, QoS 2 and retained PUBLISHes, whose state is shard 0's) is routed by
 * shard 0, and every other shard replays it on a copy of the slot, so each shard holds the same sessions,
 * subscriptions and session ids: a deterministic replica, its session counters and outputs muted. What could make
 * a replica differ is taken from the stamps instead: shard 0's clock, the limits it judged by, session expiry (on
 * {@link IngressEvent#TICK}s shard 0 puts on the ring, at the tick's stamped time), the ACL rules it held (a reload
 * is an epoch, as new limits are). A client id the broker assigns is the auth stage's, in the slot.
 * <p>
 * A replica is only as good as its replay: when shard 0 throws part-way through a slot that changes sessions (its
 * changes up to the throw are its own), or a replica throws replaying one, the replicas may differ from shard 0 from
 * then on, and a PUBLISH routed by one could reach the wrong session id. The shards have then {@link #diverged}:
 * shard 0 routes every PUBLISH itself from the next slot it stamps, the others only finish what it gave them.
 */
final class RouteShards
{
    /** Limits and rules taken by shard 0 that a lagging shard may still need: reloads are far rarer than slots. */
    private static final int EPOCHS = 64;

    private final int count;
    private final AtomicReferenceArray<Epoch> epochs = new AtomicReferenceArray<>(EPOCHS);
    private final ErrorLog errors;
    private volatile boolean diverged;

    /**
     * @param count   the number of routing shards, 1 for one routing stage.
     * @param context the limits in force at start (epoch 0).
     */
    RouteShards(final int count, final BrokerContext context)
    {
        this(count, context, null);
    }

    /**
     * @param errors where the shards' divergence is reported (null: counted nowhere, for tests).
     */
    RouteShards(final int count, final BrokerContext context, final ErrorLog errors)
    {
        this.count = count;
        this.errors = errors;
        epochs.set(0, new Epoch(0, context, null));
    }

    int count()
    {
        return count;
    }

    boolean replicated()
    {
        return count > 1;
    }

    /**
     * Shard 0 took new limits or ACL rules: the slots it stamps with {@code epoch} from now on were judged by them.
     */
    void took(final int epoch, final BrokerContext context, final AccessRules rules)
    {
        epochs.set(epoch & (EPOCHS - 1), new Epoch(epoch, context, rules)); // a reload: rare, allocation is fine
    }

    /**
     * @return the limits shard 0 judged a slot stamped with {@code epoch} by.
     * @throws IllegalStateException when a later epoch took its place: the shard lagged that many reloads behind.
     */
    BrokerContext limits(final int epoch)
    {
        return epoch(epoch).limits;
    }

    /**
     * @return the ACL rules shard 0 held when it stamped a slot with {@code epoch} (null for epoch 0: those at
     * start, which every shard took then).
     */
    AccessRules rules(final int epoch)
    {
        return epoch(epoch).rules;
    }

    private Epoch epoch(final int number)
    {
        final Epoch epoch = epochs.get(number & (EPOCHS - 1));
        if (null == epoch || epoch.number != number)
        {
            throw new IllegalStateException("a routing shard lagged more than " + EPOCHS + " reloads behind");
        }
        return epoch;
    }

    /**
     * A replica may differ from shard 0 from now on (any thread): shard 0 routes every PUBLISH itself.
     */
    void diverged(final String why, final Throwable cause)
    {
        if (!diverged)
        {
            diverged = true;
            if (null != errors)
            {
                errors.record("route shards", new IllegalStateException(why + ": routing shard 0 routes every " +
                    "PUBLISH from now on", cause));
            }
        }
    }

    /**
     * @return whether the replicas may differ from shard 0 (a volatile read, once per PUBLISH shard 0 stamps).
     */
    boolean hasDiverged()
    {
        return diverged;
    }

    static boolean isPublish(final IngressEvent event)
    {
        return event.kind == IngressEvent.PACKET && event.packetType == PacketType.PUBLISH;
    }

    /**
     * @param packet a PUBLISH from a client as its slot holds it, whole and validated by the I/O agent (its topic
     *               canonical: no topic alias).
     * @return the shard that routes it: the one its topic hashes to, or 0 for QoS 2 and RETAIN (their state is
     * shard 0's). Read straight from the fixed header and the topic's bytes, 8 at a time: shard 0 pays this for
     * every PUBLISH.
     */
    int ownerOf(final DirectBuffer packet, final int length)
    {
        final int flags = packet.getByte(0);
        if ((flags & 0x01) != 0 || ((flags >> 1) & 0x03) == 2)
        {
            return 0;
        }
        int offset = 1;
        while (offset < 5 && offset < length && (packet.getByte(offset++) & 0x80) != 0)
        {
            // the remaining length: 1 to 4 bytes
        }
        if (offset + 2 > length)
        {
            return 0; // never past the slot, whatever it holds
        }
        final int topicLength = packet.getShort(offset, ByteOrder.BIG_ENDIAN) & 0xFFFF;
        return offset + 2 + topicLength > length ? 0 : ownerOfTopic(packet, offset + 2, topicLength);
    }

    /**
     * @return the shard a topic's PUBLISHes go to.
     */
    int ownerOfTopic(final DirectBuffer buffer, final int offset, final int length)
    {
        long hash = length;
        int i = offset;
        for (final int words = offset + (length & ~7); i < words; i += 8)
        {
            hash = (hash ^ buffer.getLong(i, ByteOrder.LITTLE_ENDIAN)) * 0x9E37_79B9_7F4A_7C15L;
        }
        for (final int end = offset + length; i < end; i++)
        {
            hash = (hash ^ buffer.getByte(i)) * 0x9E37_79B9_7F4A_7C15L;
        }
        hash ^= hash >>> 29;
        return (int)((hash & Long.MAX_VALUE) % count);
    }

    /**
     * What shard 0 judged the slots of one epoch by.
     */
    private static final class Epoch
    {
        final int number;
        final BrokerContext limits;
        final AccessRules rules;

        Epoch(final int number, final BrokerContext limits, final AccessRules rules)
        {
            this.number = number;
            this.limits = limits;
            this.rules = rules;
        }
    }
}
