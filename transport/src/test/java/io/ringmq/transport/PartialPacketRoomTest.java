package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The room one I/O agent's admitted connections' partial packets share: past it a partial packet waits unread, in
 * line, first in line first; one connection reads on past the limit until its packet ends; room given back goes to the
 * line, reserved for each waiter's packet; and while connections wait a holder whose socket gave less than a 64th of
 * what it holds in two seconds ends, the largest first.
 */
class PartialPacketRoomTest
{
    private static final int READ = 64 * 1024;
    private final AddressLimit limit = new AddressLimit(1_000, false);
    private long nextId = 1;

    private static final class Quiet implements SocketLayer
    {
        public int read(final ByteBuf in)
        {
            return 0;
        }

        public int write(final ByteBuf out)
        {
            return 0;
        }

        public void close()
        {
        }
    }

    private Connection admitted()
    {
        final Connection connection = new Connection(nextId++, new Acceptor.Accepted(null, null, false, null, limit),
            new Quiet(), 0);
        connection.connack = Connection.CONNACK_ACCEPTED;
        return connection;
    }

    /** A connection given room for {@code bytes}. */
    private static Connection holding(final PartialPacketRoom room, final Connection connection, final int bytes)
    {
        assertThat(room.reserve(connection, bytes)).isTrue();
        return connection;
    }

    @Test
    @DisplayName("past the room a partial packet waits unread, first in line first; one reads on past it until its "
        + "packet ends; room given back goes to the line, reserved for each waiter's packet")
    void pastTheRoomPartialPacketsWait()
    {
        final PartialPacketRoom room = new PartialPacketRoom(4L * READ, READ);
        final Connection a = holding(room, admitted(), 2 * READ);
        final Connection b = holding(room, admitted(), 2 * READ);
        assertThat(room.roomForRead()).as("full: reads of those holding nothing are short").isFalse();
        final Connection over = admitted();
        assertThat(room.reserve(over, READ)).as("the first past the limit reads on there").isTrue();
        assertThat(room.reserve(over, 2 * READ)).as("until its packet ends").isTrue();
        final Connection c = admitted();
        final Connection d = admitted();
        assertThat(room.reserve(c, 2 * READ)).isFalse();
        assertThat(room.reserve(d, READ)).isFalse();
        assertThat(c.readable()).as("not read while it waits").isFalse();
        assertThat(room.waiting()).isEqualTo(2);
        assertThat(room.heldBytes()).isEqualTo(6L * READ);
        assertThat(room.reserve(b, 4 * READ)).as("a holder growing past its reservation waits behind them")
            .isFalse();

        room.packetEnded(over); // read on past the limit: nothing comes back to the room, but the next may go there
        assertThat(c.readable()).as("the first in line reads past the limit now").isTrue();
        assertThat(PartialPacketRoom.held(c)).as("its room reserved").isEqualTo(2 * READ);
        assertThat(d.readable()).isFalse();

        room.count(over, 0);
        room.count(a, 0); // a's and over's room given back: b's 2 and c's 2 reads' worth held, d's one does not fit
        assertThat(d.readable()).isFalse();
        room.packetEnded(c); // c's packet ended: d, first in line, reads past the limit
        assertThat(d.readable()).isTrue();
        room.count(c, 0);
        assertThat(b.readable()).as("its growth does not fit, and d reads past the limit").isFalse();
        room.release(d);
        assertThat(b.readable()).as("the last in line, past the limit").isTrue();
        assertThat(PartialPacketRoom.held(b)).isEqualTo(4 * READ);
        assertThat(room.waiting()).isZero();
        room.release(b);
        room.release(c);
        room.release(over);
        room.release(a);
        assertThat(room.heldBytes()).isZero();
    }

