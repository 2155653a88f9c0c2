package io.ringmq.pipeline.delivery;

/**
 * A delivery shard's half of one session: the connection it is bound to, packet identifiers ({@link PacketIds}), the
 * outbound in-flight window ({@link InflightWindow}) and the bounded queue behind it ({@link SessionQueue}). An idle
 * session holds neither: each is made when its first message needs it, grows as needed, and is given back once it is
 * empty and quiet (at the end of the connection, or when a sweep finds it unused since the sweep before), so a
 * steady stream of messages never makes and drops one per message. Owned by one shard at a time; it moves, whole, to
 * another shard when its client reconnects through another I/O agent.
 */
final class DeliverySession
{
    /** Outbound QoS states of an in-flight message. */
    static final int AWAIT_PUBACK = 1;
    static final int AWAIT_PUBREC = 2;
    static final int AWAIT_PUBCOMP = 3;

    private static final int[] NO_SLOTS = new int[0];

    final int id;
    final boolean persistent;
    long connectionId = -1;
    int version;
    /** {@link #bridge}: its connection is another broker's 3.1.1 bridge (protocol level 0x84). */
    static final byte REMOTE_BRIDGE = 1;
    /** {@link #bridge}: its connection is this broker's own bridge, on its bridge listener. */
    static final byte OWN_BRIDGE = 2;
    /**
     * Whether its connection is a bridge, and whose: {@link #REMOTE_BRIDGE}, {@link #OWN_BRIDGE}, or 0 (one byte, where
     * two flags would grow every idle connection's heap by 8 bytes, IdleConnectionHeapTest).
     */
    byte bridge;
    /** The client's Maximum Packet Size (MQTT 5.0 CONNECT). */
    int maxPacketSize = Integer.MAX_VALUE;
    /** Its connection's listener's mount point in UTF-8 (null: none): taken off every topic sent to it. */
    byte[] mountPoint;
    /** Its key in the store, when it is persistent and persistence is on; else 0. */
    long persistenceKey;
    /** While moving between shards: the connection id of the CONNECT that moves it. */
    long handoverTag = -1;
    /** The most slots its window may have: --max-inflight, or more for what recovery restored. */
    private int windowSlots;
    /** The in-flight window: the broker's --max-inflight, or the client's smaller Receive Maximum [MQTT-3.3.4-7]. */
    private int windowLimit;
    private long maxInflightBytes;
    /**
     * Its outbound packet identifiers (recovery puts restored ones back through them, {@link RestoredCopies}); made
     * with its first QoS 1 or 2 message, so a session that never gets one (most idle ones) holds none.
     */
    private PacketIds packetIds;
    /** A message went in flight or into the queue since the last sweep: keep what it used. */
    private boolean lately;
    /** Outbound topic aliases of the current connection (5.0), only while its client allows some. */
    private OutboundTopicAliases aliases;
    /** Null while nothing is (or lately was) in flight. */
    private InflightWindow window;
    /** Null while nothing waits (or lately waited). */
    private SessionQueue queue;
    /**
     * What the sessions of its client's address hold together in this shard, charged with each entry of its window
     * and queue as it comes and goes; null while its address is not limited, or its client is away with nothing in
     * flight.
     */
    private AddressHolds.Hold addressHold;
    /**
     * Its client is away, and {@link #addressHold} is the address it left from: only its window's entries are charged
     * there (they wait for that client to resume them), not what is queued while it is away.
     */
    private boolean away;

    /** Where its free window is published for routing's least-loaded shared subscriptions. */
    private final io.ringmq.pipeline.SessionWindows windows;

    /**
     * @param maxInflight the most messages it may have in flight (its window is made only when first used).
     */
    DeliverySession(final int id, final boolean persistent, final int maxInflight,
        final io.ringmq.pipeline.SessionWindows windows)
    {
        this.id = id;
        this.windows = windows;
        this.persistent = persistent;
        this.windowSlots = maxInflight;
        windowLimit = maxInflight;
        windows.free(id, maxInflight);
    }

    /**
     * @return whether its connection is another broker's 3.1.1 bridge: its live messages keep RETAIN as its
     * subscriptions' Retain As Published says, where any other 3.1.1 client gets 0 [MQTT-3.3.1-9].
     */
    boolean remoteBridge()
    {
        return REMOTE_BRIDGE == bridge;
    }

    /**
     * @return whether its connection is this broker's own bridge: its window waits for the remote broker, and it is
     * never ended as a stalled client ({@link StalledClients}).
     */
    boolean ownBridge()
    {
        return OWN_BRIDGE == bridge;
    }

