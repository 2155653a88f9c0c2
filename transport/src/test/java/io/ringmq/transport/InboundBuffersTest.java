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
    private final InboundBuffers buffers = new InboundBuffers(new IdleBuffers(), LIMIT);
    private final List<Connection> connections = new ArrayList<>();

    @AfterEach
    void releaseAll()
    {
        connections.forEach(buffers::release);
        buffers.close();
        assertThat(buffers.unadmittedBytes()).as("nothing left counted once every connection is gone").isZero();
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
}