    @Test
    @DisplayName("room goes first to the waiter of the address holding the least: one host's holders and waiters give "
        + "way to another host's packet, which came last; among one address's, first in line first")
    void theAddressHoldingLeastGoesFirst() throws Exception
    {
        final PartialPacketRoom room = new PartialPacketRoom(4L * READ, READ);
        final java.net.InetAddress flood = java.net.InetAddress.getByName("10.0.0.1");
        final java.util.List<Connection> flooders = new java.util.ArrayList<>();
        for (int i = 0; i < 4; i++)
        {
            flooders.add(holding(room, from(flood), READ));
        }
        final Connection over = holding(room, from(flood), READ); // past the limit
        final java.util.List<Connection> floodWaiters = new java.util.ArrayList<>();
        for (int i = 0; i < 5; i++)
        {
            final Connection waiter = from(flood);
            assertThat(room.reserve(waiter, READ)).isFalse();
            floodWaiters.add(waiter);
        }
        final Connection honest = from(java.net.InetAddress.getByName("10.0.0.2"));
        assertThat(room.reserve(honest, READ)).isFalse();
        assertThat(room.waiting()).isEqualTo(6);

        room.packetEnded(over);
        assertThat(honest.readable()).as("the other host's, though it came last, reads past the limit").isTrue();
        assertThat(floodWaiters).noneMatch(Connection::readable);
        room.release(honest);
        assertThat(floodWaiters.get(0).readable()).as("then the flood's first in line").isTrue();
        assertThat(floodWaiters.subList(1, 5)).noneMatch(Connection::readable);
        for (final Connection connection : floodWaiters)
        {
            room.release(connection);
        }
        room.release(over);
        flooders.forEach(room::release);
        assertThat(room.heldBytes()).isZero();
        assertThat(room.waiting()).isZero();
    }

    private Connection from(final java.net.InetAddress address)
    {
        final Connection connection = admitted();
        connection.limitedAddress = address;
        return connection;
    }

    @Test
    @DisplayName("a closed waiter leaves the line; a closed connection reading past the limit hands that on")
    void closedConnectionsLeaveTheLine()
    {
        final PartialPacketRoom room = new PartialPacketRoom(READ, READ);
        final Connection holder = holding(room, admitted(), READ);
        final Connection over = admitted();
        assertThat(room.reserve(over, READ)).isTrue();
        final Connection gone = admitted();
        final Connection next = admitted();
        assertThat(room.reserve(gone, READ)).isFalse();
        assertThat(room.reserve(next, READ)).isFalse();
        gone.closed = true;
        room.release(gone);
        assertThat(room.waiting()).isEqualTo(1);
        over.closed = true;
        room.release(over);
        assertThat(next.readable()).as("past the limit now").isTrue();
        assertThat(room.heldBytes()).isEqualTo(2L * READ);
        room.release(holder);
        room.release(next);
        assertThat(room.heldBytes()).isZero();
    }

    @Test
    @DisplayName("while connections wait, a holder whose socket gave nothing for two seconds ends, the largest "
        + "first; one that goes on sending, or that waits itself, does not")
    void stalledHoldersEndWhileOthersWait()
    {
        final PartialPacketRoom room = new PartialPacketRoom(4L * READ, READ);
        room.nowMs(1_000);
        final Connection small = holding(room, admitted(), READ);
        final Connection large = holding(room, admitted(), 2 * READ);
        final Connection sending = holding(room, admitted(), READ);
        assertThat(room.stalled(true)).as("no one waits").isNull();
        final Connection over = holding(room, admitted(), READ);
        final Connection waiter = admitted();
        assertThat(room.reserve(waiter, READ)).isFalse();

        room.nowMs(1_000 + PartialPacketRoom.STALL_MS - 1);
        assertThat(room.stalled(true)).as("not yet stalled").isNull();
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS + PartialPacketRoom.LOOK_EVERY_MS);
        room.heard(sending, READ / PartialPacketRoom.PROGRESS_SHARE); // just enough
        assertThat(room.stalled(true)).as("the largest stalled").isSameAs(large);
        large.closed = true;
        room.release(large);
        assertThat(waiter.readable()).as("its room went to the line").isTrue();
        assertThat(room.stalled(false)).as("none waits now").isNull();

