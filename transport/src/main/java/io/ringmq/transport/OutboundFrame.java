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
 * </pre>
 */
final class OutboundFrame
{
    static final int SEND = 1;
    static final int CLOSE = 2;
    static final int SEND_KEPT = 3;
    static final int CONNECTION_ID_OFFSET = 0;
    static final int BYTES_OFFSET = Long.BYTES;

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
        final int index = ring.tryClaim(type, BYTES_OFFSET + length);
        if (index <= 0)
        {
            return false;
        }
        ring.buffer().putLong(index + CONNECTION_ID_OFFSET, connectionId);
        SmallCopy.copy(ring.buffer(), index + BYTES_OFFSET, buffer, offset, length);
        ring.commit(index);
        return true;
    }

    /**
     * @return false when the ring has no room now.
     */
    static boolean close(final ManyToOneRingBuffer ring, final long connectionId)
    {
        final int index = ring.tryClaim(CLOSE, BYTES_OFFSET);
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
