package io.ringmq.transport;

import org.agrona.DeadlineTimerWheel;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.concurrent.TimeUnit;

/**
 * The connect timeout, the keep-alive check [MQTT-3.1.2-24] and the bound on a closing connection's last write, for
 * an I/O agent's connections, on Agrona's {@link DeadlineTimerWheel}: at most one timer per connection, set lazily.
 * A complete packet only records its time; when a timer fires it looks at the real deadline and either expires the
 * connection or sets itself again for what is left. The cost per duty cycle follows the timers due, not the number of connections.
 */
final class ConnectionTimers implements DeadlineTimerWheel.TimerHandler
{
    /** No CONNECT arrived in time. */
    static final int CONNECT_TIMEOUT = 1;
    /** Nothing heard for 1.5 times the keep-alive [MQTT-3.1.2-24]. */
    static final int KEEP_ALIVE_TIMEOUT = 2;
    /** The server's DISCONNECT could not be written in time: close without waiting more. */
    static final int CLOSE_LINGER_TIMEOUT = 3;

    /** What to do with a connection whose time is up. */
    interface Expiry
    {
        /**
         * @param cause {@link #CONNECT_TIMEOUT}, {@link #KEEP_ALIVE_TIMEOUT} or {@link #CLOSE_LINGER_TIMEOUT}.
         */
        void expire(Connection connection, int cause);
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
        reschedule(connection);
    }

    /**
     * The server sent its DISCONNECT: the connection closes by {@link Connection#closeByMs} at the latest.
     */
    void onClosing(final Connection connection)
    {
        reschedule(connection);
    }

    private void reschedule(final Connection connection)
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
            expiry.expire(connection, connection.closing ? CLOSE_LINGER_TIMEOUT :
                connection.connack != Connection.CONNACK_PENDING ? KEEP_ALIVE_TIMEOUT : CONNECT_TIMEOUT);
        }
        else
        {
            schedule(connection, deadline); // it was heard from since: wait for the rest of its time
        }
        return true;
    }

    private long deadline(final Connection connection)
    {
        if (connection.closing)
        {
            return connection.closeByMs;
        }
        if (!connection.connectSeen)
        {
            return connection.acceptedMs + connectTimeoutMs;
        }
        final long keepAlive = connection.keepAliveSeconds > 0 ?
            connection.lastPacketMs + connection.keepAliveSeconds * 1500L : NO_TIMER; // 1.5 times the keep-alive
        if (connection.connack == Connection.CONNACK_PENDING)
        {
            // not admitted yet (an enhanced-auth exchange goes on after CONNECT): a connect timeout from its last
            // packet, never none, whatever keep-alive it asked for
            final long connect = connection.lastPacketMs + connectTimeoutMs;
            return keepAlive == NO_TIMER ? connect : Math.min(connect, keepAlive);
        }
        return keepAlive;
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
