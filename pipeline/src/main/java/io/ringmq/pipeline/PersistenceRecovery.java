package io.ringmq.pipeline;

import io.ringmq.pipeline.delivery.DeliveryShard;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.RecordVisitor;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.collections.Long2ObjectHashMap;
import org.agrona.collections.LongArrayList;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Recovery at start, before any stage runs: one scan of the store in key order ({@link Records}) puts every
 * persistent session back into the routing stage (offline, its expiry and delayed will counting from when its
 * client went away), its subscriptions into the index, its messages into delivery shard 0 in the order they were
 * routed (in flight up to its last QoS 2 exchange, QoS 2 ones with their packet ids and state, QoS 1 ones on new ids
 * that leave the exchanges' ids free; queued after it; a client that comes back through another I/O agent takes its
 * session there), the QoS 2 PUBLISHes it sent whose PUBREL is awaited, and the retained messages.
 * A record it cannot decode is counted as lost and skipped; records of a session with no session record are deleted.
 * The thread that runs it hands every structure over to the stage threads that start after it.
 */
final class PersistenceRecovery implements RecordVisitor
{
    /** A stored message of the session being read, until its QoS 2 exchanges (which sort after it) are read. */
    private record Stored(long number, int qos, boolean retain, int publishedQos, int[] ids, Message message,
        long groupKey)
    {
    }

    /** A stored message that came through no shared subscription group. */
    private static final long NO_GROUP = 0;

    private final DurableStore store;
    private final RoutingRestore routing;
    private final PersistenceStage persistence;
    private final DeliveryShard shard;
    private final long nowMs = System.currentTimeMillis();
    private final List<Stored> messages = new ArrayList<>();
    /** The shard restores of sessions that expired while the broker was down: done after every other session's. */
    private final List<Runnable> deferred = new ArrayList<>();
    private final Long2ObjectHashMap<int[]> exchanges = new Long2ObjectHashMap<>();
    private final LongArrayList orphans = new LongArrayList();
    /**
     * Keys of retained messages not restored: expired while the broker was down, or past a smaller --max-retained
     * than they were kept under. Deleted, as their topics' clears would: nothing stays on disk that no bound counts.
     */
    private final List<byte[]> droppedRetained = new ArrayList<>();
    /** Retained messages refused at recovery by --max-retained (count or bytes). */
    private int retainedRefused;
    /** Sessions connected when the broker stopped: (key, expiry, went away at, will pending), written back. */
    private final List<long[]> restated = new ArrayList<>();
    private final RecoveryReport decodeLosses = new RecoveryReport();
    private final org.agrona.concurrent.UnsafeBuffer keyView = new org.agrona.concurrent.UnsafeBuffer(0, 0);
    private final org.agrona.concurrent.UnsafeBuffer valueView = new org.agrona.concurrent.UnsafeBuffer(0, 0);
    private long epoch;
    /** The store had an epoch record: a broker ran on it before (else it is new, and no crash is to speak of). */
    private boolean epochRead;
    /** The newest epoch any key was made in: a lost or stale epoch record never makes a key twice. */
    private long newestEpoch;
    /** When the broker was last seen alive (a record written every second), or 0. */
    private long aliveAtMs;
    /** When the broker last stopped cleanly, or 0: it crashed (or never ran). */
    private long stoppedAtMs;

    // the session being read
    private long sessionKey;
    /** Whether {@link #sessionKey} is a session being read: any long is a key (past epoch 2^31, a negative one). */
    private boolean sessionOpen;
    private boolean sessionRead;
    private boolean stateRead;
    private int sessionId = IngressEvent.NONE;
    private String clientId;
    private int version;
    private Message will;
    private long willDelaySeconds;
    private long expirySeconds;
    private long disconnectedAtMs;
    private boolean willPending;
    /** The retained messages' sources restored so far, by user name and client id. */
    private final java.util.Map<List<String>, MessageSource> sources = new java.util.HashMap<>();
    /** Whether the session's record names its owner (a build before did not store it). */
    private boolean ownerKnown;
    private String userName;
    private String aclClientId;

    private int sessionCount;
    private int subscriptionCount;
    private int queuedCount;
    private int inflightCount;
    private int awaitingCount;
    private int retainedCount;
    private int sessionsOverLimit;
    private int sessionsUnreadable;
    /** Messages of sessions that expired while the broker was down: not restored. */
    private int expiredCount;
    /** The session being read expired while the broker was down. */
    private boolean expired;
    /** The session being read ended for a known reason (over the limit, expiry 0): not a loss of its records. */
    private boolean sessionEnded;
    /** The session being read has records that only a restored session could use. */
    private boolean orphanHeld;

