package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The $SYS tree read by a real client, as a Mosquitto dashboard reads it.
 */
class SysTopicsTest extends InProcessBrokerTest
{

    @Test
    @Timeout(60)
    @DisplayName("$SYS: Mosquitto's topics and every ringmq counter, retained, refreshed every --sys-interval")
    void sysTreeIsPublished() throws Exception
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(200)));
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        for (int i = 0; i < 5; i++)
        {
            publisher.publish("plain/" + i, "m" + i, 1, false);
        }
        final Paho everything = closeLater(Paho.connect(broker.port(), "everything"));
        everything.client.subscribe("#", 0);
        final Paho dashboard = closeLater(Paho.connect(broker.port(), "dashboard"));
        dashboard.client.subscribe("$SYS/#", 0);

        final Map<String, String> latest = new HashMap<>();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline && !(publishedCountSeen(latest) && latest.containsKey(
            "$SYS/broker/ringmq/ingress_ring_occupancy_slots_in_use")))
        {
            final Paho.Received message = dashboard.received.poll(1, TimeUnit.SECONDS);
            if (null != message)
            {
                latest.put(message.topic(), message.payload());
            }
        }
        assertThat(latest.get("$SYS/broker/version")).startsWith("ringmq ");
        assertThat(latest.get("$SYS/broker/uptime")).endsWith(" seconds");
        assertThat(Long.parseLong(latest.get("$SYS/broker/clients/connected"))).isGreaterThanOrEqualTo(3);
        assertThat(Long.parseLong(latest.get("$SYS/broker/clients/maximum"))).isGreaterThanOrEqualTo(3);
        assertThat(Long.parseLong(latest.get("$SYS/broker/subscriptions/count"))).isEqualTo(2);
        assertThat(Long.parseLong(latest.get("$SYS/broker/bytes/received"))).isPositive();
        assertThat(Long.parseLong(latest.get("$SYS/broker/messages/sent"))).isPositive();
        assertThat(latest.get("$SYS/broker/load/publish/messages/received/1min")).matches("\\d+\\.\\d\\d");
        assertThat(Long.parseLong(latest.get("$SYS/broker/heap/current"))).isPositive();
        assertThat(latest).containsKey("$SYS/broker/ringmq/connections_refused_max_connections");

        // [MQTT-4.7.2-1] '#' does not match topics starting with '$': the plain subscriber saw none of them
        publisher.publish("plain/marker", "end", 1, false);
        Paho.Received seen;
        while (null != (seen = everything.next()) && !seen.topic().equals("plain/marker"))
        {
            assertThat(seen.topic()).doesNotStartWith("$");
        }
        assertThat(seen).isNotNull();

        // retained: a dashboard that comes later gets the tree at once
        final Paho late = closeLater(Paho.connect(broker.port(), "late"));
        late.client.subscribe("$SYS/broker/version", 0);
        final Paho.Received version = late.next();
        assertThat(version.retained()).isTrue();
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @Timeout(30)
    @DisplayName("$SYS off with --sys-interval 0: nothing is published")
    void sysOff() throws Exception
    {
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)));
        final Paho dashboard = closeLater(Paho.connect(broker.port(), "dashboard"));
        dashboard.client.subscribe("$SYS/#", 0);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        dashboard.client.subscribe("marker", 0);
        publisher.publish("marker", "end", 1, false);
        final Paho.Received first = dashboard.next();
        assertThat(first.topic()).as("the marker comes first: no $SYS").isEqualTo("marker");
    }

    private static boolean publishedCountSeen(final Map<String, String> latest)
    {
        final String received = latest.get("$SYS/broker/publish/messages/received");
        return null != received && Long.parseLong(received) >= 5 && latest.containsKey("$SYS/broker/clients/connected") &&
            Long.parseLong(latest.get("$SYS/broker/clients/connected")) >= 3 &&
            null != latest.get("$SYS/broker/subscriptions/count") &&
            Long.parseLong(latest.get("$SYS/broker/subscriptions/count")) == 2;
    }

}
