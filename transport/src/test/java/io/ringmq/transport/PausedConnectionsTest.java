package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

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

    @Test
    @DisplayName("a full ring is not retried connection by connection: they wait in order, none dropped, and go on "
        + "oldest first once there is room")
    void fullRingWaitsInOrder()
    {
        final Connection a = connection(1);
        final Connection b = connection(2);
        final Connection resumed = connection(3);
        resumed.paused = false; // added after its CONNACK: buffered packets, not paused
        paused.add(a);
        paused.add(b);
        paused.add(resumed);
        final SlotRetry ring = new SlotRetry();
        for (int cycle = 0; cycle < 3; cycle++)
        {
            assertThat(paused.retry(ring)).isZero();
            assertThat(paused.isStalled()).isTrue();
        }
        assertThat(ring.tried).isEmpty(); // no packet framed only to be refused
        assertThat(paused.size()).isEqualTo(3); // the resumed one kept too: its packets still wait
        assertThat(resumed.retrying).isTrue();

        ring.room = 2;
        assertThat(paused.retry(ring)).isEqualTo(2);
        assertThat(ring.tried).containsExactly(a, b);
        assertThat(paused.size()).isEqualTo(1);
        ring.room = 1;
        assertThat(paused.retry(ring)).isEqualTo(1);
        assertThat(ring.tried).containsExactly(a, b, resumed);
        assertThat(paused.size()).isZero();
        assertThat(resumed.retrying).isFalse();
    }

    /**
     * A ring of {@code room} free slots: a connection tried takes one and has handed everything.
     */
    private static final class SlotRetry implements PausedConnections.Retry
    {
        int room;
        final List<Connection> tried = new ArrayList<>();

        @Override
        public int retry(final Connection connection)
        {
            tried.add(connection);
            room--;
            connection.paused = false;
            return 1;
        }

        @Override
        public boolean hasRoom()
        {
            return room > 0;
        }
    }
}
