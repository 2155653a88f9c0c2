package io.ringmq.pipeline.delivery;

import java.util.BitSet;

/**
 * The outbound packet identifiers of one session's delivery half: the next one to try, taken in turn from 1 to
 * 65,535 and round again, past those its window holds; and, during recovery only, those its stored QoS 2 exchanges
 * had, kept free until each is back in flight. Part of its {@link DeliverySession}, owned by the shard that holds the
 * session (it moves with it).
 */
final class PacketIds
{
    private int next = 1;
    /**
     * Recovery only: the packet ids of the QoS 2 exchanges still to be restored, which a message restored before
     * them (given a new id) must not take; null once all are back in flight, and for every live session.
     */
    private BitSet reserved;

    /**
     * @param window the session's in-flight window, or null while it has none.
     * @return a packet identifier no message in the window holds and none reserved; the next one tried comes after it.
     */
    int take(final InflightWindow window)
    {
        int packetId = next;
        while (null != window && window.find(packetId) >= 0 || null != reserved && reserved.get(packetId))
        {
            packetId = packetId == 65_535 ? 1 : packetId + 1;
        }
        next = packetId == 65_535 ? 1 : packetId + 1;
        return packetId;
    }

    /**
     * Recovery, before any message of the session is restored: the packet ids its QoS 2 exchanges had, which the
     * messages restored before them (in flight with new ids: QoS 1 keeps none in the store) must leave free. Without
     * this a QoS 1 message restored first could take the id of a later QoS 2 message awaiting PUBCOMP after the ids
     * had wrapped past 65,535, and that one would lose its id and state: sent again as a new PUBLISH instead of its
     * PUBREL, a second delivery of an exactly-once message [MQTT-4.3.3].
     */
    void reserve(final int[] packetIds)
    {
        for (final int packetId : packetIds)
        {
            if (packetId > 0 && packetId <= 65_535)
            {
                if (null == reserved)
                {
                    reserved = new BitSet();
                }
                reserved.set(packetId);
            }
        }
    }

    /**
     * Recovery: a message comes back with the packet id it had; a reserved one is its own, and it takes it now.
     */
    void unreserve(final int packetId)
    {
        if (null != reserved && packetId > 0 && packetId <= 65_535)
        {
            reserved.clear(packetId); // its own: it takes it now
            if (reserved.isEmpty())
            {
                reserved = null;
            }
        }
    }

    /**
     * Recovery: the next {@link #take} returns this packet id (the caller knows no message in flight holds it).
     *
     * @return where the identifiers were, for {@link #resumeAfter}.
     */
    int startAt(final int packetId)
    {
        final int at = next;
        next = packetId;
        return at;
    }

    /**
     * Recovery: the identifiers go on after a restored one, never back before where they were.
     */
    void resumeAfter(final int at, final int packetId)
    {
        next = Math.max(at, packetId == 65_535 ? 1 : packetId + 1);
    }
}
