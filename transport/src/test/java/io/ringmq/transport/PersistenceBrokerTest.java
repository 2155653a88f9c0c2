package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.PacketType;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttMessage;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.eclipse.paho.mqttv5.common.packet.MqttProperties;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Persistence end to end with real clients: a broker on RocksDB is stopped and started again on the same data
 * directory, in every threading mode, and what the clients were promised is still there.
 */
@Timeout(120)
class PersistenceBrokerTest
{
    @TempDir
    Path directory;

    private RingMq start(final BrokerContext.Threading threading) throws IOException
    {
        return RingMq.builder().threading(threading).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start();
    }

    @ParameterizedTest
    @EnumSource(value = BrokerContext.Threading.class, names = {"SHARED", "SHARED_NETWORK", "DEDICATED"})
    @DisplayName("QoS 1 messages for an offline 3.1.1 persistent session, and retained messages, survive a restart "
        + "[MQTT-3.1.2-4] [MQTT-3.1.2-5] [MQTT-3.3.1-5]")
    void offlineMessagesAndRetainedSurviveARestart(final BrokerContext.Threading threading) throws Exception
    {
        try (RingMq broker = start(threading))
        {
            try (Paho subscriber = Paho.connect(broker.port(), "sub", Paho.options(false)))
            {
                subscriber.client.subscribe("p/#", 1);
            }
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                for (int i = 0; i < 50; i++)
                {
                    publisher.publish("p/" + (i % 3), "m" + i, 1, false);
                }
                publisher.publish("r/1", "kept", 1, true);
            }
        }
        try (RingMq broker = start(threading))
        {
            assertThat(broker.sessionCount()).isEqualTo(1);
            try (Paho subscriber = Paho.connect(broker.port(), "sub", Paho.options(false)))
            {
                assertThat(subscriber.sessionPresent()).isTrue();
                final List<String> got = new ArrayList<>();
                for (int i = 0; i < 50; i++)
                {
                    final Paho.Received message = subscriber.next();
                    assertThat(message).as("message %d of 50", i).isNotNull();
                    got.add(message.payload());
                }
                final List<String> expected = new ArrayList<>();
                for (int i = 0; i < 50; i++)
                {
                    expected.add("m" + i);
                }
                assertThat(got).containsExactlyElementsOf(expected); // one publisher: its order [MQTT-4.6.0-5]
            }
            try (Paho reader = Paho.connect(broker.port(), "reader"))
            {
                reader.client.subscribe("r/#", 1);
                final Paho.Received retained = reader.next();
                assertThat(retained.payload()).isEqualTo("kept");
                assertThat(retained.retained()).isTrue();
            }
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }

