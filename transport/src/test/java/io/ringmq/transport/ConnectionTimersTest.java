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
}
