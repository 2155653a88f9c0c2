package io.ringmq.transport;

import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.VariableByteInteger;
import org.agrona.DirectBuffer;
import org.agrona.collections.IntHashSet;

/**
 * The receive maximum of one MQTT 5.0 connection, seen from the edge: the QoS 1 and QoS 2 PUBLISHes the client
 * sent that the broker has not finished answering, which the client must keep within the Receive Maximum the
 * broker announced [MQTT-3.3.4-7]. A QoS 1 PUBLISH counts until a PUBACK is sent to the client; a QoS 2 PUBLISH
 * until the PUBCOMP, or a PUBREC with a failing reason code (0x80 or above), for its packet identifier. A QoS 2
 * PUBLISH sent again with an identifier still unanswered is the same message (4.3.3) and does not count twice. The identifiers live in a primitive set made on the first QoS 2 PUBLISH.
 * I/O agent only.
 */
final class InboundQuota
{
    private int qos1Count;
    private IntHashSet qos2PacketIds;

    /**
     * @return the PUBLISHes counted now.
     */
    int unanswered()
    {
        return qos1Count + (null == qos2PacketIds ? 0 : qos2PacketIds.size());
    }

    /**
     * @return whether taking this PUBLISH would go past {@code receiveMaximum} [MQTT-3.3.4-7].
     */
    boolean exceeds(final int qos, final int packetId, final int receiveMaximum)
    {
        if (qos == 2 && null != qos2PacketIds && qos2PacketIds.contains(packetId))
        {
            return false; // the same message again
        }
        return unanswered() >= receiveMaximum;
    }

    /**
     * Counts a QoS 1 or QoS 2 PUBLISH handed to the pipeline.
     */
    void onPublish(final int qos, final int packetId)
    {
        if (qos == 1)
        {
            qos1Count++;
        }
        else if (qos == 2)
        {
            if (null == qos2PacketIds)
            {
                qos2PacketIds = new IntHashSet();
            }
            qos2PacketIds.add(packetId);
        }
    }

    /**
     * Looks at packets the broker sends the client: whole packets, back to back. An answer ends a count.
     */
    void onSent(final DirectBuffer buffer, final int offset, final int length)
    {
        int index = offset;
        final int end = offset + length;
        while (index < end)
        {
            final int type = (buffer.getByte(index) & 0xFF) >>> 4;
            final int packed = VariableByteInteger.decode(buffer, index + 1, end);
            final int body = index + 1 + VariableByteInteger.byteCount(packed);
            final int remaining = VariableByteInteger.value(packed);
            if (packed <= 0 || body + remaining > end)
            {
                return; // not a whole packet: nothing here is ours to judge
            }
            if (remaining >= 2)
            {
                onAnswer(type, buffer, body, remaining);
            }
            index = body + remaining;
        }
    }

    private void onAnswer(final int type, final DirectBuffer buffer, final int body, final int remaining)
    {
        switch (type)
        {
            case PacketType.PUBACK:
                if (qos1Count > 0)
                {
                    qos1Count--;
                }
                break;
            case PacketType.PUBREC:
                // a failing PUBREC ends the exchange; a successful one waits for PUBREL and PUBCOMP
                if (remaining > 2 && ReasonCode.isError(buffer.getByte(body + 2) & 0xFF))
                {
                    releaseQos2(buffer, body);
                }
                break;
            case PacketType.PUBCOMP:
                releaseQos2(buffer, body);
                break;
            default:
                break;
        }
    }

    private void releaseQos2(final DirectBuffer buffer, final int body)
    {
        if (null != qos2PacketIds)
        {
            qos2PacketIds.remove(((buffer.getByte(body) & 0xFF) << 8) | (buffer.getByte(body + 1) & 0xFF));
        }
    }
}
