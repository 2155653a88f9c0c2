package io.ringmq.transport;

import org.eclipse.paho.mqttv5.client.IMqttToken;
import org.eclipse.paho.mqttv5.client.MqttAsyncClient;
import org.eclipse.paho.mqttv5.client.MqttCallback;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.client.MqttDisconnectResponse;
import org.eclipse.paho.mqttv5.client.persist.MemoryPersistence;
import org.eclipse.paho.mqttv5.common.MqttException;
import org.eclipse.paho.mqttv5.common.MqttMessage;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.eclipse.paho.mqttv5.common.packet.MqttProperties;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An Eclipse Paho MQTT 5.0 client (the asynchronous one, which takes SUBSCRIBE properties) that queues what it
 * receives and keeps the server's DISCONNECT, for tests that wait on conditions.
 */
final class Paho5 implements AutoCloseable
{
    private static final long WAIT_MS = 10_000;

    /** A received message. */
    record Received(String topic, MqttMessage message)
    {
        String payload()
        {
            return new String(message.getPayload(), StandardCharsets.UTF_8);
        }
    }

    final MqttAsyncClient client;
    final BlockingQueue<Received> received = new LinkedBlockingQueue<>();
    final CompletableFuture<MqttDisconnectResponse> disconnected = new CompletableFuture<>();

    Paho5(final int port, final String clientId) throws MqttException
    {
        client = new MqttAsyncClient("tcp://127.0.0.1:" + port, clientId, new MemoryPersistence());
        client.setCallback(new MqttCallback()
        {
            public void disconnected(final MqttDisconnectResponse response)
            {
                disconnected.complete(response);
            }

            public void mqttErrorOccurred(final MqttException exception)
            {
            }

            public void messageArrived(final String topic, final MqttMessage message)
            {
                received.add(new Received(topic, message));
            }

            public void deliveryComplete(final IMqttToken token)
            {
            }

            public void connectComplete(final boolean reconnect, final String serverURI)
            {
            }

            public void authPacketArrived(final int reasonCode, final MqttProperties properties)
            {
            }
        });
    }

    static Paho5 connect(final int port, final String clientId) throws MqttException
    {
        final Paho5 paho = new Paho5(port, clientId);
        paho.client.connect(options()).waitForCompletion(WAIT_MS);
        return paho;
    }

    static MqttConnectionOptions options()
    {
        final MqttConnectionOptions options = new MqttConnectionOptions();
        options.setCleanStart(true);
        options.setAutomaticReconnect(false);
        options.setConnectionTimeout(10);
        options.setKeepAliveInterval(60);
        return options;
    }

    /**
     * Subscribes with a Subscription Identifier (0: none).
     *
     * @return the SUBACK's reason codes.
     */
    int[] subscribe(final MqttSubscription subscription, final int subscriptionId) throws MqttException
    {
        final MqttProperties properties = new MqttProperties();
        if (subscriptionId > 0)
        {
            properties.setSubscriptionIdentifier(subscriptionId);
        }
        final IMqttToken token = client.subscribe(new MqttSubscription[]{subscription}, null, null, properties);
        token.waitForCompletion(WAIT_MS);
        return token.getReasonCodes();
    }

    void publish(final String topic, final MqttMessage message) throws MqttException
    {
        client.publish(topic, message).waitForCompletion(WAIT_MS);
    }

    void publish(final String topic, final String payload, final int qos) throws MqttException
    {
        client.publish(topic, payload.getBytes(StandardCharsets.UTF_8), qos, false).waitForCompletion(WAIT_MS);
    }

    Received next() throws InterruptedException
    {
        return received.poll(10, TimeUnit.SECONDS);
    }

    public void close()
    {
        try
        {
            if (client.isConnected())
            {
                client.disconnect(1_000).waitForCompletion(2_000);
            }
            client.close(true);
        }
        catch (final MqttException ignore)
        {
            // the test is over
        }
    }
}