    /**
     * Lets the window grow to {@code slots} (never shrinks it): the broker's own bridge takes as many in flight as it
     * asks for, whatever {@code --max-inflight}, so that a round trip through the remote broker does not cap it.
     * Before {@link #receiveMaximum}.
     */
    void widen(final int slots)
    {
        windowSlots = Math.max(windowSlots, Math.min(slots, 65_535));
    }

    /**
     * Applies the client's Receive Maximum of a new connection (65,535 when it sent none): the broker never has more
     * QoS 1 and 2 PUBLISHes unacknowledged toward it [MQTT-3.3.4-9]. Messages already in flight stay.
     */
    void receiveMaximum(final int receiveMaximum)
    {
        windowLimit = Math.min(windowSlots, receiveMaximum);
        windows.free(id, freeWindow());
    }

    /**
     * Applies the client's Topic Alias Maximum of a new connection (0: none, and no aliases are kept); the old
     * connection's mappings are gone either way [MQTT-3.3.2-7].
     */
    void topicAliasMaximum(final int clientMaximum, final OutboundAliasBudget budget)
    {
        releaseAliases();
        if (clientMaximum > 0)
        {
            aliases = new OutboundTopicAliases(budget);
            aliases.reset(clientMaximum);
        }
    }

    /**
     * Its connection ended, or it leaves this shard: its outbound aliases go [MQTT-3.3.2-7], and what they kept is
     * given back to the shard that counted it.
     */
    void releaseAliases()
    {
        if (null != aliases)
        {
            aliases.release();
            aliases = null;
        }
    }

    /**
     * @return its outbound topic aliases, or null when its client allows none.
     */
    OutboundTopicAliases aliases()
    {
        return aliases;
    }

    boolean isOnline()
    {
        return connectionId >= 0;
    }

    /**
     * Binds it to its client's connection, counted with the other sessions of that client's address (leaving the
     * address it was counted with while away, if any).
     *
     * @param addressKey the client's address ({@code AddressKeys}), {@code AddressKeys.NONE} when not limited.
     */
    void bind(final long connectionId, final AddressHolds holds, final long addressKey)
    {
        unbind();
        countQueuedAway(-1); // its queue is a connected client's from now on
        this.connectionId = connectionId;
        addressHold = holds.join(addressKey);
        if (null != addressHold)
        {
            forEachInflight(addressHold::charge);
            forEachQueued(addressHold::charge);
        }
    }

    /**
     * Its connection was taken over, it moves to another shard, or it ends: it no longer counts with its address.
     */
    void unbind()
    {
        leaveConnection();
        if (null != addressHold)
        {
            forEachInflight(addressHold::discharge);
            if (!away)
            {
                forEachQueued(addressHold::discharge);
            }
            addressHold.leave();
            addressHold = null;
            away = false;
        }
    }

    /**
     * Its persistent session's client went away: what its window holds stays charged to the address it left from
     * until the session is resumed or ends, what it queues from now on is not. Otherwise one address that connected
     * persistent sessions in turn, each filling its window and leaving, held the whole share with no connection open
     * (review of c670a19; trimming those windows instead lost a returning client's unacknowledged messages).
     */
    void goAway()
    {
        leaveConnection();
        if (null == addressHold || away)
        {
            return;
        }
        forEachQueued(addressHold::discharge);
        if (0 == inflightCount())
        {
            addressHold.leave();
            addressHold = null;
        }
        else
        {
            away = true;
        }
    }

    /**
     * It is bound to no connection from now on: what it queues is a session away's ({@link SharedMessage#awayQueued}).
     */
    private void leaveConnection()
    {
        if (isOnline())
        {
            connectionId = -1;
            countQueuedAway(1);
        }
    }

    /**
     * Counts its queue entries as a session away's ({@code 1}), or no longer ({@code -1}), on the copies they name.
     */
    private void countQueuedAway(final int change)
    {
        for (int i = 0; i < queueSize(); i++)
        {
            queue.message(i).awayQueued += change;
        }
    }

    /**
     * @return what it is counted with: its client's address's hold; null while not limited, or away with nothing in
     * flight.
     */
    AddressHolds.Hold addressHold()
    {
        return addressHold;
    }

    /**
     * @return whether its client is away with what it has in flight charged to the address it left from.
     */
    boolean isAwayCharged()
    {
        return away;
    }

