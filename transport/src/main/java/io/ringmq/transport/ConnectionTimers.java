package io.ringmq.transport;

/**
 * The connect timeout, the keep-alive check [MQTT-3.1.2-24] and the bound on a closing connection's last write, for
 * an I/O agent's connections: at most one timer per connection, set lazily. A complete packet only records its
 * time; when a timer fires it looks at the real deadline and either expires the connection or sets itself again
 * for what is left. The cost per duty cycle follows the timers due, not the number of connections.
 * <p>
 * A hashed wheel whose tick lists run through the connections themselves ({@link Connection#timerNext}), as
 * Agrona's {@code DeadlineTimerWheel} but with nothing allocated per timer: that wheel keeps a fixed number of
 * slots per tick for all of its ticks and doubles them all when one tick overflows, so the thousands of clients
 * that connect in the same second (and so share keep-alive ticks) made it megabytes, and a map from timer id to
 * connection cost an entry each. Here a connection carries its deadline, its slot and two links.
 * <pre>
 *   heads[tick &amp; MASK] ──▶ connection ⇄ connection ⇄ …   (deadlines of this tick, or whole wheel turns later)
 * </pre>
 */
final class ConnectionTimers
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
    private static final int NO_SLOT = -1;
    private static final int TICK_MS = 16;
    private static final int TICKS_PER_WHEEL = 1024;
    private static final int MASK = TICKS_PER_WHEEL - 1;
    private static final int EXPIRY_LIMIT = 4096;

    /** The first connection of each tick's list, or null. */
    private final Connection[] heads = new Connection[TICKS_PER_WHEEL];
    private final int connectTimeoutMs;
    private final Expiry expiry;
    /** The next tick to look at (tick n spans [n, n + 1) x {@link #TICK_MS}): every tick before it is done. */
    private long tick;
    private int timerCount;

    ConnectionTimers(final long nowMs, final int connectTimeoutMs, final Expiry expiry)
    {
        this.tick = nowMs / TICK_MS;
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
     * Fires the timers due by {@code nowMs}, tick by tick (at most one turn of the wheel and
     * {@link #EXPIRY_LIMIT} timers per call).
     *
     * @return how many timers fired.
     */
    int poll(final long nowMs)
    {
        final long nowTick = nowMs / TICK_MS;
        if (0 == timerCount)
        {
            tick = Math.max(tick, nowTick); // nothing to look at: an idle agent walks no ticks
            return 0;
        }
        int expired = 0;
        int ticks = 0;
        while (tick < nowTick) // a tick is looked at once it is over: a timer fires at its deadline or a little after
        {
            final int slot = (int)(tick & MASK);
            Connection connection = heads[slot];
            while (null != connection)
            {
                if (expired >= EXPIRY_LIMIT)
                {
                    return expired; // this tick is taken up again at the next poll
                }
                Connection next = connection.timerNext;
                if (connection.timerDeadlineMs <= nowMs)
                {
                    unlink(connection);
                    expired++;
                    onExpiry(connection, nowMs);
                    if (null != next && next.timerSlot != slot)
                    {
                        next = heads[slot]; // the expiry moved its neighbour: walk the tick again from its head
                    }
                }
                connection = next;
            }
            tick++;
            if (++ticks == TICKS_PER_WHEEL)
            {
                tick = nowTick; // one whole turn looked at every slot: nothing before now is left
            }
        }
        return expired;
    }

    private void onExpiry(final Connection connection, final long nowMs)
    {
        if (connection.closed)
        {
            return;
        }
        final long deadline = deadline(connection);
        if (deadline == NO_TIMER)
        {
            return;
        }
        if (nowMs >= deadline)
        {
            expiry.expire(connection, connection.closing ? CLOSE_LINGER_TIMEOUT :
                connection.connack != Connection.CONNACK_PENDING ? KEEP_ALIVE_TIMEOUT : CONNECT_TIMEOUT);
        }
        else
        {
            schedule(connection, deadline); // it was heard from since: wait for the rest of its time
        }
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

    /**
     * @return timers set (for tests and diagnostics).
     */
    int timerCount()
    {
        return timerCount;
    }

    private void schedule(final Connection connection, final long deadlineMs)
    {
        final int slot = (int)(Math.max(tick, deadlineMs / TICK_MS) & MASK); // one already due: the next tick
        final Connection head = heads[slot];
        connection.timerDeadlineMs = deadlineMs;
        connection.timerSlot = slot;
        connection.timerPrev = null;
        connection.timerNext = head;
        if (null != head)
        {
            head.timerPrev = connection;
        }
        heads[slot] = connection;
        timerCount++;
    }

    private void cancel(final Connection connection)
    {
        if (connection.timerSlot != NO_SLOT)
        {
            unlink(connection);
        }
    }

    private void unlink(final Connection connection)
    {
        final Connection prev = connection.timerPrev;
        final Connection next = connection.timerNext;
        if (null == prev)
        {
            heads[connection.timerSlot] = next;
        }
        else
        {
            prev.timerNext = next;
        }
        if (null != next)
        {
            next.timerPrev = prev;
        }
        connection.timerPrev = null;
        connection.timerNext = null;
        connection.timerSlot = NO_SLOT;
        timerCount--;
    }
}
