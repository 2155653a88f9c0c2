package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code --stalled-client-timeout}: a connected client that holds messages in flight and acknowledges none of them
 * gives way once clients that hold less find no room in {@code --max-message-memory}; none is ended while there is
 * room.
 */
@Timeout(120)
class StalledClientTest
{
    private static final int SHARE = 1024 * 1024;

    @Test
    @DisplayName("MQTT-4.4.0-1 kept: a 5.0 subscriber that never acknowledges its 30 QoS 1 messages of 16 KiB, then 24 " +
        "connections from eight more addresses that never acknowledge either, fill a 1 MiB --max-message-memory: " +
        "within --stalled-client-timeout 500ms the stalled clients that hold the most are ended (the 5.0 one first, " +
        "told DISCONNECT 0x97 Quota exceeded) and a Paho subscriber on 127.0.0.1 gets all 100 of its QoS 1 messages " +
        "of 16 KiB, ten at a time (at 9d829779, with no timeout, it got none)")
    void stalledClientsOfEightHostsGiveWay() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("500ms"))
        {
            final RawClient first = stalledV5(broker, closeables);
            AddressShareTest.hogs(broker, closeables, i -> "127.0.0." + (3 + i / 3)); // until the share is full

            probeUntilThrough(broker, closeables);
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).as("ended").isPositive();

            assertThat(first.readPacketsUntil(PacketType.DISCONNECT, 10_000)).as("the 5.0 client told why").isTrue();
            assertThat(first.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QUOTA_EXCEEDED);
            assertThat(first.closedWithin(5_000)).isTrue();

            AddressShareTest.honestPairGetsItsHundred(broker, closeables, AddressShareTest.HOG_PAYLOAD, 10);
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).as("ended, of the 25")
                .isLessThan(AddressShareTest.HOGS + 1);
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    @Test
    @DisplayName("a subscriber that never acknowledges its 30 QoS 1 messages stays connected past " +
        "--stalled-client-timeout 200ms while every other client finds room: a Paho pair's 100 messages arrive and " +
        "no one is ended")
    void noOneEndedWhileThereIsRoom() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("200ms"))
        {
            final RawClient first = stalledV5(broker, closeables);
            final long since = System.currentTimeMillis();
            AddressShareTest.honestPairGetsItsHundred(broker, closeables, 1_024, 10);
            TestBrokers.await("past the timeout", () -> System.currentTimeMillis() - since > 400);
            AddressShareTest.honestPairGetsItsHundred(broker, closeables, 1_024, 10);
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).isZero();
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
            first.send(RawClient.ping());
            assertThat(first.readPacketsUntil(PacketType.PINGRESP, 5_000)).as("still connected").isTrue();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    @Test
    @DisplayName("MQTT 3.1.1 section 4.1 (session state discarded as an automated response): a persistent 3.1.1 " +
        "session that never acknowledges its 30 messages in flight is ended with its connection for its stall among " +
        "eight hosts' clients, freeing what it held; its client comes back to no session present, subscribes again, " +
        "and gets what is published from then on")
    void aPersistentStalledSessionIsEnded() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("500ms"))
        {
            final RawClient first = new RawClient(broker.port(), 0, "127.0.0.2");
            closeables.add(first);
            assertThat(first.handshake(RawClient.connect("first", false, 60))).isZero();
            first.send(RawClient.subscribe(1, "first", 1));
            assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            publishToItself(first, 30, false);
            readPublishes(first, 30);
            AddressShareTest.hogs(broker, closeables, i -> "127.0.0." + (3 + i / 3));
            probeUntilThrough(broker, closeables);
            assertThat(first.closedWithin(10_000)).as("ended: it frees the most").isTrue();
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).isPositive();

            final RawClient back = new RawClient(broker.port(), 0, "127.0.0.2");
            closeables.add(back);
            assertThat(back.handshake(RawClient.connect("first", false, 60))).isZero();
            assertThat(back.decoder().connack().isSessionPresent()).as("its session ended").isFalse();
            back.send(RawClient.subscribe(1, "first", 1));
            assertThat(back.readPacket(5_000)).as("nothing of the old session is sent").isEqualTo(PacketType.SUBACK);
            back.send(RawClient.publish("first", new byte[10], 1, 1));
            assertThat(back.readPacketsUntil(PacketType.PUBLISH, 5_000)).isTrue();
            assertThat(back.decoder().publish().isDup()).isFalse();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    @Test
    @DisplayName("a subscriber that acknowledges one of its 30 messages every 400 ms, in order, holding the most, is " +
        "never ended under --stalled-client-timeout 500ms while more messages to eight hosts' clients that acknowledge " +
        "nothing keep the share full; one of those is")
    void aSlowClientThatAcknowledgesStays() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("500ms"))
        {
            final RawClient slow = new RawClient(broker.port(), 0, "127.0.0.2");
            closeables.add(slow);
            assertThat(slow.handshake(RawClient.connect("slow", true, 60))).isZero();
            slow.send(RawClient.subscribe(1, "first", 1));
            assertThat(slow.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            publishToItself(slow, 30, false);
            final List<Integer> ids = readPublishes(slow, 30);
            final java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            final Thread acker = new Thread(() ->
            {
                try
                {
                    for (int i = 0; i < ids.size() && !stop.get(); i++)
                    {
                        Thread.sleep(400);
                        slow.send(RawClient.ack(PacketType.PUBACK, ids.get(i)));
                    }
                }
                catch (final Exception ex)
                {
                    stop.set(true);
                }
            });
            acker.start();
            try
            {
                AddressShareTest.hogs(broker, closeables, i -> "127.0.0." + (3 + i / 3));
                final Paho probing = Paho.connect(broker.port(), "probing");
                closeables.add(probing);
                final Paho prober = Paho.connect(broker.port(), "prober");
                closeables.add(prober);
                prober.client.subscribe("probe", 1);
                final String payload = "p".repeat(AddressShareTest.HOG_PAYLOAD);
                final long deadline = System.currentTimeMillis() + 20_000;
                int hog = 0;
                while (broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED) == 0)
                {
                    assertThat(System.currentTimeMillis()).as("a stalled client ended; dropped " +
                        broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED) + " held " +
                        broker.counters().get(BrokerCounters.MESSAGE_MEMORY) + " acker stopped " + stop.get())
                        .isLessThan(deadline);
                    probing.publish("h/" + hog++ % AddressShareTest.HOGS, payload, 1, false); // the share kept full
                    probing.publish("probe", payload, 1, false); // a prober holding nothing refused: looks are made
                    prober.nextWithin(20);
                }
                assertThat(stop.get()).as("the slow client's acknowledgements all went").isFalse();
            }
            finally
            {
                stop.set(true);
                acker.join(10_000);
            }
            slow.send(RawClient.ping());
            assertThat(slow.readPacketsUntil(PacketType.PINGRESP, 5_000)).as("still connected").isTrue();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    @Test
    @DisplayName("a 5.0 subscriber that acknowledges nothing and is refused more messages for holding its half of the " +
        "share, past --stalled-client-timeout 300ms, makes no one give way: a 3.1.1 client from another address that " +
        "holds one unacknowledged message stays connected, and neither is ended")
    void aStalledClientRefusedMakesNoOneGiveWay() throws Exception
    {
        final List<AutoCloseable> closeables = new ArrayList<>();
        try (RingMq broker = start("300ms"))
        {
            final RawClient first = stalledV5(broker, closeables);
            final RawClient small = new RawClient(broker.port(), 0, "127.0.0.3");
            closeables.add(small);
            assertThat(small.handshake(RawClient.connect("small", true, 60))).isZero();
            small.send(RawClient.subscribe(1, "small", 1));
            assertThat(small.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            small.send(RawClient.publish("small", new byte[100], 1, 1));
            assertThat(small.readPacketsUntil(PacketType.PUBLISH, 5_000)).isTrue(); // never acknowledged

            final Paho publisher = Paho.connect(broker.port(), "more");
            closeables.add(publisher);
            final String payload = "m".repeat(AddressShareTest.HOG_PAYLOAD);
            final long dropped = broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
            final long until = System.currentTimeMillis() + 1_500;
            while (System.currentTimeMillis() < until)
            {
                publisher.publish("first", payload, 1, false); // refused: it holds its half
            }
            assertThat(broker.counters().get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("refused")
                .isGreaterThan(dropped);
            assertThat(broker.counters().get(BrokerCounters.STALLED_CLIENTS_ENDED)).isZero();
            small.send(RawClient.ping());
            assertThat(small.readPacketsUntil(PacketType.PINGRESP, 5_000)).as("the small one still connected").isTrue();
            first.send(RawClient.ping());
            assertThat(first.readPacketsUntil(PacketType.PINGRESP, 5_000)).as("the stalled one too").isTrue();
        }
        finally
        {
            AddressShareTest.closeAll(closeables);
        }
    }

    /**
     * @param more further option names and values.
     */
    private static RingMq start(final String timeout, final String... more)
    {
        final RingMqBuilder builder = RingMq.builder().threading(BrokerContext.Threading.SHARED).option("limit-loopback")
            .option("max-message-memory", Integer.toString(SHARE)).option("stalled-client-timeout", timeout)
            .option("sys-interval", "0");
        for (int i = 0; i < more.length; i += 2)
        {
            builder.option(more[i], more[i + 1]);
        }
        return builder.start();
    }

    /**
     * A 5.0 client on 127.0.0.2 with a clean session subscribes to "first" at QoS 1 and publishes 30 messages of 16 KiB
     * there, which it reads and never acknowledges: about half the share.
     */
    private static RawClient stalledV5(final RingMq broker, final List<AutoCloseable> closeables) throws Exception
    {
        final RawClient first = new RawClient(broker.port(), 0, "127.0.0.2").v5();
        closeables.add(first);
        assertThat(first.handshake(RawClient.connect5("first", null))).isZero();
        first.send(RawClient.subscribe5(1, "first", 1));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        publishToItself(first, 30, true);
        readPublishes(first, 30);
        return first;
    }

    /**
     * {@code client} publishes {@code count} QoS 1 messages of 16 KiB to "first", packet identifiers from 1.
     */
    private static void publishToItself(final RawClient client, final int count, final boolean v5) throws Exception
    {
        final byte[] payload = new byte[AddressShareTest.HOG_PAYLOAD];
        final java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
        for (int m = 0; m < count; m++)
        {
            batch.writeBytes(v5 ? RawClient.publish5("first", payload, 1, m + 1, null) :
                RawClient.publish("first", payload, 1, m + 1));
        }
        client.send(batch.toByteArray());
    }

    /**
     * Reads until {@code count} PUBLISHes came (skipping the PUBACKs of its own), acknowledging none.
     *
     * @return their packet identifiers, in order.
     */
    private static List<Integer> readPublishes(final RawClient client, final int count) throws Exception
    {
        final List<Integer> ids = new ArrayList<>();
        while (ids.size() < count)
        {
            final int type = client.readPacket(5_000);
            if (type == PacketType.PUBLISH)
            {
                ids.add(client.decoder().publish().packetId());
            }
        }
        return ids;
    }

    /**
     * A prober and a publisher on 127.0.0.1 send QoS 1 messages of 16 KiB, one each 100 ms or so, until one arrives.
     */
    private static void probeUntilThrough(final RingMq broker, final List<AutoCloseable> closeables) throws Exception
    {
        assertThat(probeThrough(broker, closeables, 20_000)).as("a probe through, once stalled clients gave way")
            .isTrue();
    }

    /**
     * A Paho prober and publisher on 127.0.0.1: one QoS 1 message of 16 KiB each 100 ms or so (refused while the share
     * is full, which is when stalls are looked for).
     *
     * @return whether one arrived within {@code ms}.
     */
    static boolean probeThrough(final RingMq broker, final List<AutoCloseable> closeables, final long ms)
        throws Exception
    {
        final Paho prober = Paho.connect(broker.port(), "prober");
        closeables.add(prober);
        prober.client.subscribe("probe", 1);
        final Paho probing = Paho.connect(broker.port(), "probing");
        closeables.add(probing);
        final String payload = "p".repeat(AddressShareTest.HOG_PAYLOAD);
        final long deadline = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < deadline)
        {
            probing.publish("probe", payload, 1, false);
            if (null != prober.nextWithin(100))
            {
                return true;
            }
        }
        return false;
    }
}
