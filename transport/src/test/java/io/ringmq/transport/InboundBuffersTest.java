package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The share of pooled memory the partial packets of connections not admitted yet may hold on one I/O agent: what
 * is counted, when it stops being counted, and what is refused past it.
 */
class InboundBuffersTest
{
    private static final int LIMIT = 100 * 1024;
    private final InboundBuffers buffers = new InboundBuffers(new IdleBuffers(), LIMIT, LIMIT);
    private final List<Connection> connections = new ArrayList<>();

    @AfterEach
    void releaseAll()
    {
        connections.forEach(buffers::release);
        buffers.close();
        assertThat(buffers.unadmittedBytes()).as("nothing left counted once every connection is gone").isZero();
        assertThat(buffers.room().heldBytes()).as("nor of admitted ones").isZero();
    }

    private Connection connection()
    {
        final Connection connection = new Connection(connections.size() + 1,
            new Acceptor.Accepted(null, null, true, null, null), null, 0);
        connections.add(connection);
        return connection;
    }

    /**
     * As if reads of {@code length} bytes in all (each as large as {@link InboundBuffers#readBuffer} makes room for)
     * left them all as a partial packet.
     *
     * @return false when a keepRest said the connection is past the share (it is then closed: nothing more is read).
     */
    private boolean readPartial(final Connection connection, final int length)
    {
        int left = length;
        while (left > 0)
        {
            final ByteBuf in = buffers.readBuffer(connection);
            final int read = Math.min(left, in.writableBytes());
            assertThat(read).as("room to read into").isPositive();
            in.writeZero(read);
            left -= read;
            if (!buffers.keepRest(connection))
            {
                return false;
            }
        }
        return true;
    }

    @Test
    @DisplayName("before admission any partial packet in a buffer of the connection's own is counted, at the buffer's " +
        "capacity; one that holds nothing more, or was read whole, is not")
    void partialsBeforeAdmissionAreCounted()
    {
        final Connection whole = connection();
        buffers.readBuffer(whole);
        assertThat(buffers.keepRest(whole)).as("a read processed whole keeps nothing").isTrue();
        assertThat(buffers.unadmittedBytes()).isZero();
        final Connection small = connection();
        assertThat(readPartial(small, 100)).isTrue();
        assertThat(buffers.unadmittedBytes()).isEqualTo(small.in.capacity()).isPositive();
        final Connection large = connection();
        assertThat(readPartial(large, 40 * 1024)).isTrue();
        assertThat(large.in.readableBytes()).isEqualTo(40 * 1024);
        assertThat(buffers.unadmittedBytes()).isEqualTo(small.in.capacity() + large.in.capacity());
        large.in.skipBytes(large.in.readableBytes()); // the rest of its CONNECT came and was handed on
        assertThat(buffers.keepRest(large)).isTrue();
        assertThat(buffers.unadmittedBytes()).as("an emptied buffer is not counted").isEqualTo(small.in.capacity());
    }

    @Test
    @DisplayName("past the share a connection not admitted yet is refused (nothing more counted); one that closes " +
        "gives its share back, and so does one once admitted, at its next keepRest")
    void pastTheShareIsRefusedAndSharesComeBack()
    {
        final List<Connection> held = new ArrayList<>();
        Connection refused = null;
        for (int i = 0; i < 20 && null == refused; i++)
        {
            final Connection connection = connection();
            if (readPartial(connection, 16 * 1024))
            {
                held.add(connection);
            }
            else
            {
                refused = connection;
            }
        }
        assertThat(refused).as("refused before 20 × 16 KiB").isNotNull();
        assertThat(buffers.unadmittedBytes()).isLessThanOrEqualTo(LIMIT);
        final long full = buffers.unadmittedBytes();
        buffers.release(refused); // its caller closes it: nothing of it was counted
        connections.remove(refused);
        assertThat(buffers.unadmittedBytes()).isEqualTo(full);

        final Connection closing = held.get(0);
        final long closingHeld = closing.unadmittedBytes;
        assertThat(closingHeld).isGreaterThanOrEqualTo(16 * 1024);
        buffers.release(closing);
        connections.remove(closing);
        assertThat(buffers.unadmittedBytes()).isEqualTo(full - closingHeld);

        final Connection admitted = held.get(1);
        final long admittedHeld = admitted.unadmittedBytes;
        admitted.connack = Connection.CONNACK_ACCEPTED;
        assertThat(readPartial(admitted, 16 * 1024)).as("an admitted connection's partial packet is its own").isTrue();
        assertThat(buffers.unadmittedBytes()).isEqualTo(full - closingHeld - admittedHeld);
        assertThat(admitted.unadmittedBytes).isZero();
    }

