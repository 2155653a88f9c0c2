package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Clients that hold the broker's resources without using them (slowloris, half-open sockets) and a connection
 * storm: each bounded, each while a normal client keeps round-tripping; the broker closes what it must, counts
 * it, and afterwards holds no connection and no client it should not.
 */
class SlowClientsTest
{
    /** A normal client's QoS 1 round trip is ~1 ms here; this only catches a broker that stopped serving it. */
    private static final long ROUND_TRIP_BOUND_MS = 2_000;

    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    private int start(final BrokerContext context) throws IOException
    {
        broker = Broker.launch(context.bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .persistence(p -> p.persistent(false)));
        return broker.port();
    }

    /**
     * A normal client publishing QoS 1 to itself for as long as {@code busy} says, on its own thread.
     */
    private Future<Long> probe(final int port, final BooleanSupplier busy, final ExecutorService executor)
    {
        return executor.submit(() ->
        {
            long worstMs = 0;
            try (Paho client = Paho.connect(port, "probe-" + System.nanoTime()))
            {
                client.client.subscribe("probe", 1);
                int i = 0;
                do
                {
                    final long startNs = System.nanoTime();
                    client.publish("probe", Integer.toString(i), 1, false);
                    final Paho.Received received = client.next();
                    assertThat(received).as("round trip %d", i).isNotNull();
                    assertThat(received.payload()).isEqualTo(Integer.toString(i));
                    worstMs = Math.max(worstMs, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs));
                    i++;
                }
                while (busy.getAsBoolean() || i < 20);
            }
            return worstMs;
        });
    }

    private static void awaitCondition(final BooleanSupplier condition, final long timeoutMs, final String what)
        throws InterruptedException
    {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean())
        {
            assertThat(System.currentTimeMillis()).as(what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    private long counter(final int id)
    {
        return broker.counters().get(id);
    }

    private static boolean closedByPeer(final SocketChannel channel) throws IOException
    {
        channel.configureBlocking(false);
        final ByteBuffer buffer = ByteBuffer.allocate(256);
        int read;
        while ((read = channel.read(buffer)) > 0)
        {
            buffer.clear();
        }
        return read < 0;
    }

    @Test
    @Timeout(60)
    @DisplayName("slowloris: 200 sockets trickling a CONNECT a byte at a time are closed by the connect timeout; a "
        + "normal client keeps its round trips")
    void slowloris() throws Exception
    {
        final int port = start(new BrokerContext().limits(l -> l.connectTimeoutMs(1_500)));
        final byte[] connect = RawClient.connect("slow", true, 60);
        final List<SocketChannel> slow = new ArrayList<>();
        for (int i = 0; i < 200; i++)
        {
            final SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
            closeables.add(channel);
            slow.add(channel);
        }
        final ExecutorService executor = Executors.newSingleThreadExecutor();
        closeables.add(executor::shutdownNow);
        final long endMs = System.currentTimeMillis() + 3_000;
        final Future<Long> worst = probe(port, () -> System.currentTimeMillis() < endMs, executor);
        // one byte each every 100 ms: never a whole CONNECT before the timeout
        for (int b = 0; b < connect.length - 1 && System.currentTimeMillis() < endMs; b++)
        {
            for (final SocketChannel channel : slow)
            {
                if (channel.isOpen())
                {
                    try
                    {
                        channel.write(ByteBuffer.wrap(connect, b, 1));
                    }
                    catch (final IOException closed)
                    {
                        channel.close(); // the broker closed it already
                    }
                }
            }
            Thread.sleep(100);
        }
        assertThat(worst.get(30, TimeUnit.SECONDS)).as("worst round trip, ms").isLessThan(ROUND_TRIP_BOUND_MS);
        awaitCondition(() -> counter(BrokerCounters.CONNECT_TIMEOUTS) >= 200, 10_000, "connect timeouts");
        for (final SocketChannel channel : slow)
        {
            assertThat(!channel.isOpen() || closedByPeer(channel)).as("closed by the broker").isTrue();
        }
        awaitCondition(() -> counter(BrokerCounters.CONNECTIONS_CLOSED) >= counter(BrokerCounters.CONNECTIONS_ACCEPTED),
            10_000, "every accepted connection closed");
    }

    @Test
    @Timeout(60)
    @DisplayName("half-open: sockets that connect and go silent, and clients that CONNECT then neither read nor "
        + "ping, are closed by the connect timeout and by keep-alive [MQTT-3.1.2-24]; nothing stays behind")
    void halfOpen() throws Exception
    {
        final int port = start(new BrokerContext().limits(l -> l.connectTimeoutMs(1_000)));
        final List<SocketChannel> silent = new ArrayList<>();
        for (int i = 0; i < 100; i++)
        {
            final SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
            closeables.add(channel);
            silent.add(channel);
        }
        final List<RawClient> mute = new ArrayList<>();
        for (int i = 0; i < 50; i++)
        {
            final RawClient client = new RawClient(port, 4096); // small receive buffer, never read after CONNACK
            closeables.add(client);
            assertThat(client.handshake(RawClient.connect("mute-" + i, true, 1))).isZero();
            mute.add(client);
        }
        final ExecutorService executor = Executors.newSingleThreadExecutor();
        closeables.add(executor::shutdownNow);
        final long endMs = System.currentTimeMillis() + 2_500;
        assertThat(probe(port, () -> System.currentTimeMillis() < endMs, executor).get(30, TimeUnit.SECONDS))
            .as("worst round trip, ms").isLessThan(ROUND_TRIP_BOUND_MS);
        awaitCondition(() -> counter(BrokerCounters.CONNECT_TIMEOUTS) >= 100, 10_000, "connect timeouts");
        awaitCondition(() -> counter(BrokerCounters.KEEP_ALIVE_TIMEOUTS) >= 50, 10_000, "keep-alive timeouts");
        for (final RawClient client : mute)
        {
            assertThat(client.closedWithin(5_000)).isTrue();
        }
        awaitCondition(() -> counter(BrokerCounters.CLIENTS_CONNECTED) == 0 &&
            counter(BrokerCounters.CONNECTIONS_CLOSED) >= counter(BrokerCounters.CONNECTIONS_ACCEPTED), 10_000,
            "no client and no connection left");
    }

    @Test
    @Timeout(120)
    @DisplayName("a connection storm: 3,000 CONNECT/DISCONNECT cycles from 8 threads while a normal client "
        + "round-trips; every one accepted, nothing left behind")
    void connectionStorm() throws Exception
    {
        final int port = start(new BrokerContext());
        final ExecutorService executor = Executors.newFixedThreadPool(9);
        closeables.add(executor::shutdownNow);
        final List<Future<Integer>> stormers = new ArrayList<>();
        final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger(8);
        for (int t = 0; t < 8; t++)
        {
            final int thread = t;
            stormers.add(executor.submit(() ->
            {
                int accepted = 0;
                try
                {
                    for (int i = 0; i < 375; i++)
                    {
                        try (RawClient client = new RawClient(port))
                        {
                            accepted += client.handshake(RawClient.connect("storm-" + thread + "-" + i, true, 60)) == 0 ?
                                1 : 0;
                            client.send(new byte[]{(byte)0xE0, 0}); // DISCONNECT
                        }
                    }
                }
                finally
                {
                    running.decrementAndGet();
                }
                return accepted;
            }));
        }
        final Future<Long> worst = probe(port, () -> running.get() > 0, executor);
        int accepted = 0;
        for (final Future<Integer> stormer : stormers)
        {
            accepted += stormer.get(90, TimeUnit.SECONDS);
        }
        assertThat(accepted).isEqualTo(3_000);
        assertThat(worst.get(30, TimeUnit.SECONDS)).as("worst round trip, ms").isLessThan(ROUND_TRIP_BOUND_MS);
        awaitCondition(() -> counter(BrokerCounters.CLIENTS_CONNECTED) == 0 &&
            counter(BrokerCounters.CONNECTIONS_CLOSED) >= counter(BrokerCounters.CONNECTIONS_ACCEPTED), 10_000,
            "no client and no connection left");
        assertThat(broker.sessionCount()).isZero();
    }

    @Test
    @Timeout(120)
    @DisplayName("a TLS handshake flood: 400 full handshakes from 8 threads and 100 sockets stalled mid-handshake, "
        + "while a normal client round-trips; the stalled ones are closed by the connect timeout, nothing left")
    void tlsHandshakeFlood() throws Exception
    {
        final BrokerContext context = new BrokerContext().limits(l -> l.connectTimeoutMs(3_000));
        context.addListener(ListenersTest.tlsListener());
        final int port = start(context);
        final int tlsPort = broker.ports()[1];
        final javax.net.ssl.SSLContext client = TlsSocketLayerTest.clientContext(null);
        final List<SocketChannel> stalled = new ArrayList<>();
        for (int i = 0; i < 100; i++)
        {
            final SocketChannel channel = SocketChannel.open(new InetSocketAddress("127.0.0.1", tlsPort));
            closeables.add(channel);
            // the start of a ClientHello record, then nothing
            channel.write(ByteBuffer.wrap(new byte[]{0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, (byte)0xFC}));
            stalled.add(channel);
        }
        final ExecutorService executor = Executors.newFixedThreadPool(9);
        closeables.add(executor::shutdownNow);
        final java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger(8);
        final List<Future<Integer>> flooders = new ArrayList<>();
        for (int t = 0; t < 8; t++)
        {
            flooders.add(executor.submit(() ->
            {
                int done = 0;
                try
                {
                    for (int i = 0; i < 50; i++)
                    {
                        try (javax.net.ssl.SSLSocket socket = (javax.net.ssl.SSLSocket)client.getSocketFactory()
                            .createSocket("127.0.0.1", tlsPort))
                        {
                            socket.setSoTimeout(30_000);
                            socket.startHandshake();
                            done++;
                        }
                    }
                }
                finally
                {
                    running.decrementAndGet();
                }
                return done;
            }));
        }
        final Future<Long> worst = probe(port, () -> running.get() > 0, executor);
        int handshakes = 0;
        for (final Future<Integer> flooder : flooders)
        {
            try
            {
                handshakes += flooder.get(100, TimeUnit.SECONDS);
            }
            catch (final java.util.concurrent.ExecutionException ex)
            {
                throw new AssertionError(broker.counters().describe(false), ex);
            }
        }
        assertThat(handshakes).isEqualTo(400);
        assertThat(worst.get(30, TimeUnit.SECONDS)).as("worst round trip, ms").isLessThan(ROUND_TRIP_BOUND_MS);
        for (final SocketChannel channel : stalled)
        {
            channel.socket().setSoTimeout(10_000);
            final InputStream in = channel.socket().getInputStream();
            int read;
            do
            {
                read = in.read(); // a TLS alert, then the end
            }
            while (read >= 0);
            assertThat(read).as("stalled handshake closed").isEqualTo(-1);
        }
        awaitCondition(() -> counter(BrokerCounters.CLIENTS_CONNECTED) == 0 &&
            counter(BrokerCounters.CONNECTIONS_CLOSED) >= counter(BrokerCounters.CONNECTIONS_ACCEPTED), 10_000,
            "no client and no connection left");
    }

    @ParameterizedTest(name = "Topic Alias Maximum {0}")
    @ValueSource(ints = {0, 1024})
    @Timeout(120)
    @DisplayName("a 5.0 subscriber that never reads, sent 800 QoS 0 messages of 64 KiB on 800 new topics: past "
        + "--outbound-high-water each is dropped; one that would tell it a new topic alias cannot be, and at twice "
        + "the mark its connection ends (DISCONNECT 0x97): what the broker holds for it stays bounded either way")
    void neverReadingSubscriberWithTopicAliases(final int topicAliasMaximum) throws Exception
    {
        final int highWater = 64 * 1024;
        final int port = start(new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.SHARED))
            .outboundHighWaterBytes(highWater));
        final RawClient stuck = new RawClient(port, 4096).v5();
        closeables.add(stuck);
        final io.ringmq.protocol.MqttProperties properties = new io.ringmq.protocol.MqttProperties();
        if (topicAliasMaximum > 0)
        {
            properties.setInt(io.ringmq.protocol.PropertyId.TOPIC_ALIAS_MAXIMUM, topicAliasMaximum);
        }
        assertThat(stuck.handshake(RawClient.connect5("stuck", 0, properties))).isZero();
        stuck.send(RawClient.subscribe5(1, "a/#", 0));
        assertThat(stuck.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.SUBACK);
        // from here on it never reads

        final RawClient publisher = new RawClient(port);
        closeables.add(publisher);
        assertThat(publisher.handshake(RawClient.connect("pub", true, 0))).isZero();
        final int topics = 800;
        final byte[] payload = new byte[64 * 1024]; // 50 MiB in all, at a subscriber allowed 64 KiB
        for (int i = 0; i < topics; i += 50)
        {
            final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
            for (int j = i; j < i + 50; j++)
            {
                batch.writeBytes(RawClient.publish("a/" + j, payload, 0, 0, false));
            }
            publisher.send(batch.toByteArray());
        }
        TestBrokers.await("every PUBLISH in, and each sent, dropped, or its subscriber gone", () ->
            broker.counters().get(BrokerCounters.PUBLISH_IN) == topics &&
            (broker.counters().get(BrokerCounters.PUBLISH_OUT) +
                broker.counters().get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER) >= topics ||
                broker.counters().get(BrokerCounters.CONNECTIONS_CLOSED) == 1));
        assertThat(broker.counters().get(BrokerCounters.PUBLISH_OUT))
            .as("queued for the subscriber that does not read: what its socket took, and twice the mark at most")
            .isLessThan(topics / 4);
        if (topicAliasMaximum > 0)
        {
            TestBrokers.await("the stuck subscriber's connection ended",
                () -> broker.counters().get(BrokerCounters.CONNECTIONS_CLOSED) == 1);
            assertThat(stuck.closedWithin(10_000)).isTrue();
        }
        publisher.send(RawClient.ping());
        assertThat(publisher.readPacket(5_000)).as("the publisher is served throughout")
            .isEqualTo(io.ringmq.protocol.PacketType.PINGRESP);
    }

    /**
     * @return a 5.0 subscriber to {@code r/#} at QoS 0 that allows 1,024 topic aliases and reads at once.
     */
    private RawClient aliasSubscriber(final int port) throws Exception
    {
        final RawClient subscriber = new RawClient(port).v5();
        closeables.add(subscriber);
        final io.ringmq.protocol.MqttProperties properties = new io.ringmq.protocol.MqttProperties()
            .setInt(io.ringmq.protocol.PropertyId.TOPIC_ALIAS_MAXIMUM, 1024);
        assertThat(subscriber.handshake(RawClient.connect5("sub", 0, properties))).isZero();
        subscriber.send(RawClient.subscribe5(1, "r/#", 0));
        assertThat(subscriber.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.SUBACK);
        return subscriber;
    }

    /**
     * Sends 64 QoS 0 messages of 4 KiB on 64 new topics in one write: four times a 64 KiB high-water mark.
     */
    private RawClient burst(final int port, final boolean retain) throws Exception
    {
        final RawClient publisher = new RawClient(port);
        closeables.add(publisher);
        assertThat(publisher.handshake(RawClient.connect("pub", true, 0))).isZero();
        final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < 64; i++)
        {
            batch.writeBytes(RawClient.publish("r/" + i, new byte[4 * 1024], 0, 0, retain));
        }
        publisher.send(batch.toByteArray());
        return publisher;
    }

    private static void readsEvery(final RawClient subscriber, final int count) throws Exception
    {
        for (int i = 0; i < count; i++)
        {
            final int type = subscriber.readPacketOrClosed(10_000);
            assertThat(type).as("after %d PUBLISHes, read at once, packet type %d (14: DISCONNECT, -1: closed)", i,
                type).isEqualTo(io.ringmq.protocol.PacketType.PUBLISH);
        }
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = BrokerContext.Threading.class,
        names = {"DEDICATED", "SHARED_NETWORK", "SHARED"})
    @Timeout(60)
    @DisplayName("a 5.0 subscriber allowing topic aliases that reads everything gets all the retained messages its "
        + "SUBSCRIBE brings (four times --outbound-high-water), and then a publisher's burst on new topics: no "
        + "DISCONNECT 0x97 for a subscriber that keeps up")
    void aliasSubscriberThatKeepsUpGetsEveryBurst(final BrokerContext.Threading threading) throws Exception
    {
        final int port = start(new BrokerContext().threads(t -> t.threading(threading))
            .outboundHighWaterBytes(64 * 1024));
        final RawClient retained = burst(port, true);
        retained.send(RawClient.ping());
        assertThat(retained.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.PINGRESP);
        TestBrokers.await("every retained PUBLISH in", () -> broker.counters().get(BrokerCounters.PUBLISH_IN) == 64);
        final RawClient subscriber = aliasSubscriber(port);
        readsEvery(subscriber, 64);
        final RawClient live = new RawClient(port);
        closeables.add(live);
        assertThat(live.handshake(RawClient.connect("live", true, 0))).isZero();
        final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < 64; i++)
        {
            batch.writeBytes(RawClient.publish("r/new/" + i, new byte[4 * 1024], 0, 0, false));
        }
        live.send(batch.toByteArray());
        readsEvery(subscriber, 64);
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_CLOSED)).isZero();
    }
}
