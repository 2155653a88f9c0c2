package io.ringmq.transport;

import io.ringmq.protocol.PacketType;

/**
 * The acknowledgements of one connection read back to back: PUBACKs, PUBRECs or PUBCOMPs, one type to a run, as
 * many as fit in a ring slot's inline bytes, at most {@link #MAX_PACKETS}. A subscriber answering a burst of QoS 1
 * messages sends one PUBACK per message; handed on together they take one slot and one walk of the stages instead
 * of one each. PUBREL never joins a run: the routing and persistence stages act on it too, one packet to a slot.
 * <p>
 * The run is a stretch of the connection's inbound buffer, from {@link #start()} for {@link #length()} bytes; its
 * packets are validated one by one as they are framed, and stay where they were read until the run is handed on.
 */
final class AckRun
{
    /**
     * The most acknowledgements in one run: a slot is one event of a stage's batch ({@code --stage-batch-limit}), so
     * a run stays a bounded piece of work however large {@code --slot-inline-bytes} is. 64 four-byte PUBACKs fill
     * the default 256 inline bytes.
     */
    static final int MAX_PACKETS = 64;
    private final int capacity;
    private int start;
    private int length;
    private int count;
    private int packetType;

    /**
     * @param capacity the most bytes one run may take: a slot's inline bytes, so a run never takes log room.
     */
    AckRun(final int capacity)
    {
        this.capacity = capacity;
    }

    /**
     * @return whether a complete packet of this type and length may join the run: an acknowledgement other than
     * PUBREL, of the run's type, and room for it.
     */
    boolean fits(final int type, final int packetLength)
    {
        return (type == PacketType.PUBACK || type == PacketType.PUBREC || type == PacketType.PUBCOMP) &&
            (count == 0 || type == packetType && count < MAX_PACKETS) && length + packetLength <= capacity;
    }

    /**
     * Adds the packet at {@code index} in the inbound buffer, right after the run's last, to the run.
     */
    void add(final int index, final int type, final int packetLength)
    {
        assert count == 0 || index == start + length : "not right after the run's last packet";
        if (count == 0)
        {
            start = index;
            packetType = type;
        }
        length += packetLength;
        count++;
    }

    void clear()
    {
        length = 0;
        count = 0;
    }

    int count()
    {
        return count;
    }

    int start()
    {
        return start;
    }

    int length()
    {
        return length;
    }

    int packetType()
    {
        return packetType;
    }
}
