package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The retry bookkeeping of paused connections: work is reported only when a packet moved, so an I/O agent whose
 * ingress ring stays full sleeps (briefly) instead of spinning.
 */
class PausedConnectionsTest
{
    private final PausedConnections paused = new PausedConnections();

    private static Connection connection(final long id)
    {
        final Connection connection = new Connection(id, new Acceptor.Accepted(null, null, true, null, null), null, 0);
        connection.paused = true;
        return connection;
    }

    @Test
    @DisplayName("a ring that stays full is no work, and the agent may sleep only briefly")
    void stillFullRingIsNoWork()
    {
        final Connection a = connection(1);
        final Connection b = connection(2);
        paused.add(a);
        paused.add(b);
        paused.add(a); // once only
        assertThat(paused.size()).isEqualTo(2);
        for (int cycle = 0; cycle < 3; cycle++)
        {
            assertThat(paused.retry(connection -> 0)).isZero();
            assertThat(paused.isStalled()).isTrue();
        }
        assertThat(paused.size()).isEqualTo(2);
    }

    @Test
    @DisplayName("progress is reported as packets moved; resumed and closed connections leave the list")
    void progressIsPacketsMoved()
    {
        final Connection a = connection(1);
        final Connection b = connection(2);
        final Connection c = connection(3);
        paused.add(a);
        paused.add(b);
        paused.add(c);
        c.closed = true;
        final int moved = paused.retry(connection ->
        {
            if (connection == a)
            {
                connection.paused = false; // room again: its packets went on
                return 3;
            }
            return 0;
        });
        assertThat(moved).isEqualTo(3);
        assertThat(paused.isStalled()).isFalse();
        assertThat(paused.size()).isEqualTo(1);
        assertThat(a.retrying).isFalse();
        assertThat(c.retrying).isFalse();
        b.paused = false;
        assertThat(paused.retry(connection -> 1)).isEqualTo(1);
        assertThat(paused.size()).isZero();
        assertThat(paused.retry(connection -> 1)).isZero();
        assertThat(paused.isStalled()).isFalse();
    }
}
