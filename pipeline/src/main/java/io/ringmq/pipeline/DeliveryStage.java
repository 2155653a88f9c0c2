package io.ringmq.pipeline;

import io.ringmq.pipeline.session.Session;
import io.ringmq.pipeline.session.Session.Outgoing;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnackEncoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubackEncoder;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The delivery stage, and the last stage: owns each session's outbound QoS state (packet identifiers, the
 * in-flight window, the bounded queue) and writes every packet the broker sends. A PUBLISH is encoded once per
 * QoS variant and copied to each subscriber with only its packet identifier patched. QoS 0 to an offline
 * subscriber is dropped; QoS 1 and 2 wait in the session's queue up to {@code maxQueued} messages and
 * {@code maxQueuedBytes} payload bytes, then the newest is dropped and counted.
 * <p>
 * It never parks its thread: what an I/O agent's full outbound ring cannot take now waits in an
 * {@link OutboundBacklog} for that agent (in order, retried every duty cycle), and QoS 0 for that agent is dropped
 * meanwhile. As the last stage it releases each slot's message log entry.
 */
public final class DeliveryStage implements Stage
{
    private final Outbound outbound;
    private final BrokerCounters counters;
    private final int maxQueued;
    private final long maxQueuedBytes;
    private final MessageLog[] logs;
    private final OutboundBacklog backlog;
    private final ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(4096);
    private final ExpandableArrayBuffer[] variants =
        {new ExpandableArrayBuffer(256), new ExpandableArrayBuffer(256), new ExpandableArrayBuffer(256)};
    private final int[] variantLength = new int[3];
    private final int[] variantIdOffset = new int[3];
    private final PublishEncoder encoder = new PublishEncoder();
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer topicView = new UnsafeBuffer(new byte[0]);
    private final UnsafeBuffer payloadView = new UnsafeBuffer(new byte[0]);
    private final int[] codes = new int[1];
    private long sequence;

    /**
     * @param logs the I/O agents' message logs, whose entries this last stage releases.
     */
    public DeliveryStage(final BrokerContext context, final Outbound outbound, final BrokerCounters counters,
        final MessageLog[] logs)
    {
        this.outbound = outbound;
        this.counters = counters;
        this.maxQueued = context.maxQueued();
        this.maxQueuedBytes = context.maxQueuedBytes();
        this.logs = logs;
        this.backlog = new OutboundBacklog(logs.length);
    }

    public void onEvent(final IngressEvent event, final boolean endOfBatch)
    {
        try
        {
            if (event.kind == IngressEvent.PACKET)
            {
                onPacket(event);
            }
            else
            {
                onConnectionEnd(event);
            }
        }
        finally
        {
            finish(event, endOfBatch);
        }
    }

    /**
     * A stage failed on this slot: its connection is closed (a CONNECT refused first, never admitted).
     */
    public void onFailed(final IngressEvent event, final boolean endOfBatch)
    {
        try
        {
            if (event.kind == IngressEvent.PACKET)
            {
                if (event.packetType == PacketType.CONNECT)
                {
                    final int length = ConnackEncoder.encode(
                        scratch, 0, event.version, false, ReasonCode.V3_SERVER_UNAVAILABLE, null);
                    sendTo(event.agentIndex, event.connectionId, scratch, length, false);
                }
                closeConnection(event.agentIndex, event.connectionId);
            }
            else if (null != event.session && event.session.connectionId() == event.connectionId)
            {
                event.session.unbind(); // the end still unbinds, or delivery would write to a dead connection
            }
        }
        finally
        {
            finish(event, endOfBatch);
        }
    }

    public int doDutyCycle()
    {
        if (backlog.isEmpty())
        {
            return 0;
        }
        final int work = backlog.drain(outbound);
        if (work > 0)
        {
            outbound.endOfBatch();
        }
        return work;
    }

    /**
     * Last stage: gives back the slot's log entry, lets go of sessions and messages, flushes at a batch's end.
     */
    private void finish(final IngressEvent event, final boolean endOfBatch)
    {
        if (event.logEnd >= 0)
        {
            logs[event.agentIndex].release(event.logEnd);
            event.logEnd = -1;
        }
        event.clear();
        if (endOfBatch)
        {
            outbound.endOfBatch();
        }
    }

