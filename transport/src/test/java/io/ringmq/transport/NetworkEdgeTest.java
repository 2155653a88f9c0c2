package io.ringmq.transport;

import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocatorMetric;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The network edge against a real broker on an ephemeral port, spoken to in raw bytes: what a client may make
 * the broker hold before and after CONNECT, what the broker sends before its CONNACK, keep-alive, the wake-up
 * between threads, and the edge's limits.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NetworkEdgeTest
{
    /** A remaining length of 1,000,000 as a variable byte integer. */
    private static final byte[] ONE_MB = {(byte)0xC0, (byte)0x84, 0x3D};
    private static final byte[] PINGREQ = {(byte)0xC0, 0x00};

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;

    private Broker broker(final BrokerContext.Threading threading, final Consumer<BrokerContext> settings)
        throws IOException
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(threading)
            .ioThreads(2));
        settings.accept(context);
        broker = Broker.launch(context);
        return broker;
    }

    private RawClient raw() throws IOException
    {
        final RawClient client = new RawClient(broker.port());
        closeables.add(client);
        return client;
    }

    private RawClient connected(final String clientId) throws IOException
    {
        final RawClient client = raw();
        assertThat(client.handshake(RawClient.connect(clientId, true, 60))).isZero();
        return client;
    }

    private long counter(final int counter)
    {
        return broker.counters().get(counter);
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() < deadline).as("timed out waiting for " + what).isTrue();
            Thread.sleep(5);
        }
    }

    private static long pooledBytes()
    {
        final PooledByteBufAllocatorMetric metric = PooledByteBufAllocator.DEFAULT.metric();
        return metric.usedDirectMemory() + metric.usedHeapMemory();
    }

    private static byte[] concat(final byte[]... parts)
    {
        int length = 0;
        for (final byte[] part : parts)
        {
            length += part.length;
        }
        final byte[] all = new byte[length];
        int offset = 0;
        for (final byte[] part : parts)
        {
            System.arraycopy(part, 0, all, offset, part.length);
            offset += part.length;
        }
        return all;
    }

    private static byte[] connectWithCredentials(final String clientId, final String user, final String password)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60);
        encoder.clientId().wrap(clientId);
        encoder.userName().wrap(user);
        encoder.password().wrap(password);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    /**
     * Every byte sent before this on other sockets of the (single) I/O agent has been read: the agent reads every
     * ready socket in the cycle that reads this PINGREQ, before it flushes the PINGRESP.
     */
    private static void barrier(final RawClient probe) throws IOException
    {
        probe.send(PINGREQ);
        assertThat(probe.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
    }

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    @Test
    @DisplayName("buffers grow only as bytes arrive: 32 claimed 1 MB CONNECTs and 32 claimed 1 MB PUBLISHes "
        + "reserve nothing")
    void claimedLengthsReserveNoMemory() throws Exception
    {
        broker(BrokerContext.Threading.SHARED, context -> context.maxConnectSize(1024 * 1024));
        final RawClient probe = connected("probe");
        barrier(probe);
        final long before = pooledBytes();
        final List<RawClient> claimants = new ArrayList<>();
        for (int i = 0; i < 32; i++)
        {
            final RawClient preConnect = raw();
            preConnect.send(concat(new byte[]{0x10}, ONE_MB)); // CONNECT header only
            claimants.add(preConnect);
            final RawClient connected = connected("c" + i);
            connected.send(concat(new byte[]{0x30}, ONE_MB, new byte[]{0x00, 0x01, 't'})); // PUBLISH header only
            claimants.add(connected);
        }
        barrier(probe);
        final long grown = pooledBytes() - before;
        assertThat(grown).as("pooled bytes grown by 64 sockets claiming 1 MB each").isLessThan(8L * 1024 * 1024);
        for (final RawClient claimant : claimants)
        {
            assertThat(claimant.closedWithin(1)).isFalse(); // within the size limits: waiting, not refused
        }
    }

    @Test
    @DisplayName("MQTT-3.1.0-1: before CONNECT, a CONNECT claiming more than --max-connect-size or another "
        + "packet is closed at once and counted")
    void oversizedOrNonConnectFirstPacketIsClosedAtOnce() throws Exception
    {
        broker(BrokerContext.Threading.SHARED, context -> context.limits(l -> l.connectTimeoutMs(30_000)));
        final RawClient oversized = raw();
        oversized.send(concat(new byte[]{0x10}, ONE_MB));
        assertThat(oversized.closedWithin(2_000)).isTrue();
        final RawClient pinger = raw();
        pinger.send(PINGREQ);
        assertThat(pinger.closedWithin(2_000)).isTrue();
        await("refusals counted", () -> counter(BrokerCounters.PRE_CONNECT_REFUSED) == 2);
        final RawClient small = raw(); // a normal CONNECT is still welcome
        assertThat(small.handshake(RawClient.connect("small", true, 60))).isZero();
    }

    @Test
    @DisplayName("MQTT-3.2.0-1: a PINGREQ pipelined with CONNECT is answered after the accepting CONNACK")
    void pingBeforeConnackIsAnsweredAfterIt() throws Exception
    {
        broker(BrokerContext.Threading.SHARED_NETWORK, context -> { });
        final RawClient client = raw();
        client.send(concat(RawClient.connect("early-ping", true, 60), PINGREQ));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        assertThat(client.decoder().connack().reasonCode()).isZero();
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
    }

    @Test
    @DisplayName("MQTT-3.1.4-5, MQTT-3.2.0-1: after a refused CONNECT nothing is processed, no PINGRESP is sent")
    void nothingAfterARefusedConnect() throws Exception
    {
        broker(BrokerContext.Threading.SHARED_NETWORK, context -> context.auth(a -> a.credentials("u", "p")));
        final RawClient client = raw();
        client.send(concat(connectWithCredentials("bad", "u", "wrong"), PINGREQ, PINGREQ));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        assertThat(client.decoder().connack().reasonCode()).isNotZero();
        int next;
        try
        {
            next = client.readPacket(5_000);
        }
        catch (final IOException ex)
        {
            next = -1; // reset by the broker
        }
        assertThat(next).as("what follows the refusing CONNACK").isEqualTo(-1);
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: keep-alive counts packets, not bytes: a trickled partial packet does not keep "
        + "a connection alive")
    void tricklingBytesDoesNotKeepAlive() throws Exception
    {
        broker(BrokerContext.Threading.SHARED, context -> { });
        final RawClient trickler = raw();
        assertThat(trickler.handshake(RawClient.connect("trickler", true, 1))).isZero();
        final long start = System.nanoTime();
        final byte[] publish = RawClient.publish("t", new byte[200], 0, 0);
        boolean closed = false;
        for (int i = 0; i < publish.length && !closed && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(6); i++)
        {
            try
            {
                trickler.send(new byte[]{publish[i]});
            }
            catch (final IOException ex)
            {
                closed = true;
                break;
            }
            closed = trickler.closedWithin(300); // paces the trickle: one byte every 300 ms
        }
        final long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(closed).as("closed while trickling").isTrue();
        assertThat(elapsedMs).as("closed after 1.5 x keep-alive, with slack").isLessThan(1_500 + 1_000);
        assertThat(counter(BrokerCounters.KEEP_ALIVE_TIMEOUTS)).isEqualTo(1);
    }

    @Test
    @DisplayName("dedicated threads miss no wake-up: 2,000 sequential QoS 0 round trips, hardly any near the 100 ms "
        + "sleep timeout")
    void noMissedWakeupsInDedicatedMode() throws Exception
    {
        broker(BrokerContext.Threading.DEDICATED, context -> { });
        final RawClient subscriber = connected("sub");
        subscriber.send(RawClient.subscribe(1, "rt", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = connected("pub");
        final byte[] message = RawClient.publish("rt", new byte[16], 0, 0);
        final long nearTimeoutNs = TimeUnit.MILLISECONDS.toNanos(80);
        int nearTimeout = 0;
        for (int i = -200; i < 2_000; i++) // 200 to warm up
        {
            final long start = System.nanoTime();
            publisher.send(message);
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            if (i >= 0 && System.nanoTime() - start >= nearTimeoutNs)
            {
                nearTimeout++;
            }
        }
        // a missed wake-up waits out the idle strategy's 100 ms sleep; a busy machine (builds beside the test) also
        // stalls a thread now and then, so five slow round trips are let be: a wake-up lost by design fails it
        assertThat(nearTimeout).as("round trips of 2,000 that took 80 ms or more").isLessThanOrEqualTo(5);
    }

    @Test
    @DisplayName("--max-connections-per-address closes further connections at accept, counts them, and frees "
        + "a place when one closes on any agent")
    void connectionsPerAddressAreLimited() throws Exception
    {
        broker(BrokerContext.Threading.SHARED_NETWORK,
            context -> context.maxConnectionsPerAddress(3).limitLoopback(true));
        final List<RawClient> held = new ArrayList<>();
        for (int i = 0; i < 3; i++)
        {
            held.add(connected("held" + i)); // round-robin: on both agents
        }
        final RawClient fourth = raw();
        assertThat(fourth.closedWithin(5_000)).isTrue();
        assertThat(counter(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS)).isEqualTo(1);
        held.get(1).close(); // on the agent that does not accept
        await("a place freed", () ->
        {
            try (RawClient again = new RawClient(broker.port()))
            {
                return again.handshake(RawClient.connect("again", true, 60)) == 0;
            }
            catch (final IOException ex)
            {
                return false;
            }
        });
    }

    @Test
    @DisplayName("loopback is exempt from --max-connections-per-address unless --limit-loopback")
    void loopbackIsExemptByDefault() throws Exception
    {
        broker(BrokerContext.Threading.SHARED, context -> context.maxConnectionsPerAddress(2));
        for (int i = 0; i < 4; i++)
        {
            connected("local" + i);
        }
        assertThat(counter(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS)).isZero();
    }

    @Test
    @DisplayName("over --memory-budget new connections are refused and QoS 0 to subscribers is shed, until "
        + "memory is back under")
    void memoryBudgetRefusesConnectionsAndShedsQos0() throws Exception
    {
        System.gc();
        final MemoryBudget probe = new MemoryBudget(Long.MAX_VALUE);
        probe.sample(0);
        final long budget = probe.usedBytes() + 160L * 1024 * 1024;
        broker(BrokerContext.Threading.SHARED, context -> context.memory(m -> m.memoryBudgetBytes(budget)));
        final RawClient subscriber = connected("sub");
        subscriber.send(RawClient.subscribe(1, "m", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = connected("pub");
        final byte[] message = RawClient.publish("m", new byte[8], 0, 0);
        publisher.send(message);
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);

        byte[] ballast = new byte[400 * 1024 * 1024]; // heap in use now over the budget
        await("QoS 0 shed", () ->
        {
            try
            {
                publisher.send(message);
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
            return counter(BrokerCounters.QOS0_SHED_MEMORY) > 0;
        });
        final RawClient refused = raw();
        assertThat(refused.closedWithin(5_000)).isTrue();
        assertThat(counter(BrokerCounters.CONNECTIONS_REFUSED_MEMORY)).isEqualTo(1);
        assertThat(ballast).hasSize(400 * 1024 * 1024); // held until here

        ballast = null; // garbage now: back under the budget after a collection
        System.gc();
        final byte[] back = RawClient.publish("m", "back".getBytes(), 0, 0);
        await("QoS 0 delivered again", () ->
        {
            try
            {
                publisher.send(back);
                int type;
                while ((type = subscriber.readPacket(200)) == PacketType.PUBLISH)
                {
                    if ("back".equals(subscriber.decoder().publish().payload().asString()))
                    {
                        return true;
                    }
                }
                return type == -1;
            }
            catch (final SocketTimeoutException ex)
            {
                return false;
            }
            catch (final IOException ex)
            {
                throw new IllegalStateException(ex);
            }
        });
        connected("welcome-again"); // a new connection is admitted again (connected() asserts its CONNACK)
    }

    @Test
    @DisplayName("--max-topic-levels and --max-topic-length: a PUBLISH over either closes the connection, each "
        + "counted")
    void publishTopicLimits() throws Exception
    {
        broker(BrokerContext.Threading.SHARED, context -> context.limits(l -> l.maxTopicLevels(4).maxTopicLength(20)));
        final RawClient subscriber = connected("sub");
        subscriber.send(RawClient.subscribe(1, "#", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);

        final RawClient deep = connected("deep");
        deep.send(RawClient.publish("a/b/c/d", new byte[1], 0, 0)); // 4 levels: fine
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        deep.send(RawClient.publish("a/b/c/d/e", new byte[1], 0, 0));
        assertThat(deep.closedWithin(5_000)).isTrue();
        assertThat(counter(BrokerCounters.TOPIC_TOO_MANY_LEVELS)).isEqualTo(1);

        final RawClient tall = connected("tall");
        tall.send(RawClient.publish("x".repeat(20), new byte[1], 0, 0)); // 20 bytes: fine
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        tall.send(RawClient.publish("x".repeat(21), new byte[1], 0, 0));
        assertThat(tall.closedWithin(5_000)).isTrue();
        assertThat(counter(BrokerCounters.TOPIC_TOO_LONG)).isEqualTo(1);
        assertThat(counter(BrokerCounters.TOPIC_TOO_MANY_LEVELS)).isEqualTo(1);
    }
}
