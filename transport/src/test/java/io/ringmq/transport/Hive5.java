package io.ringmq.transport;

import com.hivemq.client.mqtt.MqttGlobalPublishFilter;
import com.hivemq.client.mqtt.datatypes.MqttQos;
import com.hivemq.client.mqtt.mqtt5.Mqtt5BlockingClient;
import com.hivemq.client.mqtt.mqtt5.Mqtt5Client;
import com.hivemq.client.mqtt.mqtt5.Mqtt5ClientBuilder;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A HiveMQ MQTT 5.0 client that queues what it receives (from before its CONNECT, so a resumed session's queued
 * messages are caught too), for tests that wait on conditions.
 */
final class Hive5 implements AutoCloseable
{
    final Mqtt5BlockingClient client;
    final BlockingQueue<Mqtt5Publish> received = new LinkedBlockingQueue<>();

    /**
     * @param manualAcknowledgement whether QoS 1 and 2 messages wait for {@link Mqtt5Publish#acknowledge()}.
     */
    Hive5(final Mqtt5ClientBuilder builder, final boolean manualAcknowledgement)
    {
        client = builder.buildBlocking();
        client.toAsync().publishes(MqttGlobalPublishFilter.ALL, received::add, manualAcknowledgement);
    }

    Hive5(final int port, final String clientId)
    {
        this(builder(port, clientId), false);
    }

    static Mqtt5ClientBuilder builder(final int port, final String clientId)
    {
        return Mqtt5Client.builder().identifier(clientId).serverHost("127.0.0.1").serverPort(port);
    }

    /**
     * A client connected with clean start and no session expiry.
     */
    static Hive5 connect(final int port, final String clientId)
    {
        final Hive5 hive = new Hive5(port, clientId);
        hive.client.connect();
        return hive;
    }

    void subscribe(final String filter, final int qos)
    {
        client.subscribeWith().topicFilter(filter).qos(qos(qos)).send();
    }

    void publish(final String topic, final String payload, final int qos, final boolean retain)
    {
        client.publishWith().topic(topic).payload(payload.getBytes(StandardCharsets.UTF_8)).qos(qos(qos))
            .retain(retain).send();
    }

    static MqttQos qos(final int qos)
    {
        return MqttQos.fromCode(qos);
    }

    static String text(final Mqtt5Publish publish)
    {
        return new String(publish.getPayloadAsBytes(), StandardCharsets.UTF_8);
    }

    Mqtt5Publish next() throws InterruptedException
    {
        return received.poll(10, TimeUnit.SECONDS);
    }

    /**
     * Publishes a QoS 1 marker on {@code topic} and returns every message received before it: the broker keeps a
     * publisher's order per subscriber, so anything that publisher sent earlier has arrived when the marker does.
     */
    List<Mqtt5Publish> drainUntilMarker(final Hive5 publisher, final String topic) throws InterruptedException
    {
        final String marker = "marker-" + System.nanoTime();
        publisher.publish(topic, marker, 1, false);
        return receiveUntil(marker);
    }

    /**
     * @return every message received before the one whose payload is {@code marker}.
     */
    List<Mqtt5Publish> receiveUntil(final String marker) throws InterruptedException
    {
        final List<Mqtt5Publish> before = new ArrayList<>();
        while (true)
        {
            final Mqtt5Publish message = next();
            if (null == message)
            {
                throw new AssertionError("marker never arrived; received " + before);
            }
            if (marker.equals(text(message)))
            {
                return before;
            }
            before.add(message);
        }
    }

    public void close()
    {
        if (client.getState().isConnected())
        {
            try
            {
                client.disconnect();
            }
            catch (final RuntimeException ignore)
            {
                // the broker may have closed it already; the test is over
            }
        }
    }
}
