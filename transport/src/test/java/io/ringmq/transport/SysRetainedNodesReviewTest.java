package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.mqttv5.common.MqttMessage;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 72102c2 with a real broker: the $SYS tree the broker retains is exempt from the retained limits, but its
 * trie nodes (RetainedStore.nodeBytes) are counted against --max-retained-bytes for clients' messages.
 */
class SysRetainedNodesReviewTest extends InProcessBrokerTest
{
    @Test
    @Timeout(60)
    @DisplayName("MQTT-3.3.1-5: with $SYS on and --max-retained-bytes 16384, a client's 7-byte retained message is "
        + "kept: the broker's own $SYS messages take none of the clients' room")
    void sysTreeDoesNotTakeTheClientsRoom() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().observability(o -> o.sysIntervalMs(1_000))
            .limits(l -> l.maxRetained(1_000, 16 * 1024)));
        final Paho5 sys = closeLater(Paho5.connect(port, "sys"));
        sys.subscribe(new MqttSubscription("$SYS/broker/uptime", 0), 0);
        assertThat(sys.next()).as("the $SYS tree published").isNotNull();
        final Paho5 publisher = closeLater(Paho5.connect(port, "pub"));
        final MqttMessage message = new MqttMessage("v".getBytes());
        message.setQos(1);
        message.setRetained(true);
        publisher.publish("r/a", message);
        final Paho5 reader = closeLater(Paho5.connect(port, "reader"));
        reader.subscribe(new MqttSubscription("r/a", 1), 0);
        final Paho5.Received retained = reader.next();
        assertThat(broker.counters().get(BrokerCounters.RETAINED_REFUSED_LIMIT)).as("retained refused").isZero();
        assertThat(retained).as("the client's retained message").isNotNull();
    }
}
