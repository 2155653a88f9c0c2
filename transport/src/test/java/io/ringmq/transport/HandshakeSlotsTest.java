package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The TLS handshakes one I/O agent reads at once: past the slots a connection waits, unread, first come first served;
 * one address holds at most a sixteenth of them (loopback exempt without --limit-loopback); a slot goes back when its
 * handshake ends or its connection closes, and a closed connection leaves the line.
 */
class HandshakeSlotsTest
{
    private final AddressLimit limit = new AddressLimit(1_000, false);
    private long nextId = 1;

    /** A layer in its handshake until told otherwise, its client the address a PROXY header would have named. */
    private static final class Handshaking implements SocketLayer
    {
        private final InetSocketAddress client;
        boolean handshaking = true;

        Handshaking(final String address)
        {
            this.client = new InetSocketAddress(address, 40_000);
        }

        public int read(final ByteBuf in)
        {
            return 0;
        }

        public int write(final ByteBuf out)
        {
            return 0;
        }

        public boolean handshaking()
        {
            return handshaking;
        }

        public InetSocketAddress proxiedAddress()
        {
            return client;
        }

        public void close()
        {
        }
    }

    private Connection connection(final String address)
    {
        final Connection connection = new Connection(nextId++, new Acceptor.Accepted(null, null, false, null, limit),
            new Handshaking(address), 0);
        final java.net.InetAddress client = ((Handshaking)connection.layer).client.getAddress();
        assertThat(connection.acquireProxied(client)).isTrue(); // as a PROXY header naming it would
        return connection;
    }

    private static void ends(final Connection connection)
    {
        ((Handshaking)connection.layer).handshaking = false;
    }

    @Test
    @DisplayName("one address holds at most a sixteenth of the slots; the next of it waits while others get in, and " +
        "takes the slot its own address gives back")
    void oneAddressHoldsASixteenth()
    {
        final HandshakeSlots slots = new HandshakeSlots(32); // a sixteenth: 2
        final Connection first = connection("203.0.113.1");
        final Connection second = connection("203.0.113.1");
        final Connection third = connection("203.0.113.1");
        assertThat(slots.admit(first)).isTrue();
        assertThat(slots.admit(second)).isTrue();
        assertThat(slots.admit(third)).as("past its address's share").isFalse();
        assertThat(third.handshake).isEqualTo(HandshakeSlots.WAITING);
        assertThat(third.readable()).as("not read while it waits").isFalse();
        assertThat(slots.admit(connection("203.0.113.2"))).as("another address").isTrue();
        final Connection local = connection("127.0.0.1");
        assertThat(slots.admit(local)).as("loopback, exempt").isTrue();
        assertThat(local.handshake).isEqualTo(HandshakeSlots.HELD);
        for (int i = 0; i < 5; i++)
        {
            assertThat(slots.admit(connection("127.0.0.1"))).isTrue();
        }

        ends(first);
        slots.release(first);
        assertThat(third.handshake).as("its address's slot came back").isEqualTo(HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(slots.waiting()).isZero();
    }

    @Test
    @DisplayName("past every slot connections wait in order; a handshake under way keeps its slot; a closed waiter " +
        "leaves the line, a closed holder gives its slot to the next")
    void pastEverySlotConnectionsWaitInOrder()
    {
        final HandshakeSlots slots = new HandshakeSlots(2);
        final Connection a = connection("198.51.100.1");
        final Connection b = connection("198.51.100.2");
        final Connection c = connection("198.51.100.3");
        final Connection d = connection("198.51.100.4");
        assertThat(slots.admit(a)).isTrue();
        assertThat(slots.admit(b)).isTrue();
        assertThat(slots.admit(c)).isFalse();
        assertThat(slots.admit(d)).isFalse();
        assertThat(slots.admit(c)).as("asked again: still waiting, once in line").isFalse();
        assertThat(slots.waiting()).isEqualTo(2);

        slots.release(a); // read, still in its handshake
        assertThat(slots.taken()).isEqualTo(2);
        c.closed = true;
        slots.release(c);
        assertThat(slots.waiting()).isEqualTo(1);
        b.closed = true;
        slots.release(b);
        assertThat(d.handshake).as("the next in line").isEqualTo(HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(slots.taken()).isEqualTo(2);
        ends(a);
        slots.release(a);
        ends(d);
        slots.release(d);
        assertThat(slots.taken()).isZero();
    }
}
