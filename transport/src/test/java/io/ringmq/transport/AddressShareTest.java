package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The share of {@code --max-message-memory} the connected sessions of one client address hold together: about three
 * quarters, seven eighths at most, however many connections that host opens (review of 09ed1b1).
 */
@Timeout(120)
class AddressShareTest
{
    private static final int HOGS = 24;
    private static final int HOG_MESSAGES = 40;
    private static final int HOG_PAYLOAD = 16 * 1024;

    @Test
    @DisplayName("24 connections from 127.0.0.2 (--limit-loopback), each sent 40 QoS 1 messages of 16 KiB on a " +
        "topic of its own that it reads and never acknowledges, hold at most seven eighths of a 1 MiB " +
        "--max-message-memory: a " +
        "Paho subscriber on 127.0.0.1 gets all 100 of its QoS 1 messages (before: each of the 24 held half of what " +
        "those before it left, together all of it, and the subscriber got none)")
    void oneHostsConnectionsLeaveRoom() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = RingMq.builder().threading(BrokerContext.Threading.SHARED).option("limit-loopback")
            .option("max-message-memory", Integer.toString(1024 * 1024)).option("sys-interval", "0").start())
        {
            final int port = broker.port();
            final byte[] payload = new byte[HOG_PAYLOAD];
            for (int i = 0; i < HOGS; i++)
            {
                final RawClient hog = new RawClient(port, 0, "127.0.0.2");
                closeables.add(hog);
                assertThat(hog.handshake(RawClient.connect("hog" + i, true, 60))).isZero();
                hog.send(RawClient.subscribe(1, "h/" + i, 1));
                assertThat(hog.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
                for (int m = 0; m < HOG_MESSAGES; m++)
                {
                    batch.writeBytes(RawClient.publish("h/" + i, payload, 1, m + 1));
                }
                hog.send(batch.toByteArray());
                final long memory = broker.counters().get(BrokerCounters.MESSAGE_MEMORY);
                TestBrokers.await("hog " + i + "'s messages routed", () ->
                {
                    readAll(hog); // read, never acknowledged
                    return broker.counters().get(BrokerCounters.MESSAGE_MEMORY) > memory ||
                        broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > 0;
                });
            }
            TestBrokers.await("the share full for 127.0.0.2",
                () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > 0);
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).as("what the 24 hold")
                .isLessThanOrEqualTo(1024 * 1024 * 7 / 8 + 2L * (HOG_PAYLOAD + 1_024));
            final Paho subscriber = Paho.connect(port, "honest-sub");
            closeables.add(subscriber);
            subscriber.client.subscribe("honest/t", 1);
            final Paho publisher = Paho.connect(port, "honest-pub");
            closeables.add(publisher);
            for (int m = 0; m < 100; m++)
            {
                publisher.publish("honest/t", String.format("%04d", m) + "x".repeat(1_020), 1, false);
            }
            for (int m = 0; m < 100; m++)
            {
                final Paho.Received received = subscriber.next();
                assertThat(received).as("message " + m + " of 100").isNotNull();
                assertThat(received.payload()).startsWith(String.format("%04d", m));
            }
            assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        }
        finally
        {
            for (final AutoCloseable closeable : closeables)
            {
                closeable.close();
            }
        }
    }

    private static void readAll(final RawClient client)
    {
        try
        {
            client.discardAvailable();
        }
        catch (final java.io.IOException e)
        {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