    /**
     * @return what the copies its window and queue hold alone count against the share: what ending the session frees
     * (a copy another holder keeps too frees only its entry).
     */
    long soleBytes()
    {
        long bytes = 0;
        for (int slot = 0; slot < windowCapacity(); slot++)
        {
            final SharedMessage message = window.message(slot);
            bytes += null == message ? 0 : message.isShared() ? SharedMessage.Pool.ENTRY_ALLOWANCE : message.cost();
        }
        for (int i = 0; i < queueSize(); i++)
        {
            final SharedMessage message = queue.message(i);
            bytes += message.isShared() ? SharedMessage.Pool.ENTRY_ALLOWANCE : message.cost();
        }
        return bytes;
    }

    private void forEachInflight(final java.util.function.Consumer<SharedMessage> action)
    {
        for (int slot = 0; slot < windowCapacity(); slot++)
        {
            final SharedMessage message = window.message(slot);
            if (null != message)
            {
                action.accept(message);
            }
        }
    }

    private void forEachQueued(final java.util.function.Consumer<SharedMessage> action)
    {
        for (int i = 0; i < queueSize(); i++)
        {
            action.accept(queue.message(i));
        }
    }

    /**
     * @return whether it may hold {@code length} more of the shard's share: it alone
     * ({@code SharedMessage.Pool.fairFor}), and the sessions of its client's address together
     * ({@code SharedMessage.Pool.fairForAddress}); or, while it holds nothing, below the share's last eighth whatever
     * its address holds. Without that, the devices behind one NAT that went away with messages in flight (which stay
     * charged to it for as long as their sessions live) made every QoS 1 message to their connected neighbours be
     * dropped: 12 devices with 4 KiB each in flight, 0 of 20 (review of 1aa3541). One host so holds up to seven
     * eighths of the share, one new session at a time.
     */
    boolean fairIn(final SharedMessage.Pool pool, final int length)
    {
        if (!pool.fairFor(heldBytes(), length))
        {
            return false;
        }
        return null == addressHold || pool.fairForAddress(addressHold.bytes(), length) ||
            0 == heldBytes() && pool.hasRoomBelowReserve(length);
    }

    /**
     * @return how many bytes more of the share must be free for it to take {@code length} more by {@link #fairIn}'s
     * rules and find room for a copy that long; 0 when as much is free already, 0 where its client's address is not
     * limited (loopback by default: a local client, trusted and not counted, takes nothing back, or 40 of them that
     * never acknowledge took every message 16 devices away had queued, review of 52577d81, helper-149), and 0 when
     * what its address holds would pass a quarter of the share with it, the part sessions away leave to connected
     * clients, or what every limited address holds (each copy once) would pass half of it: only a client that holds
     * less takes room back from sessions away ({@code MessageDelivery.reclaim}), so one host's connections that never
     * acknowledge take no more than that quarter of what sessions away keep, and connected clients of any number of
     * addresses leave sessions away at least half the share (of what they hold).
     */
    long roomWanted(final SharedMessage.Pool pool, final int length)
    {
        if (null == addressHold)
        {
            return 0; // an address that is not limited (loopback by default) is trusted, and so not counted
        }
        final long held = heldBytes();
        final long cost = length + SharedMessage.Pool.COPY_ALLOWANCE;
        final long holds = addressHold.bytes();
        if (holds + cost > pool.budgetBytes() >> 2 || addressHold.allAddressesBytes() + cost > pool.budgetBytes() >> 1)
        {
            return 0;
        }
        long wanted = 0 == held ? cost : held + cost; // Pool.fairFor, and Pool.hasRoomFor
        if (holds > 0)
        {
            wanted = Math.max(wanted, (holds + cost + 2) / 3); // Pool.fairForAddress: three times what is free
        }
        return Math.max(0, wanted - pool.freeBytes());
    }

    private void charge(final SharedMessage message)
    {
        if (null != addressHold)
        {
            addressHold.charge(message);
        }
    }

    private void discharge(final SharedMessage message)
    {
        if (null != addressHold)
        {
            addressHold.discharge(message);
        }
    }

    /**
     * A queue entry names {@code message}: charged to its client's address only while its client is connected, counted
     * on the copy as a session away's while it is not. Every queue entry comes and goes through here and
     * {@link #dischargeQueued}.
     */
    private void chargeQueued(final SharedMessage message)
    {
        if (!isOnline())
        {
            message.awayQueued++;
        }
        else if (null != addressHold && !away)
        {
            addressHold.charge(message);
        }
    }

    private void dischargeQueued(final SharedMessage message)
    {
        if (!isOnline())
        {
            message.awayQueued--;
        }
        else if (null != addressHold && !away)
        {
            addressHold.discharge(message);
        }
    }

    boolean canSendNow()
    {
        return isOnline() && queueSize() == 0 && hasInflightRoom();
    }

    boolean hasInflightRoom()
    {
        return inflightCount() < windowLimit && unsentCount() == 0 &&
            (0 == maxInflightBytes || null == window || window.isEmpty() || window.bytes() < maxInflightBytes);
    }

