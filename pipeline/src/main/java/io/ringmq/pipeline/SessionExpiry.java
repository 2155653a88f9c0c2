package io.ringmq.pipeline;

import io.ringmq.pipeline.session.RoutingSession;
import org.agrona.DeadlineTimerWheel;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * When persistent sessions whose clients never come back are dropped (Mosquitto's
 * {@code persistent_client_expiration}): one timer per offline session on Agrona's {@link DeadlineTimerWheel},
 * cancelled when its client reconnects. Owned by the routing stage, polled once per duty cycle, at most
 * {@link #EXPIRY_LIMIT} sessions per poll.
 */
final class SessionExpiry implements DeadlineTimerWheel.TimerHandler
{
    private static final int TICK_MS = 1_024;
    private static final int TICKS_PER_WHEEL = 512;
    private static final int EXPIRY_LIMIT = 1_024;
    private static final long POLL_INTERVAL_MS = 16;
    /**
     * With routing shards, sessions expire on ticks shard 0 puts on the ring (each shard polls at the tick's time):
     * at most this often while a timer is set (a timer fires up to this much later than with one routing stage).
     */
    static final long SHARDED_POLL_MS = 100;

    /** A session that is never dropped for being offline (5.0 Session Expiry Interval 0xFFFFFFFF). */
    static final long NEVER = 0xFFFF_FFFFL;

    private final Consumer<RoutingSession> onExpired;
    private final Consumer<RoutingSession> onWillDue;
    private final DeadlineTimerWheel wheel;
    private long lastPollMs;
    private final Long2ObjectHashMap<RoutingSession> byTimer = new Long2ObjectHashMap<>();
    private final Long2ObjectHashMap<RoutingSession> willByTimer = new Long2ObjectHashMap<>();

    /**
     * @param onExpired called with a session whose time is up (the caller checks it is still offline).
     * @param onWillDue called with a session whose will's delay has passed [MQTT-3.1.3-9].
     */
    SessionExpiry(final Consumer<RoutingSession> onExpired, final Consumer<RoutingSession> onWillDue)
    {
        this(onExpired, onWillDue, System.currentTimeMillis());
    }

    /**
     * @param startMs when the wheel starts: routing shards share it, so the same timers fire at the same poll.
     */
    SessionExpiry(final Consumer<RoutingSession> onExpired, final Consumer<RoutingSession> onWillDue,
        final long startMs)
    {
        this.onExpired = onExpired;
        this.onWillDue = onWillDue;
        this.wheel = new DeadlineTimerWheel(TimeUnit.MILLISECONDS, startMs, TICK_MS, TICKS_PER_WHEEL);
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
        final long timerId = wheel.scheduleTimer(nowMs + session.expirySeconds() * 1000);
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
            wheel.cancelTimer(timerId);
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
        final long timerId = wheel.scheduleTimer(atMs);
        session.willTimerId(timerId);
        willByTimer.put(timerId, session);
    }

    void cancelWill(final RoutingSession session)
    {
        final long timerId = session.willTimerId();
        if (timerId != RoutingSession.NO_TIMER)
        {
            wheel.cancelTimer(timerId);
            willByTimer.remove(timerId);
            session.willTimerId(RoutingSession.NO_TIMER);
        }
    }

    /**
     * @return how many sessions expired or had their will fall due.
     */
    int poll(final long nowMs)
    {
        if (byTimer.isEmpty() && willByTimer.isEmpty())
        {
            wheel.currentTickTime(nowMs); // nothing to fire: keep the wheel's clock up to date for the next timer
            return 0;
        }
        // Agrona's wheel walks its current spoke's whole slot array on every poll, and this is polled every duty
        // cycle: walk at most every POLL_INTERVAL_MS (a timer fires that much late at most), and catch up at most
        // one turn of the wheel
        if (nowMs - lastPollMs < POLL_INTERVAL_MS && nowMs < wheel.currentTickTime())
        {
            return 0;
        }
        lastPollMs = nowMs;
        int expired = wheel.poll(nowMs, this, EXPIRY_LIMIT);
        for (int ticks = 0; ticks < TICKS_PER_WHEEL && expired < EXPIRY_LIMIT && nowMs >= wheel.currentTickTime();
            ticks++)
        {
            expired += wheel.poll(nowMs, this, EXPIRY_LIMIT - expired);
        }
        return expired;
    }

    public boolean onTimerExpiry(final TimeUnit timeUnit, final long now, final long timerId)
    {
        final RoutingSession session = byTimer.remove(timerId);
        if (null != session)
        {
            session.expiryTimerId(RoutingSession.NO_TIMER);
            onExpired.accept(session);
            return true;
        }
        final RoutingSession willOf = willByTimer.remove(timerId);
        if (null != willOf)
        {
            willOf.willTimerId(RoutingSession.NO_TIMER);
            onWillDue.accept(willOf);
        }
        return true;
    }
}
