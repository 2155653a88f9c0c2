package io.ringmq.pipeline;

import io.ringmq.pipeline.retained.RetainedStore;
import io.ringmq.pipeline.session.Subscription;
import org.agrona.collections.Int2ObjectHashMap;

import java.util.ArrayDeque;

/**
 * The subscriptions whose retained messages did not all go out with their SUBACK: a large store, or a walk past its
 * budget ({@link SubscriptionChanges}). Their messages go out a part at a time, on the routing stage's ticks, one
 * session's part per tick and a part per session every {@link #PART_INTERVAL_MS} at most, so every retained message
 * a subscription matches is sent [MQTT-3.3.1-6] without one SUBSCRIBE holding the routing stage; all parts together,
 * and one client address's, within a window's bytes. A session's next part waits until its client has read the last
 * ({@link RetainedDrains}; for a QoS 1 or 2 subscription, until its in-flight window has room), so a slow reader
 * gets them at its own pace instead of having what passes its high-water mark shed. One record per session, in line
 * in the order their turns come (each served goes to the back), so the front is always the first due. Routing stage
 * only (shard 0: the other routing shards send no retained message).
 */
final class RetainedLine
{
    /** The most bytes of retained messages one part carries: a quarter of what a subscriber may owe. */
    static final int PART_BYTES = 256 * 1024;
    /** How long a session waits between its parts: at most about 10 MB/s of retained messages to one subscriber. */
    static final long PART_INTERVAL_MS = 25;
    /**
     * The most bytes the parts carry together in a {@link #WINDOW_MS} window, whoever they go to: a SUBSCRIBE of '#'
     * over a large store is a stream of work for the routing and delivery stages (and a client that reads none of it
     * has it shed), so many sessions subscribing at once, or over and over, take at most this much of them; their
     * parts wait, in turn, for the next window (a few percent of what the broker delivers on this project's 2-core
     * machine).
     */
    static final long BYTES_PER_WINDOW = 64L << 20;
    /**
     * What the sessions of one client address ({@code AddressKeys}; loopback only with {@code --limit-loopback})
     * take of a window together, a quarter (more than one session's pace, so one subscriber is never held below it):
     * a host with a thousand sessions reading nothing took 1,000 of every 1,001 parts, and another subscriber's parts
     * came at 52 KB/s (review of 75ed794). Past it, that address's turns wait for the next window.
     */
    static final long BYTES_PER_ADDRESS_WINDOW = BYTES_PER_WINDOW / 4;
    static final long WINDOW_MS = 1_000;
    /** Records looked at per tick past those whose connection ended (each is dropped as it is seen). */
    private static final int DEAD_PER_TICK = 1_024;
    /**
     * A session's next part waits while its connection owes more than this of what it was sent: a client reading
     * slower than the parts come gets them as it reads, instead of having what passes its high-water mark shed.
     */
    static final long OWED_BEFORE_NEXT_PART = PART_BYTES;
    /**
     * How long a session whose last part its I/O agent has not written of yet (the ring is slow, or the slot was lost
     * to another connection) waits before its next part goes anyway: at worst a part every quarter second.
     */
    static final long UNCONFIRMED_WAIT_MS = 250;
    /**
     * Turns passed over in a row, while its client reads, before each doubles the wait (a client that reads nothing
     * costs a look every {@code PART_INTERVAL_MS << MAX_WAIT_SHIFT} ms, not every interval).
     */
    private static final int WAITS_BEFORE_BACKING_OFF = 8;
    private static final int MAX_WAIT_SHIFT = 4;

    /**
     * One session's subscriptions whose retained messages are still to go: the one being walked, then those waiting,
     * in SUBSCRIBE order.
     */
    static final class Pending
    {
        final int sessionId;
        /** The connection that subscribed: its retained messages go to it alone. */
        final long connectionId;
        /** The client's address ({@code AddressKeys}), whose window the walks count against. */
        final long addressKey;
        /** In SUBSCRIBE order; a set, so that one gone (unsubscribed, subscribed again) leaves at once. */
        final java.util.LinkedHashSet<Subscription> waiting = new java.util.LinkedHashSet<>(4);
        Subscription walking;
        RetainedStore.Walk walk;
        /** When its next part may go, in ms of the monotonic clock. */
        long dueMs;
        /** Replaced, or ended: dropped when it comes to the front. */
        boolean dropped;
        /** Its slot in {@link RetainedDrains}, or {@link RetainedDrains#NONE}: then paced by the clock alone. */
        int drainSlot = RetainedDrains.NONE;
        /** When its last part went, in ms of the monotonic clock; 0 before its first. */
        long lastPartMs;
        boolean partSent;
        /** Turns passed over in a row while its client read the last part. */
        int waits;

        Pending(final int sessionId, final long connectionId, final long addressKey)
        {
            this.sessionId = sessionId;
            this.connectionId = connectionId;
            this.addressKey = addressKey;
        }
    }