    /**
     * Applies {@code --max-inflight-bytes} to a new connection (Mosquitto's {@code max_inflight_bytes}): a message
     * goes in flight only while those in flight hold fewer bytes (one always may, however large).
     *
     * @param maxInflightBytes 0: no limit but the window's count.
     */
    void maxInflightBytes(final long maxInflightBytes)
    {
        this.maxInflightBytes = maxInflightBytes;
    }

    int windowLimit()
    {
        return windowLimit;
    }

    /**
     * Marks an in-flight message as not sent on the current connection (or as sent again).
     */
    void inflightUnsent(final int slot, final boolean unsent)
    {
        window.unsent(slot, unsent);
    }

    /**
     * @return the earliest in-flight slot not yet sent on this connection, when the client's Receive Maximum has
     * room for it; -1 otherwise.
     */
    int nextUnsent()
    {
        final int unsent = unsentCount();
        if (unsent == 0 || inflightCount() - unsent >= windowLimit)
        {
            return -1;
        }
        return window.earliestUnsent();
    }

    /**
     * @return room left in its in-flight window.
     */
    int freeWindow()
    {
        return Math.max(0, windowLimit - inflightCount());
    }

    /**
     * @return whether it has made its packet identifiers yet (for tests: an idle session holds none).
     */
    boolean hasPacketIds()
    {
        return null != packetIds;
    }

    /**
     * @return its outbound packet identifiers, made now if it had none.
     */
    PacketIds packetIds()
    {
        if (null == packetIds)
        {
            packetIds = new PacketIds();
        }
        return packetIds;
    }

    /**
     * Takes a free packet identifier and records the message as in flight (the caller has retained it).
     *
     * @return the window slot.
     */
    int addInflight(final SharedMessage message, final int qos, final boolean retain,
        final int[] subscriptionIds, final int group)
    {
        final int packetId = packetIds().take(window);
        if (null == window)
        {
            window = new InflightWindow(Math.min(InflightWindow.INITIAL_SLOTS, windowSlots));
        }
        lately = true;
        final int slot = window.add(message, packetId, qos, qos == 1 ? AWAIT_PUBACK : AWAIT_PUBREC, retain,
            subscriptionIds, group, windowSlots);
        charge(message);
        windows.free(id, freeWindow());
        return slot;
    }

    /**
     * @return which copy has been in flight to it the longest ({@link SharedMessage#origin}), or 0 while none is.
     */
    long earliestInflight()
    {
        final int slot = null == window ? -1 : window.earliest();
        return slot < 0 ? 0 : window.message(slot).origin();
    }

    /**
     * @return the window slot of a packet identifier, or -1.
     */
    int findInflight(final int packetId)
    {
        return null == window ? -1 : window.find(packetId);
    }

    SharedMessage inflightMessage(final int slot)
    {
        return window.message(slot);
    }

    int inflightPacketId(final int slot)
    {
        return window.packetId(slot);
    }

    int inflightQos(final int slot)
    {
        return window.qos(slot);
    }

    int inflightState(final int slot)
    {
        return window.state(slot);
    }

    void inflightState(final int slot, final int state)
    {
        window.state(slot, state);
    }

    boolean inflightRetain(final int slot)
    {
        return window.retain(slot);
    }

    /**
     * @return the shared subscription group it came through, 0 for none.
     */
    int inflightGroup(final int slot)
    {
        return window.group(slot);
    }

    /**
     * @return the in-flight window's slots (free or not), for a walk over them; 0 while it has no window.
     */
    int windowCapacity()
    {
        return null == window ? 0 : window.capacity();
    }

    /**
     * @return the message queued {@code i}th from the oldest.
     */
    SharedMessage queuedMessage(final int i)
    {
        return queue.message(i);
    }

    int queuedQos(final int i)
    {
        return queue.qos(i);
    }

    int queuedGroup(final int i)
    {
        return queue.group(i);
    }

    /**
     * @return the Subscription Identifiers it goes with, or null for none.
     */
    int[] inflightSubscriptionIds(final int slot)
    {
        return window.subscriptionIds(slot);
    }

    /**
     * @return the message the slot held, which the caller releases.
     */
    SharedMessage removeInflight(final int slot)
    {
        final SharedMessage message = window.remove(slot);
        discharge(message);
        windows.free(id, freeWindow());
        return message;
    }

    /**
     * @return the window's slots in the order their messages were first sent, for a resend on reconnect
     * [MQTT-4.4.0-1]; one array per reconnect.
     */
    int[] inflightInOrder()
    {
        return null == window ? NO_SLOTS : window.inOrder();
    }

