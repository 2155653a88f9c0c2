package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bursts of large QoS 1 messages within a 64 MiB heap (a 2 MiB outbound ring, as {@code bin/ringmq} at 256m):
 * <ul>
 *   <li>a delivery shard whose I/O agent runs on another thread backlogs what the agent's full ring cannot take, on
 *   the heap: past its share the shard waits for the agent instead of growing it. Before, a burst to subscribers
 *   that read every one ran the heap out and ended the broker in {@code shared-network} and {@code dedicated}
 *   threading;</li>
 *   <li>what subscribers that never read make the broker hold is their in-flight window, at most
 *   {@code --max-inflight-bytes} (1 MiB by default): before, 16 of them held 128 MB of pooled memory and new
 *   connections were refused until they left.</li>
 * </ul>
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class OutboundBacklogHeapTest
{
    private static final int SUBSCRIBERS = 8;
    private static final int MESSAGES = 32;
    private static final int PAYLOAD = 250_000;

    @TempDir
    Path directory;
    private ForkedBroker broker;
    private final List<MqttClient> clients = new ArrayList<>();

    @AfterEach
    void close() throws Exception
    {
        for (final MqttClient client : clients)
        {
            try
            {
                client.disconnectForcibly(1_000, 1_000);
                client.close();
            }
            catch (final Exception ignored)
            {
                // the broker may be gone: nothing to say goodbye to
            }
        }
        if (null != broker)
        {
            broker.close();
        }
    }

    @Test
    @DisplayName("16 QoS 1 subscribers that never read, and 33 PUBLISHes of 250 KB: each holds its 1 MiB window, not 32 " +
        "messages, and a normal client connects while they hang (before, they held 128 MB of pooled memory and new " +
        "connections were refused for want of it)")
    void subscribersThatNeverReadHoldTheirWindow() throws Exception
    {
        launch();
        final List<RawClient> stalled = new ArrayList<>();
        try
        {
            for (int i = 0; i < 16; i++)
            {
                final RawClient subscriber = new RawClient(broker.port(), 2_048); // and never read
                stalled.add(subscriber);
                subscriber.handshake(RawClient.connect("stalled-" + i, true, 0));
                subscriber.send(RawClient.subscribe(1, "hang/#", 1));
            }
            try (RawClient publisher = new RawClient(broker.port()))
            {
                publisher.handshake(RawClient.connect("publisher", true, 60));
                final byte[] payload = new byte[PAYLOAD];
                for (int i = 1; i <= 33; i++)
                {
                    publisher.send(RawClient.publish("hang/x", payload, 1, i));
                }
                for (int i = 1; i <= 33; i++)
                {
                    assertThat(publisher.readPacket(30_000)).as(broker.diagnostics())
                        .isEqualTo(io.ringmq.protocol.PacketType.PUBACK);
                }
            }
            for (int i = 0; i < 5; i++)
            {
                try (RawClient probe = new RawClient(broker.port()))
                {
                    assertThat(probe.handshake(RawClient.connect("probe-" + i, true, 60))).as(broker.diagnostics())
                        .isZero();
                }
            }
            assertThat(broker.counter(BrokerCounters.CONNECTIONS_REFUSED_MEMORY)).as(broker.diagnostics()).isZero();
            assertThat(broker.counter(BrokerCounters.BUFFER_MEMORY_CLOSED)).as(broker.diagnostics()).isZero();
        }
        finally
        {
            for (final RawClient subscriber : stalled)
            {
                subscriber.close();
            }
        }
    }

    /**
     * Starts a forked broker with a 64 MiB heap and {@code bin/ringmq}'s ring and packet size at 256m.
     */
    private void launch(final String... options) throws Exception
    {
        final List<String> arguments = new ArrayList<>(List.of("--persistence", "memory", "--outbound-ring-bytes",
            "2097152", "--max-packet-size", "262080"));
        arguments.addAll(List.of(options));
        final ForkedBroker.Launch launch = ForkedBroker.launch(directory, List.of("env", "_JAVA_OPTIONS=-Xmx64m"),
            arguments.toArray(new String[0]));
        broker = launch.broker();
        assertThat(broker).as("started; its output:%n%s", launch.output()).isNotNull();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"shared-network", "dedicated"})
    @DisplayName("32 QoS 1 PUBLISHes of 250 KB, sent back to back, to 8 subscribers that read and acknowledge every " +
        "one: all 256 are delivered and the broker lives (a 64 MiB heap; before, the backlog ran it out)")
    void aBurstOfLargeMessagesIsDeliveredWithinTheHeap(final String threading) throws Exception
    {
        launch("--threading", threading);
        final AtomicInteger received = new AtomicInteger();
        for (int i = 0; i < SUBSCRIBERS; i++)
        {
            final MqttClient subscriber = new MqttClient("tcp://127.0.0.1:" + broker.port(), "sub-" + i,
                new MemoryPersistence());
            clients.add(subscriber);
            final MqttConnectOptions options = new MqttConnectOptions();
            options.setCleanSession(true);
            options.setMaxInflight(MESSAGES);
            subscriber.connect(options);
            subscriber.subscribe("burst/#", 1, (topic, message) -> received.incrementAndGet());
        }
        try (RawClient publisher = new RawClient(broker.port()))
        {
            publisher.handshake(RawClient.connect("publisher", true, 60));
            final byte[] payload = new byte[PAYLOAD];
            for (int i = 1; i <= MESSAGES; i++)
            {
                publisher.send(RawClient.publish("burst/x", payload, 1, i));
            }
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (received.get() < SUBSCRIBERS * MESSAGES && broker.isAlive() && System.nanoTime() < deadline)
            {
                Thread.sleep(20); // a condition polled with a deadline: the broker delivers on its own threads
            }
        }
        System.out.printf("%s: %d of %d delivered, %d backlogged%n", threading, received.get(),
            SUBSCRIBERS * MESSAGES, broker.counter(BrokerCounters.OUTBOUND_BACKLOGGED));
        assertThat(broker.isAlive()).as("alive%n%s", broker.diagnostics()).isTrue();
        assertThat(received.get()).as(broker.diagnostics()).isEqualTo(SUBSCRIBERS * MESSAGES);
        assertThat(broker.counter(BrokerCounters.BUFFER_MEMORY_CLOSED)).as(broker.diagnostics()).isZero();
    }
}