    PersistenceRecovery(final DurableStore store, final RoutingRestore routing, final PersistenceStage persistence,
        final DeliveryShard shard)
    {
        this.store = store;
        this.routing = routing;
        this.persistence = persistence;
        this.shard = shard;
    }

    /**
     * Restores everything, deletes what is orphaned, and starts a new epoch.
     *
     * @param strict refuse to go on (throw) when anything was lost.
     * @return the one line that says what was restored, how long it took and what was lost.
     */
    String run(final boolean strict)
    {
        final long startNs = System.nanoTime();
        final RecoveryReport report = store.scan(this);
        finishSession();
        deferred.forEach(Runnable::run);
        deferred.clear();
        routing.restored();
        final int distinctMessages = shard.restored();
        if (decodeLosses.unreadableRecords() > 0)
        {
            for (long i = 0; i < decodeLosses.unreadableRecords(); i++)
            {
                report.unreadableRecord();
            }
        }
        if (sessionsUnreadable > 0)
        {
            report.lost(sessionsUnreadable + " session(s) without a readable session and state record: their " +
                "subscriptions and messages deleted");
        }
        if (sessionsOverLimit > 0)
        {
            report.lost(sessionsOverLimit + " session(s) over --max-sessions");
        }
        if (retainedRefused > 0)
        {
            // deleted below, as sessions over their bound are: a smaller bound than the store was kept under loses
            // them, so it is said as a loss, and --strict-recovery refuses it before anything is deleted
            report.lost(retainedRefused + " retained message(s) over --max-retained");
        }
        if (strict && !report.isClean())
        {
            throw new StoreException("recovery lost data and --strict-recovery is set: " + report);
        }
        final StoreWriter writer = store.writer(true);
        final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(32);
        for (int i = 0; i < orphans.size(); i++)
        {
            Records.sessionRange(key, orphans.getLong(i));
            writer.deleteRange(key, 0, Records.SESSION_PREFIX_LENGTH, key, Records.SESSION_PREFIX_LENGTH,
                Records.SESSION_PREFIX_LENGTH);
        }
        for (final byte[] retainedKey : droppedRetained)
        {
            writer.delete(new org.agrona.concurrent.UnsafeBuffer(retainedKey), 0, retainedKey.length);
        }
        final ExpandableDirectByteBuffer state = new ExpandableDirectByteBuffer(32);
        for (final long[] session : restated)
        {
            writer.put(key, 0, Records.sessionKey(key, session[0], Records.STATE), state, 0,
                Records.state(state, session[1], session[2], session[3] != 0));
        }
        epoch = Math.max(epoch, newestEpoch) + 1;
        key.putLong(16, epoch);
        writer.put(key, 0, Records.epochKey(key), key, 16, 8);
        writer.delete(key, 0, Records.stopKey(key)); // a crash from here on is not a clean stop
        writer.commit();
        persistence.epoch(epoch);
        final long tookMs = (System.nanoTime() - startNs) / 1_000_000;
        final String how = !epochRead ? "(a new store) " : stoppedAtMs != 0 ? "" : "(after a crash) ";
        return "ringmq recovered " + how + sessionCount + " session(s), " + subscriptionCount + " subscription(s), " +
            queuedCount + " queued and " + inflightCount + " in-flight message(s) (" + distinctMessages +
            " distinct" + (expiredCount > 0 ? "; " + expiredCount + " of sessions that expired while it was down, " +
            "dropped" : "") + "), " + awaitingCount +
            " QoS 2 PUBLISH(es) awaiting PUBREL, " + retainedCount + " retained message(s) in " + tookMs +
            " ms from " + store.describe() + "; " + report;
    }

    public void onRecord(final DirectBuffer storeKey, final int keyLength, final DirectBuffer storeValue,
        final int valueLength)
    {
        // views of exactly the record: a garbled length inside it reads past its end, which is caught, never past
        keyView.wrap(storeKey, 0, keyLength);
        valueView.wrap(storeValue, 0, valueLength);
        final DirectBuffer key = keyView;
        final DirectBuffer value = valueView;
        try
        {
            switch (key.getByte(0))
            {
                case Records.META:
                    if (keyLength == 2 && key.getByte(1) == 'e')
                    {
                        epoch = value.getLong(0);
                        epochRead = true;
                    }
                    else if (keyLength == 2 && key.getByte(1) == 'a')
                    {
                        aliveAtMs = value.getLong(0); // sorts before 'e', 's' and every session
                    }
                    else if (keyLength == 2 && key.getByte(1) == 's')
                    {
                        stoppedAtMs = value.getLong(0); // sorts first: known before any session is read
                    }
                    break;
                case Records.SESSIONS:
                    onSessionRecord(key, keyLength, value, valueLength);
                    break;
                case Records.RETAINED:
                    onRetained(key, keyLength, value);
                    break;
                default:
                    decodeLosses.unreadableRecord();
            }
        }
        catch (final RuntimeException ex)
        {
            decodeLosses.unreadableRecord(); // a garbled record: skipped, the rest is restored
        }
    }

