package io.ringmq.pipeline;

import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.RecordVisitor;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeFlyweight;
import io.ringmq.protocol.TopicFilterList;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.ExpandableDirectByteBuffer;

/**
 * The persistence stage, between routing and the delivery shards: what must outlive a connection goes into the
 * {@link DurableStore} here, as {@link Records} lays it out: persistent sessions (their will, expiry, state), their
 * subscriptions, the QoS 1 and 2 messages routed to them, the QoS 2 PUBLISHes they sent whose PUBREL is awaited, and
 * retained messages. Messages to clean sessions, and QoS 0, never touch it.
 * <p>
 * Group commit: every event of a poll goes into one write batch, committed in {@link #commitBatch()}, before the
 * poller lets the shards see the batch; so a PUBACK or PUBREC for a persisted message leaves only once it is in the
 * store's write-ahead log (and fsynced, in {@code --durability sync}). A commit that fails marks every event of its
 * batch failed: their connections are closed and nothing is acknowledged.
 * <p>
 * The delivery shards write the rest of a message's life (its QoS 2 exchange, its end) through their own
 * {@link io.ringmq.pipeline.persistence.ShardJournal}, keyed by the session key and message number this stage puts
 * in the slot ({@link IngressEvent#sessionKey}, {@link IngressEvent#messageNumber}).
 */
final class PersistenceStage implements Stage
{
    /** What this stage knows of one persistent session. */
    private static final class Known
    {
        final long key;
        long expirySeconds;
        boolean hasWill;
        long willDelaySeconds;
        long disconnectedAtMs;

        Known(final long key)
        {
            this.key = key;
        }
    }

    private final BrokerContext context;
    private final BrokerCounters counters;
    private final MessageLog[] routeLogs;
    private final DurableStore store;
    private final StoreWriter writer;
    private final RouteOutput route = new RouteOutput();
    /** Persistent sessions by session id (an array: every QoS 1/2 fan-out target is looked up here). */
    private Known[] sessions = new Known[1024];
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(256);
    private final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(1024);
    private final ExpandableArrayBuffer scratch = new ExpandableArrayBuffer(256);
    private final IngressEvent[] batch;
    private final PersistedMessages messages;
    private final FailedCommits failedCommits;
    /** Sessions ended since the last successful commit. */
    private final org.agrona.collections.LongArrayList ended = new org.agrona.collections.LongArrayList();
    private final java.util.function.IntToLongFunction keys = this::keyOf;
    private long epoch;
    private final ExpandableArrayBuffer willScratch = new ExpandableArrayBuffer(64);
    private int batchSize;
    private int nextSession;
    private int nextMessage;
    private long stallsSeen;
    private long aliveWrittenMs;
    /** How often the alive-at record is written. */
    static final long ALIVE_INTERVAL_MS = 1_000;
    /** How often the sweep of expired retained records takes a step, and the most records one step reads. */
    static final long RETAINED_SWEEP_INTERVAL_MS = 25;
    static final int RETAINED_SWEEP_STEP = 256;
    private static final byte[] RETAINED_FIRST = {Records.RETAINED};
    private static final byte[] RETAINED_END = {Records.RETAINED + 1};
    private final RecordVisitor retainedSweeper = this::sweepRetained;
    /** Where the sweep's next step starts reading. */
    private byte[] sweepFrom = RETAINED_FIRST;
    private long sweptAtMs;
    private long sweepNowMs;
    /**
     * Retained records with an expiry written since start or since the pass before began, or found by that pass or
     * by recovery: while there are none, no sweep runs.
     */
    private boolean retainedExpiring;
    /** Whether the pass under way has seen or written a retained record with an expiry. */
    private boolean expiringThisPass;

    PersistenceStage(final BrokerContext context, final BrokerCounters counters, final MessageLog[] routeLogs,
        final DurableStore store, final FailedCommits failedCommits)
    {
        this.failedCommits = failedCommits;
        this.context = context;
        this.counters = counters;
        this.routeLogs = routeLogs;
        this.store = store;
        this.writer = store.writer(true);
        this.batch = new IngressEvent[context.threads().stageBatchLimit()];
        this.messages = new PersistedMessages(writer);
    }

    /**
     * @param epoch this start's epoch (one more than the last's): the high half of every key it makes.
     */
    void epoch(final long epoch)
    {
        this.epoch = epoch;
    }

