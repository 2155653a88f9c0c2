package io.ringmq.transport;

import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Coverage-guided fuzz target (Jazzer) for a whole connection: the fuzzer's bytes go through a real socket into the
 * I/O agent and on through auth, routing and delivery, the broker in {@code invoker} threading mode stepped on the
 * test's thread, in pieces the fuzzer chooses (so framing sees split packets), optionally behind a valid 3.1.1 or 5.0
 * CONNECT so the fuzzer starts past the handshake. After each input the broker's invariants are checked:
 * <ul>
 *   <li>no exception escaped an agent or a stage, and the unexpected-error counter stays 0;</li>
 *   <li>everything the broker sent the connection frames (and, when the version is known, decodes) as MQTT;</li>
 *   <li>once the client closes, the broker closes its end: every accepted connection but the bystander's is
 *   closed, and the pooled buffers in use are back to what they were before the input (nothing leaked);</li>
 *   <li>a bystander client, subscribed to {@code #} all along, still gets its PINGRESP (other connections
 *   unaffected), and what it receives decodes.</li>
 * </ul>
 * One broker serves every input of a run (launching one per input would cost more than the input); a session or a
 * retained message an input leaves stays for the next, within the broker's limits.
 * <p>
 * Corpus: {@code src/test/resources/io/ringmq/transport/ConnectionFuzzTestInputs/connection/}.
 */
class ConnectionFuzzTest
{
    private static final int MAX_STEPS = 2_000;
    private static final int IDLE_STEPS = 3;
    private static final long STEP_LIMIT_NS = 5_000_000_000L;
    private static final String BYSTANDER_ID = "fuzz-bystander-0b7e";

    private static Broker broker;
    private static SocketChannel bystander;
    private static final Reader BYSTANDER_READER = new Reader();

    @AfterAll
    static void closeBroker() throws IOException
    {
        if (null != bystander)
        {
            bystander.close();
            bystander = null;
        }
        if (null != broker)
        {
            broker.close();
            broker = null;
        }
    }

    @FuzzTest(maxDuration = "30s")
    void connection(final FuzzedDataProvider data) throws Exception
    {
        // the sockets to the broker on loopback are the harness, not a request forgery
        BugDetectors.allowNetworkConnections((host, port) -> "127.0.0.1".equals(host) || "localhost".equals(host));
        ensureBroker();
        final BrokerCounters counters = broker.counters();
        final long buffersBefore = activeBuffers();
        final int prefix = data.consumeInt(0, 2);
        final int version = prefix == 1 ? MqttVersion.V3_1_1 : prefix == 2 ? MqttVersion.V5 : 0;
        final Reader reader = new Reader();
        try (SocketChannel client = open())
        {
            settle();
            if (prefix == 1)
            {
                write(client, RawClient.connect("fuzz", true, 0));
            }
            else if (prefix == 2)
            {
                write(client, RawClient.connect5("fuzz", 0, null));
            }
            while (data.remainingBytes() > 0)
            {
                final int chunk = data.consumeInt(1, 256);
                final byte[] bytes = data.consumeBytes(chunk);
                if (!write(client, bytes))
                {
                    break; // closed by the broker: the rest has nowhere to go
                }
                settle();
                reader.drain(client, version);
            }
            settle();
            reader.drain(client, version);
        }
        final long closedTarget = counters.get(BrokerCounters.CONNECTIONS_ACCEPTED) - 1; // all but the bystander
        step(() -> counters.get(BrokerCounters.CONNECTIONS_CLOSED) >= closedTarget);
        settle();
        assertThat(counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("unexpected errors in a stage or agent").isZero();
        assertThat(counters.get(BrokerCounters.CONNECTIONS_CLOSED)).as("every connection but the bystander's closed")
            .isEqualTo(closedTarget);
        assertThat(activeBuffers()).as("pooled buffers in use after the close").isEqualTo(buffersBefore);
        checkBystander();
    }

    /**
     * Launches the broker and connects the bystander on first use, or again when an input took its client id over.
     */
    private static void ensureBroker() throws Exception
    {
        if (null == broker)
        {
            broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
                .threads(t -> t.threading(BrokerContext.Threading.INVOKER)).observability(o -> o.sysIntervalMs(0))
                .limits(l -> l.connectTimeoutMs(60_000)));
        }
        if (null == bystander || !bystander.isOpen())
        {
            bystander = open();
            write(bystander, RawClient.connect5(BYSTANDER_ID, 0, null));
            BYSTANDER_READER.reset();
            assertThat(BYSTANDER_READER.next(bystander, MqttVersion.V5)).isEqualTo(PacketType.CONNACK);
            write(bystander, RawClient.subscribe5(1, "#", 0));
            assertThat(BYSTANDER_READER.next(bystander, MqttVersion.V5)).isEqualTo(PacketType.SUBACK);
        }
    }

