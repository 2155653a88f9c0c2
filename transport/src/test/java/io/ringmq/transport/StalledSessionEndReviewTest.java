package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 09f749b9 (stalled client's end also ends its session, helper-158). Layout as StalledClientReviewTest: 25 attackers
 * from nine loopback addresses, QoS 1 to a topic of their own, 16 KiB messages, 1 MiB --max-message-memory,
 * --stalled-client-timeout 500ms, a Paho prober on 127.0.0.1.
 */
@Timeout(120)
class StalledSessionEndReviewTest
{
    private static final int SHARE = 1024 * 1024;
    private static final int ATTACKERS = 25;
    private static final int PAYLOAD = 16 * 1024;

    @Test
    @DisplayName("25 persistent attackers that never acknowledge but take their own session over every 200 ms " +
        "(same client id, same address) are still stalled and ended, and a probe gets through (at 09f749b9 a new " +
        "connection timed the stall again: no one was ended, the share stayed full and the prober got nothing)")
    void persistentAttackersThatReconnectAreEnded() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        final AtomicBoolean stop = new AtomicBoolean();
        Thread cycler = null;
        try (RingMq broker = start())
        {
            final RawClient[] attackers = new RawClient[ATTACKERS];
            final long droppedBefore = broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
            for (int i = 0; i < ATTACKERS; i++)
            {
                attackers[i] = new RawClient(broker.port(), 0, "127.0.0." + (2 + i / 3));
                assertThat(attackers[i].handshake(RawClient.connect("attacker" + i, false, 60))).isZero();
                attackers[i].send(RawClient.subscribe(1, "h/" + i, 1));
                assertThat(attackers[i].readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                publish(attackers[i], "h/" + i, 32);
                drain(attackers[i]);
            }
            TestBrokers.await("the share full", () ->
            {
                for (final RawClient attacker : attackers)
                {
                    drain(attacker);
                }
                return broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) > droppedBefore;
            });
            cycler = new Thread(() ->
            {
                try
                {
                    while (!stop.get())
                    {
                        for (int i = 0; i < ATTACKERS && !stop.get(); i++)
                        {
                            final RawClient next = new RawClient(broker.port(), 0, "127.0.0." + (2 + i / 3));
                            next.send(RawClient.connect("attacker" + i, false, 60)); // takes the session over
                            attackers[i].close();
                            attackers[i] = next;
                        }
                        for (int r = 0; r < 4; r++)
                        {
                            for (final RawClient attacker : attackers)
                            {
                                drain(attacker); // reads the window sent again, acknowledges nothing
                            }
                            Thread.sleep(40);
                        }
                    }
                }
                catch (final Exception ex)
                {
                    // ends with the test
                }
            }, "review-cycler");
            cycler.start();
            final boolean through = StalledClientTest.probeThrough(broker, closeables, 8_000);
            assertThat(through).as("a probe through; ended " +
                broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED) + ", memory " +
                broker.counters().get(BrokerCounters.MESSAGE_MEMORY)).isTrue();
            stop.set(true);
            cycler.join(5_000);
            for (final RawClient attacker : attackers)
            {
                closeables.add(attacker);
            }
        }
        finally
        {
            stop.set(true);
            if (null != cycler)
            {
                cycler.join(5_000);
            }
            AddressShareTest.closeAll(closeables);
        }
    }

    private static RingMq start()
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("limit-loopback")
            .option("max-message-memory", Integer.toString(SHARE)).option("stalled-client-timeout", "500ms")
            .option("sys-interval", "0").start();
    }

    private static void publish(final RawClient client, final String topic, final int count) throws Exception
    {
        final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
        for (int m = 0; m < count; m++)
        {
            batch.writeBytes(RawClient.publish(topic, new byte[PAYLOAD], 1, 30_000 + m));
        }
        client.send(batch.toByteArray());
    }

    private static void drain(final RawClient client)
    {
        try
        {
            while (client.hasBytes())
            {
                try
                {
                    if (client.readPacket(200) < 0)
                    {
                        return;
                    }
                }
                catch (final SocketTimeoutException partial)
                {
                    return;
                }
            }
        }
        catch (final Exception ex)
        {
            // closed
        }
    }
}