    /**
     * Recovery: a session restored before any stage runs is known here under its stored key.
     */
    void restored(final int sessionId, final long sessionKey, final long expirySeconds, final boolean hasWill,
        final long willDelaySeconds, final long disconnectedAtMs)
    {
        final Known known = new Known(sessionKey);
        known.disconnectedAtMs = disconnectedAtMs;
        known.expirySeconds = expirySeconds;
        known.hasWill = hasWill;
        known.willDelaySeconds = willDelaySeconds;
        put(sessionId, known);
    }

    /**
     * A session key or message number counter went round: later ones are made under a new epoch, written with this
     * batch, so none is ever made twice.
     */
    private void newEpoch()
    {
        epoch++;
        key.putLong(16, epoch);
        writer.put(key, 0, Records.epochKey(key), key, 16, 8);
    }

    /**
     * @return the stored key of a persistent session, or 0.
     */
    private long keyOf(final int sessionId)
    {
        final Known known = get(sessionId);
        return null == known ? 0 : known.key;
    }

    private Known get(final int sessionId)
    {
        return sessionId >= 0 && sessionId < sessions.length ? sessions[sessionId] : null;
    }

    private void put(final int sessionId, final Known known)
    {
        if (sessionId >= sessions.length)
        {
            sessions = java.util.Arrays.copyOf(sessions, Math.max(sessions.length * 2, sessionId + 1));
        }
        sessions[sessionId] = known;
    }

    private Known remove(final int sessionId)
    {
        final Known known = get(sessionId);
        if (null != known)
        {
            sessions[sessionId] = null;
        }
        return known;
    }

    public boolean onEvent(final IngressEvent event)
    {
        batch[batchSize++] = event; // the poller hands at most the batch limit per poll
        // the common case first: a PUBLISH routed to nobody (no output at all), not retained, below QoS 2, keeps
        // nothing (routing's reset left the slot's session key and message number at 0)
        if (event.routeLogEnd < 0 && event.kind == IngressEvent.PACKET && event.packetType == PacketType.PUBLISH &&
            !event.retain && event.qos < 2)
        {
            return true;
        }
        route.wrap(routeLogs, event);
        if (event.kind == IngressEvent.PACKET)
        {
            onPacket(event);
        }
        else if (event.kind != IngressEvent.TICK)
        {
            onConnectionEnd(event);
        }
        else if (event.messageOffset != IngressEvent.NONE && event.sessionId != IngressEvent.NONE)
        {
            willPublished(event.sessionId);
        }
        // the broker's own $SYS messages are not kept (they are made anew); a tick's will or re-dispatch is
        if (event.routed && !(event.kind == IngressEvent.PACKET && event.connectionId == IngressEvent.SYSTEM_CONNECTION))
        {
            if (event.targetCount > 0 && event.qos > 0) // a target's QoS is at most the message's
            {
                if (Integer.toUnsignedLong(nextMessage) + event.targetCount > 0xFFFF_FFFFL)
                {
                    nextMessage = 0;
                    newEpoch(); // the counter would go round within this message's copies
                }
                final long number = epoch << 32 | Integer.toUnsignedLong(nextMessage + 1);
                final int copies = messages.forTargets(event, route, keys, number);
                event.messageNumber = copies > 0 ? number : 0;
                nextMessage += copies;
            }
            if (event.retain && event.retainKept && messages.retained(event, route))
            {
                expiringRetained();
            }
        }
        discarded(event); // last: this event may have written for a session it ends
        return true;
    }

    /**
     * A failed slot still ends the sessions routing discarded with it.
     */
    public void onFailed(final IngressEvent event)
    {
        if (event.routeLogEnd >= 0)
        {
            route.wrap(routeLogs, event);
            discarded(event);
        }
    }

    /**
     * Sessions that ended: every record of theirs goes, in one range delete.
     */
    private void discarded(final IngressEvent event)
    {
        for (int i = 0; i < event.discardedCount; i++)
        {
            final Known gone = remove(route.discarded(i));
            if (null != gone)
            {
                endSession(gone.key);
                ended.addLong(gone.key); // until committed: a failed batch must not bring the session back
            }
        }
    }

    private void endSession(final long sessionKey)
    {
        Records.sessionRange(key, sessionKey);
        writer.deleteRange(key, 0, Records.SESSION_PREFIX_LENGTH, key, Records.SESSION_PREFIX_LENGTH,
            Records.SESSION_PREFIX_LENGTH);
    }

