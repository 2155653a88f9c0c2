package io.ringmq.transport;

import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5PayloadFormatIndicator;
import com.hivemq.client.mqtt.mqtt5.message.publish.Mqtt5Publish;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 sessions and wills over time: a session that expires, messages that expire while queued for an offline
 * session, and wills with a delay (published after it, cancelled by a reconnect within it, published early when
 * the session ends first) and with their properties. A will's client is a {@link RawClient} that drops its
 * connection without DISCONNECT; watchers and publishers are HiveMQ clients.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class Mqtt5SessionsTest extends InProcessBrokerTest
{
    private int port;

    @BeforeEach
    void start() throws Exception
    {
        port = launch(context());
    }

    /**
     * @return the broker the sessions live on.
     */
    BrokerContext context()
    {
        return TestBrokers.v5Context();
    }

    private static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            if (System.nanoTime() > deadline)
            {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    /** Waits until {@code millis} have passed since {@code sinceNs}: for tests whose subject is a time interval. */
    private static void awaitElapsed(final long sinceNs, final long millis) throws InterruptedException
    {
        await(millis + " ms to pass", () -> System.nanoTime() - sinceNs >= TimeUnit.MILLISECONDS.toNanos(millis));
    }

    private static long elapsedMs(final long sinceNs)
    {
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNs);
    }

    /** Connects a raw 5.0 client with a will on {@code will/<clientId>}, then drops it without DISCONNECT. */
    private long connectAndDrop(final String clientId, final long sessionExpiry, final MqttProperties willProperties)
        throws Exception
    {
        final RawClient victim = closeLater(new RawClient(port).version(MqttVersion.V5));
        final MqttProperties properties = new MqttProperties()
            .setInt(PropertyId.SESSION_EXPIRY_INTERVAL, (int)sessionExpiry);
        assertThat(victim.handshake(RawClient.connect5WithWill(clientId, properties, "will/" + clientId, "gone",
            willProperties))).isZero();
        victim.kill();
        return System.nanoTime();
    }

    private Hive5 watcher() throws Exception
    {
        final Hive5 watcher = closeLater(Hive5.connect(port, "watcher"));
        watcher.subscribe("will/#", 1);
        return watcher;
    }

    @Test
    @DisplayName("MQTT-3.1.2-23, MQTT-3.2.2-2: once the Session Expiry Interval has run out the session is gone: "
        + "the reconnect has session present 0 and no subscription")
    void sessionExpires() throws Exception
    {
        final Hive5 brief = closeLater(new Hive5(port, "brief"));
        brief.client.connectWith().cleanStart(true).sessionExpiryInterval(1).send();
        brief.subscribe("sx/#", 1);
        brief.client.disconnect();
        await("the session to expire", () -> broker.counters().get(BrokerCounters.SESSIONS_CURRENT) == 0);

        final Hive5 back = closeLater(new Hive5(port, "brief"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(1).send().isSessionPresent())
            .isFalse();
        back.subscribe("sx-marker", 1);
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.publish("sx/1", "to-the-expired-subscription", 1, false);
        assertThat(back.drainUntilMarker(publisher, "sx-marker")).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.3.2-5, MQTT-3.3.2-6: of the messages queued for an offline session, one that expired before "
        + "the reconnect is not delivered; one that did not arrives with what remains of its interval")
    void messageExpiryWhileOffline() throws Exception
    {
        final Hive5 keeper = closeLater(new Hive5(port, "keeper"));
        keeper.client.connectWith().cleanStart(true).sessionExpiryInterval(60).send();
        keeper.subscribe("mx/#", 1);
        keeper.client.disconnect();

        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        publisher.client.publishWith().topic("mx/short").qos(Hive5.qos(1)).payload("short".getBytes())
            .messageExpiryInterval(1).send();
        publisher.client.publishWith().topic("mx/long").qos(Hive5.qos(1)).payload("long".getBytes())
            .messageExpiryInterval(60).send();
        final long published = System.nanoTime();
        awaitElapsed(published, 2_100); // the subject: "short" expires while its session is offline

        final Hive5 back = closeLater(new Hive5(port, "keeper"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(60).send().isSessionPresent())
            .isTrue();
        final Mqtt5Publish queued = back.next();
        assertThat(Hive5.text(queued)).isEqualTo("long");
        assertThat(queued.getMessageExpiryInterval().orElseThrow()).isBetween(50L, 58L);
        assertThat(back.drainUntilMarker(publisher, "mx/marker")).isEmpty();
        assertThat(broker.counters().get(BrokerCounters.MESSAGES_EXPIRED)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.1.3-9, 3.1.3.2.2: a will with a Will Delay Interval of 2 s is published after the delay")
    void willDelay() throws Exception
    {
        final Hive5 watcher = watcher();
        final long dropped = connectAndDrop("delayed", 60,
            new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, 2));
        final Mqtt5Publish will = watcher.next();
        final long elapsedMs = elapsedMs(dropped);
        assertThat(will.getTopic().toString()).isEqualTo("will/delayed");
        assertThat(elapsedMs).as("ms from the drop to the will").isGreaterThanOrEqualTo(1_900);
    }

    @Test
    @DisplayName("MQTT-3.1.3-9: a reconnect of the session within the Will Delay Interval cancels the will")
    void reconnectCancelsDelayedWill() throws Exception
    {
        final Hive5 watcher = watcher();
        final long dropped = connectAndDrop("returning", 60,
            new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, 2));
        final Hive5 back = closeLater(new Hive5(port, "returning"));
        assertThat(back.client.connectWith().cleanStart(false).sessionExpiryInterval(60).send().isSessionPresent())
            .isTrue();
        assertThat(elapsedMs(dropped)).as("reconnected within the delay").isLessThan(2_000);
        awaitElapsed(dropped, 2_500); // the subject: the delay passes with the session connected again
        final Hive5 publisher = closeLater(Hive5.connect(port, "pub"));
        assertThat(watcher.drainUntilMarker(publisher, "will/marker")).isEmpty();
    }

    @Test
    @DisplayName("3.1.3.2.2: when the Session Expiry Interval (1 s) is shorter than the Will Delay Interval (30 s), "
        + "the will is published when the session ends")
    void willAtSessionEnd() throws Exception
    {
        final Hive5 watcher = watcher();
        final long dropped = connectAndDrop("ending", 1,
            new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, 30));
        final Mqtt5Publish will = watcher.next();
        assertThat(will).as("the will, before its delay of 30 s").isNotNull();
        assertThat(will.getTopic().toString()).isEqualTo("will/ending");
        assertThat(elapsedMs(dropped)).isBetween(900L, 10_000L);
    }

    @Test
    @DisplayName("MQTT-3.1.3-10, MQTT-3.3.2-4, MQTT-3.3.2-20: a will's properties reach its subscribers: payload "
        + "format, content type, response topic, correlation data, message expiry, and user properties in order")
    void willProperties() throws Exception
    {
        final Hive5 watcher = watcher();
        final MqttProperties willProperties = new MqttProperties()
            .setInt(PropertyId.PAYLOAD_FORMAT_INDICATOR, 1)
            .set(PropertyId.CONTENT_TYPE, "text/plain")
            .set(PropertyId.RESPONSE_TOPIC, "replies/x")
            .set(PropertyId.CORRELATION_DATA, new byte[]{9, 8, 7})
            .setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, 300)
            .addUserProperty("b", "1").addUserProperty("a", "2").addUserProperty("b", "3");
        connectAndDrop("propertied", 0, willProperties);
        final Mqtt5Publish will = watcher.next();
        assertThat(Hive5.text(will)).isEqualTo("gone");
        assertThat(will.getPayloadFormatIndicator()).hasValue(Mqtt5PayloadFormatIndicator.UTF_8);
        assertThat(will.getContentType().map(Object::toString)).hasValue("text/plain");
        assertThat(will.getResponseTopic().map(Object::toString)).hasValue("replies/x");
        assertThat(will.getCorrelationData()).hasValue(ByteBuffer.wrap(new byte[]{9, 8, 7}));
        assertThat(will.getMessageExpiryInterval().orElseThrow()).isBetween(295L, 300L);
        assertThat(will.getUserProperties().asList()).extracting(p -> p.getName() + "=" + p.getValue())
            .containsExactly("b=1", "a=2", "b=3");
        assertThat(new String(will.getPayloadAsBytes(), StandardCharsets.UTF_8)).isEqualTo("gone");
    }
}
