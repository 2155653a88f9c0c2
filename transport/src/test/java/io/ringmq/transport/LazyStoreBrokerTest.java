package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A broker on RocksDB whose data directory is missing at start creates it only at the first record to keep (a
 * persistent session here); what that record and the ones after it committed survive a SIGKILL and a restart.
 */
@Timeout(120)
class LazyStoreBrokerTest
{
    @TempDir
    Path directory;

    @Test
    @DisplayName("clean sessions, QoS 0 and QoS 1 leave no store (the directory holds only the broker's lock); the " +
        "first persistent session creates it " +
        "and is present after a restart [MQTT-3.1.2-4] [MQTT-3.2.2-2]")
    void nothingOnDiskUntilThePersistentSession() throws Exception
    {
        final Path data = directory.resolve("data");
        try (RingMq broker = start(data);
             Paho subscriber = Paho.connect(broker.port(), "clean-sub");
             Paho publisher = Paho.connect(broker.port(), "clean-pub"))
        {
            subscriber.client.subscribe("t/#", 1);
            publisher.publish("t/1", "q0", 0, false);
            publisher.publish("t/1", "q1", 1, false);
            assertThat(subscriber.next()).isNotNull();
            assertThat(subscriber.next()).isNotNull();
            // the alive stamp is written every second: over two of them, still nothing on disk
            final long untilNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2_200);
            while (System.nanoTime() < untilNs)
            {
                assertThat(data.resolve("CURRENT")).as("no record to keep yet").doesNotExist();
                Thread.sleep(100);
            }
            try (Paho persistent = Paho.connect(broker.port(), "kept", Paho.options(false)))
            {
                persistent.client.subscribe("k/#", 1);
            }
            assertThat(data.resolve("CURRENT")).as("the persistent session created the store").exists();
        }
        try (RingMq broker = start(data);
             Paho persistent = Paho.connect(broker.port(), "kept", Paho.options(false)))
        {
            assertThat(persistent.sessionPresent()).isTrue();
        }
    }

    @Test
    @DisplayName("SIGKILL right after the first persistent session and a QoS 1 message queued for it: the restart " +
        "recovers both from the store the first write created [MQTT-3.1.2-4] [MQTT-4.3.2-1]")
    void aCrashAfterTheFirstWriteRecoversIt() throws Exception
    {
        ForkedBroker broker = ForkedBroker.start(directory, "--persistence", "rocksdb", "--sys-interval", "0");
        try
        {
            try (RawClient subscriber = new RawClient(broker.port()))
            {
                assertThat(subscriber.handshake(RawClient.connect("lazy-sub", false, 0))).isZero();
                subscriber.send(RawClient.subscribe(1, "lazy/#", 1));
                assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                subscriber.send(new byte[]{(byte)0xE0, 0x00});
                assertThat(subscriber.closedWithin(5_000)).isTrue();
            }
            try (RawClient publisher = new RawClient(broker.port()))
            {
                assertThat(publisher.handshake(RawClient.connect("lazy-pub", true, 0))).isZero();
                publisher.send(RawClient.publish("lazy/1", "kept".getBytes(StandardCharsets.UTF_8), 1, 1));
                assertThat(publisher.readPacket(5_000)).as("PUBACK: stored").isEqualTo(PacketType.PUBACK);
            }
            assertThat(Files.exists(directory.resolve("data").resolve("CURRENT"))).isTrue();
            broker.kill();
            broker = broker.restart();
            assertThat(broker.awaitLine("ringmq recovered", 5_000)).hasValueSatisfying(line ->
                assertThat(line).contains("(after a crash) 1 session(s)").contains("1 queued"));
            try (RawClient subscriber = new RawClient(broker.port()))
            {
                assertThat(subscriber.handshake(RawClient.connect("lazy-sub", false, 0))).isZero();
                assertThat(subscriber.decoder().connack().isSessionPresent()).isTrue();
                assertThat(subscriber.readPacket(5_000)).as("the queued message").isEqualTo(PacketType.PUBLISH);
            }
        }
        finally
        {
            broker.close();
        }
    }

    @Test
    @DisplayName("a second broker on the missing data directory a first one holds is refused at start, before and " +
        "after the first keeps anything, and starts once the first has stopped")
    void aSecondBrokerOnTheSameDirectoryIsRefusedAtStart() throws Exception
    {
        final Path data = directory.resolve("data");
        try (RingMq first = start(data))
        {
            assertThatThrownBy(() -> start(data).close()).as("the store does not exist yet")
                .hasStackTraceContaining("in use by another broker");
            try (Paho persistent = Paho.connect(first.port(), "first", Paho.options(false)))
            {
                persistent.client.subscribe("f/#", 1);
            }
            assertThatThrownBy(() -> start(data).close()).as("the store exists").isInstanceOf(RuntimeException.class);
            assertThat(first.unexpectedErrors()).isZero();
        }
        try (RingMq again = start(data);
             Paho persistent = Paho.connect(again.port(), "first", Paho.options(false)))
        {
            assertThat(persistent.sessionPresent()).isTrue();
        }
    }

    private RingMq start(final Path data)
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", data.toString()).option("sys-interval", "0").start();
    }
}