    public void commitBatch()
    {
        final int size = batchSize;
        batchSize = 0;
        try
        {
            if (!writer.isEmpty())
            {
                writer.commit();
                counters.increment(BrokerCounters.PERSISTENCE_COMMITS);
            }
            ended.clear();
        }
        catch (final RuntimeException ex)
        {
            counters.increment(BrokerCounters.PERSISTENCE_WRITE_FAILED);
            for (int i = 0; i < size; i++)
            {
                final IngressEvent event = batch[i];
                event.failed = true; // nothing that depended on the batch is acknowledged; connections close
                if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.PUBLISH && event.qos == 2 &&
                    event.routed && event.sessionId != IngressEvent.NONE)
                {
                    failedCommits.qos2Publish(event.sessionId, event.packetId); // routing must route a resend
                }
            }
            for (int i = 0; i < ended.size(); i++)
            {
                endSession(ended.getLong(i)); // the failed batch was dropped: the next one ends them again
            }
            throw ex; // counted and logged once per cause by the stage's agent
        }
        finally
        {
            java.util.Arrays.fill(batch, 0, size, null);
        }
    }

    /**
     * Once a second, records that the broker is alive: after a crash, sessions connected then count their expiry
     * from about when it happened, not from the restart.
     */
    public int doDutyCycle()
    {
        final long nowMs = System.currentTimeMillis();
        if (retainedExpiring && nowMs - sweptAtMs >= RETAINED_SWEEP_INTERVAL_MS)
        {
            sweptAtMs = nowMs;
            sweepRetainedStep(nowMs);
        }
        if (nowMs - aliveWrittenMs < ALIVE_INTERVAL_MS)
        {
            return 0;
        }
        aliveWrittenMs = nowMs;
        key.putLong(16, nowMs);
        writer.put(key, 0, Records.aliveKey(key), key, 16, 8);
        writer.commit(); // the batch of the last poll was committed already: this is its own
        return 0; // bookkeeping, not work an idle strategy should see
    }

    /**
     * A retained record with an expiry was written, or restored: the sweep runs until a whole pass finds none.
     */
    void expiringRetained()
    {
        retainedExpiring = true;
        expiringThisPass = true;
    }

    /**
     * One step of the sweep of retained records whose Message Expiry Interval has passed: the routing stage never
     * sends them again [MQTT-3.3.2-5] and lets go of them at its bounds, so their records go too, rather than stay on
     * disk until the next start. A step reads up to {@value #RETAINED_SWEEP_STEP} records in key order from where the
     * last one stopped, every {@value #RETAINED_SWEEP_INTERVAL_MS} ms (0.3 ms a step on RocksDB with 200,000 retained
     * records, on the 2-core machine: about 10,000 records a second, 1.3 % of the thread); only this stage
     * writes retained records, so what it reads is what it last wrote.
     */
    private void sweepRetainedStep(final long nowMs)
    {
        sweepNowMs = nowMs;
        final int read = store.visit(sweepFrom, RETAINED_END, RETAINED_SWEEP_STEP, retainedSweeper);
        if (read < RETAINED_SWEEP_STEP)
        {
            sweepFrom = RETAINED_FIRST; // a pass is over
            retainedExpiring = expiringThisPass;
            expiringThisPass = false;
        }
        if (!writer.isEmpty())
        {
            writer.commit();
        }
    }

    private void sweepRetained(final DirectBuffer key, final int keyLength, final DirectBuffer value,
        final int valueLength)
    {
        final long expiresAtMs = value.getLong(1);
        if (expiresAtMs != Message.NEVER)
        {
            expiringThisPass = true;
            if (expiresAtMs <= sweepNowMs)
            {
                writer.delete(key, 0, keyLength);
            }
        }
        final byte[] next = new byte[keyLength + 1]; // the least key after this one
        key.getBytes(0, next, 0, keyLength);
        sweepFrom = next;
    }

    public void onBatchEnd()
    {
        final long stalls = store.writeStalls();
        if (stalls != stallsSeen)
        {
            counters.add(BrokerCounters.PERSISTENCE_WRITE_STALLS, stalls - stallsSeen);
            stallsSeen = stalls;
        }
    }

    private void onPacket(final IngressEvent event)
    {
        if (event.sessionId == IngressEvent.NONE)
        {
            return;
        }
        switch (event.packetType)
        {
            case PacketType.CONNECT:
                onConnect(event);
                break;
            case PacketType.PUBLISH:
                final Known publisher = get(event.sessionId);
                if (event.qos == 2 && event.routed && null != publisher)
                {
                    // its PUBREC leaves after this is kept: a resend after a restart is not routed twice
                    writer.put(key, 0, Records.packetIdKey(key, publisher.key, event.packetId), value, 0, 0);
                }
                break;
            case PacketType.PUBREL:
                final Known session = get(event.sessionId);
                if (null != session && ack.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                {
                    writer.delete(key, 0, Records.packetIdKey(key, session.key, ack.packetId()));
                }
                break;
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
                final Known subscriber = get(event.sessionId);
                if (null != subscriber && subscribe.wrap(event.packet, 0, event.packetLength, event.version) > 0)
                {
                    subscriptions(event, subscriber);
                }
                break;
            default:
                break;
        }
    }

    private void onConnect(final IngressEvent event)
    {
        if (event.authCode != IngressEvent.AUTH_ACCEPTED || connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            return;
        }
        final long expirySeconds = context.limits().sessionExpiryFor(connect);
        Known known = event.sessionNew ? null : get(event.sessionId);
        if (null == known)
        {
            if (expirySeconds == 0)
            {
                remove(event.sessionId);
                return; // a clean session: nothing of it is kept
            }
            if (nextSession == -1)
            {
                nextSession = 0;
                newEpoch(); // the counter went round
            }
            known = new Known(epoch << 32 | (++nextSession & 0xFFFF_FFFFL));
            put(event.sessionId, known);
        }
        known.expirySeconds = expirySeconds;
        final boolean will = connect.hasWill() && event.aclVerdict == IngressEvent.ACL_ALLOWED; // as routing keeps it
        known.hasWill = will;
        known.willDelaySeconds = will ? Wills.delaySeconds(connect) : 0;
        event.sessionKey = known.key;
        final String aclClientId = ClientIds.of(connect, event, context.auth().useUserNameAsClientId());
        final int length = Records.session(scratch, event.version, aclClientId,
            will ? Wills.fromConnect(connect, willScratch) : null, known.willDelaySeconds, event.aclUser, aclClientId);
        writer.put(key, 0, Records.sessionKey(key, known.key, Records.SESSION), scratch, 0, length);
        known.disconnectedAtMs = 0; // connected
        writeState(known);
    }

    private void onConnectionEnd(final IngressEvent event)
    {
        final Known known = event.sessionId == IngressEvent.NONE ? null : get(event.sessionId);
        if (null == known)
        {
            return;
        }
        if (event.sessionExpiryInterval >= 0)
        {
            known.expirySeconds = context.limits().sessionExpiryFor(event.sessionExpiryInterval); // [MQTT-3.14.2-2]
        }
        final boolean willAsked = event.kind == IngressEvent.CONNECTION_LOST ||
            event.reasonCode != ReasonCode.NORMAL_DISCONNECTION;
        // a will left now (it is this event's message) or never; a delayed one waits with the session
        final boolean willPending = known.hasWill && willAsked && known.willDelaySeconds > 0 &&
            event.messageOffset == IngressEvent.NONE;
        known.hasWill = willPending;
        known.disconnectedAtMs = System.currentTimeMillis();
        writeState(known);
    }

    /**
     * A delayed will went out with this tick: its session's state says so, or a restart would send it again.
     */
    private void willPublished(final int sessionId)
    {
        final Known known = get(sessionId);
        if (null != known && known.hasWill)
        {
            known.hasWill = false;
            writeState(known);
        }
    }

    private void writeState(final Known known)
    {
        writer.put(key, 0, Records.sessionKey(key, known.key, Records.STATE), value, 0,
            Records.state(value, known.expirySeconds, known.disconnectedAtMs, known.hasWill));
    }

    private void subscriptions(final IngressEvent event, final Known session)
    {
        final TopicFilterList filters = subscribe.filters();
        final boolean subscribing = event.packetType == PacketType.SUBSCRIBE;
        for (int i = 0; i < filters.count(); i++)
        {
            final int length = subscriptionKey(session.key, filters.filter(i).buffer(), filters.filter(i).offset(),
                filters.filter(i).length());
            if (!subscribing)
            {
                writer.delete(key, 0, length);
            }
            else if (i < event.grantedCount && route.granted(i) < ReasonCode.UNSPECIFIED_ERROR)
            {
                value.putInt(0, (filters.options(i) & ~0x3) | route.granted(i)); // at the QoS granted (--max-qos)
                value.putInt(4, event.subscriptionId);
                writer.put(key, 0, length, value, 0, 8);
            }
        }
    }

    private int subscriptionKey(final long sessionKey, final DirectBuffer filter, final int offset, final int length)
    {
        final int at = Records.sessionKey(key, sessionKey, Records.SUBSCRIPTION);
        key.putBytes(at, filter, offset, length);
        return at + length;
    }

    public String name()
    {
        return "persist";
    }
}
