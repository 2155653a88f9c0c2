package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import static io.ringmq.transport.TlsContextFactoryTest.rsa;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link TlsSocketLayer} over an in-memory layer below, on one thread, against a client {@link SSLEngine}: the
 * per-message cost of a 64-byte MQTT PUBLISH in the steady state (bytes allocated and time, printed), buffers
 * given back between messages, and output the layer below takes only in pieces. Delegated tasks run inline here.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TlsSocketLayerInMemoryTest
{
    private static final int WARM_UP = 10_000;
    private static final int MEASURED = 10_000;

    private final MemoryLayer below = new MemoryLayer();
    private final ByteBuf in = Unpooled.directBuffer(16 * 1024, 16 * 1024);
    private final ByteBuf out = Unpooled.directBuffer(16 * 1024, 16 * 1024);
    private final byte[] publish = new byte[64];
    private SSLEngine client;
    private TlsSocketLayer layer;
    private ByteBuffer clientNet;
    private ByteBuffer clientApp;

    @BeforeEach
    void handshake() throws Exception
    {
        publish[0] = 0x30;
        publish[1] = 62;
        publish[3] = 5;
        Arrays.fill(publish, 4, 9, (byte)'t');
        client = TlsSocketLayerTest.clientContext(null).createSSLEngine("localhost", 1883);
        client.setUseClientMode(true);
        client.setEnabledProtocols(new String[]{ "TLSv1.3" });
        clientNet = ByteBuffer.allocate(client.getSession().getPacketBufferSize());
        clientApp = ByteBuffer.allocate(client.getSession().getApplicationBufferSize());
        layer = new TlsSocketLayer(below, TlsContextFactory.create(rsa(), (w) -> { }), Runnable::run,
            () -> { });
        client.beginHandshake();
        for (int i = 0; i < 100 && !(layer.established() &&
            SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING == client.getHandshakeStatus()); i++)
        {
            clientStep();
            assertThat(layer.read(in)).isZero();
        }
        assertThat(layer.established()).isTrue();
        assertThat(clientReceive()).isEmpty(); // the session ticket that follows a TLS 1.3 handshake
    }

    @AfterEach
    void release()
    {
        layer.close();
        assertThat(layer.buffersHeld()).isZero();
        in.release();
        out.release();
    }

    @Test
    void perMessageCostOf64BytePublish() throws Exception
    {
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();
        roundTrips(WARM_UP, threads);
        final long[] cost = roundTrips(MEASURED, threads);
        final double read = (double)cost[0] / MEASURED;
        final double write = (double)cost[1] / MEASURED;
        final double engineUnwrap = (double)cost[4] / MEASURED;
        final double engineWrap = (double)cost[5] / MEASURED;
        System.out.printf("TLS 1.3 %s, 64-byte PUBLISH, steady state, per message: layer read %.0f B %.0f ns, " +
            "layer write %.0f B %.0f ns; the bare JDK engine (client side): unwrap %.0f B, wrap %.0f B%n",
            client.getSession().getCipherSuite(), read, (double)cost[2] / MEASURED, write,
            (double)cost[3] / MEASURED, engineUnwrap, engineWrap);
        // the JDK engine allocates per record (its result, a cipher re-initialised with each record's nonce): the
        // layer must add next to nothing to it
        assertThat(read - engineUnwrap).as("bytes the layer adds to an unwrap").isLessThan(128);
        assertThat(write - engineWrap).as("bytes the layer adds to a wrap").isLessThan(128);
    }

    @Test
    void outputTheLayerBelowTakesInPiecesStaysPendingUntilFlushed() throws Exception
    {
        below.writeLimit = 10;
        out.writeBytes(publish);
        assertThat(layer.write(out)).isEqualTo(publish.length);
        assertThat(layer.hasPendingOutput()).isTrue();
        int flushes = 0;
        while (!layer.flush())
        {
            assertThat(++flushes).isLessThan(100);
        }
        assertThat(layer.hasPendingOutput()).isFalse();
        assertThat(layer.buffersHeld()).isZero();
        assertThat(clientReceive()).isEqualTo(publish);
    }

    @Test
    void recordArrivingInTwoReadsWaitsInOwnBufferThenGoesBack() throws Exception
    {
        clientSend(publish);
        final byte[] record = new byte[below.fromPeer.readableBytes()];
        below.fromPeer.readBytes(record);
        below.fromPeer.clear();
        below.fromPeer.writeBytes(record, 0, 10);
        assertThat(layer.read(in)).isZero();
        assertThat(layer.hasBufferedInput()).as("part of a record: wait for the socket").isFalse();
        assertThat(layer.buffersHeld()).isEqualTo(1);

        below.fromPeer.writeBytes(record, 10, record.length - 10);
        assertThat(layer.read(in)).isEqualTo(publish.length);
        assertThat(layer.buffersHeld()).isZero();
    }

    @Test
    @org.junit.jupiter.api.DisplayName("part of a record is held in a buffer just its size and counted while held; a " +
        "part that would pass the TLS buffers' share of the heap ends the call with HeapShare.Spent, nothing counted")
    void partsOfRecordsAreCountedAgainstTheirShareOfTheHeap() throws Exception
    {
        clientSend(publish);
        final byte[] record = new byte[below.fromPeer.readableBytes()];
        below.fromPeer.readBytes(record);
        below.fromPeer.clear();
        final long before = HeapShare.TLS_RECORDS.held();
        below.fromPeer.writeBytes(record, 0, 10);
        assertThat(layer.read(in)).isZero();
        assertThat(HeapShare.TLS_RECORDS.held() - before).as("a short part: a buffer of its size, as " +
            "the pool takes it").isEqualTo(16);
        below.fromPeer.writeBytes(record, 10, record.length - 10);
        assertThat(layer.read(in)).isEqualTo(publish.length);
        assertThat(HeapShare.TLS_RECORDS.held()).as("read whole: nothing held").isEqualTo(before);

        final long limit = HeapShare.TLS_RECORDS.limitBytes;
        HeapShare.TLS_RECORDS.limitBytes = before + 5; // less than the next part needs
        try
        {
            clientSend(publish);
            below.fromPeer.writerIndex(below.fromPeer.readerIndex() + 10);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> layer.read(in))
                .isInstanceOf(HeapShare.Spent.class).isInstanceOf(OutOfMemoryError.class);
            assertThat(HeapShare.TLS_RECORDS.held()).as("nothing more counted").isEqualTo(before);
        }
        finally
        {
            HeapShare.TLS_RECORDS.limitBytes = limit;
        }
        layer.close();
        assertThat(HeapShare.TLS_RECORDS.held()).as("given back at close").isEqualTo(before);
    }

    @Test
    @org.junit.jupiter.api.DisplayName("after its handshake and before a CONNACK accepts it, part of a record counts in " +
        "the unadmitted share of the heap too, and past that share the call ends with HeapShare.Spent; once " +
        "admitted, what it holds leaves that share and what it takes counts in the TLS records' quarter alone")
    void partsOfRecordsBeforeAdmissionCountInTheUnadmittedShare() throws Exception
    {
        clientSend(publish);
        final byte[] record = new byte[below.fromPeer.readableBytes()];
        below.fromPeer.readBytes(record);
        below.fromPeer.clear();
        final long unadmittedBefore = HeapShare.UNADMITTED.held();
        final long recordsBefore = HeapShare.TLS_RECORDS.held();
        below.fromPeer.writeBytes(record, 0, 10);
        assertThat(layer.read(in)).isZero();
        assertThat(HeapShare.UNADMITTED.held() - unadmittedBefore).as("established, not admitted").isEqualTo(16);
        assertThat(HeapShare.TLS_RECORDS.held() - recordsBefore).isEqualTo(16);

        layer.admitted();
        assertThat(HeapShare.UNADMITTED.held()).as("admitted: out of the unadmitted share").isEqualTo(unadmittedBefore);
        assertThat(HeapShare.TLS_RECORDS.held() - recordsBefore).as("still held").isEqualTo(16);
        final long limit = HeapShare.UNADMITTED.limitBytes;
        HeapShare.UNADMITTED.limitBytes = unadmittedBefore; // spent: only an unadmitted connection is refused
        try
        {
            below.fromPeer.writeBytes(record, 10, 20);
            assertThat(layer.read(in)).isZero();
            assertThat(HeapShare.TLS_RECORDS.held() - recordsBefore).isEqualTo(32);
            below.fromPeer.writeBytes(record, 30, record.length - 30);
            assertThat(layer.read(in)).isEqualTo(publish.length);
        }
        finally
        {
            HeapShare.UNADMITTED.limitBytes = limit;
        }
        layer.close();
        assertThat(HeapShare.TLS_RECORDS.held()).as("given back at close").isEqualTo(recordsBefore);
        assertThat(HeapShare.UNADMITTED.held()).isEqualTo(unadmittedBefore);
    }

    @Test
    @org.junit.jupiter.api.DisplayName("after its handshake and before a CONNACK accepts it, a part of a record past the " +
        "unadmitted share of the heap ends the call with HeapShare.Spent, nothing counted in either share")
    void partsOfRecordsPastTheUnadmittedShare() throws Exception
    {
        clientSend(publish);
        final long unadmittedBefore = HeapShare.UNADMITTED.held();
        final long recordsBefore = HeapShare.TLS_RECORDS.held();
        final long limit = HeapShare.UNADMITTED.limitBytes;
        HeapShare.UNADMITTED.limitBytes = unadmittedBefore + 5; // less than the part needs
        try
        {
            below.fromPeer.writerIndex(below.fromPeer.readerIndex() + 10);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> layer.read(in))
                .isInstanceOf(HeapShare.Spent.class);
            assertThat(HeapShare.UNADMITTED.held()).isEqualTo(unadmittedBefore);
            assertThat(HeapShare.TLS_RECORDS.held()).isEqualTo(recordsBefore);
        }
        finally
        {
            HeapShare.UNADMITTED.limitBytes = limit;
        }
        layer.close();
        assertThat(HeapShare.TLS_RECORDS.held()).isEqualTo(recordsBefore);
    }

    @Test
    @org.junit.jupiter.api.DisplayName("a buffer counts at the size class netty's pool takes for it: four to each " +
        "doubling from 16 bytes (read off PooledByteBuf for netty 4.2.18)")
    void buffersCountAtTheirPooledSize()
    {
        final int[][] lengths = {
            {1, 16}, {16, 16}, {17, 32}, {100, 112}, {1_000, 1_024}, {4_096, 4_096}, {4_097, 5_120}, {5_005, 5_120},
            {16_384, 16_384}, {16_389, 20_480}, {TlsBuffers.RECORD_LENGTH, 20_480}, {20_481, 24_576},
            {33_000, 40_960}, {65_536, 65_536}, {100_000, 114_688}};
        for (final int[] length : lengths)
        {
            assertThat(TlsBuffers.pooledLength(length[0])).as("%d bytes", length[0]).isEqualTo(length[1]);
        }
    }

    @Test
    void endOfStreamMidRecordIsEndWithNothingHandedOn() throws Exception
    {
        clientSend(publish);
        below.fromPeer.writerIndex(below.fromPeer.writerIndex() - 3);
        below.eof = true;
        assertThat(layer.read(in)).isEqualTo(-1);
        assertThat(in.isReadable()).isFalse();
    }

    @Test
    void bufferedInputBelowIsBufferedInputHere()
    {
        assertThat(layer.hasBufferedInput()).isFalse();
        below.buffered = true;
        assertThat(layer.hasBufferedInput()).isTrue();
    }

    private long[] roundTrips(final int count, final com.sun.management.ThreadMXBean threads) throws Exception
    {
        final long[] cost = new long[6];
        final ByteBuffer plain = ByteBuffer.wrap(publish);
        for (int i = 0; i < count; i++)
        {
            plain.clear();
            clientNet.clear();
            long bytes = threads.getCurrentThreadAllocatedBytes();
            client.wrap(plain, clientNet);
            cost[5] += threads.getCurrentThreadAllocatedBytes() - bytes;
            clientNet.flip();
            below.fromPeer.writeBytes(clientNet);

            bytes = threads.getCurrentThreadAllocatedBytes();
            long ns = System.nanoTime();
            final int read = layer.read(in);
            cost[2] += System.nanoTime() - ns;
            cost[0] += threads.getCurrentThreadAllocatedBytes() - bytes;
            if (read != publish.length)
            {
                throw new AssertionError("read " + read);
            }
            in.clear();

            out.writeBytes(publish);
            bytes = threads.getCurrentThreadAllocatedBytes();
            ns = System.nanoTime();
            final int written = layer.write(out);
            cost[3] += System.nanoTime() - ns;
            cost[1] += threads.getCurrentThreadAllocatedBytes() - bytes;
            if (written != publish.length || 0 != layer.buffersHeld())
            {
                throw new AssertionError("written " + written + ", buffers held " + layer.buffersHeld());
            }
            out.clear();

            clientApp.clear();
            final ByteBuffer net = below.toPeer.internalNioBuffer(below.toPeer.readerIndex(),
                below.toPeer.readableBytes());
            bytes = threads.getCurrentThreadAllocatedBytes();
            final SSLEngineResult result = client.unwrap(net, clientApp);
            cost[4] += threads.getCurrentThreadAllocatedBytes() - bytes;
            below.toPeer.clear();
            if (publish.length != result.bytesProduced())
            {
                throw new AssertionError("client unwrapped " + result);
            }
        }
        return cost;
    }

    private void clientStep() throws SSLException
    {
        switch (client.getHandshakeStatus())
        {
            case NEED_TASK:
                Runnable task;
                while (null != (task = client.getDelegatedTask()))
                {
                    task.run();
                }
                break;
            case NEED_WRAP:
                clientSend(new byte[0]);
                break;
            case NEED_UNWRAP:
                clientReceive();
                break;
            default:
                break;
        }
    }

    private void clientSend(final byte[] plain) throws SSLException
    {
        clientNet.clear();
        client.wrap(ByteBuffer.wrap(plain), clientNet);
        clientNet.flip();
        below.fromPeer.writeBytes(clientNet);
    }

    private byte[] clientReceive() throws SSLException
    {
        clientApp.clear();
        while (below.toPeer.isReadable())
        {
            final ByteBuffer net = below.toPeer.nioBuffer();
            final SSLEngineResult result = client.unwrap(net, clientApp);
            below.toPeer.skipBytes(result.bytesConsumed());
            if (0 == result.bytesConsumed())
            {
                break;
            }
        }
        below.toPeer.discardReadBytes();
        clientApp.flip();
        final byte[] bytes = new byte[clientApp.remaining()];
        clientApp.get(bytes);
        return bytes;
    }

    /**
     * The layer below, in memory: what the peer sent, what was written to it, and a socket that takes only so
     * much per write.
     */
    static final class MemoryLayer implements SocketLayer
    {
        final ByteBuf fromPeer = Unpooled.buffer(64 * 1024);
        final ByteBuf toPeer = Unpooled.buffer(64 * 1024);
        int writeLimit = Integer.MAX_VALUE;
        boolean eof;
        boolean buffered;

        public int read(final ByteBuf in)
        {
            if (!fromPeer.isReadable())
            {
                return eof ? -1 : 0;
            }
            final int length = Math.min(fromPeer.readableBytes(), in.writableBytes());
            in.writeBytes(fromPeer, length);
            fromPeer.discardReadBytes();
            return length;
        }

        public int write(final ByteBuf out)
        {
            final int length = Math.min(out.readableBytes(), writeLimit);
            toPeer.writeBytes(out, length);
            return length;
        }

        public boolean hasBufferedInput()
        {
            return buffered;
        }

        public void close()
        {
        }
    }
}
