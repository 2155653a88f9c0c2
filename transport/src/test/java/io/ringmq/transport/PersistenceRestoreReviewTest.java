package io.ringmq.transport;

import io.ringmq.persistence.RocksDbSettings;
import io.ringmq.persistence.RocksDbStore;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Adversarial review of the restore path with real clients: what comes back after a restart on the same data
 * directory, and what is left on disk.
 */
@Timeout(120)
class PersistenceRestoreReviewTest
{
    @TempDir
    Path directory;

    private RingMq start() throws IOException
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start();
    }

    /** The keys of the stopped broker's store, as hex, one per record. */
    private List<String> storeKeys()
    {
        final List<String> keys = new ArrayList<>();
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(directory.resolve("data"))))
        {
            store.scan((key, keyLength, value, valueLength) ->
            {
                final StringBuilder s = new StringBuilder();
                for (int i = 0; i < keyLength; i++)
                {
                    s.append(String.format("%02x", key.getByte(i) & 0xFF));
                }
                keys.add(s.toString());
            });
        }
        return keys;
    }

    private List<String> sessionKeys()
    {
        return storeKeys().stream().filter(k -> k.startsWith(String.format("%02x", Records.SESSIONS))).toList();
    }

    private static byte[] publish5(final String topic, final String payload, final int qos, final int packetId,
        final boolean retain, final int alias)
    {
        final MqttProperties properties = alias == 0 ? null :
            new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, alias);
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V5).qos(qos)
            .packetId(packetId).retain(retain).topic(topic).payload(payload.getBytes(StandardCharsets.UTF_8))
            .properties(properties);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("a retained and queued QoS 1 message published through a topic alias (empty topic) is stored under " +
        "its topic: after a restart it comes back on it [MQTT-3.3.2-12] [MQTT-3.3.1-5]")
    void topicAliasMessagesAreStoredUnderTheirTopic() throws Exception
    {
        try (RingMq broker = start())
        {
            try (Paho s = Paho.connect(broker.port(), "s", Paho.options(false)))
            {
                s.client.subscribe("al/#", 1);
            }
            try (RawClient publisher = new RawClient(broker.port()).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("apub", null))).isZero();
                publisher.send(publish5("al/t", "first", 1, 1, true, 1));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
                publisher.send(publish5("", "second", 1, 2, true, 1));
                assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            }
        }
        try (RingMq broker = start())
        {
            try (Paho s = Paho.connect(broker.port(), "s", Paho.options(false)))
            {
                assertThat(s.sessionPresent()).isTrue();
                final Paho.Received first = s.next();
                final Paho.Received second = s.next();
                assertThat(first).isNotNull();
                assertThat(second).isNotNull();
                assertThat(List.of(first.topic(), second.topic())).containsExactly("al/t", "al/t");
                assertThat(List.of(first.payload(), second.payload())).containsExactly("first", "second");
            }
            try (Paho reader = Paho.connect(broker.port(), "reader"))
            {
                reader.client.subscribe("#", 1);
                final Paho.Received retained = reader.next();
                assertThat(retained).isNotNull();
                assertThat(retained.topic()).isEqualTo("al/t");
                assertThat(retained.payload()).isEqualTo("second");
                assertThat(reader.nextWithin(500)).as("one retained message").isNull();
            }
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }

    @Test
    @DisplayName("No Local survives a restart: a restored session does not get its own messages [MQTT-3.8.3-3]")
    void noLocalSurvivesARestart() throws Exception
    {
        final MqttConnectionOptions options = Paho5.options();
        options.setCleanStart(false);
        options.setSessionExpiryInterval(3600L);
        try (RingMq broker = start())
        {
            final Paho5 nl = new Paho5(broker.port(), "nl");
            nl.client.connect(options).waitForCompletion(10_000);
            final MqttSubscription subscription = new MqttSubscription("nl/#", 1);
            subscription.setNoLocal(true);
            nl.subscribe(subscription, 0);
            nl.subscribe(new MqttSubscription("marker/#", 1), 0);
            nl.close();
        }
        try (RingMq broker = start())
        {
            final Paho5 nl = new Paho5(broker.port(), "nl");
            nl.client.connect(options).waitForCompletion(10_000);
            nl.publish("nl/own", "own", 1);
            nl.publish("marker/x", "marker", 1);
            final Paho5.Received first = nl.next();
            assertThat(first).isNotNull();
            assertThat(first.payload()).as("its own message is not sent back to it").isEqualTo("marker");
            nl.close();
        }
    }

    @Test
    @DisplayName("a session that expired, one ended by a clean start, and one resumed with expiry 0 leave nothing " +
        "on disk [MQTT-3.1.2-4] [MQTT-3.1.2-23]")
    void endedSessionsLeaveNothingOnDisk() throws Exception
    {
        try (RingMq broker = start())
        {
            // expires 1 s after it goes
            final MqttConnectionOptions shortLived = Paho5.options();
            shortLived.setCleanStart(false);
            shortLived.setSessionExpiryInterval(1L);
            final Paho5 expiring = new Paho5(broker.port(), "expiring");
            expiring.client.connect(shortLived).waitForCompletion(10_000);
            expiring.subscribe(new MqttSubscription("e/#", 1), 3);
            expiring.close();
            // ended by a clean start
            try (Paho c = Paho.connect(broker.port(), "c", Paho.options(false)))
            {
                c.client.subscribe("c/#", 1);
            }
            // resumed with expiry 0: ends with its connection
            final MqttConnectionOptions longLived = Paho5.options();
            longLived.setCleanStart(false);
            longLived.setSessionExpiryInterval(3600L);
            final Paho5 z = new Paho5(broker.port(), "z");
            z.client.connect(longLived).waitForCompletion(10_000);
            z.subscribe(new MqttSubscription("z/#", 1), 0);
            z.close();
            try (Paho publisher = Paho.connect(broker.port(), "p"))
            {
                publisher.publish("c/1", "c", 1, false);
                publisher.publish("z/1", "z", 1, false);
                publisher.publish("e/1", "e", 1, false);
            }
            try (Paho c = Paho.connect(broker.port(), "c", Paho.options(true)))
            {
                assertThat(c.sessionPresent()).isFalse();
            }
            final MqttConnectionOptions zero = Paho5.options();
            zero.setCleanStart(false);
            zero.setSessionExpiryInterval(0L);
            final Paho5 z2 = new Paho5(broker.port(), "z");
            z2.client.connect(zero).waitForCompletion(10_000);
            assertThat(z2.next()).as("its queued message").isNotNull();
            z2.close();
            TestBrokers.await("every session ended", () -> broker.sessionCount() == 0);
        }
        assertThat(sessionKeys()).as("records of sessions that ended").isEmpty();
    }
}