    /**
     * Pings through the bystander and waits for its PINGRESP, reading past what it was sent meanwhile; reconnects
     * it when an input's CONNECT took its session over (a takeover is what MQTT asks for [MQTT-3.1.4-3]).
     */
    private static void checkBystander() throws Exception
    {
        write(bystander, RawClient.ping());
        while (true)
        {
            final int type = BYSTANDER_READER.next(bystander, MqttVersion.V5);
            if (type == PacketType.PINGRESP)
            {
                return;
            }
            if (type == -1 || type == PacketType.DISCONNECT)
            {
                assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_TAKEN_OVER))
                    .as("the bystander was closed: only a takeover may do that").isPositive();
                bystander.close();
                ensureBroker();
                return;
            }
        }
    }

    private static SocketChannel open() throws IOException
    {
        final SocketChannel channel = SocketChannel.open();
        channel.connect(new InetSocketAddress("127.0.0.1", broker.port()));
        channel.configureBlocking(false);
        channel.socket().setTcpNoDelay(true);
        return channel;
    }

    /**
     * @return false when the broker closed the connection already.
     */
    private static boolean write(final SocketChannel channel, final byte[] bytes)
    {
        final ByteBuffer buffer = ByteBuffer.wrap(bytes);
        try
        {
            final long deadline = System.nanoTime() + STEP_LIMIT_NS;
            while (buffer.hasRemaining())
            {
                channel.write(buffer);
                if (buffer.hasRemaining())
                {
                    assertThat(System.nanoTime()).as("the broker reads what it is sent").isLessThan(deadline);
                    broker.invoke();
                }
            }
            return true;
        }
        catch (final IOException closed)
        {
            return false;
        }
    }

    /**
     * Steps the broker until it finds no work a few times in a row (bounded).
     */
    private static void settle()
    {
        int idle = 0;
        for (int i = 0; i < MAX_STEPS && idle < IDLE_STEPS; i++)
        {
            idle = broker.invoke() == 0 ? idle + 1 : 0;
        }
    }

    private static void step(final java.util.function.BooleanSupplier until)
    {
        final long deadline = System.nanoTime() + STEP_LIMIT_NS;
        while (!until.getAsBoolean() && System.nanoTime() < deadline)
        {
            broker.invoke();
        }
    }

    /**
     * @return the pooled allocator's buffers in use, heap and direct (connection buffers come from it).
     */
    static long activeBuffers()
    {
        long active = 0;
        for (final PoolArenaMetric arena : PooledByteBufAllocator.DEFAULT.metric().directArenas())
        {
            active += arena.numActiveAllocations();
        }
        for (final PoolArenaMetric arena : PooledByteBufAllocator.DEFAULT.metric().heapArenas())
        {
            active += arena.numActiveAllocations();
        }
        return active;
    }

    /**
     * Reads the broker's bytes from a non-blocking channel (stepping the broker while it waits) and checks each
     * packet frames, and decodes when the connection's version is known.
     */
    private static final class Reader
    {
        private final PacketDecoder decoder = new PacketDecoder();
        private final ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
        private byte[] pending = new byte[64 * 1024];
        private int filled;
        private boolean ended;

        void reset()
        {
            filled = 0;
            ended = false;
        }

        /**
         * Reads what has arrived and checks the whole packets in it.
         */
        void drain(final SocketChannel channel, final int version) throws IOException
        {
            fill(channel);
            while (packet(version) > 0)
            {
                continue;
            }
        }

        /**
         * @return the type of the next packet, stepping the broker until it arrives, or -1 at end of stream.
         */
        int next(final SocketChannel channel, final int version) throws IOException
        {
            final long deadline = System.nanoTime() + STEP_LIMIT_NS;
            while (true)
            {
                final int type = packet(version);
                if (type > 0)
                {
                    return type;
                }
                if (ended)
                {
                    return -1;
                }
                assertThat(System.nanoTime()).as("a packet from the broker in time").isLessThan(deadline);
                broker.invoke();
                fill(channel);
            }
        }

        private void fill(final SocketChannel channel) throws IOException
        {
            while (!ended)
            {
                chunk.clear();
                final int read;
                try
                {
                    read = channel.read(chunk);
                }
                catch (final IOException reset)
                {
                    ended = true;
                    return;
                }
                if (read < 0)
                {
                    ended = true;
                }
                if (read <= 0)
                {
                    return;
                }
                if (filled + read > pending.length)
                {
                    pending = Arrays.copyOf(pending, Math.max(pending.length * 2, filled + read));
                }
                chunk.flip();
                chunk.get(pending, filled, read);
                filled += read;
            }
        }

        /**
         * @return the type of the whole packet consumed from the front of what was read, or 0 when none is whole.
         */
        private int packet(final int version)
        {
            if (filled == 0)
            {
                return 0;
            }
            final UnsafeBuffer view = new UnsafeBuffer(pending, 0, filled);
            final int length;
            if (version == 0)
            {
                length = decoder.frame().decode(view, 0, filled, MqttVersion.V5, Integer.MAX_VALUE);
            }
            else
            {
                length = decoder.decode(view, 0, filled, version, Integer.MAX_VALUE);
            }
            assertThat(DecodeError.isError(length)).as("the broker sent malformed bytes: %s",
                DecodeError.describe(length)).isFalse();
            if (length == 0)
            {
                return 0;
            }
            final int type = version == 0 ? decoder.frame().packetType() : decoder.packetType();
            System.arraycopy(pending, length, pending, 0, filled - length);
            filled -= length;
            return type;
        }
    }
}
