package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.function.Consumer;

/**
 * When persistent sessions whose clients never come back are dropped (Mosquitto's
 * {@code persistent_client_expiration}), and when delayed wills fall due: one timer per offline session (and one per
 * pending will) in a {@link DeadlineHeap}, cancelled when its client reconnects. Owned by the routing stage, polled
 * once per duty cycle (a timer fires at the first poll at or after its deadline), at most {@link #EXPIRY_LIMIT}
 * sessions per poll.
 */
final class SessionExpiry implements DeadlineHeap.Handler
{
    private static final int EXPIRY_LIMIT = 1_024;
    /**
     * With routing shards, sessions expire on ticks shard 0 puts on the ring (each shard polls at the tick's time):
     * at most this often while a timer is set (a timer fires up to this much later than with one routing stage).
     */
    static final long SHARDED_POLL_MS = 100;

    /** A session that is never dropped for being offline (5.0 Session Expiry Interval 0xFFFFFFFF). */
    static final long NEVER = 0xFFFF_FFFFL;

    private final Consumer<RoutingSession> onExpired;
    private final Consumer<RoutingSession> onWillDue;
    private final DeadlineHeap timers = new DeadlineHeap();
    private final Long2ObjectHashMap<RoutingSession> byTimer = new Long2ObjectHashMap<>();
    private final Long2ObjectHashMap<RoutingSession> willByTimer = new Long2ObjectHashMap<>();

    /**
     * @param onExpired called with a session whose time is up (the caller checks it is still offline).
     * @param onWillDue called with a session whose will's delay has passed [MQTT-3.1.3-9].
     */
    SessionExpiry(final Consumer<RoutingSession> onExpired, final Consumer<RoutingSession> onWillDue)
    {
        this.onExpired = onExpired;
        this.onWillDue = onWillDue;
    }

    /**
     * @return whether a session waits to expire or a will to fall due.
     */
    boolean hasTimers()
    {
        return !byTimer.isEmpty() || !willByTimer.isEmpty();
    }

    /**
     * The session's client went away at {@code nowMs}: it expires after its {@link RoutingSession#expirySeconds()}.
     */
    void schedule(final RoutingSession session, final long nowMs)
    {
        cancel(session);
        if (session.expirySeconds() >= NEVER)
        {
            return;
        }
        final long timerId = timers.schedule(nowMs + session.expirySeconds() * 1000);
        session.expiryTimerId(timerId);
        byTimer.put(timerId, session);
    }

    /**
     * The session's client is back, or the session went another way.
     */
    void cancel(final RoutingSession session)
    {
        final long timerId = session.expiryTimerId();
        if (timerId != RoutingSession.NO_TIMER)
        {
            timers.cancel(timerId);
            byTimer.remove(timerId);
            session.expiryTimerId(RoutingSession.NO_TIMER);
        }
    }

    /**
     * The session's will is published at {@code atMs} unless its client comes back first.
     */
    void scheduleWill(final RoutingSession session, final long atMs)
    {
        cancelWill(session);
        final long timerId = timers.schedule(atMs);
        session.willTimerId(timerId);
        willByTimer.put(timerId, session);
    }

    void cancelWill(final RoutingSession session)
    {
        final long timerId = session.willTimerId();
        if (timerId != RoutingSession.NO_TIMER)
        {
            timers.cancel(timerId);
            willByTimer.remove(timerId);
            session.willTimerId(RoutingSession.NO_TIMER);
        }
    }

    /**
     * Fires the session's timers that are due at {@code nowMs} but no poll has reached yet (a poll ends at most
     * {@link #EXPIRY_LIMIT} sessions, and polls run between events, or with routing shards on ticks): its expiry
     * first, so a client never resumes a session whose time is up [MQTT-4.1.0-2]; else its will, which goes out
     * on a tick as a poll would send it [MQTT-3.1.3-9]. The CONNECT of its client calls this before it looks at it.
     */
    void fireDue(final RoutingSession session, final long nowMs)
    {
        if (!fireIfDue(session.expiryTimerId(), nowMs))
        {
            fireIfDue(session.willTimerId(), nowMs);
        }
    }

    private boolean fireIfDue(final long timerId, final long nowMs)
    {
        if (timerId == RoutingSession.NO_TIMER || timers.deadlineOf(timerId) > nowMs)
        {
            return false;
        }
        timers.cancel(timerId);
        onDeadline(timerId);
        return true;
    }

    /**
     * @return how many sessions expired or had their will fall due.
     */
    int poll(final long nowMs)
    {
        return timers.poll(nowMs, this, EXPIRY_LIMIT);
    }

    public void onDeadline(final long timerId)
    {
        final RoutingSession session = byTimer.remove(timerId);
        if (null != session)
        {
            session.expiryTimerId(RoutingSession.NO_TIMER);
            onExpired.accept(session);
            return;
        }
        final RoutingSession willOf = willByTimer.remove(timerId);
        if (null != willOf)
        {
            willOf.willTimerId(RoutingSession.NO_TIMER);
            onWillDue.accept(willOf);
        }
    }
}