    @Test
    @DisplayName("MQTT-3.3.1-1: a QoS 1 message sent and not acknowledged before a restart goes out again with DUP; "
        + "one routed after the restart goes out without")
    void messageSentBeforeARestartGoesOutWithDup() throws Exception
    {
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            final RawClient subscriber = new RawClient(broker.port());
            assertThat(subscriber.handshake(RawClient.connect("dup-sub", false, 60))).isZero();
            subscriber.send(RawClient.subscribe(1, "dup/#", 1));
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            try (Paho publisher = Paho.connect(broker.port(), "dup-pub"))
            {
                publisher.publish("dup/1", "sent", 1, false);
            }
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(subscriber.decoder().publish().isDup()).as("its first send").isFalse();
            subscriber.kill(); // no PUBACK
        }
        try (RingMq broker = start(BrokerContext.Threading.SHARED);
            RawClient subscriber = new RawClient(broker.port()))
        {
            assertThat(subscriber.handshake(RawClient.connect("dup-sub", false, 60))).isZero();
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(subscriber.decoder().publish().payload().asString()).isEqualTo("sent");
            assertThat(subscriber.decoder().publish().isDup()).as("it may have gone out before").isTrue();
            subscriber.send(RawClient.ack(PacketType.PUBACK, subscriber.decoder().publish().packetId()));
            try (Paho publisher = Paho.connect(broker.port(), "dup-pub"))
            {
                publisher.publish("dup/2", "new", 1, false);
            }
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(subscriber.decoder().publish().payload().asString()).isEqualTo("new");
            assertThat(subscriber.decoder().publish().isDup()).as("its first send").isFalse();
        }
    }

    @Test
    @DisplayName("MQTT 5.0: session expiry and subscription identifiers come back; QoS 2 messages arrive once "
        + "[MQTT-3.1.2-23] [MQTT-3.3.4-3] [MQTT-4.3.3]")
    void mqtt5SessionSurvivesARestart() throws Exception
    {
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            final Paho5 subscriber = new Paho5(broker.port(), "sub5");
            final MqttConnectionOptions options = Paho5.options();
            options.setCleanStart(false);
            options.setSessionExpiryInterval(3600L);
            subscriber.client.connect(options).waitForCompletion(10_000);
            subscriber.subscribe(new MqttSubscription("q/#", 2), 7);
            subscriber.client.disconnect().waitForCompletion(10_000);
            subscriber.client.close();
            try (Paho5 publisher = Paho5.connect(broker.port(), "pub5"))
            {
                for (int i = 0; i < 5; i++)
                {
                    publisher.publish("q/x", "e" + i, 2);
                }
            }
        }
        try (RingMq broker = start(BrokerContext.Threading.DEDICATED))
        {
            final Paho5 subscriber = new Paho5(broker.port(), "sub5");
            final MqttConnectionOptions options = Paho5.options();
            options.setCleanStart(false);
            options.setSessionExpiryInterval(3600L);
            final org.eclipse.paho.mqttv5.client.IMqttToken connected = subscriber.client.connect(options);
            connected.waitForCompletion(10_000);
            assertThat(connected.getSessionPresent()).isTrue();
            final List<String> got = new ArrayList<>();
            for (int i = 0; i < 5; i++)
            {
                final Paho5.Received message = subscriber.next();
                assertThat(message).as("message %d of 5", i).isNotNull();
                got.add(message.payload());
                assertThat(message.message().getProperties().getSubscriptionIdentifiers()).containsExactly(7);
            }
            assertThat(got).containsExactly("e0", "e1", "e2", "e3", "e4");
            assertThat(subscriber.next()).as("nothing twice").isNull();
            subscriber.close();
        }
    }

    @Test
    @DisplayName("a clean stop publishes no will after the restart; the session's expiry counts from the stop")
    void cleanStopPublishesNoWill() throws Exception
    {
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            final Paho5 willing = new Paho5(broker.port(), "willing");
            final MqttConnectionOptions options = Paho5.options();
            options.setCleanStart(false);
            options.setSessionExpiryInterval(3600L);
            options.setWill("w/gone", new MqttMessage("gone".getBytes(StandardCharsets.UTF_8), 1, false,
                new MqttProperties()));
            willing.client.connect(options).waitForCompletion(10_000);
        } // a clean stop while it is connected
        try (RingMq broker = start(BrokerContext.Threading.SHARED);
             Paho5 watcher = Paho5.connect(broker.port(), "watcher"))
        {
            watcher.subscribe(new MqttSubscription("w/#", 1), 0);
            assertThat(watcher.received.poll(1_500, java.util.concurrent.TimeUnit.MILLISECONDS)).isNull();
            assertThat(broker.sessionCount()).as("the willing client's session is kept").isEqualTo(2);
        }
    }

    @Test
    @DisplayName("a second broker on the same data directory (one that holds a store) is refused with a message " +
        "that names it")
    void secondBrokerOnTheSameDirectoryIsRefused() throws Exception
    {
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            try (Paho persistent = Paho.connect(broker.port(), "holder", Paho.options(false)))
            {
                persistent.client.subscribe("h/#", 1); // the first record to keep creates the store
            }
            assertThatThrownBy(() -> start(BrokerContext.Threading.SHARED)).isInstanceOf(java.io.UncheckedIOException.class)
                .hasMessageContaining(directory.resolve("data").toString()).hasMessageContaining("in use");
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }
}
