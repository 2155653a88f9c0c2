package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A SUBSCRIBE whose retained messages are more than one SUBACK's output carries (1 MiB) gets all of them, with
 * real clients: the rest goes in paced parts. Before, 5,000 retained messages of 300 bytes brought 3,159 to a
 * subscriber of '#' (Mosquitto 2.0.11 sent all 5,000).
 */
class RetainedInPartsTest extends InProcessBrokerTest
{
    private static final int RETAINED = 5_000;

    private static void storeRetained(final int port) throws Exception
    {
        storeRetained(port, RETAINED, 0);
    }

    /**
     * Retains {@code count} messages of 300 bytes at {@code qos}, on topics {@code r/0} and on.
     */
    private static void storeRetained(final int port, final int count, final int qos) throws Exception
    {
        final MqttClient publisher = new MqttClient("tcp://127.0.0.1:" + port, "pub", new MemoryPersistence());
        final MqttConnectOptions options = new MqttConnectOptions();
        options.setMaxInflight(Math.min(count, 65_535));
        publisher.connect(options);
        final byte[] payload = new byte[300];
        for (int i = 0; i < count; i++)
        {
            publisher.publish("r/" + i, payload, qos, true);
        }
        publisher.disconnect(); // after its PUBLISHes [MQTT-3.14.4-1]: in order on one connection
        publisher.close();
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.1-6, MQTT-3.3.1-8: a Paho 3.1.1 subscriber of '#' gets all 5,000 retained messages " +
        "(1.6 MB), each once, RETAIN set")
    void everyRetainedMessageArrives() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        storeRetained(port);
        final Paho subscriber = closeLater(Paho.connect(port, "sub"));
        subscriber.client.subscribe("#", 0);
        final Set<String> topics = new HashSet<>();
        int received = 0;
        while (received < RETAINED)
        {
            final Paho.Received message = subscriber.received.poll(10, TimeUnit.SECONDS);
            assertThat(message).as("retained message " + received + " (of " + RETAINED + ")").isNotNull();
            assertThat(message.retained()).as(message.topic()).isTrue();
            topics.add(message.topic());
            received++;
        }
        assertThat(topics).hasSize(RETAINED);
        assertThat(subscriber.received.poll(200, TimeUnit.MILLISECONDS)).as("no more").isNull();
        assertThat(broker.counters().get(BrokerCounters.RETAINED_IN_PARTS)).isEqualTo(1);
        assertThat(broker.counters().get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER)).isZero();
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.4-3: the parts carry the SUBSCRIBE's Subscription Identifier, as its first MiB does " +
        "(Paho 5.0)")
    void partsCarryTheSubscriptionIdentifier() throws Exception
    {
        final Paho5 subscriber = v5SubscriberOverTheStore();
        subscriber.subscribe(new MqttSubscription("r/#", 0), 42);
        for (final Paho5.Received message : receiveAll(subscriber))
        {
            assertThat(message.message().getProperties().getSubscriptionIdentifiers()).as(message.topic())
                .containsExactly(42);
        }
    }

    /**
     * @return a Paho 5.0 client of a new broker that holds the {@link #RETAINED} retained messages.
     */
    private Paho5 v5SubscriberOverTheStore() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        storeRetained(port);
        return closeLater(Paho5.connect(port, "sub5"));
    }

    /**
     * @return the {@link #RETAINED} messages a subscriber receives, each with RETAIN set [MQTT-3.3.1-8] and a topic
     * of its own, and nothing after them.
     */
    private static java.util.List<Paho5.Received> receiveAll(final Paho5 subscriber) throws InterruptedException
    {
        final java.util.List<Paho5.Received> all = new java.util.ArrayList<>();
        final Set<String> topics = new HashSet<>();
        while (all.size() < RETAINED)
        {
            final Paho5.Received message = subscriber.next();
            assertThat(message).as("retained message " + all.size()).isNotNull();
            assertThat(message.message().isRetained()).isTrue();
            topics.add(message.topic());
            all.add(message);
        }
        assertThat(topics).hasSize(RETAINED);
        assertThat(subscriber.received.poll(200, TimeUnit.MILLISECONDS)).as("no more").isNull();
        return all;
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.1-10: a filter subscribed again with Retain Handling 1 while its retained messages still go " +
        "out brings none anew, and the rest of the first SUBSCRIBE's still arrive (review of 9da41ba: 3,948 of 5,000)")
    void retainHandlingOneLetsTheFirstGoOn() throws Exception
    {
        final Paho5 subscriber = v5SubscriberOverTheStore();
        subscriber.subscribe(new MqttSubscription("#", 0), 0);
        final MqttSubscription again = new MqttSubscription("#", 0);
        again.setRetainHandling(1);
        subscriber.subscribe(again, 0);
        assertThat(receiveAll(subscriber)).hasSize(RETAINED);
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.1-6: a subscriber reading about 2 MB/s gets all 20,000 retained messages (6 MB): each part " +
        "waits until it read most of the last (before, the parts came at 10 MB/s and what passed its 1 MiB owed was " +
        "shed)")
    void aSlowReaderGetsThemAll() throws Exception
    {
        final int count = 20_000;
        final int port = launch(TestBrokers.v5Context());
        storeRetained(port, count, 0);
        try (RawClient slow = new RawClient(port, 16 * 1024))
        {
            slow.handshake(RawClient.connect("slow", true, 60));
            slow.send(RawClient.subscribe(1, "#", 0));
            int publishes = 0;
            while (publishes < count)
            {
                final int type = slow.readPacket(10_000);
                assertThat(type).as("after " + publishes + " PUBLISHes").isNotEqualTo(-1);
                if (type == io.ringmq.protocol.PacketType.PUBLISH && ++publishes % 64 == 0)
                {
                    Thread.sleep(10); // 64 PUBLISHes of 307 bytes each 10 ms: about 2 MB/s, the client's own pace
                }
            }
        }
        assertThat(broker.counters().get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER)).isZero();
        assertThat(broker.counters().get(BrokerCounters.RETAINED_IN_PARTS)).isEqualTo(1);
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.1-6: a QoS 1 subscriber of 5,000 QoS 1 retained messages under --max-queued 100 gets all " +
        "of them, none dropped: a SUBACK or part carries its in-flight room and a quarter of the queue (before, the " +
        "SUBACK's 1 MiB passed the queue and 3,400 were dropped)")
    void aReliableSubscriberGetsThemAllUnderASmallQueue() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxQueued(100)));
        storeRetained(port, RETAINED, 1);
        final Paho subscriber = closeLater(Paho.connect(port, "sub"));
        subscriber.client.subscribe("#", 1);
        final Set<String> topics = new HashSet<>();
        while (topics.size() < RETAINED)
        {
            final Paho.Received message = subscriber.received.poll(10, TimeUnit.SECONDS);
            assertThat(message).as("retained message " + topics.size() + " (of " + RETAINED + ")").isNotNull();
            assertThat(message.retained()).as(message.topic()).isTrue();
            topics.add(message.topic());
        }
        assertThat(broker.counters().get(BrokerCounters.QUEUE_FULL_DROPPED)).isZero();
    }
}
