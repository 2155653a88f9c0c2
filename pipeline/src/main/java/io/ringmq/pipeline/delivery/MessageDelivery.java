package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.pipeline.SharedRedispatch;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import org.agrona.DirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * A delivery shard's application messages: it delivers each event's message to the shard's targets (QoS 0 sent
 * or dropped; QoS 1 and 2 into the session's in-flight window or queue, as one pooled {@link SharedMessage} per
 * event held by reference), sends and resends what a window holds, drains queues as acknowledgements make room,
 * and gives back a shared subscriber's unacknowledged messages when its session ends. Encoding is
 * {@link PublishWriter}'s. Owned by its shard's thread.
 */
final class MessageDelivery
{
    private final int shard;
    private final ShardSessions sessions;
    private final ShardOutput output;
    private final BrokerCounters counters;
    private final SharedRedispatch redispatch;
    private int maxQueued;
    private long maxQueuedBytes;
    /** This shard's share of --max-message-memory. */
    private long messageMemoryBytes;
    private final SharedMessage.Pool pool;
    private final PublishWriter writer = new PublishWriter();
    /** One-identifier arrays, shared by the messages they go with (bounded: past it, a message gets its own). */
    private final Int2ObjectHashMap<int[]> singleIds = new Int2ObjectHashMap<>();
    /**
     * During recovery, the copies restored so far by message number: a message routed to many persistent sessions is
     * stored once per session but comes back as one copy they share, as it was held before the restart.
     */
    private final Long2ObjectHashMap<SharedMessage> restoring = new Long2ObjectHashMap<>();
    /** Copies recovery made (one per distinct message number). */
    private int restoredCopies;
    private final ShardJournal journal;
    private RouteOutput route;
    private SharedMessage eventMessage;
    /** The event's message number in the store (0: not stored). */
    private long eventMessageNumber;
    /** The QoS the event's message was published with. */
    private int messageQos;
    private long nowMs;

    /**
     * @param messageMemoryBytes this shard's share of {@code --max-message-memory}.
     */
    MessageDelivery(final int shard, final ShardSessions sessions, final ShardOutput output,
        final BrokerCounters counters, final SharedRedispatch redispatch, final int maxQueued,
        final long maxQueuedBytes, final long messageMemoryBytes, final ShardJournal journal)
    {
        this.messageMemoryBytes = messageMemoryBytes;
        this.journal = journal;
        this.shard = shard;
        this.pool = new SharedMessage.Pool(shard, 1_024);
        this.sessions = sessions;
        this.output = output;
        this.counters = counters;
        this.redispatch = redispatch;
        this.maxQueued = maxQueued;
        this.maxQueuedBytes = maxQueuedBytes;
    }

    /**
     * The event being handled: its routing output. Its clock is read when first needed (most events need none).
     */
    void event(final RouteOutput route)
    {
        this.route = route;
        this.nowMs = 0;
    }

    private long nowMs()
    {
        if (0 == nowMs)
        {
            nowMs = System.currentTimeMillis();
        }
        return nowMs;
    }

