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
}
