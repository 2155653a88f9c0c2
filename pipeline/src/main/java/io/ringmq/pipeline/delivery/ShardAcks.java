package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;

import java.util.function.IntConsumer;

/**
 * The acknowledgements a delivery shard's clients send (PUBACK, PUBREC, PUBREL, PUBCOMP), each read against its
 * session's in-flight window, and the PUBREL and PUBCOMP the shard answers with, also when a client comes back and a
 * QoS 2 exchange it had received goes on ({@link #pubrelTo}). A message done with leaves the window through
 * {@link WindowUpkeep}. Owned by its shard's thread.
 */
final class ShardAcks
{
    private final ShardSessions sessions;
    private final ShardOutput output;
    private final ControlPackets control;
    private final WindowUpkeep upkeep;
    private final ShardJournal journal;
    private final AckFlyweight ack = new AckFlyweight();
    private long connectionOfPubrel;
    private final IntConsumer pubrel = packetId -> sendAck(connectionOfPubrel, PacketType.PUBREL, packetId);

    /**
     * @param control the shard's encoder of the acknowledgements it answers with.
     * @param journal where the life of a stored message goes on (its QoS 2 exchange).
     */
    ShardAcks(final ShardSessions sessions, final ShardOutput output, final ControlPackets control,
        final WindowUpkeep upkeep, final ShardJournal journal)
    {
        this.sessions = sessions;
        this.output = output;
        this.control = control;
        this.upkeep = upkeep;
        this.journal = journal;
    }

    /**
     * One acknowledgement, or a run of them of one type: the I/O agent hands the PUBACKs, PUBRECs or PUBCOMPs it
     * read back to back from one connection in one slot, each validated; a PUBREL always comes alone.
     */
    void onAck(final IngressEvent event)
    {
        final DeliverySession session = event.packetType == PacketType.PUBREL ? null : sessions.get(event.sessionId);
        final int end = event.packetLength;
        for (int offset = 0, length; offset < end; offset += length)
        {
            length = ack.wrapNext(event.packet, offset, end, event.version);
            if (length < 0)
            {
                return;
            }
            acknowledge(event, session, ack.packetId());
        }
    }

    /**
     * One acknowledgement of the slot's type, the one {@link #ack} holds; {@code session} null when not this shard's.
     */
    private void acknowledge(final IngressEvent event, final DeliverySession session, final int packetId)
    {
        if (event.packetType == PacketType.PUBREL)
        {
            sendAck(event.connectionId, PacketType.PUBCOMP, packetId);
            return;
        }
        final int slot = null == session ? -1 : session.findInflight(packetId);
        if (slot < 0)
        {
            return;
        }
        switch (event.packetType)
        {
            case PacketType.PUBREC:
                if (event.version == MqttVersion.V5 && ack.reasonCode() >= ReasonCode.UNSPECIFIED_ERROR)
                {
                    upkeep.completed(session, slot); // the client refused a QoS 2 message [MQTT-4.3.3-4]
                }
                // only a QoS 2 message awaits PUBREC; a repeated PUBREC gets its PUBREL again [MQTT-4.3.3-3]
                else if (session.inflightQos(slot) == 2)
                {
                    session.inflightState(slot, DeliverySession.AWAIT_PUBCOMP);
                    // one held back at a resume the client had from before: never its PUBLISH after the PUBREL
                    session.inflightUnsent(slot, false);
                    // kept before PUBREL leaves: after a restart the broker sends PUBREL, never the PUBLISH again
                    journal.exchange(session.persistenceKey, session.inflightMessage(slot).messageNumber(), packetId,
                        DeliverySession.AWAIT_PUBCOMP);
                    sendAck(event.connectionId, PacketType.PUBREL, packetId);
                }
                return;
            case PacketType.PUBACK:
                if (session.inflightQos(slot) == 1)
                {
                    upkeep.completed(session, slot);
                }
                return;
            default:
                // PUBCOMP ends a QoS 2 message only after its PUBREC [MQTT-4.3.3-1]
                if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
                {
                    upkeep.completed(session, slot);
                }
        }
    }

    /**
     * @return what sends PUBREL again to this connection, for each QoS 2 message its client had received before it
     * came back ({@link WindowUpkeep#resend}); the same one every time, so a reconnect allocates nothing for it.
     */
    IntConsumer pubrelTo(final long connectionId)
    {
        connectionOfPubrel = connectionId;
        return pubrel;
    }

    private void sendAck(final long connectionId, final int packetType, final int packetId)
    {
        output.sendControl(connectionId, control, control.ack(packetType, packetId, MqttVersion.V3_1_1,
            ReasonCode.SUCCESS));
    }
}