    private void onSessionRecord(final DirectBuffer key, final int keyLength, final DirectBuffer value,
        final int valueLength)
    {
        final long recordSession = Records.sessionKeyOf(key);
        newestEpoch = Math.max(newestEpoch, recordSession >>> 32);
        final byte kind = Records.kindOf(key);
        if (keyLength == Records.MESSAGE_KEY_LENGTH && (kind == Records.QUEUED || kind == Records.EXCHANGE))
        {
            // only these hold a message number: a subscription's filter of 8 bytes is as long, and is not one
            newestEpoch = Math.max(newestEpoch, Records.messageNumberOf(key) >>> 32);
        }
        if (!sessionOpen || recordSession != sessionKey)
        {
            finishSession();
            sessionKey = recordSession;
            sessionOpen = true;
        }
        if (kind == Records.SESSION)
        {
            readSession(value, valueLength);
            return;
        }
        if (kind == Records.STATE)
        {
            expirySeconds = value.getLong(0);
            disconnectedAtMs = value.getLong(8);
            willPending = value.getByte(16) != 0;
            stateRead = true;
            return;
        }
        if (!created())
        {
            // a session's own records with no session to restore them into: a loss, unless only a shard's late
            // journal entry (a QoS 2 exchange written just after its session ended) is left
            orphanHeld |= kind != Records.EXCHANGE;
            return;
        }
        switch (kind)
        {
            case Records.SUBSCRIPTION:
                final int filterLength = keyLength - Records.KIND_KEY_LENGTH;
                routing.restoreSubscription(sessionId, key.getStringWithoutLengthUtf8(Records.KIND_KEY_LENGTH,
                    filterLength), value.getInt(0), value.getInt(4));
                subscriptionCount++;
                break;
            case Records.AWAITING_PUBREL:
                routing.restoreAwaitingPubrel(sessionId, Records.packetIdOf(key));
                awaitingCount++;
                break;
            case Records.QUEUED:
                messages.add(readMessage(Records.messageNumberOf(key), value, valueLength));
                break;
            case Records.EXCHANGE:
                exchanges.put(Records.messageNumberOf(key), new int[]{value.getInt(0), value.getByte(4)});
                break;
            default:
                decodeLosses.unreadableRecord();
        }
    }

    private void readSession(final DirectBuffer value, final int valueLength)
    {
        version = value.getByte(0);
        clientId = Records.stringAt(value, 1, valueLength, "");
        int at = Records.afterString(value, 1);
        will = null;
        willDelaySeconds = 0;
        if (value.getByte(at) == 1)
        {
            final int qos = value.getByte(at + 1);
            final boolean retain = value.getByte(at + 2) != 0;
            willDelaySeconds = value.getInt(at + 3);
            final long expiresAtMs = value.getLong(at + 7);
            will = Records.message(value, at + 15, qos, retain, expiresAtMs);
            at += 15 + Records.messageLength(value, at + 15);
        }
        else
        {
            at++;
        }
        ownerKnown = at < valueLength; // a record of a build before ends with its will
        userName = ownerKnown ? Records.stringAt(value, at, valueLength, null) : null;
        aclClientId = ownerKnown ? Records.stringAt(value, Records.afterString(value, at), valueLength, clientId) :
            null;
        sessionRead = true;
    }

    private static Stored readMessage(final long number, final DirectBuffer value, final int valueLength)
    {
        final int idsCount = value.getInt(11);
        if (idsCount < 0 || 15 + idsCount * 4L > valueLength)
        {
            throw new IllegalStateException("identifier count " + idsCount);
        }
        final int[] ids = idsCount == 0 ? null : new int[idsCount];
        for (int i = 0; i < idsCount; i++)
        {
            ids[i] = value.getInt(15 + i * 4);
        }
        final int at = 15 + idsCount * 4;
        if (at + Records.messageLength(value, at) > valueLength)
        {
            throw new IllegalStateException("message longer than its record");
        }
        final int qos = value.getByte(0);
        final int end = at + Records.messageLength(value, at);
        final long groupKey = end + 8 <= valueLength ? value.getLong(end) : NO_GROUP; // none: absent
        return new Stored(number, qos, value.getByte(1) != 0, value.getByte(2), ids,
            Records.message(value, at, qos, false, value.getLong(3)), groupKey);
    }

