package io.ringmq.transport;

import org.eclipse.paho.client.mqttv3.IMqttDeliveryToken;
import org.eclipse.paho.client.mqttv3.MqttCallback;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.MqttMessage;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An Eclipse Paho MQTT 3.1.1 client that queues what it receives, for tests that wait on conditions.
 */
final class Paho implements AutoCloseable
{
    /** A received message. */
    record Received(String topic, String payload, int qos, boolean retained, boolean duplicate)
    {
    }

    final MqttClient client;
    final BlockingQueue<Received> received = new LinkedBlockingQueue<>();
    final CountDownLatch lost = new CountDownLatch(1);
    private boolean sessionPresent;

    Paho(final int port, final String clientId) throws MqttException
    {
        this("tcp://127.0.0.1:" + port, clientId);
    }

    /**
     * @param serverUri {@code tcp://...}, {@code ssl://...} (with a socket factory in the options), {@code ws://...}.
     */
    Paho(final String serverUri, final String clientId) throws MqttException
    {
        client = new MqttClient(serverUri, clientId, new MemoryPersistence());
        client.setCallback(new MqttCallback()
        {
            public void connectionLost(final Throwable cause)
            {
                lost.countDown();
            }

            public void messageArrived(final String topic, final MqttMessage message)
            {
                received.add(new Received(topic, new String(message.getPayload(), StandardCharsets.UTF_8),
                    message.getQos(), message.isRetained(), message.isDuplicate()));
            }

            public void deliveryComplete(final IMqttDeliveryToken token)
            {
            }
        });
    }

    static Paho connect(final int port, final String clientId) throws MqttException
    {
        return connect(port, clientId, options(true));
    }

    static Paho connect(final int port, final String clientId, final MqttConnectOptions options) throws MqttException
    {
        return connect("tcp://127.0.0.1:" + port, clientId, options);
    }

    static Paho connect(final String serverUri, final String clientId, final MqttConnectOptions options)
        throws MqttException
    {
        final Paho paho = new Paho(serverUri, clientId);
        paho.sessionPresent = paho.client.connectWithResult(options).getSessionPresent();
        return paho;
    }

    static MqttConnectOptions options(final boolean clean)
    {
        final MqttConnectOptions options = new MqttConnectOptions();
        options.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1_1);
        options.setCleanSession(clean);
        options.setAutomaticReconnect(false);
        options.setConnectionTimeout(10);
        options.setKeepAliveInterval(60);
        options.setMaxInflight(1000);
        return options;
    }

    boolean sessionPresent()
    {
        return sessionPresent;
    }

    void publish(final String topic, final String payload, final int qos, final boolean retained) throws MqttException
    {
        client.publish(topic, payload.getBytes(StandardCharsets.UTF_8), qos, retained);
    }

    Received next() throws InterruptedException
    {
        return received.poll(10, TimeUnit.SECONDS);
    }

    /**
     * @return the next message to arrive within {@code millis}, or null.
     */
    Received nextWithin(final long millis) throws InterruptedException
    {
        return received.poll(millis, TimeUnit.MILLISECONDS);
    }

    /**
     * Publishes a marker on {@code topic} and returns every message received before it: the broker keeps a
     * publisher's order per subscriber, so anything sent earlier has arrived when the marker does.
     */
    java.util.List<Received> drainUntilMarker(final Paho publisher, final String topic)
        throws MqttException, InterruptedException
    {
        final String marker = "marker-" + System.nanoTime();
        publisher.publish(topic, marker, 1, false);
        final java.util.List<Received> before = new java.util.ArrayList<>();
        while (true)
        {
            final Received message = next();
            if (null == message)
            {
                throw new AssertionError("marker never arrived; received " + before);
            }
            if (marker.equals(message.payload()))
            {
                return before;
            }
            before.add(message);
        }
    }

    public void close()
    {
        try
        {
            if (client.isConnected())
            {
                client.disconnect(1_000);
            }
            client.close();
        }
        catch (final MqttException ignore)
        {
            // the test is over
        }
    }
}
