package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review 2: a topic line whose pattern is a shared subscription ("topic $share/g/s/# out 1") is taken at start,
 * but the bridge subscribes to its local filter as a 5.0 client with No Local, a Protocol Error on a shared
 * subscription [MQTT-3.8.3-4]: the local broker drops the bridge's connection at every SUBSCRIBE, and the bridge
 * reconnects for ever without ever carrying a message. Either the line must be refused at start, or it must work.
 */
@Timeout(60)
class BridgeSharedTopicReview2Test extends BridgeReviewBase
{
    @Test
    void aSharedTopicLineIsRefusedOrWorks() throws Exception
    {
        final Broker b = BridgeReviewSupport.remote();
        closeables.add(b);
        final Broker a;
        try
        {
            a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
                "connection b", "address 127.0.0.1:" + b.port(), "try_private false", "notifications false",
                "restart_timeout 1", "topic $share/g/s/# out 1");
        }
        catch (final Exception refused)
        {
            return; // refused at start: fine
        }
        closeables.add(a);
        final Paho onB = Paho.connect(b.ports()[0], "on-b");
        closeables.add(onB);
        onB.client.subscribe("s/#", 1);
        onB.client.subscribe("$share/g/s/#", 1);
        BridgeReviewSupport.await("the bridge connected or failed twice", 20,
            () -> a.bridges().get(0).isConnected() || a.bridges().get(0).connections() > 0 ||
                null != a.bridges().get(0).lastFailure());
        assertThat(a.bridges().get(0).lastFailure()).as("why the bridge's connection ended").isNull();
        final Paho onA = Paho.connect(a.ports()[0], "on-a");
        closeables.add(onA);
        onA.publish("s/x", "hello", 1, false);
        assertThat(onB.next()).as("the message through the shared topic line").isNotNull();
    }
}