        final Connection late = admitted();
        assertThat(room.reserve(late, 2 * READ)).as("behind the one reading past the limit").isFalse();
        room.nowMs(1_000 + 3 * PartialPacketRoom.STALL_MS);
        final Connection next = room.stalled(true);
        assertThat(next).as("a stalled holder, never the one waiting").isIn(small, over, sending, waiter);
    }

    @Test
    @DisplayName("a holder unread because its client does not read what it is owed goes on while its socket takes a "
        + "64th of what it holds a period of what it is sent; one whose socket takes nothing stalls (a client that "
        + "reads slowly was closed as one that reads nothing before)")
    void aClientThatReadsSlowlyGoesOn()
    {
        final PartialPacketRoom room = new PartialPacketRoom(2L * READ, READ);
        room.nowMs(1_000);
        final Connection slow = holding(room, admitted(), READ);
        final Connection deaf = holding(room, admitted(), READ);
        assertThat(room.reserve(admitted(), READ)).as("past the limit").isTrue();
        for (int i = 0; i < 4; i++)
        {
            assertThat(room.reserve(admitted(), READ)).as("waits").isFalse(); // ends go on while any waits
        }
        slow.outFull = true;
        deaf.outFull = true;
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS - 1);
        PartialPacketRoom.wrote(slow, READ / PartialPacketRoom.PROGRESS_SHARE);
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS);
        final java.util.List<Connection> ended = new java.util.ArrayList<>();
        for (Connection stalled = room.stalled(true); null != stalled; stalled = room.stalled(false))
        {
            ended.add(stalled);
            stalled.closed = true;
            room.release(stalled);
        }
        assertThat(ended).contains(deaf).doesNotContain(slow);

        // as many periods as one sending a 64th a period takes to end its packet, and no more (review of 45a442f: a
        // trickle of reads held the room an hour)
        for (int i = 0; i < 300; i++)
        {
            assertThat(room.reserve(admitted(), READ)).isFalse(); // some always wait: ends go on
        }
        for (int period = 2; period <= PartialPacketRoom.PROGRESS_SHARE + 2 && !slow.closed; period++)
        {
            PartialPacketRoom.wrote(slow, READ / PartialPacketRoom.PROGRESS_SHARE);
            room.nowMs(1_000 + period * PartialPacketRoom.STALL_MS);
            for (Connection stalled = room.stalled(true); null != stalled; stalled = room.stalled(false))
            {
                stalled.closed = true;
                room.release(stalled);
                if (stalled == slow)
                {
                    assertThat(period).as("after a packet's worth of periods (64) kept by its reads").isEqualTo(
                        PartialPacketRoom.PROGRESS_SHARE + 1);
                }
            }
        }
        assertThat(slow.closed).as("ended once its reads had kept it a packet's worth of periods").isTrue();
    }

    @Test
    @DisplayName("a holder unread because its ingress is paused does not stall; one unread because its client reads "
        + "nothing it is owed does, even past the limit; one that sends a 64th of what it holds in a period goes on")
    void aClientThatReadsNothingStalls()
    {
        final PartialPacketRoom room = new PartialPacketRoom(2L * READ, READ);
        room.nowMs(1_000);
        final Connection paused = holding(room, admitted(), READ);
        final Connection deaf = holding(room, admitted(), READ);
        final Connection over = holding(room, admitted(), READ);
        final Connection first = admitted();
        assertThat(room.reserve(first, READ)).isFalse();
        assertThat(room.reserve(admitted(), READ)).isFalse();
        paused.paused = true;
        over.outFull = true;
        deaf.outFull = true;
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS - 1);
        room.heard(deaf, READ / PartialPacketRoom.PROGRESS_SHARE);
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS);
        assertThat(room.stalled(true)).as("past the limit and reading nothing it is owed").isSameAs(over);
        over.closed = true;
        room.release(over);
        assertThat(first.readable()).as("past the limit now").isTrue();
        room.nowMs(1_000 + 2 * PartialPacketRoom.STALL_MS);
        room.heard(first, READ / PartialPacketRoom.PROGRESS_SHARE - 1);
        assertThat(room.stalled(true)).as("less than a 64th in its period: the larger of the two stalled")
            .isIn(deaf, first);
        assertThat(paused.closed).isFalse();
    }

    @Test
    @DisplayName("a holder and the connection past the limit whose clients stop reading what they are owed, with "
        + "keep-alive 0, are ended while others wait: the line moves (review of afa201d)")
    void deafHoldersDoNotBlockTheLine()
    {
        final PartialPacketRoom room = new PartialPacketRoom(4L * READ, READ);
        room.nowMs(1_000);
        final Connection holder = admitted();
        assertThat(room.reserve(holder, 4 * READ)).isTrue();
        final Connection over = admitted();
        assertThat(room.reserve(over, 4 * READ)).as("reads past the room").isTrue();
        holder.outFull = true;
        over.outFull = true;
        final Connection waiter = admitted();
        assertThat(room.reserve(waiter, 2 * READ)).isFalse();
        for (long t = 1_000; t < 10_000 && !waiter.readable(); t += PartialPacketRoom.LOOK_EVERY_MS)
        {
            room.nowMs(t);
            for (Connection stalled = room.stalled(true); null != stalled; stalled = room.stalled(false))
            {
                stalled.closed = true;
                room.release(stalled);
            }
        }
        assertThat(waiter.readable()).as("read again within ten seconds").isTrue();
    }

    @Test
    @DisplayName("a holder of less than a read's worth is given a second period before it is stalled (a lossy link's "
        + "retransmission may stall it a second or more); one that sends in between starts over (review of 56a9e7c)")
    void smallHoldersGetASecondPeriod()
    {
        final PartialPacketRoom room = new PartialPacketRoom(3L * READ, READ);
        room.nowMs(1_000);
        final Connection small = holding(room, admitted(), 1_024);
        final Connection large = holding(room, admitted(), 2 * READ);
        final Connection over = holding(room, admitted(), READ);
        final Connection first = admitted();
        assertThat(room.reserve(first, READ)).isFalse();
        assertThat(room.reserve(admitted(), 2 * READ)).isFalse();
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS - 1);
        room.heard(over, READ);
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS);
        assertThat(room.stalled(true)).as("the large one at its first missed period").isSameAs(large);
        large.closed = true;
        room.release(large);
        assertThat(first.readable()).as("its room given").isTrue();
        assertThat(room.stalled(false)).as("the small one has a second period").isNull();
        room.nowMs(1_000 + 2 * PartialPacketRoom.STALL_MS - 1);
        room.heard(small, 1_024 / PartialPacketRoom.PROGRESS_SHARE); // a 64th of what it holds: it went on
        room.heard(over, READ);
        room.heard(first, READ);
        room.nowMs(1_000 + 2 * PartialPacketRoom.STALL_MS + PartialPacketRoom.LOOK_EVERY_MS);
        assertThat(room.stalled(true)).as("it sent in its second period: it starts over").isNull();
        room.nowMs(1_000 + 4 * PartialPacketRoom.STALL_MS);
        room.heard(over, READ);
        room.heard(first, READ);
        assertThat(room.stalled(true)).as("one missed period").isNull();
        room.nowMs(1_000 + 5 * PartialPacketRoom.STALL_MS);
        room.heard(over, READ);
        room.heard(first, READ);
        assertThat(room.stalled(true)).as("two missed periods running").isSameAs(small);
    }

    @Test
    @DisplayName("a look over 100 stalled holders ends the 32 largest, largest first, and no more until the next look")
    void aLookEndsTheLargestStalledHolders()
    {
        final PartialPacketRoom room = new PartialPacketRoom(100L * READ + 1_024L * 4_950, READ); // theirs, exactly
        room.nowMs(1_000);
        final java.util.List<Connection> holders = new java.util.ArrayList<>();
        for (int i = 0; i < 100; i++)
        {
            holders.add(holding(room, admitted(), READ + i * 1_024));
        }
        assertThat(room.reserve(admitted(), READ)).as("past the room, alone").isTrue();
        assertThat(room.reserve(admitted(), READ)).as("waits").isFalse();
        room.nowMs(1_000 + PartialPacketRoom.STALL_MS);
        final java.util.List<Connection> ended = new java.util.ArrayList<>();
        for (Connection stalled = room.stalled(true); null != stalled; stalled = room.stalled(false))
        {
            ended.add(stalled);
            stalled.closed = true; // closed, not released: the line waits on
        }
        final java.util.List<Connection> largest =
            new java.util.ArrayList<>(holders.subList(100 - PartialPacketRoom.MOST_ENDS_A_LOOK, 100));
        java.util.Collections.reverse(largest);
        assertThat(ended).containsExactlyElementsOf(largest);
        assertThat(room.stalled(true)).as("the next look is not due").isNull();
    }
}
