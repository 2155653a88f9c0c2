package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The sender × receiver matrix of protocol versions (as FlashMQ tests it): 3.1.1 is Paho mqttv3, 5.0 the HiveMQ
 * client, whose messages carry properties that a 3.1.1 receiver must get without. Each pair: QoS 0, 1 and 2 live,
 * once and at their QoS, and a retained message, live (RETAIN 0) and to a later subscriber (RETAIN 1).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MixedVersionsTest extends InProcessBrokerTest
{
    private int port;

    /** A received message, whichever client got it. */
    private record Got(String topic, String payload, int qos, boolean retain)
    {
    }

    /** One end of the pair, in either protocol version. */
    private interface End extends AutoCloseable
    {
        void subscribe(String filter, int qos) throws Exception;

        void publish(String topic, String payload, int qos, boolean retain) throws Exception;

        Got next() throws InterruptedException;

        void close();
    }

    private static final class V311 implements End
    {
        private final Paho paho;

        V311(final int port, final String clientId) throws Exception
        {
            paho = Paho.connect(port, clientId);
        }

        public void subscribe(final String filter, final int qos) throws Exception
        {
            paho.client.subscribe(filter, qos);
        }

        public void publish(final String topic, final String payload, final int qos, final boolean retain)
            throws Exception
        {
            paho.publish(topic, payload, qos, retain);
        }

        public Got next() throws InterruptedException
        {
            final Paho.Received received = paho.next();
            return null == received ? null :
                new Got(received.topic(), received.payload(), received.qos(), received.retained());
        }

        public void close()
        {
            paho.close();
        }
    }

    private static final class V5 implements End
    {
        private final Hive5 hive;

        V5(final int port, final String clientId)
        {
            hive = Hive5.connect(port, clientId);
        }

        public void subscribe(final String filter, final int qos)
        {
            hive.subscribe(filter, qos);
        }

        public void publish(final String topic, final String payload, final int qos, final boolean retain)
        {
            hive.client.publishWith().topic(topic).qos(Hive5.qos(qos)).retain(retain)
                .payload(payload.getBytes(StandardCharsets.UTF_8)).contentType("text/plain")
                .messageExpiryInterval(3_600).userProperties().add("from", "5.0").applyUserProperties().send();
        }

        public Got next() throws InterruptedException
        {
            final Mqtt5Publish publish = hive.next();
            return null == publish ? null : new Got(publish.getTopic().toString(), Hive5.text(publish),
                publish.getQos().getCode(), publish.isRetain());
        }

        public void close()
        {
            hive.close();
        }
    }

    @BeforeEach
    void start() throws Exception
    {
        port = launch(TestBrokers.v5Context());
    }

    private End end(final String version, final String clientId) throws Exception
    {
        return closeLater("5.0".equals(version) ? new V5(port, clientId) : new V311(port, clientId));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"3.1.1, 5.0", "5.0, 3.1.1", "5.0, 5.0", "3.1.1, 3.1.1"})
    @DisplayName("MQTT-3.3.1-9, MQTT-3.3.1-8, MQTT-3.8.4-6: QoS 0, 1 and 2 arrive once at their QoS, and a retained "
        + "message arrives live with RETAIN 0 and at a later subscriber with RETAIN 1, across protocol versions")
    void senderToReceiver(final String senderVersion, final String receiverVersion) throws Exception
    {
        final End receiver = end(receiverVersion, "receiver");
        receiver.subscribe("mv/#", 2);
        final End sender = end(senderVersion, "sender");
        for (int qos = 0; qos <= 2; qos++)
        {
            sender.publish("mv/q" + qos, "qos-" + qos, qos, false);
        }
        sender.publish("mv/state", "retained", 1, true);
        // as a set: Paho v3 hands a QoS 2 message to the application on PUBREL, after a QoS 1 one sent behind it
        final java.util.List<Got> live = new java.util.ArrayList<>();
        for (int i = 0; i < 4; i++)
        {
            live.add(receiver.next());
        }
        assertThat(live).containsExactlyInAnyOrder(new Got("mv/q0", "qos-0", 0, false),
            new Got("mv/q1", "qos-1", 1, false), new Got("mv/q2", "qos-2", 2, false),
            new Got("mv/state", "retained", 1, false));

        final End later = end(receiverVersion, "later");
        later.subscribe("mv/+", 2);
        assertThat(later.next()).isEqualTo(new Got("mv/state", "retained", 1, true));
        sender.publish("mv/after", "live", 2, false);
        assertThat(later.next()).as("the next live message: nothing else came first")
            .isEqualTo(new Got("mv/after", "live", 2, false));
        assertThat(receiver.next()).isEqualTo(new Got("mv/after", "live", 2, false));
    }
}
