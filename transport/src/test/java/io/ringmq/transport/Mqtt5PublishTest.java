package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.datatypes.Mqtt5UserProperty;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5PayloadFormatIndicator;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5PublishResult;
import com.hivemq.client.mqtt.mqtt5.message.publish.puback.Mqtt5PubAckReasonCode;
import com.hivemq.client.mqtt.mqtt5.message.publish.pubrec.Mqtt5PubRecReasonCode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 PUBLISH end to end with the HiveMQ client: what the broker forwards unaltered (payload format, content
 * type, response topic, correlation data, user properties in order), what it changes (the Message Expiry Interval,
 * to what remains), retained messages with their properties, and the PUBACK / PUBREC reason 0x10 when no
 * subscription matched.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5PublishTest extends InProcessBrokerTest
{
    private int port;

    @BeforeEach
    void start() throws Exception
    {
        port = launch(TestBrokers.v5Context());
    }

    private static String text(final ByteBuffer buffer)
    {
        return StandardCharsets.UTF_8.decode(buffer.duplicate()).toString();
    }

    @Test
    @DisplayName("MQTT-3.3.2-4, MQTT-3.3.2-20: the Payload Format Indicator and Content Type arrive unaltered; a "
        + "message without them arrives without them")
    void payloadFormatAndContentType() throws Exception
    {
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("pf/#", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.client.publishWith().topic("pf/json").qos(Hive5.qos(1)).payload("{\"a\":1}".getBytes())
            .payloadFormatIndicator(Mqtt5PayloadFormatIndicator.UTF_8).contentType("application/json").send();
        publisher.client.publishWith().topic("pf/bytes").qos(Hive5.qos(0)).payload(new byte[]{1, 2, 3})
            .payloadFormatIndicator(Mqtt5PayloadFormatIndicator.UNSPECIFIED).contentType("application/octet-stream")
            .send();
        publisher.publish("pf/bare", "bare", 1, false);

        final Mqtt5Publish json = subscriber.next();
        assertThat(json.getPayloadFormatIndicator()).hasValue(Mqtt5PayloadFormatIndicator.UTF_8);
        assertThat(json.getContentType().map(Object::toString)).hasValue("application/json");
        final Mqtt5Publish bytes = subscriber.next();
        assertThat(bytes.getPayloadAsBytes()).containsExactly(1, 2, 3);
        assertThat(bytes.getPayloadFormatIndicator().orElse(Mqtt5PayloadFormatIndicator.UNSPECIFIED))
            .isEqualTo(Mqtt5PayloadFormatIndicator.UNSPECIFIED);
        assertThat(bytes.getContentType().map(Object::toString)).hasValue("application/octet-stream");
        final Mqtt5Publish bare = subscriber.next();
        assertThat(Hive5.text(bare)).isEqualTo("bare");
        assertThat(bare.getPayloadFormatIndicator()).isEmpty();
        assertThat(bare.getContentType()).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.3.2-15, MQTT-3.3.2-16: request / response: the Response Topic and Correlation Data reach the "
        + "responder unaltered and its answer reaches the requester with the same Correlation Data")
    void requestResponse() throws Exception
    {
        final Hive5 responder = closeLater(Hive5.connect(port, "responder"));
        responder.subscribe("service/echo", 1);
        final Hive5 requester = closeLater(Hive5.connect(port, "requester"));
        requester.subscribe("replies/requester", 1);
        final byte[][] correlations = {{0, 1, 2, (byte)0xFF}, "second".getBytes(StandardCharsets.UTF_8)};
        for (final byte[] correlation : correlations)
        {
            requester.client.publishWith().topic("service/echo").qos(Hive5.qos(1)).payload("ping".getBytes())
                .responseTopic("replies/requester").correlationData(correlation).send();
        }
        for (int i = 0; i < correlations.length; i++)
        {
            final Mqtt5Publish request = responder.next();
            assertThat(request.getResponseTopic().map(Object::toString)).hasValue("replies/requester");
            final byte[] correlation = new byte[request.getCorrelationData().orElseThrow().remaining()];
            request.getCorrelationData().orElseThrow().duplicate().get(correlation);
            assertThat(correlation).isEqualTo(correlations[i]);
            responder.client.publishWith().topic(request.getResponseTopic().orElseThrow()).qos(Hive5.qos(1))
                .payload(("pong-" + i).getBytes()).correlationData(correlation).send();
        }
        for (int i = 0; i < correlations.length; i++)
        {
            final Mqtt5Publish response = requester.next();
            assertThat(Hive5.text(response)).isEqualTo("pong-" + i);
            assertThat(response.getCorrelationData()).hasValue(ByteBuffer.wrap(correlations[i]));
            assertThat(response.getResponseTopic()).isEmpty();
        }
    }

    @Test
    @DisplayName("MQTT-3.3.2-17, MQTT-3.3.2-18: user properties arrive unaltered and in their order, repeated names "
        + "included, at QoS 0, 1 and 2")
    void userPropertiesInOrder() throws Exception
    {
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("up/#", 2);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final String[][] pairs = {{"z", "1"}, {"a", "2"}, {"z", "0"}, {"ключ", "значение"}, {"empty", ""}, {"a", "2"}};
        for (int qos = 0; qos <= 2; qos++)
        {
            final var properties = publisher.client.publishWith().topic("up/" + qos).qos(Hive5.qos(qos))
                .payload(("q" + qos).getBytes()).userProperties();
            for (final String[] pair : pairs)
            {
                properties.add(pair[0], pair[1]);
            }
            properties.applyUserProperties().send();
        }
        for (int qos = 0; qos <= 2; qos++)
        {
            final Mqtt5Publish publish = subscriber.next();
            assertThat(Hive5.text(publish)).isEqualTo("q" + qos);
            final List<? extends Mqtt5UserProperty> received = publish.getUserProperties().asList();
            assertThat(received).extracting(p -> p.getName().toString() + "=" + p.getValue().toString())
                .containsExactly("z=1", "a=2", "z=0", "ключ=значение", "empty=", "a=2");
        }
    }

    @Test
    @DisplayName("MQTT-3.3.2-6: the Message Expiry Interval is forwarded as what remains of it (no more than was sent); "
        + "a message without one arrives without one")
    void messageExpiryForwarded() throws Exception
    {
        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("me/#", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.client.publishWith().topic("me/a").qos(Hive5.qos(1)).payload("x".getBytes())
            .messageExpiryInterval(100).send();
        publisher.publish("me/b", "y", 1, false);
        final Mqtt5Publish expiring = subscriber.next();
        assertThat(expiring.getMessageExpiryInterval()).isPresent();
        assertThat(expiring.getMessageExpiryInterval().getAsLong()).isBetween(98L, 100L);
        assertThat(subscriber.next().getMessageExpiryInterval()).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, MQTT-3.3.1-8, MQTT-3.3.2-5: a retained message is kept with its properties and sent "
        + "with RETAIN 1 to a later subscriber; one whose Message Expiry Interval has passed is not")
    void retainedWithProperties() throws Exception
    {
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.client.publishWith().topic("rt/kept").qos(Hive5.qos(1)).retain(true).payload("kept".getBytes())
            .contentType("text/plain").userProperties().add("origin", "test").applyUserProperties()
            .messageExpiryInterval(3_600).send();
        publisher.client.publishWith().topic("rt/brief").qos(Hive5.qos(1)).retain(true).payload("brief".getBytes())
            .messageExpiryInterval(1).send();
        final long published = System.nanoTime();

        final Hive5 early = closeLater(Hive5.connect(port, "early"));
        early.subscribe("rt/#", 1);
        final List<Mqtt5Publish> first = early.drainUntilMarker(publisher, "rt/marker");
        assertThat(first).extracting(Hive5::text).containsExactlyInAnyOrder("kept", "brief");
        final Mqtt5Publish kept = first.stream().filter(p -> Hive5.text(p).equals("kept")).findFirst().orElseThrow();
        assertThat(kept.isRetain()).isTrue();
        assertThat(kept.getContentType().map(Object::toString)).hasValue("text/plain");
        assertThat(kept.getUserProperties().asList()).extracting(p -> p.getName() + "=" + p.getValue())
            .containsExactly("origin=test");
        assertThat(kept.getMessageExpiryInterval().orElseThrow()).isBetween(3_590L, 3_600L);

        // the message expiry of "brief" is a time: the only wait here is for it to pass
        while (System.nanoTime() - published < TimeUnit.MILLISECONDS.toNanos(1_100))
        {
            Thread.onSpinWait();
        }
        final Hive5 late = closeLater(Hive5.connect(port, "late"));
        late.subscribe("rt/#", 1);
        assertThat(late.drainUntilMarker(publisher, "rt/marker")).extracting(Hive5::text).containsExactly("kept");
    }

    @Test
    @DisplayName("3.4.2.1, 3.5.2.1: a QoS 1 PUBLISH nobody subscribed to is acknowledged with PUBACK 0x10 (no matching "
        + "subscribers), QoS 2 with PUBREC 0x10; with a subscriber, 0x00")
    void noMatchingSubscribers() throws Exception
    {
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        final Mqtt5PublishResult.Mqtt5Qos1Result lonely = (Mqtt5PublishResult.Mqtt5Qos1Result)publisher.client
            .publishWith().topic("nobody/here").qos(Hive5.qos(1)).payload("x".getBytes()).send();
        assertThat(lonely.getPubAck().getReasonCode()).isEqualTo(Mqtt5PubAckReasonCode.NO_MATCHING_SUBSCRIBERS);
        final Mqtt5PublishResult.Mqtt5Qos2Result lonely2 = (Mqtt5PublishResult.Mqtt5Qos2Result)publisher.client
            .publishWith().topic("nobody/here").qos(Hive5.qos(2)).payload("x".getBytes()).send();
        assertThat(lonely2.getPubRec().getReasonCode()).isEqualTo(Mqtt5PubRecReasonCode.NO_MATCHING_SUBSCRIBERS);

        final Hive5 subscriber = closeLater(Hive5.connect(port, "sub"));
        subscriber.subscribe("somebody/#", 2);
        final Mqtt5PublishResult.Mqtt5Qos1Result heard = (Mqtt5PublishResult.Mqtt5Qos1Result)publisher.client
            .publishWith().topic("somebody/here").qos(Hive5.qos(1)).payload("x".getBytes()).send();
        assertThat(heard.getPubAck().getReasonCode()).isEqualTo(Mqtt5PubAckReasonCode.SUCCESS);
        final Mqtt5PublishResult.Mqtt5Qos2Result heard2 = (Mqtt5PublishResult.Mqtt5Qos2Result)publisher.client
            .publishWith().topic("somebody/here").qos(Hive5.qos(2)).payload("x".getBytes()).send();
        assertThat(heard2.getPubRec().getReasonCode()).isEqualTo(Mqtt5PubRecReasonCode.SUCCESS);
        assertThat(subscriber.next()).isNotNull();
        assertThat(subscriber.next()).isNotNull();
    }
}
