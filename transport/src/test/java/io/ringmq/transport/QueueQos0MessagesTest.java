package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --queue-qos0-messages} (Mosquitto's {@code queue_qos0_messages}): QoS 0 messages for a persistent session
 * whose client is away are queued with its QoS 1 and 2 messages, in order, within {@code --max-queued}, and sent at
 * QoS 0 when it comes back; off (the default, as in Mosquitto) they are not. With Paho 3.1.1 and HiveMQ 5.0 clients.
 * The publisher's last message is QoS 1: its PUBACK means the broker has routed everything it sent before.
 */
@Timeout(60)
class QueueQos0MessagesTest extends InProcessBrokerTest
{
    private static BrokerContext context(final boolean queueQos0)
    {
        return TestBrokers.v5Context().limits(l -> l.queueQos0Messages(queueQos0));
    }

    /** A persistent 3.1.1 session subscribed to q/# at QoS 1, its client gone. */
    private void sleeper(final int port) throws Exception
    {
        try (Paho sleeper = Paho.connect(port, "sleeper", Paho.options(false)))
        {
            sleeper.client.subscribe("q/#", 1);
        }
    }

    /** Publishes at the QoS given, then a QoS 1 barrier to a topic the sleeper does not read. */
    private void publish(final int port, final int... qos) throws Exception
    {
        try (Paho publisher = Paho.connect(port, "publisher"))
        {
            for (int i = 0; i < qos.length; i++)
            {
                publisher.publish("q/" + i, "m" + i + "@" + qos[i], qos[i], false);
            }
            publisher.publish("barrier", "b", 1, false);
        }
    }

    /** Reconnects the sleeper and reads what comes until a live QoS 0 marker arrives. */
    private List<String> wake(final int port) throws Exception
    {
        final Paho sleeper = closeLater(Paho.connect(port, "sleeper", Paho.options(false)));
        try (Paho marker = Paho.connect(port, "marker"))
        {
            marker.publish("q/marker", "marker", 0, false);
        }
        final List<String> got = new ArrayList<>();
        for (Paho.Received message = sleeper.next(); null != message; message = sleeper.next())
        {
            if (message.payload().equals("marker"))
            {
                return got;
            }
            got.add(message.payload() + " as " + message.qos());
        }
        throw new AssertionError("no marker after " + got);
    }

    @Test
    @DisplayName("on: QoS 0 messages for a sleeping persistent session come when it wakes, at QoS 0, in order with its "
        + "QoS 1 messages")
    void queuedInOrder() throws Exception
    {
        final int port = launch(context(true));
        sleeper(port);
        publish(port, 0, 1, 0, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0", "m1@1 as 1", "m2@0 as 0", "m3@0 as 0");
    }

    @Test
    @DisplayName("off (the default, as Mosquitto): only the QoS 1 message comes")
    void notQueuedByDefault() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        sleeper(port);
        publish(port, 0, 1, 0);
        assertThat(wake(port)).containsExactly("m1@1 as 1");
    }

    @Test
    @DisplayName("--max-queued counts them: past it the newest are dropped and counted")
    void withinMaxQueued() throws Exception
    {
        final int port = launch(context(true).limits(l -> l.maxQueued(2)));
        sleeper(port);
        publish(port, 0, 0, 0, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0", "m1@0 as 0");
        assertThat(broker.counters().get(BrokerCounters.QUEUE_FULL_DROPPED)).isEqualTo(2);
    }

    @Test
    @DisplayName("a 5.0 session with an expiry, subscribed at QoS 0, across 2 I/O agents and 2 routing shards")
    void mqtt5Session() throws Exception
    {
        final int port = launch(context(true)
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2).routeShards(2)));
        final Hive5 five = closeLater(new Hive5(port, "five"));
        five.client.connectWith().cleanStart(true).sessionExpiryInterval(600).send();
        five.subscribe("q/#", 0);
        five.client.disconnect();
        publish(port, 0, 0, 0);
        final Hive5 back = closeLater(new Hive5(port, "five"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(600).send().isSessionPresent())
            .isTrue();
        final List<String> got = new ArrayList<>();
        for (int i = 0; i < 3; i++)
        {
            got.add(Hive5.text(back.next()));
        }
        assertThat(got).containsExactly("m0@0", "m1@0", "m2@0");
    }

    @Test
    @DisplayName("a reload turns it on for the messages that come from then on")
    void reloadTurnsItOn() throws Exception
    {
        final int port = launch(context(false));
        sleeper(port);
        publish(port, 0);
        assertThat(broker.reload(context(true))).contains("queue-qos0-messages");
        publish(port, 0);
        assertThat(wake(port)).containsExactly("m0@0 as 0");
    }
}
