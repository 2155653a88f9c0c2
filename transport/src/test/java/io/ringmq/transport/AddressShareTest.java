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
 * quarters, seven eighths at most, however many connections that host opens (review of 09ed1b1); and with its
 * sessions away, which give room back to a connected client that holds little.
 */
@Timeout(120)
class AddressShareTest
{
    static final int HOGS = 24;
    private static final int HOG_MESSAGES = 40;
    static final int HOG_PAYLOAD = 16 * 1024;

    @Test
    @DisplayName("24 connections from 127.0.0.2 (--limit-loopback), each sent 40 QoS 1 messages of 16 KiB on a " +
        "topic of its own that it reads and never acknowledges, hold at most seven eighths of a 1 MiB " +
        "--max-message-memory: a " +
        "Paho subscriber on 127.0.0.1 gets all 100 of its QoS 1 messages (before: each of the 24 held half of what " +
        "those before it left, together all of it, and the subscriber got none)")
    void oneHostsConnectionsLeaveRoom() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start(1024 * 1024))
        {
            hogs(broker, closeables, i -> "127.0.0.2");
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).as("what the 24 hold")
                .isLessThanOrEqualTo(1024 * 1024 * 7 / 8 + 2L * (HOG_PAYLOAD + 1_024));
            honestPairGetsItsHundred(broker, closeables, 1_024, 100);
        }
        finally
        {
            closeAll(closeables);
        }
    }

    @Test
    @DisplayName("16 persistent sessions from 127.0.0.2 go away and their queues fill up to the three quarters " +
        "sessions away may keep, then 24 connections from there never acknowledge, under a 512 KiB " +
        "--max-message-memory: a Paho subscriber on 127.0.0.1 still gets all 100 of its QoS 1 messages of 4 KiB, " +
        "sent ten at a time (what its address may take back: a quarter of the share), room taken back from the " +
        "sessions away (at 75a94ed the host held nearly all of it)")
    void oneHostsSessionsAwayGiveRoomBack() throws Exception
    {
        sessionsAwayThenHogs(false);
    }

    @Test
    @DisplayName("the same with the 16 sessions away subscribed to one topic, sharing every copy they queue: each copy " +
        "taken back is taken from all that hold it, and the Paho subscriber gets all 100 (at c65b1c2 none of it was given back)")
    void oneHostsSessionsAwaySharingATopicGiveRoomBack() throws Exception
    {
        sessionsAwayThenHogs(true);
    }

    /**
     * 16 persistent sessions of 127.0.0.2 away, each on a topic of its own or all on one, filled to the three quarters
     * they may keep; then that host's {@link #hogs}; then an honest pair on 127.0.0.1.
     */
    private static void sessionsAwayThenHogs(final boolean oneTopic) throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start(512 * 1024))
        {
            final int port = broker.port();
            final byte[] payload = new byte[HOG_PAYLOAD];
            for (int i = 0; i < 16; i++)
            {
                try (RawClient away = new RawClient(port, 0, "127.0.0.2"))
                {
                    assertThat(away.handshake(RawClient.connect("away" + i, false, 60))).isZero();
                    away.send(RawClient.subscribe(1, oneTopic ? "away/all" : "away/" + i, 1));
                    assertThat(away.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                    away.send(new byte[] {(byte)0xE0, 0}); // DISCONNECT: the session stays, offline
                }
            }
            final RawClient publisher = new RawClient(port, 0, "127.0.0.2");
            closeables.add(publisher);
            assertThat(publisher.handshake(RawClient.connect("away-pub", true, 60))).isZero();
            final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
            for (int i = 0; i < (oneTopic ? 1 : 16); i++)
            {
                for (int m = 0; m < HOG_MESSAGES; m++)
                {
                    batch.writeBytes(RawClient.publish(oneTopic ? "away/all" : "away/" + i, payload, 1,
                        i * HOG_MESSAGES + m + 1));
                }
            }
            publisher.send(batch.toByteArray());
            TestBrokers.await("the sessions away at their three quarters", () ->
            {
                readAll(publisher);
                return broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > 0;
            });
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).as("what the sessions away hold")
                .isGreaterThan(512 * 1024 * 5 / 8);
            hogs(broker, closeables, i -> "127.0.0.2");
            honestPairGetsItsHundred(broker, closeables, 4_096, 10);
            assertThat(broker.counters().get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK)).as("taken back").isPositive();
        }
        finally
        {
            closeAll(closeables);
        }
    }

    private static RingMq start(final int maxMessageMemory)
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("limit-loopback")
            .option("max-message-memory", Integer.toString(maxMessageMemory)).option("sys-interval", "0").start();
    }

    /**
     * {@link #HOGS} connections, the {@code i}th from {@code address.apply(i)}, each subscribed at QoS 1 to a topic of
     * its own and publishing {@link #HOG_MESSAGES} messages to it, which it reads and never acknowledges; returns once
     * the share is full for them.
     */
    static void hogs(final RingMq broker, final List<AutoCloseable> closeables,
        final java.util.function.IntFunction<String> address) throws Exception
    {
        final int port = broker.port();
        final byte[] payload = new byte[HOG_PAYLOAD];
        final long droppedBefore = broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        for (int i = 0; i < HOGS; i++)
        {
            final RawClient hog = new RawClient(port, 0, address.apply(i));
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
                    broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > droppedBefore;
            });
        }
        TestBrokers.await("the share full for the hogs",
            () -> broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > droppedBefore);
    }

    /**
     * A Paho publisher and subscriber on 127.0.0.1 exchange 100 QoS 1 messages of {@code size} bytes (up to 10 in
     * flight, Paho's default), the publisher sending {@code burst} at a time and then waiting for them to arrive: all
     * arrive, in order.
     */
    static void honestPairGetsItsHundred(final RingMq broker, final List<AutoCloseable> closeables,
        final int size, final int burst) throws Exception
    {
        final Paho subscriber = Paho.connect(broker.port(), "honest-sub");
        closeables.add(subscriber);
        subscriber.client.subscribe("honest/t", 1);
        final Paho publisher = Paho.connect(broker.port(), "honest-pub");
        closeables.add(publisher);
        for (int first = 0; first < 100; first += burst)
        {
            for (int m = first; m < Math.min(100, first + burst); m++)
            {
                publisher.publish("honest/t", String.format("%04d", m) + "x".repeat(size - 4), 1, false);
            }
            for (int m = first; m < Math.min(100, first + burst); m++)
            {
                final Paho.Received received = subscriber.next();
                assertThat(received).as("message " + m + " of 100").isNotNull();
                assertThat(received.payload()).startsWith(String.format("%04d", m));
            }
        }
        assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    static void closeAll(final List<AutoCloseable> closeables) throws Exception
    {
        for (final AutoCloseable closeable : closeables)
        {
            closeable.close();
        }
    }

    static void readAll(final RawClient client)
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
