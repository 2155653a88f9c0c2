package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;


import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Review: (1) notification_topic is not validated: a filter with a wildcard is accepted by the config file, then
 * the bridge's local CONNECT (its will on that topic) and its state PUBLISH are refused forever, the bridge never
 * comes up and nothing says why at start. (2) The bridge's local session is an ordinary client id
 * ({@code local.<remote_clientid>}): any client of the ordinary listener that connects with it takes the bridge's
 * persistent session over (kicking the bridge) and receives what was meant for the remote broker.
 */
@Timeout(60)
class BridgeConfigAndSessionReviewTest extends BridgeReviewBase
{

    @Test
    void aWildcardNotificationTopicIsAConfigErrorOrTheBridgeStillConnects() throws Exception
    {
        final Broker b = BridgeReviewSupport.remote();
        closeables.add(b);
        final Broker a;
        try
        {
            a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
                "connection b", "address 127.0.0.1:" + b.port(), "try_private false", "restart_timeout 1",
                "notification_topic bridges/#", "topic x/# out 1");
        }
        catch (final IllegalArgumentException ex)
        {
            return; // a clear config error: fine
        }
        closeables.add(a);
        BridgeReviewSupport.await("the bridge connected (or a config error at start)", 10,
            () -> a.bridges().get(0).isConnected());
    }

    @Test
    void aClientCannotTakeTheBridgesLocalSessionOver() throws Exception
    {
        final Broker b = BridgeReviewSupport.remote();
        closeables.add(b);
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b", "address 127.0.0.1:" + b.port(), "remote_clientid tk", "try_private false",
            "restart_timeout 5", "topic x/# out 1");
        closeables.add(a);
        BridgeReviewSupport.await("the bridge connected", 15, () -> a.bridges().get(0).isConnected());

        assertThatThrownBy(() -> closeables.add(Paho.connect(a.ports()[0], "local.tk", Paho.options(false))))
            .as("an ordinary client taking the bridge's session").isInstanceOfSatisfying(
                org.eclipse.paho.client.mqttv3.MqttException.class, refused -> assertThat(refused.getReasonCode())
                .isEqualTo(org.eclipse.paho.client.mqttv3.MqttException.REASON_CODE_NOT_AUTHORIZED));
        final Paho onB = Paho.connect(b.ports()[0], "on-b");
        closeables.add(onB);
        onB.client.subscribe("x/#", 1);
        final Paho onA = Paho.connect(a.ports()[0], "on-a");
        closeables.add(onA);
        onA.publish("x/secret", "for the remote", 1, false);
        final Paho.Received crossed = onB.next();
        assertThat(crossed).as("the bridged message at the remote").isNotNull();
        assertThat(crossed.payload()).isEqualTo("for the remote");
        assertThat(a.bridges().get(0).connections()).as("the bridge never kicked off").isEqualTo(1);
    }
}
