package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --max-inflight-bytes} (Mosquitto's {@code max_inflight_bytes}): QoS 1 messages go in flight toward a client
 * while those in flight hold fewer bytes than the limit (one always may, however large); the rest wait in its queue,
 * in order, and go as acknowledgements free bytes. A HiveMQ 5.0 subscriber acknowledges by hand; a QoS 0 marker, which
 * takes no window, shows where the sending stopped.
 */
@Timeout(60)
class MaxInflightBytesTest extends InProcessBrokerTest
{
    private static final String KB = "x".repeat(400);

    private Hive5 subscriber(final int port)
    {
        final Hive5 subscriber = closeLater(new Hive5(Hive5.builder(port, "slow"), true));
        subscriber.client.connect();
        subscriber.subscribe("b/#", 1);
        return subscriber;
    }

    private void publish(final int port, final String... payloads)
    {
        try (Hive5 publisher = Hive5.connect(port, "publisher"))
        {
            for (final String payload : payloads)
            {
                publisher.publish("b/t", payload, 1, false);
            }
            publisher.publish("b/marker", "marker", 0, false);
        }
    }

    /** Takes what arrives up to the marker. */
    private static List<Mqtt5Publish> untilMarker(final Hive5 subscriber) throws InterruptedException
    {
        final List<Mqtt5Publish> got = new ArrayList<>();
        for (Mqtt5Publish message = subscriber.next(); ; message = subscriber.next())
        {
            assertThat(message).as("the marker after " + got.size()).isNotNull();
            if (Hive5.text(message).equals("marker"))
            {
                return got;
            }
            got.add(message);
        }
    }

    @Test
    @DisplayName("a limit of 1000 bytes: two 400-byte messages and the third that passes it go in flight, the other "
        + "two wait and follow, one per acknowledgement, in order")
    void limitsBytesInFlight() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxInflightBytes(1_000)));
        final Hive5 subscriber = subscriber(port);
        publish(port, "0" + KB, "1" + KB, "2" + KB, "3" + KB, "4" + KB);
        final List<Mqtt5Publish> first = untilMarker(subscriber);
        assertThat(first).extracting(m -> Hive5.text(m).charAt(0)).containsExactly('0', '1', '2');

        first.get(0).acknowledge();
        final Mqtt5Publish fourth = subscriber.next();
        assertThat(Hive5.text(fourth).charAt(0)).isEqualTo('3');
        first.get(1).acknowledge();
        first.get(2).acknowledge();
        fourth.acknowledge();
        final Mqtt5Publish fifth = subscriber.next();
        assertThat(Hive5.text(fifth).charAt(0)).isEqualTo('4');
        fifth.acknowledge();
    }

    @Test
    @DisplayName("a message larger than the limit still goes, alone; without a limit all go at once")
    void oneAlwaysGoes() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxInflightBytes(100)));
        final Hive5 subscriber = subscriber(port);
        publish(port, "0" + KB, "1" + KB);
        final List<Mqtt5Publish> first = untilMarker(subscriber);
        assertThat(first).extracting(m -> Hive5.text(m).charAt(0)).containsExactly('0');
        first.get(0).acknowledge();
        final Mqtt5Publish second = subscriber.next();
        assertThat(Hive5.text(second).charAt(0)).isEqualTo('1');
        second.acknowledge();
        broker.close();

        final int open = launch(TestBrokers.v5Context());
        final Hive5 unlimited = subscriber(open);
        publish(open, "0" + KB, "1" + KB, "2" + KB, "3" + KB);
        final List<Mqtt5Publish> all = untilMarker(unlimited);
        assertThat(all).hasSize(4);
        all.forEach(Mqtt5Publish::acknowledge);
    }

    @Test
    @DisplayName("a config file's max_inflight_bytes is --max-inflight-bytes")
    void configFile(@TempDir final Path directory) throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "max_inflight_bytes 65536\n");
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString()});
        assertThat(context.limits().maxInflightBytes()).isEqualTo(65_536);
    }
}