    private final RetainedStore store;
    private final RetainedDrains drains;
    private final SessionWindows windows;
    private final Int2ObjectHashMap<Pending> bySession = new Int2ObjectHashMap<>();
    private final ArrayDeque<Pending> line = new ArrayDeque<>();
    /** When the window under way ends, in ms of the monotonic clock, and what the parts carried in it. */
    private long windowEndMs = Long.MIN_VALUE / 2;
    private long bytesThisWindow;
    /** What each limited address's parts carried in the window under way; cleared as a window ends. */
    private final org.agrona.collections.Long2LongHashMap addressBytes = new org.agrona.collections.Long2LongHashMap(0);
    /** No turn comes (tests that compare the bytes two runs send: the parts go by the clock). */
    private boolean held;

    /**
     * @param store   the store the walks are of: a walk that will not go on is handed back to it.
     * @param drains  what the parts' connections owe, written by their I/O agents.
     * @param windows each session's in-flight room, written by its delivery shard.
     */
    RetainedLine(final RetainedStore store, final RetainedDrains drains, final SessionWindows windows)
    {
        this.store = store;
        this.drains = drains;
        this.windows = windows;
    }

    /**
     * @return the session's record for this connection, or null; a record of an earlier connection of the session
     * is dropped (retained messages go only to the connection that subscribed).
     */
    Pending of(final int sessionId, final long connectionId)
    {
        final Pending pending = bySession.get(sessionId);
        if (null == pending || pending.connectionId == connectionId)
        {
            return pending;
        }
        drop(pending);
        return null;
    }

    /**
     * @return a new record for the session, at the back of the line, its first part due an interval from now.
     */
    Pending open(final int sessionId, final long connectionId, final long addressKey, final long nowMs)
    {
        final Pending pending = new Pending(sessionId, connectionId, addressKey);
        pending.dueMs = nowMs + PART_INTERVAL_MS;
        pending.drainSlot = drains.take();
        bySession.put(sessionId, pending);
        line.addLast(pending);
        return pending;
    }

    /**
     * A subscription subscribed again or gone: what of its retained messages was still to go does not [MQTT-3.10.4-2]
     * (a new SUBSCRIBE sends them anew [MQTT-3.8.4-3]).
     */
    void forget(final Pending pending, final Subscription subscription)
    {
        if (null == pending)
        {
            return;
        }
        pending.waiting.remove(subscription);
        if (pending.walking == subscription)
        {
            endWalk(pending);
        }
    }

    /**
     * The walk under way ended (or its subscription is gone).
     */
    void endWalk(final Pending pending)
    {
        if (null != pending.walk)
        {
            store.release(pending.walk); // a walk paused part-way is kept track of by the store until then
        }
        pending.walk = null;
        pending.walking = null;
    }

    /**
     * @return the next subscription of a record whose walk ended, taken out of its waiting ones, or null.
     */
    Subscription nextWaiting(final Pending pending)
    {
        final java.util.Iterator<Subscription> first = pending.waiting.iterator();
        if (!first.hasNext())
        {
            return null;
        }
        final Subscription next = first.next();
        first.remove();
        return next;
    }

    /**
     * @return the first record whose turn has come by {@code nowMs}, taken off the front (hand it back with
     * {@link #served}), or null; records of ended connections ({@code live} false) are dropped on the way.
     */
    Pending next(final long nowMs, final java.util.function.Predicate<Pending> live)
    {
        if (held)
        {
            return null;
        }
        for (int dead = 0; dead < DEAD_PER_TICK; dead++)
        {
            final Pending pending = line.peekFirst();
            if (null == pending || (!pending.dropped && (pending.dueMs - nowMs > 0 || spent(nowMs))))
            {
                return null;
            }
            line.pollFirst();
            if (!pending.dropped && !live.test(pending))
            {
                drop(pending);
            }
            else if (!pending.dropped && addressSpent(pending.addressKey))
            {
                pending.dueMs = nowMs + PART_INTERVAL_MS; // its address had its share of the window: a later turn
                line.addLast(pending);
            }
            else if (!pending.dropped && !read(pending, nowMs))
            {
                // its client still reads the last part: a later turn
                pending.dueMs = nowMs + (PART_INTERVAL_MS <<
                    Math.min(Math.max(0, pending.waits++ - WAITS_BEFORE_BACKING_OFF), MAX_WAIT_SHIFT));
                line.addLast(pending);
            }
            else if (!pending.dropped)
            {
                return pending;
            }
        }
        return null;
    }

    /**
     * A record's part went: it goes to the back of the line, or out when nothing is left.
     */
    void served(final Pending pending, final long nowMs)
    {
        if (null == pending.walk && pending.waiting.isEmpty())
        {
            drop(pending);
            return;
        }
        pending.dueMs = nowMs + PART_INTERVAL_MS;
        pending.lastPartMs = nowMs;
        pending.partSent = true;
        pending.waits = 0;
        line.addLast(pending);
    }

