package io.ringmq.transport;

import io.ringmq.protocol.SmallCopy;
import org.agrona.DirectBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

/**
 * The layout of a message on an I/O agent's outbound ring, in one place for the writer (a delivery shard, through
 * {@link OutboundRouter}) and the reader ({@link IoAgent}):
 * <pre>
 *   type SEND:      [ connection id long | whole MQTT packets … ]
 *   type SEND_KEPT: [ connection id long | whole MQTT packets … ]  the same, never shed (queued QoS 0)
 *   type CLOSE:     [ connection id long ]                         close once what was sent before is written
 *   type CLOSE_ENDING_SESSION: [ connection id long ]              the same, and its session ends with it
 *   type SEND_WATCHED: [ connection id long | drain slot int | whole MQTT packets … ]  as SEND_KEPT, a retained
 *                      part's: the agent writes what the connection owes to the slot ({@code RetainedDrains})
 * </pre>
 */
final class OutboundFrame
{
    static final int SEND = 1;
    static final int CLOSE = 2;
    static final int SEND_KEPT = 3;
    static final int SEND_WATCHED = 4;
    static final int CLOSE_ENDING_SESSION = 5;
    static final int CONNECTION_ID_OFFSET = 0;
    static final int BYTES_OFFSET = Long.BYTES;
    static final int DRAIN_SLOT_OFFSET = Long.BYTES;
    static final int WATCHED_BYTES_OFFSET = DRAIN_SLOT_OFFSET + Integer.BYTES;

    private OutboundFrame()
    {
    }

    /**
     * @return false when the ring has no room now.
     */
    static boolean send(final ManyToOneRingBuffer ring, final long connectionId, final DirectBuffer buffer,
        final int offset, final int length)
    {
        return send(ring, SEND, connectionId, buffer, offset, length);
    }

    /**
     * @param type {@link #SEND} or {@link #SEND_KEPT}.
     * @return false when the ring has no room now.
     */
    static boolean send(final ManyToOneRingBuffer ring, final int type, final long connectionId,
        final DirectBuffer buffer, final int offset, final int length)
    {
        return put(ring, type, connectionId, 0, buffer, offset, length);
    }

    /**
     * @return false when the ring has no room now.
     */
    static boolean sendWatched(final ManyToOneRingBuffer ring, final long connectionId, final int drainSlot,
        final DirectBuffer buffer, final int offset, final int length)
    {
        return put(ring, SEND_WATCHED, connectionId, drainSlot, buffer, offset, length);
    }

    private static boolean put(final ManyToOneRingBuffer ring, final int type, final long connectionId,
        final int drainSlot, final DirectBuffer buffer, final int offset, final int length)
    {
        final int bytesOffset = type == SEND_WATCHED ? WATCHED_BYTES_OFFSET : BYTES_OFFSET;
        final int index = ring.tryClaim(type, bytesOffset + length);
        if (index <= 0)
        {
            return false;
        }
        ring.buffer().putLong(index + CONNECTION_ID_OFFSET, connectionId);
        if (type == SEND_WATCHED)
        {
            ring.buffer().putInt(index + DRAIN_SLOT_OFFSET, drainSlot);
        }
        SmallCopy.copy(ring.buffer(), index + bytesOffset, buffer, offset, length);
        ring.commit(index);
        return true;
    }

    /**
     * @return false when the ring has no room now.
     */
    static boolean close(final ManyToOneRingBuffer ring, final long connectionId, final boolean endingSession)
    {
        final int index = ring.tryClaim(endingSession ? CLOSE_ENDING_SESSION : CLOSE, BYTES_OFFSET);
        if (index <= 0)
        {
            return false;
        }
        ring.buffer().putLong(index + CONNECTION_ID_OFFSET, connectionId);
        ring.commit(index);
        return true;
    }

    static long connectionId(final DirectBuffer buffer, final int index)
    {
        return buffer.getLong(index + CONNECTION_ID_OFFSET);
    }
}
