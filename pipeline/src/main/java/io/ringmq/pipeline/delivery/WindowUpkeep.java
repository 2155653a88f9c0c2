package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SharedRedispatch;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;

import java.util.function.IntConsumer;

/**
 * The upkeep of a session's in-flight window and the queue behind it, in a delivery shard: a kept message goes in
 * flight (its packet id written first for QoS 2), is sent or resent with DUP, and leaves the window when done with;
 * the queue drains into the room acknowledgements make, and a session that ends hands what its shared subscriptions
 * took back to their groups. {@link MessageDelivery} puts each event's message in; this keeps it moving. Owned by its
 * shard's thread.
 */
final class WindowUpkeep
{
    private final SharedMessage.Pool pool;
    private final PublishWriter writer;
    private final ShardOutput output;
    private final EventClock clock;
    private final BrokerCounters counters;
    private final SharedRedispatch redispatch;
    private final ShardJournal journal;
    /** Sends a QoS 0 message taken from {@link #draining}'s queue. */
    private final SessionQueue.Qos0Sink qos0Drain = this::sendQueuedQos0;
    private DeliverySession draining;

    /**
     * @param redispatch where a shared subscriber's unacknowledged messages go back when its session ends.
     */
    WindowUpkeep(final SharedMessage.Pool pool, final PublishWriter writer, final ShardOutput output,
        final EventClock clock, final BrokerCounters counters, final SharedRedispatch redispatch,
        final ShardJournal journal)
    {
        this.pool = pool;
        this.writer = writer;
        this.output = output;
        this.clock = clock;
        this.counters = counters;
        this.redispatch = redispatch;
        this.journal = journal;
    }

    /**
     * The message in a window slot is done with (acknowledged, or refused by the client): it leaves the window,
     * and what waits takes its place.
     */
    void completed(final DeliverySession session, final int slot)
    {
        dropInflight(session, slot);
        drainQueue(session);
    }

    /**
     * A message leaves a session's window for good (done with, or too large for the client): its record goes too.
     */
    void dropInflight(final DeliverySession session, final int slot)
    {
        final int qos = session.inflightQos(slot);
        final SharedMessage message = session.removeInflight(slot);
        journal.done(session.persistenceKey, message.messageNumber(), qos);
        pool.release(message);
    }

    /**
     * Takes a packet id for a message and puts it in flight; a stored QoS 2 message's packet id is written before it
     * is sent, so a restart resends it with the same one.
     *
     * @return the window slot.
     */
    int inflight(final DeliverySession session, final SharedMessage message, final int qos, final boolean retain,
        final int[] ids, final int group)
    {
        final int slot = session.addInflight(message, qos, retain, ids, group);
        if (qos == 2)
        {
            journal.exchange(session.persistenceKey, message.messageNumber(), session.inflightPacketId(slot),
                DeliverySession.AWAIT_PUBREC);
        }
        return slot;
    }

    /**
     * Resends a session's in-flight messages on its client's return, in order, with DUP [MQTT-4.4.0-1]; past the
     * client's Receive Maximum the rest waits, unsent, until acknowledgements make room [MQTT-3.3.4-9].
     *
     * @param pubrel called with the packet id of a QoS 2 message the client has received already (PUBREL again).
     */
    void resend(final DeliverySession session, final IntConsumer pubrel)
    {
        int sent = 0;
        final int[] inOrder = session.inflightInOrder();
        for (final int slot : inOrder)
        {
            if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
            {
                sent++; // unfinished until its PUBCOMP: it counts toward the Receive Maximum [MQTT-3.3.4-9]
            }
        }
        for (final int slot : inOrder)
        {
            if (session.inflightState(slot) == DeliverySession.AWAIT_PUBCOMP)
            {
                pubrel.accept(session.inflightPacketId(slot));
            }
            else if (sent < session.windowLimit())
            {
                sent++;
                session.inflightUnsent(slot, false);
                if (!sendPublish(session, slot, true))
                {
                    dropInflight(session, slot); // too large for this client now
                }
            }
            else
            {
                session.inflightUnsent(slot, true);
            }
        }
    }

