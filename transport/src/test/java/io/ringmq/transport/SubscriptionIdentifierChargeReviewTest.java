package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of d8dd468: the Subscription Identifier arrays kept with queued messages are charged to the copy
 * (Pool.charge) when routing queues them, but a copy made anew (a session moving to another delivery shard:
 * SharedMessage.copyFor and Pool.adopt; a message restored after a restart: RestoredCopies) is counted at its buffer
 * alone, so the arrays its session still keeps fall out of --max-message-memory.
 */
@Timeout(180)
class SubscriptionIdentifierChargeReviewTest
{
    private static final int LEVELS = 8;
    private static final String TOPIC = "a/b/c/d/e/f/g/h";
    private static final int FILTERS = 1 << LEVELS;
    /** What each queued message's identifier array holds: 256 ints and the array header. */
    private static final long IDS_BYTES = FILTERS * 4L + 16;

    @TempDir
    Path directory;

    private static void subscribeAll(final int port) throws Exception
    {
        final Paho5 away = new Paho5(port, "ids");
        final MqttConnectionOptions options = Paho5.options();
        options.setCleanStart(true);
        options.setSessionExpiryInterval(3_600L);
        away.client.connect(options).waitForCompletion(10_000);
        for (int mask = 0; mask < FILTERS; mask++)
        {
            assertThat(away.subscribe(new MqttSubscription(SubscriptionIdentifierMemoryTest.filter(TOPIC, mask), 1), mask + 1)).containsExactly(1);
        }
        away.client.disconnect().waitForCompletion(10_000);
        away.close();
    }

    /** A 5.0 resume of "ids" that takes one message in flight at a time and acknowledges none. */
    private static byte[] resume()
    {
        final MqttProperties properties = new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 3600)
            .setInt(PropertyId.RECEIVE_MAXIMUM, 1);
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .keepAlive(60).properties(properties);
        encoder.clientId().wrap("ids");
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    private static void publish(final int port, final int count) throws Exception
    {
        try (Paho5 publisher = Paho5.connect(port, "pub"))
        {
            for (int i = 0; i < count; i++)
            {
                publisher.publish(TOPIC, "m" + i, 1);
            }
        }
    }

    @Test
    @DisplayName("[MQTT-3.3.4-4] a session whose queued messages carry 256 identifiers each moves to another delivery "
        + "shard (its client back through another I/O agent): the identifiers stay counted against "
        + "--max-message-memory")
    void identifiersStayChargedWhenTheSessionMoves() throws Exception
    {
        final BrokerContext context = TestBrokers.v5Context().memory(m -> m.maxMessageMemory(256 * 1024))
            .threads(t -> t.threading(BrokerContext.Threading.SHARED_NETWORK).ioThreads(2));
        final Broker broker = Broker.launch(context);
        try
        {
            final int port = broker.port();
            subscribeAll(port); // connection 1: agent 0
            final int published = 40;
            publish(port, published); // connection 2: agent 1
            TestBrokers.await("every message queued, identifiers charged",
                () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY) >= published * IDS_BYTES);
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
            try (java.net.Socket turn = new java.net.Socket("127.0.0.1", port); // connection 3: agent 0
                RawClient back = new RawClient(port).v5()) // connection 4: agent 1, another delivery shard
            {
                assertThat(back.handshake(resume())).isZero();
                assertThat(back.readPacket(5_000)).isEqualTo(PacketType.PUBLISH); // in flight, never acknowledged
                TestBrokers.await("the session moved",
                    () -> broker.counters().get(BrokerCounters.SESSIONS_MOVED) == 1);
                // the session still keeps 40 arrays of 256 identifiers (one in flight, 39 queued)
                TestBrokers.await("identifiers still charged after the move (now "
                        + broker.counters().get(BrokerCounters.MESSAGE_MEMORY) + ")",
                    () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY) >= published * IDS_BYTES);
            }
        }
        finally
        {
            broker.close();
        }
    }

    @Test
    @DisplayName("[MQTT-3.3.4-4] 100 queued messages with 256 identifiers each (140 KiB with their copies), restored "
        + "after a restart under --max-message-memory 64 KiB: the identifiers count, so not all of them are kept")
    void restoredIdentifiersAreCharged() throws Exception
    {
        final int published = 100;
        try (RingMq broker = RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start())
        {
            subscribeAll(broker.port());
            publish(broker.port(), published);
            TestBrokers.await("every message queued",
                () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY) >= published * IDS_BYTES);
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        }
        try (RingMq broker = RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0")
            .option("max-message-memory", "65536").start())
        {
            // what routing would have kept had the messages come now: 48 KiB for sessions away, 1,424 bytes each
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED))
                .as("restored messages dropped past the bound, their identifiers counted").isPositive();
        }
    }
}
