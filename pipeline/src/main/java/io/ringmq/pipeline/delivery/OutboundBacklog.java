package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Outbound;

import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;

/**
 * What the delivery stage could not hand to an I/O agent because that agent's outbound ring was full: packets
 * and close commands that must not be lost (acknowledgements, CONNACK, QoS 1 and 2), kept in order per agent and
 * retried once per duty cycle, so the stage never parks its thread and one slow agent never stalls the others.
 * While an agent has a backlog, everything for it joins the backlog (its order is kept) and QoS 0 for it is
 * dropped. Its size is bounded by what that agent's clients are owed (in-flight windows and acknowledgements of
 * what they sent), and by {@link ShardOutput}'s share of the heap, past which the shard waits for its agent; the
 * buffer shrinks back once drained. Delivery stage only.
 * <pre>
 *   per agent: [ kind int | length int | connection id long | bytes … ] [ … ]  read ──▶ write
 * </pre>
 */
final class OutboundBacklog
{
    static final int SEND = 1;
    static final int CLOSE = 2;
    static final int SEND_KEPT = 3;
    static final int CLOSE_ENDING_SESSION = 4;
    private static final int HEADER_LENGTH = 16;
    private static final int INITIAL_CAPACITY = 4_096;
    private static final int SHRINK_ABOVE = 1024 * 1024;

    private final ExpandableArrayBuffer[] buffers;
    private final int[] readIndex;
    private final int[] writeIndex;
    private int agentsWithBacklog;

    OutboundBacklog(final int agentCount)
    {
        buffers = new ExpandableArrayBuffer[agentCount];
        readIndex = new int[agentCount];
        writeIndex = new int[agentCount];
        for (int i = 0; i < agentCount; i++)
        {
            buffers[i] = new ExpandableArrayBuffer(INITIAL_CAPACITY);
        }
    }

    boolean isEmpty()
    {
        return agentsWithBacklog == 0;
    }

    boolean isEmpty(final int agentIndex)
    {
        return readIndex[agentIndex] == writeIndex[agentIndex];
    }

    /**
     * @return the bytes waiting for an agent, headers included.
     */
    int bytes(final int agentIndex)
    {
        return writeIndex[agentIndex] - readIndex[agentIndex];
    }

    /**
     * @return the length an entry of {@code length} bytes takes.
     */
    static int entryLength(final int length)
    {
        return HEADER_LENGTH + length;
    }

    void add(final int agentIndex, final int kind, final long connectionId, final DirectBuffer src, final int offset,
        final int length)
    {
        if (isEmpty(agentIndex))
        {
            agentsWithBacklog++;
        }
        final ExpandableArrayBuffer buffer = buffers[agentIndex];
        final int at = writeIndex[agentIndex];
        buffer.putInt(at, kind);
        buffer.putInt(at + 4, length);
        buffer.putLong(at + 8, connectionId);
        if (length > 0)
        {
            buffer.putBytes(at + HEADER_LENGTH, src, offset, length);
        }
        writeIndex[agentIndex] = at + HEADER_LENGTH + length;
    }

    /**
     * Offers each agent's backlog to its ring, in order, up to the first refusal.
     *
     * @return how many packets and commands went out.
     */
    int drain(final Outbound outbound)
    {
        int work = 0;
        for (int agent = 0; agent < buffers.length && agentsWithBacklog > 0; agent++)
        {
            final ExpandableArrayBuffer buffer = buffers[agent];
            int at = readIndex[agent];
            final int end = writeIndex[agent];
            while (at < end)
            {
                final int kind = buffer.getInt(at);
                final int length = buffer.getInt(at + 4);
                final long connectionId = buffer.getLong(at + 8);
                final boolean taken = kind == SEND ?
                    outbound.send(agent, connectionId, buffer, at + HEADER_LENGTH, length) : kind == SEND_KEPT ?
                    outbound.sendKept(agent, connectionId, buffer, at + HEADER_LENGTH, length) :
                    kind == CLOSE ? outbound.close(agent, connectionId) :
                    outbound.closeEndingSession(agent, connectionId);
                if (!taken)
                {
                    break;
                }
                at += HEADER_LENGTH + length;
                work++;
            }
            readIndex[agent] = at;
            if (at < end && at > INITIAL_CAPACITY && at >= buffer.capacity() / 2)
            {
                // never fully drained under steady overload: move what is left to the front, so the buffer holds
                // what is owed, not everything that ever passed through
                final int left = end - at;
                if (buffer.capacity() > SHRINK_ABOVE && left < buffer.capacity() / 4)
                {
                    final ExpandableArrayBuffer smaller = new ExpandableArrayBuffer(Math.max(INITIAL_CAPACITY, left * 2));
                    smaller.putBytes(0, buffer, at, left);
                    buffers[agent] = smaller;
                }
                else
                {
                    buffer.putBytes(0, buffer, at, left);
                }
                writeIndex[agent] = left;
                readIndex[agent] = 0;
            }
            if (at == end && end > 0)
            {
                readIndex[agent] = 0;
                writeIndex[agent] = 0;
                agentsWithBacklog--;
                if (buffer.capacity() > SHRINK_ABOVE)
                {
                    buffers[agent] = new ExpandableArrayBuffer(INITIAL_CAPACITY); // give back what a burst took
                }
            }
        }
        return work;
    }
}