    /**
     * @return how many QoS 0 messages its queue holds ({@code --queue-qos0-messages}: only while its client is away).
     */
    int queuedQos0()
    {
        return null == queue ? 0 : queue.qos0Count();
    }

    /**
     * Takes every queued QoS 0 message out, oldest first; its QoS 1 and 2 messages keep their places.
     */
    void removeQueuedQos0(final SessionQueue.Qos0Sink sink)
    {
        if (null != queue)
        {
            final boolean plain = isOnline() && null == addressHold;
            queue.removeQos0(plain ? sink : (message, retain, ids) ->
            {
                dischargeQueued(message);
                sink.take(message, retain, ids);
            });
        }
    }

    int queueSize()
    {
        return null == queue ? 0 : queue.size();
    }

    /**
     * @return whether every message it queues came through a shared subscription (none queued: false).
     */
    boolean queuesOnlyThroughGroups()
    {
        return null != queue && queue.size() > 0 && queue.groupedCount() == queue.size();
    }

    long queuedBytes()
    {
        return null == queue ? 0 : queue.bytes();
    }

    /**
     * @return the bytes of the messages its window and queue hold (each counted whole, shared or not).
     */
    long heldBytes()
    {
        return queuedBytes() + (null == window ? 0 : window.bytes());
    }

    /**
     * Queues a message (the caller has retained it).
     */
    void enqueue(final SharedMessage message, final int qos, final boolean retain, final int[] subscriptionIds,
        final int group)
    {
        if (null == queue)
        {
            queue = new SessionQueue();
        }
        lately = true;
        queue.add(message, qos, retain, subscriptionIds, group);
        chargeQueued(message);
    }

    SharedMessage peekMessage()
    {
        return queue.message(0);
    }

    int peekQos()
    {
        return queue.qos(0);
    }

    boolean peekRetain()
    {
        return queue.retain(0);
    }

    int[] queuedSubscriptionIds(final int i)
    {
        return queue.subscriptionIds(i);
    }

    int[] peekSubscriptionIds()
    {
        return queue.subscriptionIds(0);
    }

    int peekGroup()
    {
        return queue.group(0);
    }

    /**
     * Removes the oldest queued message; its reference passes to the caller.
     */
    void dequeue()
    {
        dischargeQueued(queue.message(0));
        queue.remove();
    }

    /**
     * Puts another copy of the same message in an occupied window slot (the caller moves the references).
     */
    void replaceInflight(final int slot, final SharedMessage message)
    {
        discharge(window.message(slot));
        window.replaceMessage(slot, message);
        charge(message);
    }

    /**
     * Puts another copy of the same message {@code i}th in the queue (the caller moves the references).
     */
    void replaceQueued(final int i, final SharedMessage message)
    {
        dischargeQueued(queue.message(i));
        queue.replaceMessage(i, message);
        chargeQueued(message);
    }

    /**
     * Removes the newest queued message; the caller has what it needs of it (its reference is not released here).
     */
    void removeNewestQueued()
    {
        removeQueued(queue.size() - 1);
    }

    /**
     * Removes the message queued {@code i}th from the oldest (those newer keep their order); the caller has what it
     * needs of it (its reference is not released here).
     */
    void removeQueued(final int i)
    {
        dischargeQueued(queue.message(i));
        queue.removeAt(i);
    }

    /**
     * Drops every outbound message: the session ends, or its id is reused.
     */
    void clear(final SharedMessage.Pool pool)
    {
        for (int slot = 0; slot < windowCapacity(); slot++)
        {
            if (null != window.message(slot))
            {
                pool.release(removeInflight(slot));
            }
        }
        while (queueSize() > 0)
        {
            final SharedMessage message = peekMessage();
            dequeue();
            pool.release(message);
        }
        window = null;
        queue = null;
        unbind();
    }

    /**
     * Gives back its window and queue where they are empty: its connection ended, or (with {@code quietOnly}) a
     * sweep found it; a sweep gives back only what was not used since the sweep before.
     *
     * @return whether it gave back anything.
     */
    boolean trim(final boolean quietOnly)
    {
        if (quietOnly && lately)
        {
            lately = false;
            return false;
        }
        boolean released = false;
        if (null != window && window.isEmpty())
        {
            window = null;
            released = true;
        }
        if (null != queue && queue.size() == 0)
        {
            queue = null;
            released = true;
        }
        return released;
    }

    private int inflightCount()
    {
        return null == window ? 0 : window.count();
    }

    private int unsentCount()
    {
        return null == window ? 0 : window.unsentCount();
    }
}