    /**
     * Sends the retained messages a SUBSCRIBE brought, with its Subscription Identifier and RETAIN set
     * [MQTT-3.3.1-8].
     */
    void retained(final IngressEvent event, final DeliverySession session)
    {
        final int[] ids = event.subscriptionId > 0 ? subscriptionIds(event.subscriptionId) : null;
        eventMessageNumber = 0; // retained messages sent on SUBSCRIBE are not stored for the session
        int at = event.retainedOffset;
        for (int i = 0; i < event.retainedCount; i++, at = route.next(at))
        {
            storedMessage(at);
            if (writer.isExpired())
            {
                counters.increment(BrokerCounters.MESSAGES_EXPIRED);
                continue;
            }
            final int qos = route.qosAt(at);
            if (qos == 0)
            {
                final int written = writer.encodeEvent(session, 0, true, 0, ids, null == ids ? 0 : 1);
                sendEncoded(session, written, !writer.assignedAlias());
            }
            else
            {
                deliverReliably(session, qos, true, ids, 0);
            }
        }
        releaseEventMessage();
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
    private void dropInflight(final DeliverySession session, final int slot)
    {
        final int qos = session.inflightQos(slot);
        final SharedMessage message = session.removeInflight(slot);
        journal.done(session.persistenceKey, message.messageNumber(), qos);
        pool.release(message);
    }

    /**
     * Takes a packet id for a message and puts it in flight; a stored QoS 2 message's packet id is written before it
     * is sent, so a restart resends it with the same one.
     */
    private int inflight(final DeliverySession session, final SharedMessage message, final int qos,
        final boolean retain, final int[] ids, final int group)
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
     * Recovery: a stored message of a session goes back in flight (with its packet id and QoS 2 state when it had
     * them, else a new packet id, written before it can be sent) or into the queue; one copy per message number,
     * shared by every session it was stored for, until {@link #restored()}. A queued one that would take the shard
     * past its share of --max-message-memory is dropped, and its record with it.
     */
    void restore(final DeliverySession session, final io.ringmq.pipeline.Message stored, final long number,
        final int qos, final boolean retain, final int publishedQos, final int[] ids, final boolean inflight,
        final int packetId, final int state)
    {
        SharedMessage message = restoring.get(number);
        if (null == message)
        {
            final byte[] topic = stored.topic();
            final byte[] properties = stored.properties();
            final byte[] payload = stored.payload();
            if (!inflight && !pool.hasRoomFor(topic.length + properties.length + payload.length, messageMemoryBytes))
            {
                // a store written under a larger bound (or heap): the newest queued ones past it are dropped, as they
                // would have been had they come now; those in flight (a window each, at most) all come back
                counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
                journal.done(session.persistenceKey, number, qos);
                return;
            }
            message = pool.copy(new org.agrona.concurrent.UnsafeBuffer(topic), 0, topic.length,
                new org.agrona.concurrent.UnsafeBuffer(properties), 0, properties.length,
                new org.agrona.concurrent.UnsafeBuffer(payload), 0, payload.length, stored.expiresAtMs(),
                publishedQos);
            message.messageNumber(number);
            restoring.put(number, message);
            restoredCopies++;
        }
        message.retain();
        if (!inflight)
        {
            session.enqueue(message, qos, retain, ids, 0);
            return;
        }
        final int slot = session.restoreInflight(message, qos, retain, ids, packetId, state);
        if (qos == 2 && session.inflightPacketId(slot) != packetId)
        {
            // a new id (none stored, or a stored one that could not be kept): written before it can be sent
            journal.exchange(session.persistenceKey, number, session.inflightPacketId(slot),
                DeliverySession.AWAIT_PUBREC);
        }
    }

    /**
     * Recovery is over: messages routed from now on are new copies.
     *
     * @return the copies restored: one per distinct message.
     */
    int restored()
    {
        final int copies = restoredCopies;
        restoring.clear();
        restoredCopies = 0;
        return copies;
    }

    /**
     * Resends a session's in-flight messages on its client's return, in order, with DUP [MQTT-4.4.0-1]; past the
     * client's Receive Maximum the rest waits, unsent, until acknowledgements make room [MQTT-3.3.4-9].
     *
     * @param pubrel called with the packet id of a QoS 2 message the client has received already (PUBREL again).
     */
    void resend(final DeliverySession session, final java.util.function.IntConsumer pubrel)
    {
        int sent = 0;
        for (final int slot : session.inflightInOrder())
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
     * @return the pool of this shard's copies (for {@link MovedMessages}, on this shard's thread).
     */
    SharedMessage.Pool pool()
    {
        return pool;
    }

    /**
     * @return this shard's share of --max-message-memory, as last set.
     */
    long messageMemoryBytes()
    {
        return messageMemoryBytes;
    }

    /**
     * @return how much the bytes of kept copies changed since the last call (for the gauge, once per batch).
     */
    long takeMessageMemoryChange()
    {
        return pool.takeKeptBytesChange();
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
     * Delivers the event's message (a PUBLISH, or a will or re-dispatched message from the routing output) to the
     * targets routing placed in this shard.
     */
    void fanOut(final IngressEvent event)
    {
        eventMessageNumber = event.messageNumber;
        if (event.messageOffset != IngressEvent.NONE)
        {
            storedMessage(event.messageOffset); // a will, from the routing output
        }
        else
        {
            final long expiry = event.propertiesLength == 0 ? -1 :
                MessageProperties.messageExpiry(event.packet, event.propertiesOffset, event.propertiesLength);
            message(event.packet, event.topicOffset, event.topicLength, event.packet, event.propertiesOffset,
                event.propertiesLength, event.packet, event.payloadOffset, event.payloadLength,
                expiry < 0 ? Message.NEVER : nowMs() + expiry * 1000);
            messageQos = event.qos;
        }
        for (int i = 0; i < event.targetCount; i++)
        {
            if (route.targetShard(i) != shard)
            {
                continue;
            }
            final DeliverySession session = sessions.get(route.targetSession(i));
            if (null == session)
            {
                continue;
            }
            final int qos = route.targetQos(i);
            // live, RETAIN is 0 unless the subscription keeps it as published [MQTT-3.3.1-12] (5.0 only)
            final boolean retain = event.retain && session.version == MqttVersion.V5 &&
                route.targetRetainAsPublished(i);
            final int[] ids = targetSubscriptionIds(i);
            final int group = route.targetGroup(i);
            if (qos == 0)
            {
                if (session.isOnline())
                {
                    sendLive(session, 0, retain, 0, ids);
                }
            }
            else if (session.canSendNow())
            {
                final SharedMessage message = retainedCopy();
                if (null == message)
                {
                    dropForMemory(session, qos);
                    continue;
                }
                final int slot = inflight(session, message, qos, retain, ids, group);
                if (!sendLive(session, qos, retain, session.inflightPacketId(slot), ids))
                {
                    dropInflight(session, slot); // too large for this client: never in flight
                }
            }
            else
            {
                deliverReliably(session, qos, retain, ids, group);
            }
        }
        releaseEventMessage();
    }

    /**
     * Sends the event's message to an online session: the shared variant, or an encoding of its own.
     *
     * @return false when it is larger than the client accepts (dropped and counted).
     */
    private boolean sendLive(final DeliverySession session, final int qos, final boolean retain, final int packetId,
        final int[] ids)
    {
        if (PublishWriter.needsOwnEncoding(session, null == ids ? 0 : ids.length))
        {
            final int length = writer.encodeEvent(session, qos, retain, packetId, ids, null == ids ? 0 : ids.length);
            return sendEncoded(session, length, qos == 0 && !writer.assignedAlias());
        }
        final int variant = writer.variant(session.version, qos, retain);
        if (writer.variantLength(variant) > session.maxPacketSize)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT); // [MQTT-3.1.2-25]
            return false;
        }
        if (qos > 0)
        {
            writer.patchPacketId(variant, packetId);
        }
        output.send(session.connectionId, writer.variant(variant), writer.variantLength(variant), qos == 0);
        return true;
    }

    /**
     * Sends what {@link PublishWriter} encoded into its scratch buffer.
     *
     * @return false when it was too large for the client (dropped and counted [MQTT-3.1.2-25]).
     */
    private boolean sendEncoded(final DeliverySession session, final int length, final boolean droppable)
    {
        if (length == PublishWriter.TOO_LARGE)
        {
            counters.increment(BrokerCounters.PACKET_TOO_LARGE_FOR_CLIENT);
            return false;
        }
        output.send(session.connectionId, writer.scratch(), length, droppable);
        return true;
    }

    /**
     * @return the Subscription Identifiers of target {@code i} as an array kept with its message, or null.
     */
    private int[] targetSubscriptionIds(final int i)
    {
        final int count = route.targetSubscriptionIdCount(i);
        if (count == 0)
        {
            return null;
        }
        if (count == 1)
        {
            return subscriptionIds(route.targetSubscriptionId(i, 0));
        }
        final int[] ids = new int[count]; // several subscriptions with identifiers matched: rare, its own array
        for (int n = 0; n < count; n++)
        {
            ids[n] = route.targetSubscriptionId(i, n);
        }
        return ids;
    }

    private int[] subscriptionIds(final int id)
    {
        int[] ids = singleIds.get(id);
        if (null == ids)
        {
            ids = new int[]{id};
            if (singleIds.size() < 65_536)
            {
                singleIds.put(id, ids);
            }
        }
        return ids;
    }

    /**
     * Sets a message of the routing output (a will, a retained message) as the one being delivered.
     */
    private void storedMessage(final int at)
    {
        message(route.buffer(), route.topicOffsetAt(at), route.topicLengthAt(at), route.buffer(),
            route.propertiesOffsetAt(at), route.propertiesLengthAt(at), route.buffer(), route.payloadOffsetAt(at),
            route.payloadLengthAt(at), route.expiresAtMsAt(at));
        messageQos = route.qosAt(at);
    }

    /**
     * The message of the event being delivered: a view, copied only when a QoS 1 or 2 target needs it kept.
     */
    private void message(final DirectBuffer topic, final int topicOffset, final int topicLength,
        final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
        final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs)
    {
        releaseEventMessage();
        writer.message(topic, topicOffset, topicLength, properties, propertiesOffset, propertiesLength, payload,
            payloadOffset, payloadLength, expiresAtMs, nowMs());
    }

    /**
     * @return the event's message as a kept copy with one more reference (copied once per event); null when a copy
     * would take the shard past its share of --max-message-memory.
     */
    private SharedMessage retainedCopy()
    {
        if (null == eventMessage)
        {
            if (!pool.hasRoomFor(writer.keptLength(), messageMemoryBytes))
            {
                return null;
            }
            eventMessage = writer.copy(pool, messageQos);
            eventMessage.messageNumber(eventMessageNumber);
            eventMessage.retain(); // the event's own reference: a holder that lets go never recycles it mid-event
        }
        eventMessage.retain();
        return eventMessage;
    }

    /**
     * Drops the event's own reference to its copy: recycled unless a window or queue holds it.
     */
    private void releaseEventMessage()
    {
        if (null != eventMessage)
        {
            pool.release(eventMessage);
            eventMessage = null;
        }
    }

    private void deliverReliably(final DeliverySession session, final int qos, final boolean retain,
        final int[] ids, final int group)
    {
        if (session.canSendNow()) // sent now, or behind the backlog in order: either way it is in flight
        {
            final SharedMessage message = retainedCopy();
            if (null == message)
            {
                dropForMemory(session, qos);
                return;
            }
            final int slot = inflight(session, message, qos, retain, ids, group);
            if (!sendPublish(session, slot, false))
            {
                dropInflight(session, slot);
            }
            return;
        }
        if (!session.isOnline() && !session.persistent)
        {
            return; // a clean session ends with its connection
        }
        if (session.queueSize() >= maxQueued)
        {
            counters.increment(BrokerCounters.QUEUE_FULL_DROPPED);
            journal.done(session.persistenceKey, eventMessageNumber, qos);
            return;
        }
        final SharedMessage message = retainedCopy();
        if (null == message)
        {
            dropForMemory(session, qos);
            return;
        }
        if (session.queuedBytes() + message.length() > maxQueuedBytes)
        {
            pool.release(message);
            counters.increment(BrokerCounters.QUEUED_BYTES_DROPPED);
            journal.done(session.persistenceKey, eventMessageNumber, qos);
            return;
        }
        if (session.isOnline())
        {
            counters.increment(BrokerCounters.INFLIGHT_FULL_QUEUED);
        }
        session.enqueue(message, qos, retain, ids, group);
    }

    /**
     * The shard holds --max-message-memory in copies already: the message is not kept for this session, as a full
     * queue would not keep it.
     */
    private void dropForMemory(final DeliverySession session, final int qos)
    {
        counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        journal.done(session.persistenceKey, eventMessageNumber, qos);
    }

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
        while (session.isOnline() && session.hasInflightRoom() && session.queueSize() > 0)
        {
            final SharedMessage message = session.peekMessage();
            final int qos = session.peekQos();
            final boolean retain = session.peekRetain();
            final int[] ids = session.peekSubscriptionIds();
            final int group = session.peekGroup();
            session.dequeue(); // its reference passes to the window
            if (message.expiresAtMs() != Message.NEVER && nowMs() >= message.expiresAtMs())
            {
                counters.increment(BrokerCounters.MESSAGES_EXPIRED); // not sent once expired [MQTT-3.3.2-5]
                journal.done(session.persistenceKey, message.messageNumber(), qos);
                pool.release(message);
                continue;
            }
            final int slot = inflight(session, message, qos, retain, ids, group);
            if (!sendPublish(session, slot, false))
            {
                dropInflight(session, slot);
            }
        }
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
            nowMs());
        return sendEncoded(session, length, false);
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

    /**
     * New bounds of every session's queue (a reload), from the next message on: what is queued beyond them stays
     * queued and drains as it would.
     */
    void queueLimits(final int maxQueued, final long maxQueuedBytes, final long messageMemoryBytes)
    {
        this.messageMemoryBytes = messageMemoryBytes;
        this.maxQueued = maxQueued;
        this.maxQueuedBytes = maxQueuedBytes;
    }
}