    private void onPacket(final IngressEvent event)
    {
        switch (event.packetType)
        {
            case PacketType.CONNECT: onConnect(event); break;
            case PacketType.PUBLISH: onPublish(event); break;
            case PacketType.SUBSCRIBE: onSubscribe(event); break;
            case PacketType.UNSUBSCRIBE:
                if (null != event.session && event.packetId != 0)
                {
                    final int length = SubackEncoder.encode(
                        scratch, 0, PacketType.UNSUBACK, event.version, event.packetId, null, codes, 0);
                    sendTo(event.agentIndex, event.connectionId, scratch, length, false);
                }
                break;
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP: onAck(event); break;
            default: break;
        }
    }

    private void onConnect(final IngressEvent event)
    {
        if (event.authCode != IngressEvent.AUTH_ACCEPTED || null == event.session)
        {
            final int code = event.authCode > 0 ? event.authCode : ReasonCode.V3_SERVER_UNAVAILABLE; // fail closed
            final int length = ConnackEncoder.encode(scratch, 0, event.version, false, code, null);
            sendTo(event.agentIndex, event.connectionId, scratch, length, false);
            closeConnection(event.agentIndex, event.connectionId); // [MQTT-3.2.2-5]
            return;
        }
        if (event.takeoverConnectionId >= 0)
        {
            closeConnection(event.takeoverAgent, event.takeoverConnectionId); // [MQTT-3.1.4-2]
        }
        final Session session = event.session;
        session.bind(event.agentIndex, event.connectionId, event.version);
        final int length = ConnackEncoder.encode(scratch, 0, event.version, event.sessionPresent, 0, null);
        sendTo(event.agentIndex, event.connectionId, scratch, length, false);
        if (event.sessionPresent)
        {
            // resend what was in flight, in order, with DUP [MQTT-4.4.0-1]
            for (final Outgoing outgoing : session.inflightInOrder())
            {
                if (outgoing.state() == Session.AWAIT_PUBCOMP)
                {
                    sendAck(session, PacketType.PUBREL, outgoing.packetId());
                }
                else
                {
                    sendPublish(session, outgoing, true);
                }
            }
        }
        drainQueue(session);
        if (event.routed)
        {
            fanOut(event); // the will of the connection this one took over
        }
    }

    private void onPublish(final IngressEvent event)
    {
        if (null == event.session)
        {
            return;
        }
        if (event.qos == 1 && event.packetId != 0)
        {
            final int length = AckEncoder.encode(scratch, 0, PacketType.PUBACK, event.packetId);
            sendTo(event.agentIndex, event.connectionId, scratch, length, false);
        }
        else if (event.qos == 2 && event.packetId != 0)
        {
            final int length = AckEncoder.encode(scratch, 0, PacketType.PUBREC, event.packetId);
            sendTo(event.agentIndex, event.connectionId, scratch, length, false);
        }
        if (event.routed)
        {
            fanOut(event);
        }
    }

    private void onSubscribe(final IngressEvent event)
    {
        final Session session = event.session;
        if (null == session || event.packetId == 0)
        {
            return;
        }
        final int length = SubackEncoder.encode(scratch, 0, PacketType.SUBACK, event.version, event.packetId, null,
            event.grantedCodes, event.grantedCount);
        sendTo(event.agentIndex, event.connectionId, scratch, length, false);
        for (int i = 0; i < event.retained.size(); i++)
        {
            final Message message = event.retained.get(i);
            final int qos = event.retainedQos.get(i);
            if (qos == 0)
            {
                topicView.wrap(message.topic());
                payloadView.wrap(message.payload());
                final int written = encoder.reset().version(session.version()).qos(0).retain(true)
                    .topic(topicView, 0, topicView.capacity()).payload(payloadView, 0, payloadView.capacity())
                    .encode(scratch, 0);
                sendTo(session.agentIndex(), session.connectionId(), scratch, written, true);
            }
            else
            {
                deliverReliably(session, new Outgoing(message, qos, true, ++sequence)); // [MQTT-3.3.1-8]
            }
        }
    }