    @Test
    @DisplayName("a partial packet that grows past the share is refused at the read that would take it there")
    void growthPastTheShareIsRefused()
    {
        final Connection growing = connection();
        boolean kept = true;
        for (int i = 0; i < 10 && kept; i++)
        {
            kept = readPartial(growing, 16 * 1024);
        }
        assertThat(kept).as("refused before 160 KiB").isFalse();
        assertThat(buffers.unadmittedBytes()).isLessThanOrEqualTo(LIMIT).isPositive();
    }

    @Test
    @DisplayName("admitted: past the room a partial packet waits unread instead of growing its buffer, reads of " +
        "short partials are short, one connection reads on past the room until its packet ends, then the next")
    void admittedPartialsWaitPastTheRoom()
    {
        final Connection first = connection();
        first.connack = Connection.CONNACK_ACCEPTED;
        assertThat(readPartial(first, 96 * 1024)).as("the first past the room reads on").isTrue();
        assertThat(first.in.getByte(0)).as("a partial packet declares nothing here (zeros)").isZero();
        assertThat(buffers.room().heldBytes()).isGreaterThan(LIMIT);
        final Connection second = connection();
        second.connack = Connection.CONNACK_ACCEPTED;
        int reads = 0;
        for (ByteBuf in = buffers.readBuffer(second); null != in; in = buffers.readBuffer(second))
        {
            assertThat(in.writableBytes()).as("a short read while the room is full").isLessThanOrEqualTo(4 * 1024);
            in.writeZero(in.writableBytes());
            assertThat(buffers.keepRest(second)).isTrue();
            assertThat(++reads).as("waits within a few short reads").isLessThan(4);
        }
        assertThat(PartialPacketRoom.waiting(second)).isTrue();
        assertThat(second.readable()).as("not read while it waits").isFalse();
        final int waited = second.in.readableBytes();

        first.in.skipBytes(first.in.readableBytes() - 10); // its packet came whole and was handed on
        assertThat(buffers.keepRest(first)).isTrue();
        assertThat(second.readable()).as("the next in line reads on past the room").isTrue();
        final ByteBuf in = buffers.readBuffer(second);
        assertThat(in).isNotNull();
        assertThat(in.readableBytes()).as("what it held waits in order").isEqualTo(waited);
        in.writeZero(1);
        assertThat(buffers.keepRest(second)).isTrue();
    }

    /** As if a read brought the first {@code length} bytes of a PUBLISH whose remaining length is {@code remaining}. */
    private boolean readPublishStart(final Connection connection, final int remaining, final int length)
    {
        final ByteBuf in = buffers.readBuffer(connection);
        if (null == in)
        {
            return false;
        }
        in.writeByte(0x30);
        for (int value = remaining; ; value >>>= 7)
        {
            in.writeByte(value >= 0x80 ? (value & 0x7F) | 0x80 : value);
            if (value < 0x80)
            {
                break;
            }
        }
        in.writeZero(length - 4);
        assertThat(buffers.keepRest(connection)).isTrue();
        return true;
    }

    /** Reads {@code length} more bytes into a connection's own buffer; false when it must wait for room instead. */
    private boolean readMore(final Connection connection, final int length)
    {
        int left = length;
        while (left > 0)
        {
            final ByteBuf in = buffers.readBuffer(connection);
            if (null == in)
            {
                return false;
            }
            final int read = Math.min(left, in.writableBytes());
            in.writeZero(read);
            left -= read;
            assertThat(buffers.keepRest(connection)).isTrue();
        }
        return true;
    }

