package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ConnectionWriter} over {@link SmallWrites}, on fake layers that take as many bytes as the test lets them:
 * small packets for a connection with nothing waiting are written from the agent's own buffer, only what a layer
 * does not take goes to a pooled buffer, and every connection's bytes reach it whole and in order.
 */
class SmallWritesTest
{
    private static final byte[] PINGRESP = {(byte)0xD0, 0x00};

    private final List<Connection> closed = new ArrayList<>();
    private final IdleBuffers idle = new IdleBuffers();
    private final ConnectionWriter writer = new ConnectionWriter(new BrokerContext().conclude(), new BrokerCounters(),
        new MemoryBudget(BrokerContext.AUTO), new PausedConnections(), new ConnectionWriter.Closer()
        {
            public void close(final Connection connection, final int kind)
            {
                connection.closed = true;
                closed.add(connection);
                writer.release(connection);
            }

            public void disconnect(final Connection connection, final int reasonCode)
            {
                close(connection, IngressEvent.CONNECTION_LOST);
            }

            public void disconnect(final Connection connection, final int reasonCode, final String reasonString)
            {
                close(connection, IngressEvent.CONNECTION_LOST);
            }
        }, idle);
    private final List<Connection> connections = new ArrayList<>();

    /** Takes at most {@link #allowance} bytes per write (all when negative), keeps what it took. */
    private static final class FakeLayer implements SocketLayer
    {
        final ByteArrayOutputStream wire = new ByteArrayOutputStream();
        int allowance = -1;
        int writes;
        /** What each write was offered. */
        final List<Integer> offered = new ArrayList<>();
        boolean fail;
        /** Bytes of the layer's own (a TLS record, a WebSocket pong) that wait before anything else. */
        byte[] pending;

        public int read(final ByteBuf in)
        {
            return 0;
        }

        public int write(final ByteBuf out) throws IOException
        {
            writes++;
            offered.add(out.readableBytes());
            if (fail)
            {
                throw new IOException("connection reset");
            }
            final int length = allowance < 0 ? out.readableBytes() : Math.min(allowance, out.readableBytes());
            final byte[] bytes = new byte[length];
            out.readBytes(bytes);
            wire.writeBytes(bytes);
            return length;
        }

        public boolean flush()
        {
            if (null != pending && allowance != 0)
            {
                wire.writeBytes(pending);
                pending = null;
            }
            return null == pending;
        }

        public boolean hasPendingOutput()
        {
            return null != pending;
        }

        public void close()
        {
        }
    }

    private Connection connection(final FakeLayer layer)
    {
        final Connection connection = new Connection(connections.size() + 1,
            new Acceptor.Accepted(null, null, true, null, null), layer, 0);
        connection.connack = Connection.CONNACK_ACCEPTED;
        connections.add(connection);
        return connection;
    }

    private void send(final Connection connection, final byte[] packet)
    {
        writer.send(connection, new UnsafeBuffer(packet), 0, packet.length);
    }

    private static byte[] puback(final int packetId)
    {
        return RawClient.ack(PacketType.PUBACK, packetId);
    }

    private static byte[] concat(final byte[]... packets)
    {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (final byte[] packet : packets)
        {
            bytes.writeBytes(packet);
        }
        return bytes.toByteArray();
    }

    @AfterEach
    void releaseAll()
    {
        for (final Connection connection : connections)
        {
            writer.release(connection);
        }
        writer.close();
    }

