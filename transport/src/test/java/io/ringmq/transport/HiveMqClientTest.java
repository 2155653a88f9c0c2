package io.ringmq.transport;

import com.hivemq.client.mqtt.MqttGlobalPublishFilter;
import com.hivemq.client.mqtt.datatypes.MqttQos;
import com.hivemq.client.mqtt.mqtt3.Mqtt3BlockingClient;
import com.hivemq.client.mqtt.mqtt3.Mqtt3Client;
import com.hivemq.client.mqtt.mqtt3.message.connect.connack.Mqtt3ConnAck;
import com.hivemq.client.mqtt.mqtt3.message.publish.Mqtt3Publish;
import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The HiveMQ MQTT client (a second, independent 3.1.1 implementation) against ringmq in the shared-network
 * mode: QoS 1 and 2 exchanges, retained messages, wills, and persistent sessions.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HiveMqClientTest
{
    private final List<Mqtt3BlockingClient> clients = new ArrayList<>();
    private Broker broker;

    @BeforeEach
    void start() throws Exception
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.SHARED_NETWORK).ioThreads(2)));
    }

    @AfterEach
    void stop()
    {
        for (final Mqtt3BlockingClient client : clients)
        {
            if (client.getState().isConnected())
            {
                client.disconnect();
            }
        }
        broker.close();
        assertThat(broker.counters().get(io.ringmq.pipeline.status.BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    private Mqtt3BlockingClient client(final String id)
    {
        final Mqtt3BlockingClient client = Mqtt3Client.builder().identifier(id).serverHost("127.0.0.1")
            .serverPort(broker.port()).buildBlocking();
        clients.add(client);
        return client;
    }

    @Test
    @DisplayName("QoS 1 and QoS 2 messages arrive once, in order, at their QoS")
    void qos1AndQos2() throws Exception
    {
        final Mqtt3BlockingClient subscriber = client("sub");
        subscriber.connect();
        try (Mqtt3BlockingClient.Mqtt3Publishes publishes = subscriber.publishes(MqttGlobalPublishFilter.ALL))
        {
            subscriber.subscribeWith().topicFilter("h/#").qos(MqttQos.EXACTLY_ONCE).send();
            final Mqtt3BlockingClient publisher = client("pub");
            publisher.connect();
            for (int i = 0; i < 50; i++)
            {
                publisher.publishWith().topic("h/" + (i % 3)).qos(i % 2 == 0 ? MqttQos.AT_LEAST_ONCE :
                    MqttQos.EXACTLY_ONCE).payload(("n" + i).getBytes(StandardCharsets.UTF_8)).send();
            }
            for (int i = 0; i < 50; i++)
            {
                final Optional<Mqtt3Publish> publish = publishes.receive(10, TimeUnit.SECONDS);
                assertThat(publish).isPresent();
                assertThat(new String(publish.get().getPayloadAsBytes(), StandardCharsets.UTF_8)).isEqualTo("n" + i);
                assertThat(publish.get().getQos()).isEqualTo(i % 2 == 0 ? MqttQos.AT_LEAST_ONCE :
                    MqttQos.EXACTLY_ONCE);
            }
            assertThat(publishes.receive(300, TimeUnit.MILLISECONDS)).isEmpty();
        }
    }

    @Test
    @DisplayName("MQTT-3.3.1-8: a retained message arrives with RETAIN set on subscribe")
    void retained() throws Exception
    {
        final Mqtt3BlockingClient publisher = client("pub");
        publisher.connect();
        publisher.publishWith().topic("state/door").retain(true).qos(MqttQos.AT_LEAST_ONCE)
            .payload("open".getBytes(StandardCharsets.UTF_8)).send();
        final Mqtt3BlockingClient subscriber = client("sub");
        subscriber.connect();
        try (Mqtt3BlockingClient.Mqtt3Publishes publishes = subscriber.publishes(MqttGlobalPublishFilter.ALL))
        {
            subscriber.subscribeWith().topicFilter("state/+").qos(MqttQos.AT_LEAST_ONCE).send();
            final Mqtt3Publish publish = publishes.receive(10, TimeUnit.SECONDS).orElseThrow();
            assertThat(publish.isRetain()).isTrue();
            assertThat(publish.getPayloadAsBytes()).isEqualTo("open".getBytes(StandardCharsets.UTF_8));
        }
    }

    @Test
    @DisplayName("MQTT-3.2.2-2: a persistent session is resumed with session present and its queued messages")
    void persistentSession() throws Exception
    {
        final Mqtt3BlockingClient subscriber = client("keeper");
        subscriber.connectWith().cleanSession(false).send();
        subscriber.subscribeWith().topicFilter("k/#").qos(MqttQos.AT_LEAST_ONCE).send();
        subscriber.disconnect();
        final Mqtt3BlockingClient publisher = client("pub");
        publisher.connect();
        publisher.publishWith().topic("k/1").qos(MqttQos.AT_LEAST_ONCE)
            .payload("while-away".getBytes(StandardCharsets.UTF_8)).send();
        final Mqtt3BlockingClient back = client("keeper");
        try (Mqtt3BlockingClient.Mqtt3Publishes publishes = back.publishes(MqttGlobalPublishFilter.ALL))
        {
            final Mqtt3ConnAck connAck = back.connectWith().cleanSession(false).send();
            assertThat(connAck.isSessionPresent()).isTrue();
            final Mqtt3Publish publish = publishes.receive(10, TimeUnit.SECONDS).orElseThrow();
            assertThat(new String(publish.getPayloadAsBytes(), StandardCharsets.UTF_8)).isEqualTo("while-away");
        }
    }

    @Test
    @DisplayName("MQTT-3.1.2-8, MQTT-3.3.1-8, MQTT-3.3.1-9: a will with retain reaches a live subscriber with RETAIN 0 "
        + "and is kept, arriving with RETAIN 1 at a later subscriber")
    void retainedWill() throws Exception
    {
        final Mqtt3BlockingClient live = client("live-watcher");
        live.connect();
        try (Mqtt3BlockingClient.Mqtt3Publishes livePublishes = live.publishes(MqttGlobalPublishFilter.ALL))
        {
            live.subscribeWith().topicFilter("status/#").qos(MqttQos.AT_LEAST_ONCE).send(); // SUBACK: in the index

            final RawClient victim = new RawClient(broker.port());
            final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
                .will(1, true, null);
            encoder.clientId().wrap("victim");
            encoder.willTopic().wrap("status/victim");
            encoder.willPayload().wrap("offline");
            final org.agrona.concurrent.UnsafeBuffer connect =
                new org.agrona.concurrent.UnsafeBuffer(new byte[encoder.encodedLength()]);
            encoder.encode(connect, 0);
            assertThat(victim.handshake(connect.byteArray())).isZero();
            victim.kill();

            // sent to an existing subscription, the will goes out with RETAIN 0 [MQTT-3.3.1-9]
            final Mqtt3Publish livePublish = livePublishes.receive(10, TimeUnit.SECONDS).orElseThrow();
            assertThat(livePublish.getTopic().toString()).isEqualTo("status/victim");
            assertThat(new String(livePublish.getPayloadAsBytes(), StandardCharsets.UTF_8)).isEqualTo("offline");
            assertThat(livePublish.isRetain()).as("RETAIN on a will sent to an existing subscription").isFalse();
        }

        // the routing stage stores the retained will before it fans it out, so a subscriber that comes after the
        // live delivery finds it kept, and gets it with RETAIN 1 [MQTT-3.3.1-8]
        final Mqtt3BlockingClient later = client("later-watcher");
        later.connect();
        try (Mqtt3BlockingClient.Mqtt3Publishes publishes = later.publishes(MqttGlobalPublishFilter.ALL))
        {
            later.subscribeWith().topicFilter("status/#").qos(MqttQos.AT_LEAST_ONCE).send();
            final Mqtt3Publish publish = publishes.receive(10, TimeUnit.SECONDS).orElseThrow();
            assertThat(publish.getTopic().toString()).isEqualTo("status/victim");
            assertThat(new String(publish.getPayloadAsBytes(), StandardCharsets.UTF_8)).isEqualTo("offline");
            assertThat(publish.isRetain()).as("RETAIN on a kept will sent on subscribe").isTrue();
            assertThat(publishes.receive(300, TimeUnit.MILLISECONDS)).as("the will is delivered once").isEmpty();
        }
    }
}
