package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The broker behaviours on three routing shards ({@code --route-shards 3}) in dedicated threading, a thread per
 * shard: the PUBLISHes are split between the shards by topic, and each shard keeps a replica of the sessions.
 */
class RouteShardsThreadingTest extends BrokerBehaviourTest
{
    private static final int TOPICS = 24;
    private static final int PUBLISHERS = 3;
    private static final int PER_TOPIC = 30;

    BrokerContext.Threading threading()
    {
        return BrokerContext.Threading.DEDICATED;
    }

    int routeShards()
    {
        return 3;
    }

    @Test
    @Timeout(60)
    @DisplayName("MQTT-4.6.0-6: messages of one publisher on one topic arrive in publish order, whichever shard "
        + "routes each topic; none is lost or duplicated at QoS 1")
    void orderPerTopicAcrossShards() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("o/#", 1);
        final List<Paho> publishers = new ArrayList<>();
        for (int p = 0; p < PUBLISHERS; p++)
        {
            publishers.add(paho("pub" + p));
        }
        for (int n = 0; n < PER_TOPIC; n++)
        {
            for (int t = 0; t < TOPICS; t++)
            {
                for (int p = 0; p < PUBLISHERS; p++)
                {
                    publishers.get(p).publish("o/" + t, p + ":" + n, 1, false);
                }
            }
        }
        final Map<String, Integer> last = new HashMap<>(); // topic + publisher -> the last number seen
        for (int i = 0; i < TOPICS * PUBLISHERS * PER_TOPIC; i++)
        {
            final Paho.Received received = subscriber.next();
            assertThat(received).as("message " + i).isNotNull();
            final String[] parts = received.payload().split(":");
            final int number = Integer.parseInt(parts[1]);
            final Integer previous = last.put(received.topic() + "/" + parts[0], number);
            assertThat(number).as(received.topic() + " from pub" + parts[0]).isEqualTo(null == previous ? 0 :
                previous + 1);
        }
        assertThat(last).hasSize(TOPICS * PUBLISHERS).allSatisfy((key, value) -> assertThat(value)
            .isEqualTo(PER_TOPIC - 1));
    }

    @Test
    @Timeout(60)
    @DisplayName("a shared subscription group spanning topics routed by different shards gets each message once")
    void sharedGroupAcrossShards() throws Exception
    {
        broker();
        final Paho first = paho("member1");
        first.client.subscribe("$share/g/s/#", 1);
        final Paho second = paho("member2");
        second.client.subscribe("$share/g/s/#", 1);
        final Paho watcher = paho("watcher");
        watcher.client.subscribe("s/#", 1);
        final Paho publisher = paho("pub");
        final int count = TOPICS * 10;
        for (int i = 0; i < count; i++)
        {
            publisher.publish("s/" + (i % TOPICS), "m" + i, 1, false);
        }
        for (int i = 0; i < count; i++)
        {
            assertThat(watcher.next()).as("watcher message " + i).isNotNull(); // all routed: the members have them
        }
        final Set<String> seen = new HashSet<>();
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (seen.size() < count && System.nanoTime() < deadline)
        {
            for (final Paho member : List.of(first, second))
            {
                final Paho.Received message = member.nextWithin(20);
                if (null != message)
                {
                    assertThat(seen.add(message.payload())).as("delivered once: " + message.payload()).isTrue();
                }
            }
        }
        assertThat(seen).hasSize(count);
        assertThat(first.nextWithin(100)).as("nothing more").isNull();
        assertThat(second.nextWithin(100)).as("nothing more").isNull();
    }
}