    @Test
    @DisplayName("[MQTT-3.12.4-1] a PINGRESP to a connection with nothing waiting is written in one write, no pooled "
        + "buffer taken")
    void pingResponseTakesNoBuffer()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        writer.sendPingResponse(connection);
        assertThat(connection.out).isNull();
        assertThat(connection.outBytes()).as("staged, not yet written").isEqualTo(2);
        writer.flushTouched();
        assertThat(layer.wire.toByteArray()).isEqualTo(PINGRESP);
        assertThat(layer.writes).isEqualTo(1);
        assertThat(connection.out).isNull();
        assertThat(connection.outBytes()).isZero();
        assertThat(idle.size()).as("nothing for the idle sweep").isZero();
    }

    @Test
    @DisplayName("a whole small batch (PUBACK, PUBACK, PINGRESP) to one connection goes out in one write, in order")
    void smallBatchInOneWrite()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        send(connection, puback(1));
        send(connection, puback(2));
        writer.sendPingResponse(connection);
        writer.flushTouched();
        assertThat(layer.wire.toByteArray()).isEqualTo(concat(puback(1), puback(2), PINGRESP));
        assertThat(layer.writes).isEqualTo(1);
        assertThat(connection.out).isNull();
    }

    @Test
    @DisplayName("a small packet that the socket takes only part of keeps the rest, in order, in a pooled buffer; "
        + "later packets follow it")
    void partialWriteKeepsTheRestInOrder()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        layer.allowance = 3;
        send(connection, puback(7));
        writer.sendPingResponse(connection);
        writer.flushTouched();
        assertThat(layer.wire.size()).isEqualTo(3);
        assertThat(connection.out).as("the rest, in a pooled buffer").isNotNull();
        assertThat(connection.outBytes()).isEqualTo(3);
        assertThat(connection.writeBlocked).isTrue();

        send(connection, puback(8)); // after bytes already waiting: appended behind them, not staged
        assertThat(connection.stagedLength).isZero();
        writer.flushTouched();
        layer.allowance = -1;
        writer.flush(connection); // the socket is writable again
        assertThat(layer.wire.toByteArray()).isEqualTo(concat(puback(7), PINGRESP, puback(8)));
        assertThat(connection.writeBlocked).isFalse();
        assertThat(connection.outBytes()).isZero();
    }

    @Test
    @DisplayName("a socket that takes nothing of a small packet: all of it is kept and written once it is writable")
    void socketTakesNothing()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        layer.allowance = 0;
        writer.sendPingResponse(connection);
        writer.flushTouched();
        assertThat(layer.wire.size()).isZero();
        assertThat(connection.outBytes()).isEqualTo(2);
        assertThat(idle.size()).as("its pooled buffer is swept once idle").isEqualTo(1);
        layer.allowance = -1;
        writer.flush(connection);
        assertThat(layer.wire.toByteArray()).isEqualTo(PINGRESP);
    }

    @Test
    @DisplayName("a connection given bytes again after another connection's were staged moves its staged bytes to a "
        + "pooled buffer first: each connection's bytes stay in order")
    void interleavedConnectionsKeepOrder()
    {
        final FakeLayer a = new FakeLayer();
        final FakeLayer b = new FakeLayer();
        final Connection first = connection(a);
        final Connection second = connection(b);
        send(first, puback(1));
        send(second, puback(100));
        send(first, puback(2));
        assertThat(first.stagedLength).as("moved to a pooled buffer").isZero();
        assertThat(first.out).isNotNull();
        send(second, puback(101));
        writer.flushTouched();
        assertThat(a.wire.toByteArray()).isEqualTo(concat(puback(1), puback(2)));
        assertThat(b.wire.toByteArray()).isEqualTo(concat(puback(100), puback(101)));
    }

    @Test
    @DisplayName("bytes the layer holds of its own go first; staged bytes wait behind them in a pooled buffer")
    void layerOutputGoesFirst()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        layer.pending = new byte[]{(byte)0x8A, 0x00}; // e.g. a WebSocket pong the socket did not take
        layer.allowance = 0;
        writer.sendPingResponse(connection);
        writer.flushTouched();
        assertThat(layer.writes).as("nothing offered past the layer's own bytes").isZero();
        assertThat(connection.outBytes()).isEqualTo(2);
        layer.allowance = -1;
        writer.flush(connection);
        assertThat(layer.wire.toByteArray()).isEqualTo(new byte[]{(byte)0x8A, 0x00, (byte)0xD0, 0x00});
    }

    @Test
    @DisplayName("oversized: a packet larger than a staged write goes to a pooled buffer as before; one that fills "
        + "the agent's buffer sends the next connections' packets there too, all whole")
    void largePacketsAndAFullStagingBuffer()
    {
        final FakeLayer big = new FakeLayer();
        final Connection large = connection(big);
        final byte[] publish = RawClient.publish("t", new byte[SmallWrites.MAX_STAGED_LENGTH], 1, 1);
        send(large, publish);
        assertThat(large.stagedLength).isZero();
        assertThat(large.out).isNotNull();

        final int count = 2 * SmallWrites.CAPACITY / 3000;
        final byte[] small = RawClient.publish("t", new byte[3000 - 5], 1, 2);
        final List<FakeLayer> layers = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            final FakeLayer layer = new FakeLayer();
            layers.add(layer);
            send(connection(layer), small);
        }
        assertThat(connections.stream().filter(c -> c.stagedLength > 0).count()).as("staged while room was left")
            .isEqualTo(SmallWrites.CAPACITY / small.length);
        writer.flushTouched();
        assertThat(big.wire.toByteArray()).isEqualTo(publish);
        for (final FakeLayer layer : layers)
        {
            assertThat(layer.wire.toByteArray()).isEqualTo(small);
        }

        final FakeLayer again = new FakeLayer();
        final Connection next = connection(again);
        writer.sendPingResponse(next);
        assertThat(next.stagedLength).as("the whole buffer is free again after the flush").isEqualTo(2);
        writer.flushTouched();
        assertThat(again.wire.toByteArray()).isEqualTo(PINGRESP);
    }

    @Test
    @DisplayName("a cycle that grew a connection's buffer past the shrink size gives it back once written, and the next "
        + "buffer is taken at what that cycle wrote (no growth from 1 KB each cycle); a smaller cycle lowers it again")
    void grownBufferSizeCarriesToTheNextCycle()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection subscriber = connection(layer);
        final int count = 2 * Buffers.SHRINK_ABOVE / 1000;
        final ByteArrayOutputStream expected = new ByteArrayOutputStream();

        final int burst = cycle(subscriber, count, 1, expected);
        assertThat(burst).isGreaterThan(Buffers.SHRINK_ABOVE);
        writer.flushTouched();
        assertThat(subscriber.out).as("given back once written: grown past the shrink size").isNull();
        assertThat(subscriber.nextOutLength).isEqualTo(burst);

        // the same again: the buffer taken for it holds the whole cycle without growing
        final int[] capacityWhenTaken = new int[1];
        assertThat(cycle(subscriber, count, count + 1, expected, capacityWhenTaken)).isEqualTo(burst);
        assertThat(capacityWhenTaken[0]).isGreaterThanOrEqualTo(burst);
        assertThat(subscriber.out.capacity()).as("not grown").isEqualTo(capacityWhenTaken[0]);
        assertThat(subscriber.nextOutLength).as("taken once").isZero();
        writer.flushTouched();
        assertThat(subscriber.out).isNull();
        assertThat(subscriber.nextOutLength).isEqualTo(burst);

        // a small cycle: taken at the old size once, then the hint follows what was written
        final int small = cycle(subscriber, 20, 2 * count + 1, expected);
        writer.flushTouched();
        assertThat(subscriber.nextOutLength).isEqualTo(small);
        cycle(subscriber, 20, 2 * count + 21, expected, capacityWhenTaken);
        assertThat(capacityWhenTaken[0]).isLessThanOrEqualTo(Buffers.SHRINK_ABOVE);
        writer.flushTouched();
        assertThat(subscriber.out).as("kept while used: within the shrink size").isNotNull();
        assertThat(subscriber.nextOutLength).isZero();
        assertThat(layer.wire.toByteArray()).isEqualTo(expected.toByteArray());
    }

    @Test
    @DisplayName("the carried size is taken once, also for what a socket refused; it goes once a sweep interval passed "
        + "without a pooled buffer, and stops at the high-water mark when a lagging socket's buffer took several "
        + "cycles' bytes")
    void carriedSizeIsBounded()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection subscriber = connection(layer);
        final int count = 2 * Buffers.SHRINK_ABOVE / 1000;
        final ByteArrayOutputStream expected = new ByteArrayOutputStream();
        final int burst = cycle(subscriber, count, 1, expected);
        writer.flushTouched();
        assertThat(subscriber.nextOutLength).isEqualTo(burst);

        // a socket that takes nothing of a small cycle: the rest goes to a buffer of the carried size, once
        layer.allowance = 0;
        writer.sendPingResponse(subscriber);
        expected.writeBytes(PINGRESP);
        writer.flushTouched();
        assertThat(subscriber.out.capacity()).isGreaterThanOrEqualTo(burst);
        assertThat(subscriber.nextOutLength).isZero();
        layer.allowance = -1;
        writer.flush(subscriber);
        assertThat(subscriber.out).as("given back: grown past the shrink size").isNull();
        assertThat(subscriber.nextOutLength).as("what it was written").isEqualTo(PINGRESP.length);
        writer.release(subscriber);

        // grown again, then cycles small enough to be written from the agent's buffer: the size stays while the
        // connection is busy, and goes once a sweep interval passed without a pooled buffer
        cycle(subscriber, count, count + 1, expected);
        writer.flushTouched();
        assertThat(subscriber.nextOutLength).isEqualTo(burst);
        final long nowMs = 1_000_000;
        idle.sweep(nowMs);
        writer.sendPingResponse(subscriber);
        expected.writeBytes(PINGRESP);
        assertThat(subscriber.out).isNull();
        writer.flushTouched();
        assertThat(subscriber.nextOutLength).isEqualTo(burst);
        idle.sweep(nowMs + IdleBuffers.SWEEP_INTERVAL_MS);
        assertThat(subscriber.nextOutLength).as("an interval without a pooled buffer").isZero();
        assertThat(idle.size()).isZero();

        // a socket that takes a little per cycle while more arrives: the buffer counts every byte it took, the
        // carried size stops at the high-water mark
        final int highWater = new BrokerContext().conclude().outboundHighWaterBytes();
        layer.allowance = 60_000;
        int id = 2 * count + 1;
        for (int i = 0; i < 12; i++)
        {
            cycle(subscriber, count, id, expected);
            id += count;
            writer.flushTouched();
        }
        assertThat(subscriber.outBytes()).as("still under the high-water mark").isLessThan(highWater);
        assertThat(subscriber.out.writerIndex()).isGreaterThan(highWater);
        layer.allowance = -1;
        writer.flush(subscriber);
        assertThat(subscriber.out).isNull();
        assertThat(subscriber.nextOutLength).isEqualTo(highWater);
        assertThat(layer.wire.toByteArray()).isEqualTo(expected.toByteArray());
    }

    /**
     * Sends {@code count} QoS 1 PUBLISHes of 1,000 bytes to a connection (packet ids from {@code firstId}), noting them
     * in {@code expected}.
     *
     * @return the bytes waiting for the connection afterwards.
     */
    private int cycle(final Connection connection, final int count, final int firstId,
        final ByteArrayOutputStream expected)
    {
        return cycle(connection, count, firstId, expected, new int[1]);
    }

    /**
     * @param capacityWhenTaken gets the capacity of the pooled buffer the connection took during the cycle.
     */
    private int cycle(final Connection connection, final int count, final int firstId,
        final ByteArrayOutputStream expected, final int[] capacityWhenTaken)
    {
        for (int i = 0; i < count; i++)
        {
            final boolean held = null != connection.out;
            final byte[] publish = RawClient.publish("t", new byte[1000 - 8], 1, firstId + i);
            send(connection, publish);
            expected.writeBytes(publish);
            if (!held && null != connection.out)
            {
                capacityWhenTaken[0] = connection.out.capacity();
            }
        }
        return connection.outBytes();
    }

    @Test
    @DisplayName("hostile: a socket that fails while its staged bytes are written closes only that connection; the "
        + "next connections' bytes are written whole")
    void failingSocketClosesOnlyItsConnection()
    {
        final FakeLayer broken = new FakeLayer();
        broken.fail = true;
        final FakeLayer healthy = new FakeLayer();
        final Connection failing = connection(broken);
        final Connection fine = connection(healthy);
        writer.sendPingResponse(failing);
        send(fine, puback(9));
        writer.flushTouched();
        assertThat(closed).containsExactly(failing);
        assertThat(failing.outBytes()).isZero();
        assertThat(failing.out).isNull();
        assertThat(healthy.wire.toByteArray()).isEqualTo(puback(9));
    }

    @Test
    @DisplayName("a connection closed before its flush forgets its staged bytes; the buffer is reused")
    void closedBeforeFlush()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        writer.sendPingResponse(connection);
        connection.closed = true;
        writer.release(connection);
        assertThat(connection.outBytes()).isZero();
        writer.flushTouched();
        assertThat(layer.writes).isZero();
    }

    @Test
    @DisplayName("a CONNACK that refuses [MQTT-3.2.2-5] is written from the agent's buffer, then the connection closes")
    void refusingConnackThenClose()
    {
        final FakeLayer layer = new FakeLayer();
        final Connection connection = connection(layer);
        connection.connack = Connection.CONNACK_PENDING;
        final byte[] refused = {0x20, 0x02, 0x00, 0x05};
        send(connection, refused);
        assertThat(connection.out).isNull();
        writer.flushTouched();
        assertThat(layer.wire.toByteArray()).isEqualTo(refused);
        assertThat(closed).containsExactly(connection);
    }

    @Test
    @DisplayName("a layer is offered exactly its connection's staged range, though other connections' bytes share "
        + "the agent's buffer")
    void layerSeesOnlyItsRange()
    {
        final FakeLayer first = new FakeLayer();
        final FakeLayer second = new FakeLayer();
        final Connection a = connection(first);
        final Connection b = connection(second);
        send(b, puback(1));
        writer.sendPingResponse(a);
        send(b, puback(2)); // after a's: b's staged bytes move to a pooled buffer
        writer.flushTouched();
        assertThat(first.offered).containsExactly(2);
        assertThat(first.wire.toByteArray()).isEqualTo(PINGRESP);
        assertThat(second.wire.toByteArray()).isEqualTo(concat(puback(1), puback(2)));
    }

    @Test
    @Timeout(60)
    @DisplayName("a real socket with a small receive buffer takes only part of a staged PUBLISH: the rest, and the "
        + "packets queued behind it, arrive whole and in order")
    void realSocketTakesPartOfAStagedWrite() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext());
            Socket client = new Socket())
        {
            client.setReceiveBufferSize(4096);
            client.connect(new InetSocketAddress("127.0.0.1", edge.port()), 5_000);
            client.getOutputStream().write(RawClient.connect("partial", true, 60));
            final IngressEvent connect = edge.next();
            assertThat(connect.packetType).isEqualTo(PacketType.CONNECT);
            final long id = connect.connectionId;
            final ByteArrayOutputStream expected = new ByteArrayOutputStream();
            sendAndFlush(edge, id, SteppedEdge.CONNACK_V3, expected);
            final Connection connection = edge.agent.connection(id);
            assertThat(connection.out).as("the CONNACK took no pooled buffer").isNull();

            int stagedThenKept = -1;
            for (int i = 0; i < 4000 && stagedThenKept < 0; i++)
            {
                final boolean nothingWaiting = null == connection.out;
                sendAndFlush(edge, id, RawClient.publish("t", payload(i, 3000), 1, 1 + i), expected);
                if (nothingWaiting && connection.outBytes() > 0)
                {
                    stagedThenKept = i; // the socket did not take all of this staged PUBLISH
                }
            }
            assertThat(stagedThenKept).as("a staged PUBLISH the socket took only part of").isPositive();
            for (int i = 0; i < 20; i++)
            {
                sendAndFlush(edge, id, RawClient.ack(PacketType.PUBACK, 1 + i), expected); // behind what waits
            }

            final byte[] wanted = expected.toByteArray();
            final ByteArrayOutputStream received = new ByteArrayOutputStream();
            final InputStream in = client.getInputStream();
            final byte[] chunk = new byte[8192];
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (received.size() < wanted.length && System.nanoTime() < deadline)
            {
                edge.agent.doWork();
                final int available = in.available();
                if (available > 0)
                {
                    received.write(chunk, 0, in.read(chunk, 0, Math.min(chunk.length, available)));
                }
            }
            assertThat(received.toByteArray()).as("every byte, in order").isEqualTo(wanted);
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 0);
        }
    }

    private static void sendAndFlush(final SteppedEdge edge, final long id, final byte[] packet,
        final ByteArrayOutputStream expected)
    {
        edge.send(id, packet);
        expected.writeBytes(packet);
        edge.step(() -> !edge.outboundPending()); // drained and flushed in the same duty cycle
    }

    private static byte[] payload(final int index, final int length)
    {
        final byte[] payload = new byte[length];
        java.util.Arrays.fill(payload, (byte)index);
        payload[0] = (byte)(index >>> 8);
        return payload;
    }
}
