package io.ringmq.transport;

import org.agrona.DeadlineTimerWheel;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.concurrent.TimeUnit;

/**
 * The connect timeout and the keep-alive check [MQTT-3.1.2-24] of an I/O agent's connections, on Agrona's
 * {@link DeadlineTimerWheel}: at most one timer per connection, set lazily. A complete packet only records its time; when a
 * timer fires it looks at the real deadline and either expires the connection or sets itself again for what is
 * left. The cost per duty cycle follows the timers due, not the number of connections.
 */
final class ConnectionTimers implements DeadlineTimerWheel.TimerHandler
{
    /** What to do with a connection whose time is up. */
    interface Expiry
    {
        /**
         * @param connectTimeout true when no CONNECT arrived in time, false for a keep-alive timeout.
         */
        void expire(Connection connection, boolean connectTimeout);
    }

    private static final long NO_TIMER = -1;
    private static final int TICK_MS = 16;
    private static final int TICKS_PER_WHEEL = 1024;
    private static final int EXPIRY_LIMIT = 4096;

    private final DeadlineTimerWheel wheel;
    private final Long2ObjectHashMap<Connection> byTimer = new Long2ObjectHashMap<>();
    private final int connectTimeoutMs;
    private final Expiry expiry;

    ConnectionTimers(final long nowMs, final int connectTimeoutMs, final Expiry expiry)
    {
        this.wheel = new DeadlineTimerWheel(TimeUnit.MILLISECONDS, nowMs, TICK_MS, TICKS_PER_WHEEL);
        this.connectTimeoutMs = connectTimeoutMs;
        this.expiry = expiry;
    }

    /**
     * A new connection has until the connect timeout to send CONNECT.
     */
    void onAccepted(final Connection connection)
    {
        schedule(connection, connection.acceptedMs + connectTimeoutMs);
    }

    /**
     * CONNECT arrived: from now on the keep-alive it asked for applies (none for 0).
     */
    void onConnected(final Connection connection)
    {
        cancel(connection);
        final long deadline = deadline(connection);
        if (deadline != NO_TIMER)
        {
            schedule(connection, deadline);
        }
    }

    void onClosed(final Connection connection)
    {
        cancel(connection);
    }

    /**
     * @return how many timers fired.
     */
    int poll(final long nowMs)
    {
        // the wheel moves one tick per poll while it holds timers: catch up with the clock
        int expired = 0;
        int ticks = 0;
        do
        {
            expired += wheel.poll(nowMs, this, EXPIRY_LIMIT);
        }
        while (wheel.currentTickTime() <= nowMs && expired < EXPIRY_LIMIT && ++ticks < TICKS_PER_WHEEL);
        return expired;
    }

    public boolean onTimerExpiry(final TimeUnit timeUnit, final long now, final long timerId)
    {
        final Connection connection = byTimer.remove(timerId);
        if (null == connection || connection.closed)
        {
            return true;
        }
        connection.timerId = NO_TIMER;
        final long deadline = deadline(connection);
        if (deadline == NO_TIMER)
        {
            return true;
        }
        if (now >= deadline)
        {
            expiry.expire(connection, !connection.connectSeen);
        }
        else
        {
            schedule(connection, deadline); // it was heard from since: wait for the rest of its time
        }
        return true;
    }

    private long deadline(final Connection connection)
    {
        if (!connection.connectSeen)
        {
            return connection.acceptedMs + connectTimeoutMs;
        }
        return connection.keepAliveSeconds > 0 ?
            connection.lastPacketMs + connection.keepAliveSeconds * 1500L : NO_TIMER; // 1.5 times the keep-alive
    }

    private void schedule(final Connection connection, final long deadlineMs)
    {
        final long timerId = wheel.scheduleTimer(deadlineMs);
        connection.timerId = timerId;
        byTimer.put(timerId, connection);
    }

    private void cancel(final Connection connection)
    {
        if (connection.timerId != NO_TIMER)
        {
            wheel.cancelTimer(connection.timerId);
            byTimer.remove(connection.timerId);
            connection.timerId = NO_TIMER;
        }
    }
}