    private void onAck(final IngressEvent event)
    {
        final Session session = event.session;
        if (null == session)
        {
            return;
        }
        if (ack.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            return;
        }
        final int packetId = ack.packetId();
        switch (event.packetType)
        {
            case PacketType.PUBREL:
                sendAck(event.agentIndex, event.connectionId, PacketType.PUBCOMP, packetId);
                return;
            case PacketType.PUBREC:
            {
                // only a QoS 2 message awaits PUBREC; a repeated PUBREC gets its PUBREL again [MQTT-4.3.3-3]
                final Outgoing outgoing = session.findInflight(packetId);
                if (null != outgoing && outgoing.qos() == 2)
                {
                    outgoing.state(Session.AWAIT_PUBCOMP);
                    sendAck(event.agentIndex, event.connectionId, PacketType.PUBREL, packetId);
                }
                return;
            }
            default:
            {
                // PUBACK ends a QoS 1 message; PUBCOMP ends a QoS 2 message only after its PUBREC [MQTT-4.3.3-1]
                final Outgoing outgoing = session.findInflight(packetId);
                final boolean matches = null != outgoing && (event.packetType == PacketType.PUBACK ?
                    outgoing.qos() == 1 : outgoing.state() == Session.AWAIT_PUBCOMP);
                if (matches)
                {
                    session.removeInflight(outgoing);
                    drainQueue(session);
                }
            }
        }
    }

    private void onConnectionEnd(final IngressEvent event)
    {
        final Session session = event.session;
        if (null == session)
        {
            return;
        }
        if (session.connectionId() == event.connectionId)
        {
            session.unbind();
            if (!session.isPersistent())
            {
                session.clearDeliveryState();
            }
        }
        if (event.routed)
        {
            fanOut(event); // the will
        }
    }

    private void fanOut(final IngressEvent event)
    {
        final DirectBuffer topic;
        final DirectBuffer payload;
        final int topicOffset;
        final int topicLength;
        final int payloadOffset;
        final int payloadLength;
        if (null != event.message)
        {
            topicView.wrap(event.message.topic());
            payloadView.wrap(event.message.payload());
            topic = topicView;
            topicOffset = 0;
            topicLength = topicView.capacity();
            payload = payloadView;
            payloadOffset = 0;
            payloadLength = payloadView.capacity();
        }
        else
        {
            topic = event.packet;
            topicOffset = event.topicOffset;
            topicLength = event.topicLength;
            payload = event.packet;
            payloadOffset = event.payloadOffset;
            payloadLength = event.payloadLength;
        }
        variantLength[0] = 0;
        variantLength[1] = 0;
        variantLength[2] = 0;
        for (int i = 0; i < event.targetCount; i++)
        {
            final Session session = event.targets[i];
            final int qos = event.targetQos[i];
            if (qos == 0)
            {
                if (session.isOnline())
                {
                    final ExpandableArrayBuffer bytes = variant(session, 0, topic, topicOffset, topicLength,
                        payload, payloadOffset, payloadLength);
                    sendTo(session.agentIndex(), session.connectionId(), bytes, variantLength[0], true);
                }
            }
            else if (session.isOnline() && session.hasInflightRoom() && session.queue().isEmpty())
            {
                final Outgoing outgoing = new Outgoing(event.message, qos, false, ++sequence);
                final int packetId = session.addInflight(outgoing);
                outgoing.state(qos == 1 ? Session.AWAIT_PUBACK : Session.AWAIT_PUBREC);
                final ExpandableArrayBuffer bytes = variant(session, qos, topic, topicOffset, topicLength,
                    payload, payloadOffset, payloadLength);
                PublishEncoder.putPacketId(bytes, variantIdOffset[qos], packetId);
                sendTo(session.agentIndex(), session.connectionId(), bytes, variantLength[qos], false);
            }
            else
            {
                deliverReliably(session, new Outgoing(event.message, qos, false, ++sequence));
            }
        }
    }