    /**
     * @return whether the session being read is restored (made now, from its session and state records).
     */
    private boolean created()
    {
        if (sessionId != IngressEvent.NONE)
        {
            return true;
        }
        if (!sessionRead || !stateRead)
        {
            return false;
        }
        if (expirySeconds == 0)
        {
            sessionRead = false; // resumed with expiry 0, it ended with its connection (the broker's stop): deleted
            sessionEnded = true;
            return false;
        }
        final boolean wasConnected = disconnectedAtMs == 0;
        if (disconnectedAtMs == 0 && stoppedAtMs != 0)
        {
            disconnectedAtMs = stoppedAtMs; // connected at a clean stop: its client went away then, with no will
            willPending = false;
        }
        else if (disconnectedAtMs == 0 && aliveAtMs != 0)
        {
            disconnectedAtMs = aliveAtMs; // connected at a crash: gone (its will pending) from about then
            willPending = null != will;
        }
        sessionId = routing.restoreSession(clientId, version, expirySeconds, will, willDelaySeconds, disconnectedAtMs,
            willPending, nowMs);
        if (sessionId == IngressEvent.NONE)
        {
            sessionsOverLimit++;
            sessionRead = false; // its other records are skipped, and deleted as orphans
            sessionEnded = true;
            return false;
        }
        if (ownerKnown)
        {
            routing.restoreOwner(sessionId, userName, aclClientId);
        }
        final long awayMs = disconnectedAtMs == 0 ? nowMs : disconnectedAtMs;
        // its expiry ran out while the broker was down: routing ends it (and sends its will) at its first expiry poll
        // (before any CONNECT: with routing shards, at that CONNECT's slot), so
        // its messages are not brought back only to be discarded [MQTT-4.1.0-2]; the store drops them with it
        expired = expirySeconds < SessionExpiry.NEVER && awayMs + expirySeconds * 1000 <= nowMs;
        final boolean willStillPending = null != will && (willPending || disconnectedAtMs == 0);
        persistence.restored(sessionId, sessionKey, expirySeconds, willStillPending, willDelaySeconds, awayMs);
        if (wasConnected)
        {
            // the store still says "connected": it says when the client went away now, so a later start (after
            // another crash) counts from the same moment and does not publish a will a clean stop withheld
            restated.add(new long[]{sessionKey, expirySeconds, awayMs, willStillPending ? 1 : 0});
        }
        sessionCount++;
        return true;
    }

    private void finishSession()
    {
        if (sessionOpen)
        {
            if (created())
            {
                // each message's shared subscription group, found again by its key
                final int[] groups = new int[messages.size()];
                org.agrona.collections.Long2LongHashMap byKey = null;
                for (int i = 0; i < messages.size(); i++)
                {
                    final long groupKey = messages.get(i).groupKey();
                    if (groupKey != NO_GROUP)
                    {
                        byKey = null == byKey ? routing.restoredGroups(sessionId) : byKey;
                        groups[i] = (int)byKey.get(groupKey);
                    }
                }
                if (expired)
                {
                    // restored after every other session, so that messages about to go to other members take no
                    // room from the queues of sessions that live on (what sessions away may keep is bounded)
                    keepForGroups(groups);
                    final int deferredId = sessionId;
                    final long deferredKey = sessionKey;
                    final int deferredVersion = version;
                    final List<Stored> kept = new ArrayList<>(messages);
                    deferred.add(() -> restoreIntoShard(deferredId, deferredKey, deferredVersion, kept, groups));
                }
                else
                {
                    restoreIntoShard(sessionId, sessionKey, version, messages, groups);
                }
            }
            else
            {
                orphans.addLong(sessionKey); // no session record (or over the limit): nothing of it can be used
                if (!sessionEnded && orphanHeld)
                {
                    sessionsUnreadable++; // its session or state record was lost: what it held goes with it
                }
            }
        }
        messages.clear();
        exchanges.clear();
        sessionKey = 0;
        sessionOpen = false;
        sessionRead = false;
        sessionEnded = false;
        orphanHeld = false;
        stateRead = false;
        sessionId = IngressEvent.NONE;
        will = null;
        expired = false;
    }