    /**
     * @return whether the session's client read enough of what it was sent for its next part to go: its connection
     * owes at most {@link #OWED_BEFORE_NEXT_PART} (or, of a QoS 0 subscription, its agent has not written of the last
     * part for {@link #UNCONFIRMED_WAIT_MS}); and when the next part is of a QoS 1 or 2 subscription, its in-flight
     * window has room (the part then holds no more than that room and a quarter of {@code --max-queued},
     * {@link #reliableRoom}: a full queue drops).
     */
    private boolean read(final Pending pending, final long nowMs)
    {
        final Subscription next = null != pending.walking ? pending.walking :
            pending.waiting.isEmpty() ? null : pending.waiting.iterator().next();
        final boolean reliable = null != next && io.ringmq.protocol.SubscriptionOptions.qos(next.options()) > 0;
        if (reliable && windows.full(pending.sessionId))
        {
            return false; // its acknowledgements pace its QoS 1 and 2
        }
        if (pending.drainSlot == RetainedDrains.NONE || !pending.partSent)
        {
            return true;
        }
        final long owed = drains.owed(pending.drainSlot, pending.connectionId);
        if (owed >= 0)
        {
            // whatever the subscription's QoS: messages retained at QoS 0 go at QoS 0 to a QoS 1 one too, never shed
            // (review of 63b35296: five such subscribers reading nothing ran the broker past its memory budget)
            return owed <= OWED_BEFORE_NEXT_PART;
        }
        // nothing written of the last part: a QoS 1 or 2 part may have held only those, which are not watched
        return reliable || nowMs - pending.lastPartMs >= UNCONFIRMED_WAIT_MS;
    }

    /**
     * @return the QoS 1 and 2 retained messages a SUBACK or part for the session may carry: its in-flight window's
     * room and a quarter of {@code --max-queued}, at least one.
     */
    int reliableRoom(final int sessionId, final int maxQueued)
    {
        return (int)Math.max(1, Math.min(Integer.MAX_VALUE, (long)windows.free(sessionId) + maxQueued / 4));
    }

    /**
     * Drops a record: replaced, its connection ended, or a walk of it threw.
     */
    void drop(final Pending pending)
    {
        endWalk(pending);
        pending.waiting.clear();
        pending.dropped = true;
        drains.give(pending.drainSlot);
        pending.drainSlot = RetainedDrains.NONE;
        if (bySession.get(pending.sessionId) == pending)
        {
            bySession.remove(pending.sessionId);
        }
    }

    RetainedDrains drains()
    {
        return drains;
    }

    /**
     * @return whether no record is in line.
     */
    boolean isEmpty()
    {
        return line.isEmpty();
    }

    /**
     * @return whether a record's turn has come by {@code nowMs}.
     */
    boolean due(final long nowMs)
    {
        final Pending first = line.peekFirst();
        return !held && null != first && (first.dropped || (first.dueMs - nowMs <= 0 && !spent(nowMs)));
    }

    /**
     * A part carried {@code bytes}: counted in the window under way.
     */
    void sent(final Pending pending, final long bytes, final long nowMs)
    {
        spent(nowMs);
        bytesThisWindow += bytes;
        // a part that found nothing in its steps counts nothing (a 0 is the map's missing value: put would throw)
        if (bytes > 0 && io.ringmq.pipeline.auth.AddressKeys.NONE != pending.addressKey)
        {
            addressBytes.put(pending.addressKey, addressBytes.get(pending.addressKey) + bytes);
        }
    }

    private boolean addressSpent(final long addressKey)
    {
        return io.ringmq.pipeline.auth.AddressKeys.NONE != addressKey &&
            addressBytes.get(addressKey) >= BYTES_PER_ADDRESS_WINDOW;
    }

    /**
     * @return whether the parts carried what they may in the window under way (a window ended, the next begins).
     */
    private boolean spent(final long nowMs)
    {
        if (nowMs - windowEndMs >= 0)
        {
            windowEndMs = nowMs + WINDOW_MS;
            bytesThisWindow = 0;
            addressBytes.clear();
        }
        return bytesThisWindow >= BYTES_PER_WINDOW;
    }

    /**
     * @return ms until the first record's turn, {@link Long#MAX_VALUE} when none waits.
     */
    long dueInMs(final long nowMs)
    {
        final Pending first = line.peekFirst();
        if (null == first || held)
        {
            return Long.MAX_VALUE;
        }
        if (first.dropped)
        {
            return 0;
        }
        return Math.max(0, Math.max(first.dueMs, spent(nowMs) ? windowEndMs : nowMs) - nowMs);
    }

    /**
     * No part goes from now on (tests whose runs must send the same bytes whatever the clock).
     */
    void hold()
    {
        held = true;
    }

    /**
     * @return the subscriptions of a session waiting for their walk, -1 when it has no record (tests).
     */
    int waiting(final int sessionId)
    {
        final Pending pending = bySession.get(sessionId);
        return null == pending ? -1 : pending.waiting.size();
    }

    /**
     * @return the records in line, dropped ones included until they reach the front (tests).
     */
    int size()
    {
        return line.size();
    }
}