    /**
     * Encodes the PUBLISH for one QoS once per fan-out (MQTT 3.1.1 connections only in this version).
     */
    private ExpandableArrayBuffer variant(final Session session, final int qos, final DirectBuffer topic,
        final int topicOffset, final int topicLength, final DirectBuffer payload, final int payloadOffset,
        final int payloadLength)
    {
        final ExpandableArrayBuffer bytes = variants[qos];
        if (variantLength[qos] == 0)
        {
            encoder.reset().version(session.version()).qos(qos).packetId(1)
                .topic(topic, topicOffset, topicLength).payload(payload, payloadOffset, payloadLength);
            final int length = encoder.encodedLength();
            bytes.checkLimit(length);
            variantLength[qos] = encoder.encode(bytes, 0);
            variantIdOffset[qos] = encoder.packetIdOffset();
        }
        return bytes;
    }

    private void deliverReliably(final Session session, final Outgoing outgoing)
    {
        if (session.isOnline() && session.hasInflightRoom() && session.queue().isEmpty())
        {
            session.addInflight(outgoing);
            outgoing.state(outgoing.qos() == 1 ? Session.AWAIT_PUBACK : Session.AWAIT_PUBREC);
            sendPublish(session, outgoing, false);
            return;
        }
        if (!session.isOnline() && !session.isPersistent())
        {
            return; // a clean session ends with its connection
        }
        if (session.queue().size() >= maxQueued)
        {
            counters.increment(BrokerCounters.QUEUE_FULL_DROPPED);
            return;
        }
        final int bytes = outgoing.message().payload().length + outgoing.message().topic().length;
        if (session.queuedBytes() + bytes > maxQueuedBytes)
        {
            counters.increment(BrokerCounters.QUEUED_BYTES_DROPPED);
            return;
        }
        if (session.isOnline())
        {
            counters.increment(BrokerCounters.INFLIGHT_FULL_QUEUED);
        }
        session.enqueue(outgoing, bytes);
    }

    private void drainQueue(final Session session)
    {
        while (session.isOnline() && session.hasInflightRoom() && !session.queue().isEmpty())
        {
            final Outgoing outgoing = session.dequeue();
            session.addInflight(outgoing);
            outgoing.state(outgoing.qos() == 1 ? Session.AWAIT_PUBACK : Session.AWAIT_PUBREC);
            sendPublish(session, outgoing, false);
        }
    }

    private void sendPublish(final Session session, final Outgoing outgoing, final boolean dup)
    {
        final Message message = outgoing.message();
        topicView.wrap(message.topic());
        payloadView.wrap(message.payload());
        encoder.reset().version(session.version()).qos(outgoing.qos()).dup(dup).retain(outgoing.retain())
            .packetId(outgoing.packetId())
            .topic(topicView, 0, topicView.capacity()).payload(payloadView, 0, payloadView.capacity());
        scratch.checkLimit(encoder.encodedLength());
        final int length = encoder.encode(scratch, 0);
        sendTo(session.agentIndex(), session.connectionId(), scratch, length, false);
    }

    private void sendAck(final Session session, final int packetType, final int packetId)
    {
        sendAck(session.agentIndex(), session.connectionId(), packetType, packetId);
    }

    private void sendAck(final int agentIndex, final long connectionId, final int packetType, final int packetId)
    {
        final int length = AckEncoder.encode(scratch, 0, packetType, packetId);
        sendTo(agentIndex, connectionId, scratch, length, false);
    }

    /**
     * Hands bytes to the connection's I/O agent. What its full ring cannot take now waits in the backlog, in
     * order; QoS 0 is dropped instead (counted), since nothing in the protocol needs it.
     */
    private void sendTo(final int agentIndex, final long connectionId, final DirectBuffer buffer, final int length,
        final boolean droppable)
    {
        if (backlog.isEmpty(agentIndex) && outbound.send(agentIndex, connectionId, buffer, 0, length))
        {
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_RING_FULL);
        if (droppable)
        {
            counters.increment(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER);
            return;
        }
        counters.increment(BrokerCounters.OUTBOUND_BACKLOGGED);
        backlog.add(agentIndex, OutboundBacklog.SEND, connectionId, buffer, 0, length);
    }

    private void closeConnection(final int agentIndex, final long connectionId)
    {
        if (backlog.isEmpty(agentIndex) && outbound.close(agentIndex, connectionId))
        {
            return;
        }
        backlog.add(agentIndex, OutboundBacklog.CLOSE, connectionId, scratch, 0, 0);
    }

    public String name()
    {
        return "deliver";
    }
}
