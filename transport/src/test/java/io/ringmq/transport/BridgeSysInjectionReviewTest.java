package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: a topic line {@code topic # in 0 "" r/} imports the remote's {@code r/#} as the local {@code #}, which by
 * MQTT's rules never covers {@code $SYS}. The relay maps the remote topic {@code r/$SYS/...} to the local
 * {@code $SYS/...} (BridgeRelay.map strips the prefix without checking the result against the local filter) and
 * the bridge's ACL (ClientAcl.BRIDGE) lets it write $SYS: any client of the remote broker writes the local $SYS tree.
 */
@Timeout(60)
class BridgeSysInjectionReviewTest extends BridgeReviewBase
{

    @Test
    void remoteCannotWriteLocalSysThroughAnEmptyLocalPrefix() throws Exception
    {
        final Broker b = BridgeReviewSupport.remote();
        closeables.add(b);
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b", "address 127.0.0.1:" + b.port(), "remote_clientid inj", "try_private false",
            "restart_timeout 1", "topic # in 1 \"\" r/");
        closeables.add(a);
        BridgeReviewSupport.await("the bridge connected", 15, () -> a.bridges().get(0).isConnected());

        final Paho onA = Paho.connect(a.ports()[0], "watcher");
        closeables.add(onA);
        onA.client.subscribe("$SYS/broker/clients/connected", 1);
        onA.client.subscribe("marker", 1);
        final Paho onB = Paho.connect(b.ports()[0], "remote-client");
        closeables.add(onB);
        onB.publish("r/$SYS/broker/clients/connected", "999999", 1, true);
        onB.publish("r/marker", "end", 1, false);

        final List<String> seen = new ArrayList<>();
        while (true)
        {
            final Paho.Received next = onA.next();
            assertThat(next).as("the marker through the bridge").isNotNull();
            if (next.topic().equals("marker"))
            {
                break;
            }
            seen.add(next.topic() + "=" + next.payload() + (next.retained() ? " (retained)" : ""));
        }
        assertThat(seen).as("what the remote's client wrote into this broker's $SYS").isEmpty();
    }
}
