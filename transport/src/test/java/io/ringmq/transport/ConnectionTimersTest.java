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
    @DisplayName("MQTT-3.1.2-24: thousands of keep-alives in the same tick cost no memory but their connections, "
        + "and closing some of them mid-list leaves the others' timers whole")
    void manyTimersInOneTickAndCancelsInTheMiddle()
    {
        final List<Connection> connections = new ArrayList<>();
        for (int i = 0; i < 10_000; i++)
        {
            final Connection connection = connection(100 + i, 0);
            timers.onAccepted(connection);
            connection.connectSeen = true;
            connection.connack = Connection.CONNACK_ACCEPTED;
            connection.keepAliveSeconds = 60;
            timers.onConnected(connection); // every deadline at 90,000
            connections.add(connection);
        }
        assertThat(timers.timerCount()).isEqualTo(10_000);
        for (int i = 0; i < 10_000; i += 3)
        {
            connections.get(i).closed = true;
            timers.onClosed(connections.get(i));
            timers.onClosed(connections.get(i)); // twice: nothing more happens
        }
        assertThat(timers.timerCount()).isEqualTo(10_000 - 3_334);
        assertThat(timers.poll(89_000)).isZero();
        int fired = 0;
        int polls = 0;
        while (timers.timerCount() > 0 && polls++ < 10)
        {
            fired += timers.poll(91_000); // a bounded number per poll: the rest at the next
        }
        assertThat(fired).isEqualTo(10_000 - 3_334);
        assertThat(expired).hasSize(10_000 - 3_334).doesNotContain("100:keep-alive", "103:keep-alive")
            .contains("101:keep-alive", "10098:keep-alive");
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a timer whose connection was heard from sets itself again for the rest of its "
        + "time, also after the clock jumped past whole turns of the wheel")
    void aLateHeardConnectionIsSetAgainAndAClockJumpIsCaughtUp()
    {
        final Connection heard = connection(1, 0);
        final Connection quiet = connection(2, 0);
        for (final Connection connection : List.of(heard, quiet))
        {
            timers.onAccepted(connection);
            connection.connectSeen = true;
            connection.connack = Connection.CONNACK_ACCEPTED;
            connection.keepAliveSeconds = 100; // deadline 150,000: many turns of the wheel away
            timers.onConnected(connection);
        }
        heard.lastPacketMs = 140_000;
        assertThat(timers.poll(100_000)).isZero();
        timers.poll(150_100);
        assertThat(expired).containsExactly("2:keep-alive");
        assertThat(timers.timerCount()).isEqualTo(1);
        timers.poll(289_000);
        assertThat(expired).containsExactly("2:keep-alive");
        timers.poll(290_100); // 140,000 + 150,000
        assertThat(expired).containsExactly("2:keep-alive", "1:keep-alive");
        assertThat(timers.timerCount()).isZero();
    }

    @Test
    void anExpiryThatClosesTheNextConnectionOfItsTickLeavesTheWalkWhole()
    {
        final List<Connection> connections = new ArrayList<>();
        final List<Long> seen = new ArrayList<>();
        final ConnectionTimers[] holder = new ConnectionTimers[1];
        holder[0] = new ConnectionTimers(0, 1_000, (connection, cause) ->
        {
            seen.add(connection.id);
            for (final Connection other : connections)
            {
                if (other != connection && !other.closed)
                {
                    other.closed = true; // the first expiry takes its neighbours with it
                    holder[0].onClosed(other);
                }
            }
        });
        for (int i = 0; i < 5; i++)
        {
            final Connection connection = connection(i, 0);
            connections.add(connection);
            holder[0].onAccepted(connection);
        }
        holder[0].poll(1_100);
        assertThat(seen).hasSize(1);
        assertThat(holder[0].timerCount()).isZero();
    }
}
