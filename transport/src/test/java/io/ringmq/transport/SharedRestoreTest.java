package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttSubscription;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A shared subscription member's unacknowledged messages that a restart brought back: when the member's session
 * ends after the restart, or had ended while the broker was down, they go to another member of the group, as they
 * do when no restart came between (5.0 section 4.8.2: "If the Client's Session terminates before the Client
 * reconnects, the Server SHOULD send the Application Message to another Client that is subscribed to the same
 * Shared Subscription"). Real brokers on RocksDB, stopped and started again on the same data directory.
 */
@Timeout(120)
class SharedRestoreTest
{
    @TempDir
    Path directory;

    private RingMq start(final BrokerContext.Threading threading) throws IOException
    {
        return start(threading, 1);
    }

    private RingMq start(final BrokerContext.Threading threading, final int routeShards) throws IOException
    {
        return RingMq.builder().threading(threading).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0")
            .option("route-shards", Integer.toString(routeShards)).start();
    }

    private static MqttConnectionOptions persistent()
    {
        final MqttConnectionOptions options = Paho5.options();
        options.setCleanStart(false);
        options.setSessionExpiryInterval(3600L);
        return options;
    }

    /**
     * A member with a persistent session that subscribes and goes away: it gets what the group hands on while it is
     * away, queued in its session.
     */
    private static void awayMember(final int port, final String clientId, final String... filters) throws Exception
    {
        final Paho5 member = new Paho5(port, clientId);
        member.client.connect(persistent()).waitForCompletion(10_000);
        for (final String filter : filters)
        {
            member.subscribe(new MqttSubscription(filter, 1), 0);
        }
        member.client.disconnect().waitForCompletion(10_000);
        member.client.close();
    }

    /**
     * The member that takes the messages and never acknowledges them, with a session that outlives its connection
     * by {@code expirySeconds}; it is the only member connected, so every message of its groups goes to it.
     */
    private static RawClient taker(final int port, final int expirySeconds, final String... filters) throws Exception
    {
        return taker(port, expirySeconds, 1, filters);
    }

    private static RawClient taker(final int port, final int expirySeconds, final int qos, final String... filters)
        throws Exception
    {
        final RawClient taker = new RawClient(port).v5();
        assertThat(taker.handshake(RawClient.connect5("taker",
            new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, expirySeconds)))).isZero();
        for (int i = 0; i < filters.length; i++)
        {
            taker.send(RawClient.subscribe5(i + 1, filters[i], qos));
            assertThat(taker.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        }
        return taker;
    }

    /**
     * Ends the taker's session on purpose: its client comes back with Clean Start, which ends the old session
     * [MQTT-3.1.2-4] (not waiting for its expiry, which a slow restart could let run out while the broker is down).
     */
    private static void endTakerSession(final int port) throws Exception
    {
        try (RawClient again = new RawClient(port).v5())
        {
            assertThat(again.handshake(RawClient.connect5("taker", null))).isZero();
        }
    }

    private static void publish(final int port, final int count) throws Exception
    {
        try (Paho5 publisher = Paho5.connect(port, "pub"))
        {
            for (int i = 0; i < count; i++)
            {
                publisher.publish("t/x", "s" + i, 1);
            }
        }
    }

    /**
     * @return the payloads of the next {@code count} PUBLISHes, read and never acknowledged.
     */
    private static List<String> take(final RawClient taker, final int count) throws Exception
    {
        final List<String> taken = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            assertThat(taker.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            taken.add(taker.decoder().publish().payload().asString());
        }
        return taken;
    }

    private static void awaitCounter(final RingMq broker, final int counter, final long value)
    {
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (broker.counters().get(counter) < value && System.nanoTime() < deadline)
        {
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000); // a core of two stays with the broker
        }
        assertThat(broker.counters().get(counter)).as(BrokerCounters.label(counter)).isEqualTo(value);
    }

    /**
     * @return what an away member finds queued when it comes back.
     */
    private static List<String> comeBack(final int port, final String clientId, final int count) throws Exception
    {
        final List<String> got = new ArrayList<>();
        try (Paho5 member = new Paho5(port, clientId))
        {
            member.client.connect(persistent()).waitForCompletion(10_000);
            for (int i = 0; i < count; i++)
            {
                final Paho5.Received message = member.next();
                assertThat(message).as("message %d of %d for %s", i + 1, count, clientId).isNotNull();
                got.add(message.payload());
            }
            assertThat(member.received.poll(300, java.util.concurrent.TimeUnit.MILLISECONDS)).as("nothing more")
                .isNull();
        }
        return got;
    }

    @ParameterizedTest(name = "{0} threading, {1} routing shard(s)")
    @CsvSource({"SHARED, 1", "DEDICATED, 1", "DEDICATED, 3"})
    @DisplayName("4.8.2: QoS 1 messages a member never acknowledged come back with a restart and go to another "
        + "member of the group when its session ends after it")
    void restoredMessagesGoToAnotherMemberWhenTheSessionEnds(final BrokerContext.Threading threading,
        final int routeShards) throws Exception
    {
        final List<String> taken;
        try (RingMq broker = start(threading, routeShards))
        {
            awayMember(broker.port(), "keeper", "$share/g/t/#");
            final RawClient taker = taker(broker.port(), 3600, "$share/g/t/#");
            publish(broker.port(), 3);
            taken = take(taker, 3);
            taker.close();
        }
        try (RingMq broker = start(threading, routeShards))
        {
            endTakerSession(broker.port());
            awaitCounter(broker, BrokerCounters.SHARED_REDISPATCHED, 3);
            assertThat(comeBack(broker.port(), "keeper", 3)).containsExactlyInAnyOrderElementsOf(taken);
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }

    @Test
    @DisplayName("4.8.2: a member's session that expired while the broker was down hands what it never "
        + "acknowledged to another member of the group at the restart, and what it took otherwise is dropped")
    void sessionExpiredWhileDownHandsItsMessagesOn() throws Exception
    {
        final List<String> taken;
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            awayMember(broker.port(), "keeper", "$share/g/t/#");
            final RawClient taker = taker(broker.port(), 1, "$share/g/t/#", "t/x");
            publish(broker.port(), 3);
            taken = take(taker, 6); // each message twice: through the group and through its own subscription
            taker.close();
        }
        Thread.sleep(1_200); // the taker's session expiry (1 s from the stop) runs out while no broker runs
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            awaitCounter(broker, BrokerCounters.SHARED_REDISPATCHED, 3);
            assertThat(comeBack(broker.port(), "keeper", 3)).containsExactlyInAnyOrder("s0", "s1", "s2");
            assertThat(taken).containsExactlyInAnyOrder("s0", "s0", "s1", "s1", "s2", "s2");
            assertThat(broker.sessionCount()).as("the taker's session is gone").isEqualTo(1);
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }

    @Test
    @DisplayName("4.8.2: a member of two groups that match one topic, chosen by one of them for every message and by "
        + "the other for some, gets each copy back to the group it came through after a restart")
    void eachCopyGoesBackToItsOwnGroup() throws Exception
    {
        final List<String> otherGot = new ArrayList<>();
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            awayMember(broker.port(), "keeper-a", "$share/a/t/#");
            awayMember(broker.port(), "keeper-b", "$share/b/t/+");
            try (Paho5 other = Paho5.connect(broker.port(), "other-a")) // group a's other connected member
            {
                other.subscribe(new MqttSubscription("$share/a/t/#", 1), 0);
                final RawClient taker = taker(broker.port(), 3600, "$share/a/t/#", "$share/b/t/+");
                publish(broker.port(), 4);
                // group b has only the taker connected: all four; group a alternates between it and other-a
                assertThat(take(taker, 6)).containsOnly("s0", "s1", "s2", "s3");
                for (int i = 0; i < 2; i++)
                {
                    otherGot.add(other.next().payload());
                }
                taker.close();
            }
        }
        final List<String> takenThroughA = new ArrayList<>(List.of("s0", "s1", "s2", "s3"));
        takenThroughA.removeAll(otherGot);
        assertThat(takenThroughA).hasSize(2);
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            endTakerSession(broker.port());
            awaitCounter(broker, BrokerCounters.SHARED_REDISPATCHED, 6);
            assertThat(comeBack(broker.port(), "keeper-a", 2)).containsExactlyInAnyOrderElementsOf(takenThroughA);
            assertThat(comeBack(broker.port(), "keeper-b", 4)).containsExactlyInAnyOrder("s0", "s1", "s2", "s3");
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }

    @Test
    @DisplayName("MQTT-4.8.2-5: QoS 2 messages sent to a member before a restart are never sent to another member "
        + "when its session ends after it")
    void qos2SentBeforeARestartIsNotHandedOn() throws Exception
    {
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            final Paho5 keeper = new Paho5(broker.port(), "keeper");
            keeper.client.connect(persistent()).waitForCompletion(10_000);
            keeper.subscribe(new MqttSubscription("$share/g/t/#", 2), 0);
            keeper.client.disconnect().waitForCompletion(10_000);
            keeper.client.close();
            final RawClient taker = taker(broker.port(), 3600, 2, "$share/g/t/#");
            try (Paho5 publisher = Paho5.connect(broker.port(), "pub"))
            {
                for (int i = 0; i < 3; i++)
                {
                    publisher.publish("t/x", "q" + i, 2);
                }
            }
            take(taker, 3); // never PUBRECed: each may have reached its client
            taker.close();
        }
        try (RingMq broker = start(BrokerContext.Threading.SHARED))
        {
            endTakerSession(broker.port());
            awaitCounter(broker, BrokerCounters.SHARED_QOS2_NOT_REDISPATCHED, 3);
            assertThat(comeBack(broker.port(), "keeper", 0)).isEmpty();
            assertThat(broker.counters().get(BrokerCounters.SHARED_REDISPATCHED)).isZero();
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }
}
