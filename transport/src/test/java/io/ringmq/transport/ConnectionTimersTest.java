package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The timer wheel of connect timeouts and keep-alives, stepped on a made-up clock.
 */
class ConnectionTimersTest
{
    private final List<String> expired = new ArrayList<>();
    private final ConnectionTimers timers = new ConnectionTimers(0, 1_000,
        (connection, cause) -> expired.add(connection.id + (cause == ConnectionTimers.CONNECT_TIMEOUT ? ":connect" :
            cause == ConnectionTimers.KEEP_ALIVE_TIMEOUT ? ":keep-alive" : ":linger")));

    private static Connection connection(final long id, final long nowMs)
    {
        return new Connection(id, new Acceptor.Accepted(null, null, true, null, null), null, nowMs);
    }

    @Test
    void aConnectionWithoutConnectExpiresAfterTheConnectTimeout()
    {
        timers.onAccepted(connection(1, 0));
        timers.poll(990);
        assertThat(expired).isEmpty();
        timers.poll(1_100);
        assertThat(expired).containsExactly("1:connect");
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: keep-alive expires at 1.5 times the client's value, counted from its last read")
    void keepAliveFollowsReads()
    {
        final Connection connection = connection(2, 0);
        timers.onAccepted(connection);
        connection.connectSeen = true;
        connection.connack = Connection.CONNACK_ACCEPTED; // admitted
        connection.keepAliveSeconds = 2;
        connection.lastPacketMs = 100;
        timers.onConnected(connection);
        connection.lastPacketMs = 2_500; // heard from before its deadline (3,100)
        timers.poll(3_200);
        assertThat(expired).isEmpty();
        timers.poll(5_500);
        assertThat(expired).isEmpty();
        timers.poll(5_700); // 2,500 + 3,000
        assertThat(expired).containsExactly("2:keep-alive");
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a connection paused on a full ingress ring with a packet buffered has been heard "
        + "from; refused, or with nothing buffered, its keep-alive still ends it")
    void pausedWithAPacketBufferedIsHeardFrom()
    {
        final Connection held = keptAlive(7);
        held.paused = true;
        held.in = io.netty.buffer.Unpooled.buffer().writeByte(0x30); // a packet the ring had no room for
        final Connection refused = keptAlive(8);
        refused.paused = true;
        refused.in = io.netty.buffer.Unpooled.buffer().writeByte(0x30);
        refused.connack = Connection.CONNACK_REFUSED;
        final Connection empty = keptAlive(9);
        empty.paused = true;
        timers.poll(3_200); // past 100 + 1.5 x 2 s
        assertThat(expired).containsExactlyInAnyOrder("8:keep-alive", "9:keep-alive");
        held.paused = false; // the ring took it: its packets were read at that time
        held.lastPacketMs = 3_300;
        timers.poll(6_200);
        assertThat(expired).hasSize(2);
        timers.poll(6_400); // 3,300 + 3,000
        assertThat(expired).contains("7:keep-alive");
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a connection whose partial packet waits, unread, for room is not ended by its "
        + "keep-alive meanwhile (its PINGREQ waits behind the packet), nor right after it is given room: its keep-alive "
        + "counts from then (review of 56a9e7c)")
    void waitingForRoomIsNotEndedByKeepAlive()
    {
        final Connection over = keptAlive(11);
        over.keepAliveSeconds = 0;
        final Connection waiter = keptAlive(10);
        final PartialPacketRoom room = new PartialPacketRoom(0, 64 * 1024);
        assertThat(room.reserve(over, 1)).as("past the room, alone").isTrue();
        assertThat(room.reserve(waiter, 1)).as("waits").isFalse();
        timers.poll(3_200); // past 100 + 1.5 x 2 s
        assertThat(expired).isEmpty();
        room.nowMs(6_100);
        timers.poll(6_100);
        room.packetEnded(over); // its turn: it reads on past the room
        assertThat(waiter.readable()).isTrue();
        timers.poll(6_400);
        assertThat(expired).as("given room 300 ms ago").isEmpty();
        timers.poll(9_200); // 6,100 + 3,000, and nothing heard since
        assertThat(expired).containsExactly("10:keep-alive");
    }

    /**
     * @return an admitted connection with keep-alive 2 s, last heard from at 100 ms, its timer set.
     */
    private Connection keptAlive(final long id)
    {
        final Connection connection = connection(id, 0);
        timers.onAccepted(connection);
        connection.connectSeen = true;
        connection.connack = Connection.CONNACK_ACCEPTED;
        connection.keepAliveSeconds = 2;
        connection.lastPacketMs = 100;
        timers.onConnected(connection);
        return connection;
    }

    @Test
    void keepAliveZeroAndClosedConnectionsNeverExpire()
    {
        final Connection silent = connection(3, 0);
        timers.onAccepted(silent);
        silent.connectSeen = true;
        silent.connack = Connection.CONNACK_ACCEPTED; // admitted
        timers.onConnected(silent);
        final Connection closed = connection(4, 0);
        timers.onAccepted(closed);
        closed.closed = true;
        timers.onClosed(closed);
        timers.poll(60_000);
        assertThat(expired).isEmpty();
    }

    @Test
    @DisplayName("a CONNECT not answered yet (an enhanced-auth exchange under way) keeps a connect timeout from its "
        + "last packet, even with keep-alive 0")
    void aConnectNotAnsweredKeepsTheConnectTimeout()
    {
        final Connection waiting = connection(6, 0);
        timers.onAccepted(waiting);
        waiting.connectSeen = true;
        waiting.lastPacketMs = 500;
        timers.onConnected(waiting);
        timers.poll(1_000);
        assertThat(expired).isEmpty();
        timers.poll(60_000);
        assertThat(expired).containsExactly("6:connect");
    }

    @Test
    @DisplayName("a connection the server sent DISCONNECT to closes by its linger deadline, keep-alive 0 or not")
    void aClosingConnectionLingersBoundedly()
    {
        final Connection closing = connection(5, 0);
        timers.onAccepted(closing);
        closing.connectSeen = true;
        closing.connack = Connection.CONNACK_ACCEPTED; // admitted
        timers.onConnected(closing); // keep-alive 0: no timer
        closing.closing = true;
        closing.closeByMs = 1_000;
        timers.onClosing(closing);
        timers.poll(900);
        assertThat(expired).isEmpty();
        timers.poll(1_100);
        assertThat(expired).containsExactly("5:linger");
    }

    @Test
    @DisplayName("a burst of 20,000 connections accepted in one tick: each expires exactly once, within a tick of its "
        + "deadline, and the wheel is empty after")
    void aBurstInOneTickExpiresEachOnce()
    {
        for (int i = 0; i < 20_000; i++)
        {
            timers.onAccepted(connection(100 + i, 3));
        }
        assertThat(timers.timerCount()).isEqualTo(20_000);
        timers.poll(1_002);
        assertThat(expired).isEmpty();
        for (long now = 1_003; now <= 1_003 + ConnectionTimers.TICK_MS; now++)
        {
            timers.poll(now); // at most 4,096 a poll: several polls finish the spoke
        }
        timers.poll(1_100);
        timers.poll(1_101);
        timers.poll(1_102);
        timers.poll(1_103);
        timers.poll(1_104);
        assertThat(expired).hasSize(20_000).doesNotHaveDuplicates();
        assertThat(timers.timerCount()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a keep-alive longer than a turn of the wheel fires on its turn, not on an earlier one")
    void aDeadlineBeyondOneTurnWaitsForItsTurn()
    {
        final Connection connection = connection(7, 0);
        connection.connectSeen = true;
        connection.connack = Connection.CONNACK_ACCEPTED;
        connection.keepAliveSeconds = 60; // 90 s: more than five turns of a 16.4 s wheel
        timers.onConnected(connection);
        for (long now = 0; now < 90_000; now += 500)
        {
            timers.poll(now);
        }
        assertThat(expired).isEmpty();
        timers.poll(90_100);
        assertThat(expired).containsExactly("7:keep-alive");
    }

    @Test
    @DisplayName("a poll after a long sleep walks every spoke once and fires everything due")
    void aLongGapCatchesUp()
    {
        final Connection a = connection(8, 0);
        final Connection b = connection(9, 20_000);
        timers.onAccepted(a);
        timers.onAccepted(b);
        final Connection closed = connection(10, 0);
        timers.onAccepted(closed);
        timers.onClosed(closed);
        timers.poll(100_000);
        assertThat(expired).containsExactlyInAnyOrder("8:connect", "9:connect");
        assertThat(timers.timerCount()).isZero();
    }

    @Test
    @DisplayName("expiring one connection may close another in the same spoke: the other never fires")
    void aHandlerThatClosesAnotherConnection()
    {
        final List<Connection> all = new ArrayList<>();
        final ConnectionTimers[] holder = new ConnectionTimers[1];
        holder[0] = new ConnectionTimers(0, 1_000, (connection, cause) ->
        {
            expired.add(Long.toString(connection.id));
            for (final Connection other : all)
            {
                if (other != connection && !other.closed)
                {
                    other.closed = true;
                    holder[0].onClosed(other); // the first to fire takes every other down with it
                }
            }
        });
        for (int i = 0; i < 5; i++)
        {
            final Connection connection = connection(20 + i, 0);
            all.add(connection);
            holder[0].onAccepted(connection);
        }
        holder[0].poll(2_000);
        assertThat(expired).hasSize(1);
        assertThat(holder[0].timerCount()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: keep-alive 65535 (the most a client may ask) expires at 98,302.5 s, not before")
    void keepAliveAtItsMaximum()
    {
        final Connection connection = connection(30, 0);
        connection.connectSeen = true;
        connection.connack = Connection.CONNACK_ACCEPTED;
        connection.keepAliveSeconds = 65_535;
        timers.onConnected(connection);
        for (long now = 0; now < 98_302_500L; now += 7_919) // a prime step: every spoke is walked many times
        {
            timers.poll(now);
        }
        assertThat(expired).isEmpty();
        timers.poll(98_302_500L + ConnectionTimers.TICK_MS);
        assertThat(expired).containsExactly("30:keep-alive");
    }

    @Test
    @DisplayName("hostile: a timer set again for a connection already closed is dropped when it comes due")
    void aTimerForAClosedConnectionIsDropped()
    {
        final Connection connection = connection(31, 0);
        timers.onAccepted(connection);
        connection.closed = true;
        timers.onClosed(connection);
        connection.closing = true;
        connection.closeByMs = 500;
        timers.onClosing(connection); // a late DISCONNECT path on a closed connection
        timers.poll(10_000);
        assertThat(expired).isEmpty();
        assertThat(timers.timerCount()).isZero();
    }

    @Test
    @DisplayName("hostile: a timer set from inside an expiry with a deadline already past fires within a tick, not a "
        + "turn of the wheel later")
    void aPastDeadlineSetDuringAWalkFiresWithinATick()
    {
        final Connection late = connection(41, 0);
        late.connectSeen = true;
        late.connack = Connection.CONNACK_ACCEPTED;
        late.keepAliveSeconds = 1; // due at 1,500
        final ConnectionTimers[] holder = new ConnectionTimers[1];
        holder[0] = new ConnectionTimers(0, 1_000, (connection, cause) ->
        {
            expired.add(connection.id + ":" + cause);
            if (connection.id == 40)
            {
                holder[0].onConnected(late); // its deadline (1,500) has passed by now
            }
        });
        holder[0].onAccepted(connection(40, 1_000)); // due at 2,000
        holder[0].poll(2_020);
        holder[0].poll(2_020 + 2 * ConnectionTimers.TICK_MS);
        assertThat(expired).containsExactly("40:" + ConnectionTimers.CONNECT_TIMEOUT,
            "41:" + ConnectionTimers.KEEP_ALIVE_TIMEOUT);
    }
}
