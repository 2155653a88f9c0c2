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

    private final long afterMs;
    private final Consumer<RoutingSession> onExpired;
    private final DeadlineTimerWheel wheel;
    private final Long2ObjectHashMap<RoutingSession> byTimer = new Long2ObjectHashMap<>();

    /**
     * @param afterMs   how long an offline persistent session is kept; 0 keeps it forever.
     * @param onExpired called with a session whose time is up (the caller checks it is still offline).
     */
    SessionExpiry(final long afterMs, final Consumer<RoutingSession> onExpired)
    {
        this.afterMs = afterMs;
        this.onExpired = onExpired;
        this.wheel = new DeadlineTimerWheel(TimeUnit.MILLISECONDS, System.currentTimeMillis(), TICK_MS,
            TICKS_PER_WHEEL);
    }

    /**
     * The session's client went away at {@code nowMs}.
     */
    void schedule(final RoutingSession session, final long nowMs)
    {
        if (afterMs <= 0)
        {
            return;
        }
        cancel(session);
        final long timerId = wheel.scheduleTimer(nowMs + afterMs);
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
     * @return how many sessions expired.
     */
    int poll(final long nowMs)
    {
        if (byTimer.isEmpty())
        {
            return 0;
        }
        return wheel.poll(nowMs, this, EXPIRY_LIMIT);
    }

    public boolean onTimerExpiry(final TimeUnit timeUnit, final long now, final long timerId)
    {
        final RoutingSession session = byTimer.remove(timerId);
        if (null != session)
        {
            session.expiryTimerId(RoutingSession.NO_TIMER);
            onExpired.accept(session);
        }
        return true;
    }
}