    /**
     * Puts a restored session's messages into its delivery shard, in the order routed: everything up to the last one
     * with a QoS 2 exchange goes back in flight (that one must, and what came before it must go out before it), the
     * rest into the queue.
     *
     * @param groups each message's shared subscription group, 0 for none.
     */
    private void restoreIntoShard(final int restoredId, final long storeKey, final int protocolVersion,
        final List<Stored> restoredMessages, final int[] groups)
    {
        int lastExchange = -1;
        final int[] exchangeIds = new int[restoredMessages.size()];
        int exchangeCount = 0;
        for (int i = 0; i < restoredMessages.size(); i++)
        {
            final Stored stored = restoredMessages.get(i);
            final int[] exchange = stored.qos() == 2 ? exchanges.get(stored.number()) : null;
            if (null != exchange)
            {
                lastExchange = i;
                exchangeIds[exchangeCount++] = exchange[0];
            }
        }
        shard.restoreSession(restoredId, storeKey, protocolVersion, lastExchange + 1,
            java.util.Arrays.copyOf(exchangeIds, exchangeCount));
        for (int i = 0; i < restoredMessages.size(); i++)
        {
            final Stored stored = restoredMessages.get(i);
            final int[] exchange = stored.qos() == 2 ? exchanges.get(stored.number()) : null;
            final boolean inflight = i <= lastExchange;
            shard.restoreMessage(restoredId, stored.message(), stored.number(), stored.qos(),
                stored.retain(), stored.publishedQos(), stored.ids(), inflight,
                null != exchange ? exchange[0] : 0, null != exchange ? exchange[1] : 0, groups[i]);
            if (inflight)
            {
                inflightCount++;
            }
            else
            {
                queuedCount++;
            }
        }
    }

    /**
     * A session whose expiry ran out while the broker was down keeps only what it took through shared subscriptions
     * and never began to deliver (no QoS 2 exchange): routing ends the session at its first expiry poll, and its
     * delivery shard hands these to another member of each group, as when a session ends while the broker runs
     * (5.0 section 4.8.2). The rest is not brought back only to be discarded [MQTT-4.1.0-2].
     *
     * @param groups each message's group (0: none), compacted alike.
     */
    private void keepForGroups(final int[] groups)
    {
        int kept = 0;
        for (int i = 0; i < messages.size(); i++)
        {
            final Stored stored = messages.get(i);
            if (groups[i] != 0 && !(stored.qos() == 2 && null != exchanges.get(stored.number())))
            {
                groups[kept] = groups[i];
                messages.set(kept++, stored);
            }
        }
        expiredCount += messages.size() - kept;
        messages.subList(kept, messages.size()).clear();
    }

    private void onRetained(final DirectBuffer key, final int keyLength, final DirectBuffer value)
    {
        final long expiresAtMs = value.getLong(1);
        if (expiresAtMs != Message.NEVER && expiresAtMs <= nowMs)
        {
            dropRetained(key, keyLength); // expired while the broker was down: its record goes too
            return;
        }
        final byte[] topic = new byte[keyLength - 1];
        key.getBytes(1, topic);
        final Message stored = Records.message(value, 9, value.getByte(0), true, expiresAtMs);
        final MessageSource source = intern(Records.sourceAt(value, 9 + Records.messageLength(value, 9),
            value.capacity()));
        if (routing.restoreRetained(new Message(topic, stored.payload(), stored.qos(), true, stored.properties(),
            expiresAtMs, source)))
        {
            retainedCount++;
            if (expiresAtMs != Message.NEVER)
            {
                persistence.expiringRetained(); // its record goes when it expires
            }
        }
        else
        {
            retainedRefused++;
            dropRetained(key, keyLength); // past a smaller bound than it was kept under: it goes, as it would now
        }
    }

    /**
     * @return one source per publisher for the retained messages restored, as while running (one per session):
     * their bytes are counted per message either way, but the rules each compiles are kept once.
     */
    private MessageSource intern(final MessageSource source)
    {
        if (null == source || source.isUnknown())
        {
            return source;
        }
        return sources.computeIfAbsent(java.util.Arrays.asList(source.userName(), source.aclClientId()),
            key -> source);
    }

    private void dropRetained(final DirectBuffer key, final int keyLength)
    {
        final byte[] gone = new byte[keyLength];
        key.getBytes(0, gone);
        droppedRetained.add(gone);
    }
}
