package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Subscription Identifiers kept with queued messages: a session whose overlapping subscriptions each carry one gets
 * every identifier with each message [MQTT-3.3.4-4], an array of its own per message; those arrays count against
 * {@code --max-message-memory} like the copies, so a client cannot make the broker hold memory no bound sees.
 */
class SubscriptionIdentifierMemoryTest extends InProcessBrokerTest
{
    private static final int LEVELS = 10;
    private static final String TOPIC = "a/b/c/d/e/f/g/h/i/j";
    private static final int BUDGET = 64 * 1024;

    /**
     * @return the {@code mask}th of the 2^levels filters that match {@code topic}: level n is '+' where bit n is set.
     */
    static String filter(final String topic, final int mask)
    {
        final String[] levels = topic.split("/");
        for (int n = 0; n < levels.length; n++)
        {
            if ((mask & 1 << n) != 0)
            {
                levels[n] = "+";
            }
        }
        return String.join("/", levels);
    }

    private Paho5 subscriber(final int port, final boolean cleanStart) throws Exception
    {
        final Paho5 client = closeLater(new Paho5(port, "ids"));
        final MqttConnectionOptions options = Paho5.options();
        options.setCleanStart(cleanStart);
        options.setSessionExpiryInterval(3_600L);
        client.client.connect(options).waitForCompletion(10_000);
        return client;
    }

    @Test
    @Timeout(120)
    @DisplayName("[MQTT-3.3.4-4] 1,024 overlapping subscriptions with identifiers, client away: the identifiers kept "
        + "with each queued message count against --max-message-memory; what fits comes back with all 1,024")
    void identifiersCountAgainstMessageMemory() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().memory(m -> m.maxMessageMemory(BUDGET)));
        final Paho5 away = subscriber(port, true);
        final int filters = 1 << LEVELS;
        for (int mask = 0; mask < filters; mask++)
        {
            assertThat(away.subscribe(new MqttSubscription(filter(TOPIC, mask), 1), mask + 1)).containsExactly(1);
        }
        away.client.disconnect().waitForCompletion(10_000);

        final Paho5 publisher = closeLater(Paho5.connect(port, "pub"));
        final int published = 100; // 4 KiB of identifiers each: 400 KiB, the budget is 64
        for (int i = 0; i < published; i++)
        {
            publisher.publish(TOPIC, "m" + i, 1);
        }
        TestBrokers.await("deliveries dropped for memory",
            () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > 0);
        assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).isLessThanOrEqualTo(BUDGET);
        final long kept = published - broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        assertThat(kept).as("some fit").isPositive();

        final Paho5 back = subscriber(port, false);
        for (int i = 0; i < kept; i++)
        {
            final Paho5.Received received = back.next();
            assertThat(received).as("message %d of %d", i, kept).isNotNull();
            assertThat(received.payload()).isEqualTo("m" + i);
            final List<Integer> ids = received.message().getProperties().getSubscriptionIdentifiers();
            assertThat(ids).hasSize(filters).doesNotHaveDuplicates();
        }
        TestBrokers.await("every copy given back", () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY) == 0);
    }
}
