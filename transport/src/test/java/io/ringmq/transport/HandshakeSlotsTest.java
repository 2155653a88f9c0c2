package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The TLS handshakes one I/O agent reads at once: past the slots a connection waits, unread, first come first served;
 * one address holds at most a sixteenth of them (loopback exempt without --limit-loopback); a slot goes back when its
 * handshake ends or its connection closes, and a closed connection leaves the line. While connections wait, a slot
 * goes to the one whose address holds the fewest, and a handshake unread three seconds gives way to one whose address
 * holds two fewer.
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

    /** Ends every handshake that {@code slots} yields now, as the agent's reader does. */
    private static List<Connection> endYielding(final HandshakeSlots slots)
    {
        final List<Connection> ended = new ArrayList<>();
        for (Connection holder = slots.yielding(true); null != holder; holder = slots.yielding(false))
        {
            holder.closed = true;
            slots.release(holder);
            ended.add(holder);
        }
        return ended;
    }

    /**
     * @return the holders of all 32 slots: 203.0.113.1 to .16, two each (their share).
     */
    private List<Connection> sixteenAddressesHoldEverySlot(final HandshakeSlots slots)
    {
        final List<Connection> holders = new ArrayList<>();
        for (int i = 0; i < 32; i++)
        {
            final Connection holder = connection("203.0.113." + (1 + i / 2));
            assertThat(slots.admit(holder)).isTrue();
            holders.add(holder);
        }
        return holders;
    }

    @Test
    @DisplayName("a slot given back goes to the waiting connection whose address holds the fewest, not the first in " +
        "line")
    void aSlotGoesToTheAddressHoldingTheFewest()
    {
        final HandshakeSlots slots = new HandshakeSlots(32); // a sixteenth: 2
        final List<Connection> holders = sixteenAddressesHoldEverySlot(slots);
        final Connection again = connection("203.0.113.1"); // its address holds 2: not under its share
        final Connection second = connection("203.0.113.2"); // its address holds 2 as well
        final Connection newcomer = connection("198.51.100.7"); // holds none
        assertThat(slots.admit(again)).isFalse();
        assertThat(slots.admit(second)).isFalse();
        assertThat(slots.admit(newcomer)).isFalse();

        holders.get(31).closed = true; // 203.0.113.16's: down to 1
        slots.release(holders.get(31));
        assertThat(newcomer.handshake).as("holds none: next, though last in line")
            .isEqualTo(HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(again.handshake).isEqualTo(HandshakeSlots.WAITING);
        holders.get(0).closed = true; // 203.0.113.1's: down to 1, under its share again
        slots.release(holders.get(0));
        assertThat(again.handshake).as("the first in line of those holding one").isEqualTo(
            HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(second.handshake).isEqualTo(HandshakeSlots.WAITING);
    }

    @Test
    @DisplayName("waiters of several addresses, each address's in the order they came: a slot given back goes to the "
        + "first of the address holding the fewest, and among addresses holding as many to the one that came first")
    void aSlotGoesToTheFirstAmongEquals()
    {
        final HandshakeSlots slots = new HandshakeSlots(32); // a sixteenth: 2
        final List<Connection> holders = sixteenAddressesHoldEverySlot(slots);
        final Connection x1 = connection("198.51.100.1");
        final Connection y1 = connection("198.51.100.2");
        final Connection x2 = connection("198.51.100.1");
        final Connection y2 = connection("198.51.100.2");
        for (final Connection waiter : List.of(x1, y1, x2, y2))
        {
            assertThat(slots.admit(waiter)).isFalse();
        }
        final List<Connection> given = new ArrayList<>();
        for (int i = 0; i < 4; i++)
        {
            final Connection holder = holders.get(31 - i);
            holder.closed = true;
            given.add(slots.release(holder));
        }
        assertThat(given).as("x1 and y1 (none held, x1 came first), then x2 and y2 (one each)")
            .containsExactly(x1, y1, x2, y2);
        assertThat(slots.waiting()).isZero();
    }

    @Test
    @DisplayName("sixteen addresses holding every slot with handshakes that never end: once unread three seconds, the " +
        "longest unread holder of an address holding two gives way to another address's connection that waits, once a " +
        "look is due; a waiter of an address holding one more than the rest is given none")
    void stalledHandshakesGiveWayToAnotherAddress()
    {
        final HandshakeSlots slots = new HandshakeSlots(32); // a sixteenth: 2
        final List<Connection> holders = new ArrayList<>();
        for (int i = 0; i < 32; i++)
        {
            slots.nowMs(i); // the first taken the longest unread
            final Connection holder = connection("203.0.113." + (1 + i % 16));
            assertThat(slots.admit(holder)).isTrue();
            holders.add(holder);
        }
        final Connection sameAsHolders = connection("203.0.113.1");
        assertThat(slots.admit(sameAsHolders)).isFalse();
        slots.nowMs(10_000);
        assertThat(slots.yielding(true)).as("the only waiter's address holds its share: nothing to gain").isNull();

        final Connection newcomer = connection("198.51.100.7");
        slots.nowMs(10_100);
        assertThat(slots.admit(newcomer)).isFalse();
        assertThat(slots.yielding(true)).as("looked at 10,000: the next look is due at 10,250").isNull();
        slots.nowMs(10_250);
        assertThat(endYielding(slots)).as("the longest unread holder of an address holding 2, for one holding none; " +
            "then 203.0.113.1's waiter holds 1, against 2 at most: no more").containsExactly(holders.get(0));
        assertThat(newcomer.handshake).isEqualTo(HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(sameAsHolders.handshake).isEqualTo(HandshakeSlots.WAITING);
        slots.nowMs(20_000);
        assertThat(endYielding(slots)).isEmpty();
    }

    @Test
    @DisplayName("a handshake read within three seconds keeps its slot, however long it has held it; an address " +
        "holding one slot never gives it up")
    void handshakesThatGoOnKeepTheirSlots()
    {
        final HandshakeSlots slots = new HandshakeSlots(32); // a sixteenth: 2
        slots.nowMs(1_000);
        final List<Connection> holders = new ArrayList<>();
        for (int i = 0; i < 32; i++)
        {
            final Connection holder = connection("203.0.113." + (1 + i / 2));
            assertThat(slots.admit(holder)).isTrue();
            holders.add(holder);
        }
        assertThat(slots.admit(connection("198.51.100.7"))).isFalse();
        slots.nowMs(1_000 + HandshakeSlots.STALL_MS - 1);
        assertThat(endYielding(slots)).isEmpty();
        for (final Connection holder : holders)
        {
            if (holder != holders.get(5))
            {
                slots.reading(holder); // its client sent more
            }
        }
        slots.nowMs(1_000 + HandshakeSlots.STALL_MS + HandshakeSlots.LOOK_EVERY_MS);
        assertThat(endYielding(slots)).as("only the one unread since it took its slot").containsExactly(holders.get(5));

        final HandshakeSlots two = new HandshakeSlots(2); // a sixteenth: 1
        assertThat(two.admit(connection("203.0.113.1"))).isTrue();
        assertThat(two.admit(connection("203.0.113.2"))).isTrue();
        assertThat(two.admit(connection("198.51.100.7"))).isFalse();
        two.nowMs(60_000);
        assertThat(endYielding(two)).as("one slot an address, against none").isEmpty();
    }

    @Test
    @DisplayName("loopback without --limit-loopback is one group: its handshakes give way to a remote address that " +
        "waits, not to another loopback connection")
    void loopbackIsOneGroup()
    {
        final HandshakeSlots slots = new HandshakeSlots(4);
        final List<Connection> local = new ArrayList<>();
        for (int i = 0; i < 4; i++)
        {
            slots.nowMs(i);
            final Connection holder = connection("127.0.0.1");
            assertThat(slots.admit(holder)).isTrue();
            assertThat(holder.handshake).isEqualTo(HandshakeSlots.HELD);
            local.add(holder);
        }
        final Connection moreLocal = connection("127.0.0.1");
        assertThat(slots.admit(moreLocal)).isFalse();
        slots.nowMs(5_000);
        assertThat(endYielding(slots)).as("loopback waits behind loopback").isEmpty();

        final Connection remote = connection("198.51.100.7");
        assertThat(slots.admit(remote)).isFalse();
        slots.nowMs(5_000 + HandshakeSlots.LOOK_EVERY_MS);
        assertThat(endYielding(slots)).as("loopback holds 4, the remote address none; then the loopback waiter's " +
            "group holds 3, against 3 at most: no more").containsExactly(local.get(0));
        assertThat(remote.handshake).isEqualTo(HandshakeSlots.HELD_FOR_ADDRESS);
        assertThat(slots.waiting()).isEqualTo(1);
    }
}
