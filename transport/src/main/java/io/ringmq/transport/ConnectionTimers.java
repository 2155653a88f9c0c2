package io.ringmq.transport;

/**
 * The connect timeout, the keep-alive check [MQTT-3.1.2-24] and the bound on a closing connection's last write, for
 * an I/O agent's connections: at most one timer per connection, set lazily. A complete packet only records its
 * time; when a timer fires it looks at the real deadline and either expires the connection or sets itself again for
 * what is left.
 * <p>
 * A hashed wheel whose spokes are lists linked through the {@link Connection}s themselves: scheduling and cancelling
 * are O(1) and allocate nothing, a spoke is walked only once its tick has passed (at most once per tick, not once
 * per duty cycle), and the wheel costs one array of {@value #TICKS_PER_WHEEL} references whatever the number of
 * connections. (Agrona's {@code DeadlineTimerWheel}, used before, walks the whole current spoke's slot array on every
 * poll, and a spoke's array grows for the largest burst of connections ever accepted in one tick: with 2,000
 * clients a third of the I/O thread went to that walk.) A timer fires within one tick ({@value #TICK_MS} ms) after
 * its deadline.
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
    private static final int NO_SPOKE = -1;
    private static final int TICK_SHIFT = 4;
    static final int TICK_MS = 1 << TICK_SHIFT;
    static final int TICKS_PER_WHEEL = 1024;
    private static final int TICK_MASK = TICKS_PER_WHEEL - 1;
    private static final int EXPIRY_LIMIT = 4096;

    private final Connection[] spokes = new Connection[TICKS_PER_WHEEL];
    private final long startMs;
    private int connectTimeoutMs;
    private final Expiry expiry;
    /** The first tick not walked yet: every tick before it has been walked since its end. */
    private long currentTick;
    /** A poll is walking the spoke of {@link #currentTick} (an expiry may set timers meanwhile). */
    private boolean walking;
    private int timerCount;

    ConnectionTimers(final long nowMs, final int connectTimeoutMs, final Expiry expiry)
    {
        this.startMs = nowMs;
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
     * @return timers set now.
     */
    int timerCount()
    {
        return timerCount;
    }

    /**
     * Walks the spokes whose ticks have ended since the last poll, each at most once (a whole turn of the wheel
     * walks every spoke once, whatever the time since), firing the timers due by {@code nowMs}.
     *
     * @return how many timers fired.
     */
    int poll(final long nowMs)
    {
        final long nowTick = tick(nowMs); // the tick under way: those before it have ended
        if (currentTick >= nowTick)
        {
            return 0;
        }
        if (0 == timerCount)
        {
            currentTick = nowTick;
            return 0;
        }
        walking = true;
        final int expired = walk(nowTick, nowMs);
        walking = false;
        return expired;
    }

    private int walk(final long nowTick, final long nowMs)
    {
        int expired = 0;
        final long lastTick = Math.min(nowTick, currentTick + TICKS_PER_WHEEL);
        while (currentTick < lastTick)
        {
            final int spoke = (int)(currentTick & TICK_MASK);
            expired += expireSpoke(spoke, nowMs, EXPIRY_LIMIT - expired);
            if (expired >= EXPIRY_LIMIT)
            {
                return expired; // the rest of this spoke on the next poll
            }
            currentTick++;
        }
        currentTick = nowTick;
        return expired;
    }

    private int expireSpoke(final int spoke, final long nowMs, final int limit)
    {
        int expired = 0;
        Connection connection = spokes[spoke];
        while (null != connection && expired < limit)
        {
            final Connection next = connection.timerNext;
            if (connection.timerDeadlineMs <= nowMs)
            {
                unlink(connection);
                expired++;
                onExpiry(connection, nowMs);
                // the handler may have cancelled others: if the next one left this spoke, walk it again from its head
                connection = null == next || next.timerSpoke == spoke ? next : spokes[spoke];
            }
            else
            {
                connection = next; // a later turn of the wheel
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
        if (nowMs < deadline)
        {
            schedule(connection, deadline); // it was heard from since: wait for the rest of its time
        }
        else if ((connection.paused && connection.connack == Connection.CONNACK_ACCEPTED && !connection.closing &&
            connection.inBytes() > 0) || (PartialPacketRoom.waiting(connection) && !connection.closing))
        {
            // or waiting, unread, for room for its partial packet (PartialPacketRoom): its PINGREQ waits behind it
            // paused for ingress ring room, it holds a complete packet the broker has not taken yet: it has been
            // heard from [MQTT-3.1.2-24], and the broker's own backlog (its socket unread meanwhile) must not end it
            schedule(connection, nowMs + connection.keepAliveSeconds * 1500L);
        }
        else
        {
            expiry.expire(connection, connection.closing ? CLOSE_LINGER_TIMEOUT :
                connection.connack != Connection.CONNACK_PENDING ? KEEP_ALIVE_TIMEOUT : CONNECT_TIMEOUT);
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

    private long tick(final long timeMs)
    {
        return (timeMs - startMs) >> TICK_SHIFT;
    }

    private void schedule(final Connection connection, final long deadlineMs)
    {
        // a deadline already past goes to the tick under way (walked once it ends), never to one walked already:
        // during a walk (a timer set by an expiry) the spoke being walked is behind the walk, so the next one
        final int spoke = (int)(Math.max(tick(deadlineMs), walking ? currentTick + 1 : currentTick) & TICK_MASK);
        final Connection head = spokes[spoke];
        connection.timerDeadlineMs = deadlineMs;
        connection.timerSpoke = spoke;
        connection.timerPrev = null;
        connection.timerNext = head;
        if (null != head)
        {
            head.timerPrev = connection;
        }
        spokes[spoke] = connection;
        timerCount++;
    }

    private void cancel(final Connection connection)
    {
        if (connection.timerSpoke != NO_SPOKE)
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
            spokes[connection.timerSpoke] = next;
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
        connection.timerSpoke = NO_SPOKE;
        timerCount--;
    }

    /**
     * @param connectTimeoutMs the connect timeout of connections accepted from now on (a reload).
     */
    void connectTimeoutMs(final int connectTimeoutMs)
    {
        this.connectTimeoutMs = connectTimeoutMs;
    }
}
