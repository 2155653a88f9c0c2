package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.SocketTimeoutException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of --stalled-client-timeout (572be8bc, 36e05eca, helper-157): ways attackers that hold the share in flight
 * could evade it.
 * The layout is StalledClientTest's: 25 attackers from nine loopback addresses, each subscribed at QoS 1 to a topic of
 * its own and publishing messages of 16 KiB to it; a 1 MiB --max-message-memory; a Paho prober on 127.0.0.1.
 */
@Timeout(120)
class StalledClientReviewTest
{
    private static final int SHARE = 1024 * 1024;
    private static final int ATTACKERS = 25;
    private static final int PAYLOAD = 16 * 1024;

    @Test
    @DisplayName("control: 25 clean-session attackers that acknowledge nothing are ended and a probe gets through")
    void cleanAttackersGiveWay() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("500ms"))
        {
            attackers(broker, closeables, true, 40);
            assertThat(StalledClientTest.probeThrough(broker, closeables, 8_000)).as("a probe through").isTrue();
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).isPositive();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    @Test
    @DisplayName("25 persistent-session attackers (clean session 0) that acknowledge nothing and publish no more than " +
        "--max-inflight (32) each, nothing queued behind their windows, are ended with their sessions and a probe " +
        "gets through (at 36e05eca an end freed only a persistent session's queue: none was ended, the prober got " +
        "nothing in 8 s)")
    void persistentAttackersWithNothingQueuedGiveWay() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("500ms"))
        {
            attackers(broker, closeables, false, 32);
            final boolean through = StalledClientTest.probeThrough(broker, closeables, 8_000);
            assertThat(through).as("a probe through; ended " +
                broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED) + ", held " +
                broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).isTrue();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    private static RingMq start(final String timeout)
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("limit-loopback")
            .option("max-message-memory", Integer.toString(SHARE)).option("stalled-client-timeout", timeout)
            .option("sys-interval", "0").start();
    }

    /**
     * One attacker: a 3.1.1 connection subscribed at QoS 1 to "h/i", publishing to it, reading and recording what
     * comes, acknowledging nothing unless told.
     */
    private static final class Attacker
    {
        final RawClient client;
        final String topic;
        final ArrayDeque<Integer> unacked = new ArrayDeque<>();
        int nextPacketId = 1;

        Attacker(final RawClient client, final String topic)
        {
            this.client = client;
            this.topic = topic;
        }

        void publish(final int count) throws Exception
        {
            final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
            for (int m = 0; m < count; m++)
            {
                batch.writeBytes(RawClient.publish(topic, new byte[PAYLOAD], 1, 30_000 + nextPacketId++ % 30_000));
            }
            client.send(batch.toByteArray());
        }

        void drain() throws Exception
        {
            while (client.hasBytes())
            {
                final int type;
                try
                {
                    type = client.readPacket(200);
                }
                catch (final SocketTimeoutException partial)
                {
                    return;
                }
                if (type == PacketType.PUBLISH)
                {
                    unacked.add(client.decoder().publish().packetId());
                }
                else if (type < 0)
                {
                    return;
                }
            }
        }
    }

    private static List<Attacker> attackers(final RingMq broker, final List<AutoCloseable> closeables,
        final boolean clean, final int messages) throws Exception
    {
        final List<Attacker> attackers = new ArrayList<>();
        final long droppedBefore = broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        for (int i = 0; i < ATTACKERS; i++)
        {
            final RawClient client = new RawClient(broker.port(), 0, "127.0.0." + (2 + i / 3));
            closeables.add(client);
            assertThat(client.handshake(RawClient.connect("attacker" + i, clean, 60))).isZero();
            client.send(RawClient.subscribe(1, "h/" + i, 1));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            final Attacker attacker = new Attacker(client, "h/" + i);
            attackers.add(attacker);
            attacker.publish(messages);
            final long memory = broker.counters().get(BrokerCounters.MESSAGE_MEMORY);
            TestBrokers.await("attacker " + i + "'s messages routed", () ->
            {
                try
                {
                    attacker.drain();
                }
                catch (final Exception ex)
                {
                    throw new RuntimeException(ex);
                }
                return broker.counters().get(BrokerCounters.MESSAGE_MEMORY) > memory ||
                    broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > droppedBefore;
            });
        }
        TestBrokers.await("the share full", () ->
            broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > droppedBefore);
        return attackers;
    }
}