    @Test
    @DisplayName("admitted: room for the whole packet its header declares is reserved when its buffer first grows, so "
        + "it is read to its end without waiting again; the next waits for room, or reads past it alone")
    void roomIsReservedForTheDeclaredPacket()
    {
        final int remaining = 40 * 1024; // 3 bytes of remaining length: 40 KiB + 4 bytes in all
        final Connection first = connection();
        final Connection second = connection();
        final Connection third = connection();
        for (final Connection connection : List.of(first, second, third))
        {
            connection.connack = Connection.CONNACK_ACCEPTED;
            assertThat(readPublishStart(connection, remaining, 8 * 1024)).isTrue();
        }
        assertThat(InboundBuffers.declaredLength(first.in)).isEqualTo(remaining + 4);
        assertThat(readMore(first, remaining + 4 - 8 * 1024 - 1)).as("its packet's room reserved, read to its end")
            .isTrue();
        final int reserved = PartialPacketRoom.held(first);
        assertThat(reserved).isGreaterThanOrEqualTo(remaining + 4).isEqualTo(first.in.capacity());
        assertThat(readMore(second, 1)).as("past the room, alone").isTrue();
        assertThat(readMore(third, 1)).as("waits").isFalse();
        assertThat(third.readable()).isFalse();

        first.in.skipBytes(first.in.readableBytes()); // the rest came and its packet was handed on
        assertThat(buffers.keepRest(first)).isTrue();
        assertThat(third.readable()).as("second still reads past the room").isFalse();
        second.in.skipBytes(second.in.readableBytes());
        assertThat(buffers.keepRest(second)).isTrue();
        assertThat(third.readable()).as("the room given back: its turn").isTrue();
        assertThat(readMore(third, remaining + 4 - 8 * 1024)).isTrue();
    }

    @Test
    @DisplayName("once its packet ends, the connection past the room gives that up, and the room reserved for it: its next "
        + "packet (begun in the same read) waits in line while the next in line reads past the room (review of afa201d)")
    void formerOverdraftKeepsReadingPastTheRoom()
    {
        final int remaining = 90 * 1024;
        final Connection first = connection();
        final Connection second = connection();
        first.connack = Connection.CONNACK_ACCEPTED;
        second.connack = Connection.CONNACK_ACCEPTED;
        assertThat(readPublishStart(first, remaining, 8 * 1024)).isTrue();
        assertThat(readPublishStart(second, remaining, 8 * 1024)).isTrue();
        assertThat(readMore(first, 1)).as("first reads past the room").isTrue();
        assertThat(readMore(second, 1)).as("second waits").isFalse();
        // the rest of first's packet arrives, and in the same read the start of its next one (5 KiB of it)
        final int declared = InboundBuffers.declaredLength(first.in);
        assertThat(readMore(first, declared - first.in.readableBytes())).isTrue();
        ByteBuf in = buffers.readBuffer(first);
        in.writeByte(0x30);
        for (int value = remaining; ; value >>>= 7)
        {
            in.writeByte(value >= 0x80 ? (value & 0x7F) | 0x80 : value);
            if (value < 0x80)
            {
                break;
            }
        }
        in.writeZero(5 * 1024);
        first.in.skipBytes(declared); // the framer hands on the first packet
        assertThat(buffers.keepRest(first)).isTrue();
        assertThat(second.readable()).as("the next in line now reads past the room").isTrue();
        assertThat(readMore(second, 1)).isTrue();
        final boolean firstRead = readMore(first, 64 * 1024);
        assertThat(firstRead).as("first, no longer the overdraft, waits for room for its next packet").isFalse();
    }

    @Test
    @DisplayName("a connection past the room whose packet ends with a read (its buffer emptied) gives that up: the next "
        + "connection past the room reads on (review of afa201d)")
    void overdraftEndingOnAReadBoundaryIsHandedOn()
    {
        final Connection holder = connection();
        final Connection over = connection();
        final Connection next = connection();
        for (final Connection connection : List.of(holder, over, next))
        {
            connection.connack = Connection.CONNACK_ACCEPTED;
        }
        assertThat(readPublishStart(holder, 60 * 1024, 8 * 1024)).isTrue();
        assertThat(readMore(holder, 1)).as("fits in the room").isTrue();
        assertThat(readPublishStart(over, 90 * 1024, 8 * 1024)).isTrue();
        assertThat(readMore(over, 1)).as("reads past the room").isTrue();
        final int declared = InboundBuffers.declaredLength(over.in);
        assertThat(readMore(over, declared - over.in.readableBytes())).isTrue();
        over.in.skipBytes(declared); // handed on whole: the read ended with the packet
        assertThat(buffers.keepRest(over)).isTrue();
        assertThat(PartialPacketRoom.held(over)).as("it holds nothing now").isZero();
        assertThat(readPublishStart(next, 60 * 1024, 8 * 1024)).isTrue();
        assertThat(readMore(next, 1)).as("none reads past the room now: next may").isTrue();
    }
}
