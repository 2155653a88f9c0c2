package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.RetainedDrains;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttVersion;
import org.agrona.DirectBuffer;
import org.agrona.collections.Int2ObjectHashMap;

/**
 * A delivery shard's live fan-out: it delivers each event's message (a PUBLISH, a will, a re-dispatched message, the
 * retained messages a SUBSCRIBE brought) to the shard's targets. QoS 0 is sent or dropped; QoS 1 and 2 go into the
 * session's in-flight window or queue, as one pooled {@link SharedMessage} per event held by reference, or are
 * dropped past the session's queue bounds or the shard's share of --max-message-memory. Encoding is
 * {@link PublishWriter}'s; what a window holds from then on, {@link WindowUpkeep}'s. Owned by its shard's thread.
 */
final class MessageDelivery
{
    private final int shard;
    private final ShardSessions sessions;
    private final ShardOutput output;
    private final BrokerCounters counters;
    private int maxQueued;
    private long maxQueuedBytes;
    /** {@code --queue-qos0-messages}: a QoS 0 message for a persistent session whose client is away is queued. */
    private boolean queueQos0;
    private final SharedMessage.Pool pool;
    private final PublishWriter writer;
    private final EventClock clock;
    private final WindowUpkeep upkeep;
    /** One-identifier arrays, shared by the messages they go with (bounded: past it, a message gets its own). */
    private final Int2ObjectHashMap<int[]> singleIds = new Int2ObjectHashMap<>();
    private final ShardJournal journal;
    private RouteOutput route;
    private SharedMessage eventMessage;
    /** The event's message number in the store (0: not stored). */
    private long eventMessageNumber;
    /**
     * The message number of the current target's copy in the store (0: not stored): the event's, plus the copy's
     * ordinal for a further copy to one session (a shared subscription besides its own, {@code
     * RouteOutput.copyOrdinal}), which is stored, kept and ended apart from the first.
     */
    private long copyNumber;
    /**
     * The current target needs a copy of its own: a further copy stored under a number of its own
     * ({@link #copyNumber}), or one its session's queue holds the event's copy for already (its own subscription and a
     * shared one, not stored, {@link #enqueue}), so that no queue names one copy twice: such a copy could never be taken
     * back whole, and 17 QoS 0 messages queued so kept a queue out of every plan of {@link AwayRoom} (review of 659e40df,
     * helper-153).
     */
    private boolean furtherCopy;
    /** The QoS the event's message was published with. */
    private int messageQos;
    /**
     * What this event's last {@link #reclaim} found it could take back from sessions away, when that was too little:
     * its other targets look again only for less (one message to 10,000 subscribers with the share full would
     * otherwise search 10,000 times); -1 while none looked, or since something was taken back.
     */
    private long roomAway = -1;
    /** Which queued messages of sessions away a reclaim takes back. */
    private final AwayRoom awayRoom = new AwayRoom();
    /** This event looked through sessions away for room to take back. */
    private boolean lookedAway;
    /** Connected clients that hold messages in flight and acknowledge none, ended when others find no room. */
    private final StalledClients stalled;

    /**
     * @param pool   the shard's copies, and its share of --max-message-memory.
     * @param writer the shard's encoder, shared with {@code upkeep}.
     * @param clock  the clock of the event being handled, shared with {@code upkeep}.
     * @param upkeep where a message goes in flight, is sent from, and leaves the window.
     * @param stalled what ends a stalled client's connection and session when a connected client is refused a copy.
     */
    MessageDelivery(final int shard, final ShardSessions sessions, final ShardOutput output,
        final BrokerCounters counters, final SharedMessage.Pool pool, final PublishWriter writer,
        final EventClock clock, final WindowUpkeep upkeep, final ShardJournal journal, final StalledClients stalled)
    {
        this.stalled = stalled;
        this.journal = journal;
        this.shard = shard;
        this.pool = pool;
        this.writer = writer;
        this.clock = clock;
        this.upkeep = upkeep;
        this.sessions = sessions;
        this.output = output;
        this.counters = counters;
    }

    /**
     * The event being handled: its routing output (its clock, {@link EventClock}, is reset by the shard).
     */
    void event(final RouteOutput route)
    {
        this.route = route;
        if (lookedAway)
        {
            lookedAway = false;
            sessions.lookFurther(); // the next event that takes room back looks at the next sessions away
        }
        roomAway = -1;
    }

