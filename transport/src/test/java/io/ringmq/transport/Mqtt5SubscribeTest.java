package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5SubAckException;
import com.hivemq.client.mqtt.mqtt5.exceptions.Mqtt5UnsubAckException;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.Mqtt5RetainHandling;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.suback.Mqtt5SubAck;
import com.hivemq.client.mqtt.mqtt5.message.subscribe.suback.Mqtt5SubAckReasonCode;
import com.hivemq.client.mqtt.mqtt5.message.unsubscribe.unsuback.Mqtt5UnsubAck;
import com.hivemq.client.mqtt.mqtt5.message.unsubscribe.unsuback.Mqtt5UnsubAckReasonCode;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 SUBSCRIBE and UNSUBSCRIBE end to end: the subscription options (no local, retain as published, retain
 * handling), subscription identifiers (with Paho v5, whose messages expose them), and the per-filter reason codes
 * of SUBACK and UNSUBACK (with the HiveMQ client).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5SubscribeTest extends InProcessBrokerTest
{
    @Test
    @DisplayName("MQTT-3.8.3-3: with No Local a client does not get its own messages, only other clients' ones")
    void noLocal() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 self = closeLater(Hive5.connect(port, "self"));
        self.client.subscribeWith().topicFilter("nl/#").qos(Hive5.qos(1)).noLocal(true).send();
        self.subscribe("nl-marker", 1);
        final Hive5 other = closeLater(Hive5.connect(port, "other"));
        self.publish("nl/own", "own", 1, false);
        other.publish("nl/other", "other", 1, false);
        self.publish("nl/own", "own-again", 0, false);
        assertThat(self.drainUntilMarker(self, "nl-marker")).extracting(Hive5::text).containsExactly("other");
    }

    @Test
    @DisplayName("MQTT-3.3.1-12, MQTT-3.3.1-13: Retain As Published keeps RETAIN 1 on a live retained message; "
        + "without it the flag is cleared")
    void retainAsPublished() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 keeps = closeLater(Hive5.connect(port, "keeps"));
        keeps.client.subscribeWith().topicFilter("rap/#").qos(Hive5.qos(1)).retainAsPublished(true).send();
        final Hive5 clears = closeLater(Hive5.connect(port, "clears"));
        clears.subscribe("rap/#", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("rap/state", "retained", 1, true);
        publisher.publish("rap/event", "plain", 1, false);

        final Mqtt5Publish kept = keeps.next();
        assertThat(Hive5.text(kept)).isEqualTo("retained");
        assertThat(kept.isRetain()).as("RETAIN with Retain As Published").isTrue();
        assertThat(keeps.next().isRetain()).isFalse();
        final Mqtt5Publish cleared = clears.next();
        assertThat(Hive5.text(cleared)).isEqualTo("retained");
        assertThat(cleared.isRetain()).as("RETAIN without Retain As Published").isFalse();
        assertThat(clears.next().isRetain()).isFalse();
    }

    @Test
    @DisplayName("MQTT-3.3.1-9, MQTT-3.3.1-10, MQTT-3.3.1-11: retain handling 0 sends retained messages on every "
        + "SUBSCRIBE, 1 only when the subscription is new, 2 never")
    void retainHandling() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("rh/state", "kept", 1, true);

        final Hive5 always = closeLater(Hive5.connect(port, "always"));
        for (int i = 0; i < 2; i++)
        {
            always.client.subscribeWith().topicFilter("rh/#").qos(Hive5.qos(1)).retainHandling(Mqtt5RetainHandling.SEND)
                .send();
            assertThat(always.drainUntilMarker(publisher, "rh/marker")).as("retain handling 0, SUBSCRIBE %d", i)
                .extracting(Hive5::text).containsExactly("kept");
        }

        final Hive5 once = closeLater(Hive5.connect(port, "once"));
        for (int i = 0; i < 2; i++)
        {
            once.client.subscribeWith().topicFilter("rh/#").qos(Hive5.qos(1))
                .retainHandling(Mqtt5RetainHandling.SEND_IF_SUBSCRIPTION_DOES_NOT_EXIST).send();
            final List<Mqtt5Publish> before = once.drainUntilMarker(publisher, "rh/marker");
            if (i == 0)
            {
                assertThat(before).as("retain handling 1, new subscription").extracting(Hive5::text)
                    .containsExactly("kept");
                assertThat(before.get(0).isRetain()).isTrue();
            }
            else
            {
                assertThat(before).as("retain handling 1, existing subscription").isEmpty();
            }
        }

        final Hive5 never = closeLater(Hive5.connect(port, "never"));
        never.client.subscribeWith().topicFilter("rh/+").qos(Hive5.qos(1))
            .retainHandling(Mqtt5RetainHandling.DO_NOT_SEND).send();
        assertThat(never.drainUntilMarker(publisher, "rh/marker")).as("retain handling 2").isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.3.4-3, MQTT-3.3.4-4: a message matching two of a client's subscriptions arrives once, with "
        + "both Subscription Identifiers; one matching one carries only its own")
    void subscriptionIdentifiers() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Paho5 subscriber = closeLater(Paho5.connect(port, "identified"));
        subscriber.subscribe(new MqttSubscription("si/#", 1), 7);
        subscriber.subscribe(new MqttSubscription("si/+/x", 1), 9);
        subscriber.subscribe(new MqttSubscription("si/+/+", 1), 0);
        final Paho5 publisher = closeLater(Paho5.connect(port, "pub"));
        publisher.publish("si/a/x", "both", 1);
        publisher.publish("si/b", "one", 1);
        publisher.publish("si/a/y", "one-and-unnamed", 1);
        publisher.publish("si/end", "marker", 1);

        final List<Paho5.Received> received = new ArrayList<>();
        while (received.isEmpty() || !"marker".equals(received.get(received.size() - 1).payload()))
        {
            final Paho5.Received next = subscriber.next();
            assertThat(next).as("after %s", received).isNotNull();
            received.add(next);
        }
        assertThat(received).extracting(Paho5.Received::payload)
            .containsExactly("both", "one", "one-and-unnamed", "marker");
        assertThat(received.get(0).message().getProperties().getSubscriptionIdentifiers())
            .containsExactlyInAnyOrder(7, 9);
        assertThat(received.get(1).message().getProperties().getSubscriptionIdentifiers()).containsExactly(7);
        assertThat(received.get(2).message().getProperties().getSubscriptionIdentifiers()).containsExactly(7);
    }

    @Test
    @DisplayName("MQTT-3.9.3-1, MQTT-3.8.4-6: one SUBACK reason code per filter, in order: a filter over "
        + "--max-topic-levels gets 0x8F (topic filter invalid) while the others in the same SUBSCRIBE are granted")
    void perFilterSubackReasonCodes() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.maxTopicLevels(4)));
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        Mqtt5SubAck subAck;
        try
        {
            subAck = subscriber.client.subscribeWith()
                .addSubscription().topicFilter("ok/a").qos(Hive5.qos(1)).applySubscription()
                .addSubscription().topicFilter("a/b/c/d/e/f").qos(Hive5.qos(1)).applySubscription()
                .addSubscription().topicFilter("ok/+/c/#").qos(Hive5.qos(2)).applySubscription()
                .send();
        }
        catch (final Mqtt5SubAckException partial)
        {
            subAck = partial.getMqttMessage();
        }
        assertThat(subAck.getReasonCodes()).containsExactly(Mqtt5SubAckReasonCode.GRANTED_QOS_1,
            Mqtt5SubAckReasonCode.TOPIC_FILTER_INVALID, Mqtt5SubAckReasonCode.GRANTED_QOS_2);
        assertThat(Mqtt5SubAckReasonCode.TOPIC_FILTER_INVALID.getCode()).isEqualTo(0x8F);

        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("ok/a", "granted", 1, false);
        assertThat(Hive5.text(subscriber.next())).isEqualTo("granted");
    }

    @Test
    @DisplayName("MQTT-3.11.3-1, MQTT-3.11.3-2: one UNSUBACK reason code per filter, in order: 0x00 for a filter "
        + "subscribed, 0x11 (no subscription existed) for one that was not")
    void unsubackReasonCodes() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("us/a", 1);
        subscriber.subscribe("us/b", 1);
        Mqtt5UnsubAck unsubAck;
        try
        {
            unsubAck = subscriber.client.unsubscribeWith().topicFilter("us/never").addTopicFilter("us/a").send();
        }
        catch (final Mqtt5UnsubAckException partial)
        {
            unsubAck = partial.getMqttMessage();
        }
        assertThat(unsubAck.getReasonCodes()).containsExactly(Mqtt5UnsubAckReasonCode.NO_SUBSCRIPTIONS_EXISTED,
            Mqtt5UnsubAckReasonCode.SUCCESS);
        assertThat(Mqtt5UnsubAckReasonCode.NO_SUBSCRIPTIONS_EXISTED.getCode()).isEqualTo(0x11);

        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("us/a", "gone", 1, false);
        assertThat(subscriber.drainUntilMarker(publisher, "us/b")).as("through the removed subscription").isEmpty();
    }
}