    /**
     * Fills an online session's window: first what a smaller Receive Maximum held back at a reconnect, then the
     * queue, oldest first, as long as the window has room; QoS 0 messages queued while its client was away take no
     * slot, and all of them go, those behind a full window too.
     */
    void drainQueue(final DeliverySession session)
    {
        int unsent;
        while (session.isOnline() && (unsent = session.nextUnsent()) >= 0)
        {
            session.inflightUnsent(unsent, false); // held back at a reconnect by a smaller Receive Maximum
            if (!sendPublish(session, unsent, true))
            {
                dropInflight(session, unsent);
            }
        }
        draining = session;
        while (session.isOnline() && session.queueSize() > 0 && (session.hasInflightRoom() || session.peekQos() == 0))
        {
            final SharedMessage message = session.peekMessage();
            final int qos = session.peekQos();
            final boolean retain = session.peekRetain();
            final int[] ids = session.peekSubscriptionIds();
            final int group = session.peekGroup();
            session.dequeue(); // its reference passes to the window
            if (message.expiresAtMs() != Message.NEVER && clock.nowMs() >= message.expiresAtMs())
            {
                counters.increment(BrokerCounters.MESSAGES_EXPIRED); // not sent once expired [MQTT-3.3.2-5]
                journal.done(session.persistenceKey, message.messageNumber(), qos);
                pool.release(message);
                continue;
            }
            if (qos == 0) // queued while its client was away (--queue-qos0-messages): takes no window slot
            {
                sendQueuedQos0(message, retain, ids);
                continue;
            }
            final int slot = inflight(session, message, qos, retain, ids, group);
            if (!sendPublish(session, slot, message.restored()))
            {
                dropInflight(session, slot);
            }
        }
        if (session.isOnline() && session.queuedQos0() > 0)
        {
            // the rest of them now, past the QoS 1 and 2 messages waiting for the window, before any later QoS 0
            // can go live: the order the protocol asks for is per topic and QoS [MQTT-4.6.0-6]
            session.removeQueuedQos0(qos0Drain);
        }
        draining = null;
    }

    /**
     * Sends a QoS 0 message its session queued while its client was away, unless it expired meanwhile
     * [MQTT-3.3.2-5], as a send the I/O agent does not shed past the connection's high-water mark (they go out
     * together, bounded by --max-queued-bytes); lets go of the queue's reference.
     */
    private void sendQueuedQos0(final SharedMessage message, final boolean retain, final int[] ids)
    {
        if (message.expiresAtMs() != Message.NEVER && clock.nowMs() >= message.expiresAtMs())
        {
            counters.increment(BrokerCounters.MESSAGES_EXPIRED);
        }
        else
        {
            final int length = writer.encodeKept(draining, message, 0, false, retain, 0, ids, clock.nowMs());
            output.sendKeptEncoded(draining.connectionId, writer, length);
        }
        pool.release(message);
    }

    /**
     * Sends (or resends, with DUP) the message in a window slot.
     *
     * @return false when it is larger than the client accepts (the caller drops it).
     */
    boolean sendPublish(final DeliverySession session, final int slot, final boolean dup)
    {
        final int length = writer.encodeKept(session, session.inflightMessage(slot), session.inflightQos(slot), dup,
            session.inflightRetain(slot), session.inflightPacketId(slot), session.inflightSubscriptionIds(slot),
            clock.nowMs());
        return output.sendEncoded(session.connectionId, writer, length, false);
    }

    /**
     * A session's delivery half goes (it ended, expired, or its id is reused): what it took through shared
     * subscriptions goes back to its groups, the rest is released.
     */
    void forget(final DeliverySession session)
    {
        handBackShared(session);
        session.clear(pool);
    }

    /**
     * A session ends: what it took through shared subscriptions and the client never acknowledged (not yet
     * PUBRECed) goes back to routing for another member of the group (5.0 section 4.8.2).
     */
    void handBackShared(final DeliverySession session)
    {
        for (int slot = 0; slot < session.windowCapacity(); slot++)
        {
            final SharedMessage message = session.inflightMessage(slot);
            if (null == message || session.inflightGroup(slot) == 0)
            {
                continue;
            }
            if (session.inflightQos(slot) == 2)
            {
                // it may have reached the client: never to another one [MQTT-4.8.2-5]
                counters.increment(BrokerCounters.SHARED_QOS2_NOT_REDISPATCHED);
            }
            else
            {
                redispatch.offer(session.inflightGroup(slot), kept(message));
            }
        }
        for (int i = 0; i < session.queueSize(); i++)
        {
            if (session.queuedGroup(i) != 0) // never sent: any QoS may go to another member
            {
                redispatch.offer(session.queuedGroup(i), kept(session.queuedMessage(i)));
            }
        }
    }

    /**
     * @return a message as it was published (its QoS too: the member that leaves may have had it lower).
     */
    private static Message kept(final SharedMessage message)
    {
        final byte[] topic = new byte[message.topicLength()];
        message.buffer().getBytes(0, topic);
        final byte[] properties = new byte[message.propertiesLength()];
        message.buffer().getBytes(message.propertiesOffset(), properties);
        final byte[] payload = new byte[message.payloadLength()];
        message.buffer().getBytes(message.payloadOffset(), payload);
        return new Message(topic, payload, message.publishedQos(), false, properties, message.expiresAtMs());
    }
}