    /**
     * Sends the retained messages a SUBSCRIBE brought, with its Subscription Identifier and RETAIN set
     * [MQTT-3.3.1-8].
     */
    void retained(final IngressEvent event, final DeliverySession session)
    {
        final int[] ids = event.subscriptionId > 0 ? subscriptionIds(event.subscriptionId) : null;
        eventMessageNumber = 0; // retained messages sent on SUBSCRIBE are not stored for the session
        copyNumber = 0;
        furtherCopy = false;
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
                if (RetainedDrains.valid(event.drainSlot))
                {
                    // a part paced by what its connection owes: never shed for lagging, its agent says how it reads
                    output.sendWatchedEncoded(session.connectionId, writer, written, event.drainSlot);
                }
                else
                {
                    output.sendEncoded(session.connectionId, writer, written, !writer.assignedAlias());
                }
            }
            else
            {
                deliverReliably(session, qos, true, ids, 0);
            }
        }
        releaseEventMessage();
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
                expiry < 0 ? Message.NEVER : clock.nowMs() + expiry * 1000);
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
            // live, RETAIN is 0 unless the subscription keeps it as published [MQTT-3.3.1-12]: 5.0, and another
            // broker's 3.1.1 bridge; any other 3.1.1 client gets 0 [MQTT-3.3.1-9], whatever a 5.0 connection of its
            // session subscribed with
            final boolean retain = event.retain && route.targetRetainAsPublished(i) &&
                (session.version == MqttVersion.V5 || session.remoteBridge());
            final int[] ids = targetSubscriptionIds(i);
            final int group = route.targetGroup(i);
            copyNumber = eventMessageNumber == 0 ? 0 : eventMessageNumber + route.copyOrdinal(i);
            furtherCopy = copyNumber != eventMessageNumber;
            if (qos == 0)
            {
                if (session.isOnline())
                {
                    sendLive(session, 0, retain, 0, ids); // after any queued for it: all went at its reconnect
                }
                else if (queueQos0 && session.persistent)
                {
                    enqueue(session, 0, retain, ids, group); // --queue-qos0-messages: sent when its client is back
                }
            }
            else if (session.canSendNow())
            {
                final SharedMessage message = retainedCopy(session, false, ids);
                if (null == message)
                {
                    dropForMemory(session, qos);
                    continue;
                }
                final int slot = upkeep.inflight(session, message, qos, retain, ids, group);
                if (!sendLive(session, qos, retain, session.inflightPacketId(slot), ids))
                {
                    upkeep.dropInflight(session, slot); // too large for this client: never in flight
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
            return output.sendEncoded(session.connectionId, writer, length, qos == 0 && !writer.assignedAlias());
        }
        final int variant = writer.variant(session.version, qos, retain);
        if (writer.variantLength(variant) > session.maxPacketSize ||
            writer.variantLength(variant) > writer.maxOutboundLength())
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
            payloadOffset, payloadLength, expiresAtMs, clock.nowMs());
    }

    /**
     * @param ids the Subscription Identifiers its holder keeps with it: an array of its own when there are several
     *            (up to {@code RouteOutput.MAX_ID_INTS}), counted with the copy, so that overlapping subscriptions
     *            with identifiers cannot make queued messages hold memory no bound sees.
     * @return the event's message as a kept copy with one more reference, as {@link #retainedCopy(boolean)}, for an
     * entry of {@code session}'s window or queue (charged {@code SharedMessage.Pool.entryCost}); null also when its
     * identifiers do not fit, or when a connected session, or the connected sessions of its client's address together,
     * hold as much as the share has free ({@link DeliverySession#fairIn}; sessions away keep within three quarters of
     * it together); a client that holds more and acknowledges nothing may then give way ({@link StalledClients}).
     */
    private SharedMessage retainedCopy(final DeliverySession session, final boolean offline, final int[] ids)
    {
        final long bytes = SharedMessage.Pool.idsCost(ids); // 0 for none, or one: that array is shared
        if (!offline)
        {
            final int length = writer.keptLength();
            final long need = (needsCopy() ? length : 0) + bytes;
            if (!session.fairIn(pool, length) || need > 0 && !pool.hasRoomFor((int)need))
            {
                final long wanted = session.roomWanted(pool, (int)(length + bytes));
                if (wanted > 0)
                {
                    reclaim(wanted);
                }
                if (!session.fairIn(pool, length) || need > 0 && !pool.hasRoomFor((int)need))
                {
                    // it holds its part, or finds no room: a client that holds more and acknowledges nothing gives way
                    stalled.refused(session, clock.nowMs());
                    return null;
                }
            }
        }
        final SharedMessage message = retainedCopy(offline);
        if (null == message)
        {
            return null;
        }
        if (bytes > 0 && !(offline ? pool.hasRoomOffline((int)bytes) : pool.hasRoomFor((int)bytes)))
        {
            pool.release(message);
            return null;
        }
        pool.charge(message, SharedMessage.Pool.entryCost(ids)); // the entry that will hold it, and its identifiers
        return message;
    }

    /**
     * @return whether the current target's message needs a copy of its own: the event has none yet, or it is a further
     * copy to one session ({@link #furtherCopy}).
     */
    private boolean needsCopy()
    {
        return furtherCopy || null == eventMessage;
    }

    /**
     * A connected session that holds little found too little of the shard's share of --max-message-memory free for
     * the next message ({@link DeliverySession#roomWanted}: {@code wanted} bytes more): sessions away give room back,
     * their newest queued messages first, as {@link #wentAway} drops them (counted there and as taken back, their
     * records ended), as {@link AwayRoom} plans it; nothing when the plan frees less than wanted (a device away lost its
     * messages to a message that was dropped all the same, reviews of 52577d81 and 3b157a37, helpers 149 and 150). A
     * client that is here comes before messages kept for clients that are not: otherwise one host that left sessions
     * away with their queues at the three quarters they may keep, then connected subscribers that never acknowledge,
     * held the whole share and another address's subscriber got none of its messages (review of 1aa3541, helper-145).
     * Only copies the sessions away hold alone are dropped, from each of them, so each frees what it held (a copy
     * shared with a connected client or a restored window was lost for nothing, review of 1c247325, helper-148); what
     * is in flight to a session away stays, for its client to resume [MQTT-4.4.0-1].
     */
    private void reclaim(final long wanted)
    {
        if (roomAway >= 0 && wanted > roomAway)
        {
            return; // this event looked already, and found less
        }
        lookedAway = true;
        final long room = awayRoom.plan(sessions, wanted, clock.nowMs());
        if (room < wanted)
        {
            roomAway = room;
            awayRoom.clear();
            return; // dropping what there is would not make room enough: nothing is lost for nothing
        }
        roomAway = -1;
        final long freeBefore = pool.freeBytes();
        for (int d = 0; d < awayRoom.drops(); d++) // each session's in the order planned: from its newest down
        {
            dropQueued(awayRoom.dropSession(d), awayRoom.dropPlace(d));
            counters.increment(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        }
        awayRoom.clear();
        assert pool.freeBytes() - freeBefore == room : "planned to free " + room + ", freed " +
            (pool.freeBytes() - freeBefore);
    }

    /**
     * Drops the message a session queued {@code i}th from the oldest for want of message memory: counted, its record
     * ended, its copy freed unless another holder keeps it.
     */
    private void dropQueued(final DeliverySession session, final int i)
    {
        final SharedMessage message = session.queuedMessage(i);
        final int qos = session.queuedQos(i);
        session.removeQueued(i);
        journal.done(session.persistenceKey, message.messageNumber(), qos);
        pool.release(message);
        counters.increment(BrokerCounters.MESSAGE_MEMORY_DROPPED);
    }

    /**
     * @return the event's message as a kept copy with one more reference (copied once per event); null when a copy
     * would take the shard past its share of --max-message-memory (for a session whose client is away: past three
     * quarters of it, or a copy made already while the shard holds more).
     */
    private SharedMessage retainedCopy(final boolean offline)
    {
        if (furtherCopy)
        {
            // a further copy of the event's message to one session (its own and a shared subscription): a copy of its
            // own, stored (when it is) under a number of its own, so its ends (acknowledged, too large, expired,
            // dropped at a move or when its client went) end its record alone
            if (!(offline ? pool.hasRoomOffline(writer.keptLength()) : pool.hasRoomFor(writer.keptLength())))
            {
                return null;
            }
            final SharedMessage further = writer.copy(pool, messageQos);
            further.messageNumber(copyNumber);
            further.retain();
            return further;
        }
        if (null == eventMessage)
        {
            if (!(offline ? pool.hasRoomOffline(writer.keptLength()) : pool.hasRoomFor(writer.keptLength())))
            {
                return null;
            }
            eventMessage = writer.copy(pool, messageQos);
            eventMessage.messageNumber(eventMessageNumber);
            eventMessage.retain(); // the event's own reference: a holder that lets go never recycles it mid-event
        }
        else if (offline && !pool.keepsOffline())
        {
            return null; // made for a connected client: one away holds it only within the three quarters
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
            final SharedMessage message = retainedCopy(session, false, ids);
            if (null == message)
            {
                dropForMemory(session, qos);
                return;
            }
            final int slot = upkeep.inflight(session, message, qos, retain, ids, group);
            if (!upkeep.sendPublish(session, slot, false))
            {
                upkeep.dropInflight(session, slot);
            }
            return;
        }
        if (!session.isOnline() && !session.persistent)
        {
            return; // a clean session ends with its connection
        }
        enqueue(session, qos, retain, ids, group);
    }

    /**
     * Queues the event's message for a session whose window is full or whose client is away, within
     * {@code --max-queued}, {@code --max-queued-bytes} and its shard's share of message memory (else dropped,
     * counted, and its record ended).
     */
    private void enqueue(final DeliverySession session, final int qos, final boolean retain, final int[] ids,
        final int group)
    {
        if (session.queueSize() >= maxQueued)
        {
            counters.increment(BrokerCounters.QUEUE_FULL_DROPPED);
            journal.done(session.persistenceKey, copyNumber, qos);
            return;
        }
        if (session.queuedBytes() + writer.keptLength() > maxQueuedBytes)
        {
            // before the copy: room is not taken back from sessions away for a message its own queue would drop
            counters.increment(BrokerCounters.QUEUED_BYTES_DROPPED);
            journal.done(session.persistenceKey, copyNumber, qos);
            return;
        }
        if (null != eventMessage && session.queueSize() > 0 &&
            eventMessage == session.queuedMessage(session.queueSize() - 1))
        {
            furtherCopy = true; // the event's copy is its newest already: this target gets one of its own
        }
        final SharedMessage message = retainedCopy(session, !session.isOnline(), ids);
        if (null == message)
        {
            dropForMemory(session, qos);
            return;
        }
        if (session.isOnline())
        {
            counters.increment(BrokerCounters.INFLIGHT_FULL_QUEUED);
        }
        else
        {
            sessions.queuedAway(session);
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
        journal.done(session.persistenceKey, copyNumber, qos);
    }

    /**
     * A persistent session's client went away: while the shard holds more than the three quarters of its share that
     * sessions away may keep, the session's newest queued messages are dropped (counted, their records with them), as
     * they would have been had they come now, down to the first one another session holds too (dropping that frees
     * nothing); its window stays, for its client to resume [MQTT-4.4.0-1]. Without this, a subscriber that stopped
     * acknowledging (its queue may take the whole share while it is connected) and then left would hold the last
     * quarter for as long as its session lives.
     */
    void wentAway(final DeliverySession session)
    {
        while (session.queueSize() > 0 && !pool.keepsOffline())
        {
            if (session.queuedMessage(session.queueSize() - 1).isShared())
            {
                break; // another session holds it too: dropping it here would free nothing, only lose it
            }
            dropQueued(session, session.queueSize() - 1);
        }
        if (session.queueSize() > 0)
        {
            sessions.queuedAway(session);
        }
    }

    /**
     * New bounds of every session's queue (a reload), from the next message on: what is queued beyond them stays
     * queued and drains as it would.
     *
     * @param queueQos0 whether QoS 0 messages for a persistent session whose client is away are queued too.
     */
    void queueLimits(final int maxQueued, final long maxQueuedBytes, final boolean queueQos0)
    {
        this.maxQueued = maxQueued;
        this.maxQueuedBytes = maxQueuedBytes;
        this.queueQos0 = queueQos0;
    }
}
