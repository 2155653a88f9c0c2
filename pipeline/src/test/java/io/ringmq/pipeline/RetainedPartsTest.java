package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static io.ringmq.pipeline.PipelineTest.unsubscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The retained messages of a SUBSCRIBE that do not all fit with its SUBACK (1 MiB) go out in paced parts on the
 * routing stage's ticks ({@link RetainedLine}): all of them [MQTT-3.3.1-6], RETAIN set [MQTT-3.3.1-8], to the
 * connection that subscribed, and no more once it unsubscribes [MQTT-3.10.4-2]. The stages are stepped in-process.
 */
class RetainedPartsTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
    /** 5,000 retained messages of 300 bytes: about 1.6 MB, past what one SUBACK's slot carries. */
    private static final int RETAINED = 5_000;

    private final PipelineHarness harness = new PipelineHarness(new BrokerContext(), ANONYMOUS);

    private void storeRetained()
    {
        storeRetained(harness);
    }

    private static void storeRetained(final PipelineHarness harness)
    {
        harness.packet(1, connect("pub", true));
        for (int batch = 0; batch < RETAINED / 200; batch++)
        {
            for (int i = 0; i < 200; i++)
            {
                harness.put(0, 1, true, publish("r/" + (batch * 200 + i)), IngressEvent.PACKET,
                    io.ringmq.protocol.MqttVersion.V3_1_1, 0, IngressEvent.NONE);
            }
            harness.step();
        }
        harness.outbound.takePackets(1);
    }

    private static byte[] publish(final String topic)
    {
        return publish(topic, 300);
    }

    private static byte[] publish(final String topic, final int size)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(0).retain(true).topic(topic)
            .payload(new byte[size]);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    /**
     * @return the topic of a PUBLISH (3.1.1), after its fixed header.
     */
    private static String topic(final byte[] packet)
    {
        int at = 1;
        while ((packet[at] & 0x80) != 0)
        {
            at++;
        }
        at++;
        final int length = ((packet[at] & 0xFF) << 8) | (packet[at + 1] & 0xFF);
        return new String(packet, at + 2, length, StandardCharsets.UTF_8);
    }

    private static byte[] subscribeMany(final String... filters)
    {
        final io.ringmq.protocol.SubscribeEncoder encoder = new io.ringmq.protocol.SubscribeEncoder()
            .reset(PacketType.SUBSCRIBE).packetId(1);
        for (final String filter : filters)
        {
            encoder.filters().add(filter, 0);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static boolean isPublish(final byte[] packet)
    {
        return (packet[0] & 0xF0) == 0x30;
    }

    /**
     * Steps the stages (their ticks come on the clock) until {@code done}, for at most 20 s, taking what is sent to
     * {@code connectionId} into {@code sent}.
     */
    private void stepUntil(final long connectionId, final List<byte[]> sent, final BooleanSupplier done)
    {
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean() && System.nanoTime() - until < 0)
        {
            harness.step();
            sent.addAll(harness.outbound.takePackets(connectionId));
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
    }

    /**
     * Steps the stages for {@code ms}, taking what is sent to {@code connectionId} into {@code sent}.
     */
    private void stepFor(final long connectionId, final List<byte[]> sent, final long ms)
    {
        final long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        stepUntil(connectionId, sent, () -> System.nanoTime() - until >= 0);
    }

    private static List<String> publishedTopics(final List<byte[]> packets)
    {
        final List<String> topics = new ArrayList<>();
        for (final byte[] packet : packets)
        {
            if (isPublish(packet))
            {
                assertThat(packet[0] & 0x01).as("RETAIN on a retained message sent for a subscription [MQTT-3.3.1-8]")
                    .isEqualTo(1);
                topics.add(topic(packet));
            }
        }
        return topics;
    }

    @Test
    @DisplayName("MQTT-3.3.1-6, MQTT-3.3.1-8: a SUBSCRIBE gets every retained message it matches, 1.6 MB of them, " +
        "the first MiB with its SUBACK and the rest in parts, each once, RETAIN set")
    void everyRetainedMessageArrives()
    {
        storeRetained();
        harness.packet(2, connect("sub", true));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        final List<byte[]> sent = new ArrayList<>(harness.outbound.takePackets(2));
        assertThat((sent.get(0)[0] & 0xF0) >>> 4).as("the SUBACK first").isEqualTo(PacketType.SUBACK);
        final int withSuback = publishedTopics(sent).size();
        assertThat(withSuback).as("what fits with the SUBACK").isBetween(1_000, RETAINED - 1);

        stepUntil(2, sent, () -> publishedTopics(sent).size() >= RETAINED);
        final List<String> topics = publishedTopics(sent);
        assertThat(topics).doesNotHaveDuplicates().hasSize(RETAINED);
        assertThat(harness.counters.get(BrokerCounters.RETAINED_IN_PARTS)).isEqualTo(1);
        assertThat(harness.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();

        stepFor(2, sent, 100);
        assertThat(publishedTopics(sent)).as("nothing after the last part").hasSize(RETAINED);
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: retained messages larger than a part, and one larger than a SUBACK's MiB, are sent " +
        "too, one to an output")
    void largeRetainedMessagesArrive()
    {
        final PipelineHarness large = new PipelineHarness(new BrokerContext().limits(l -> l.maxPacketSize(2 << 20)),
            ANONYMOUS);
        large.packet(1, connect("pub", true));
        large.packet(1, publish("big/huge", 1_500_000));
        for (int i = 0; i < 4; i++)
        {
            large.packet(1, publish("big/" + i, 700_000));
        }
        large.packet(2, connect("sub", true));
        large.outbound.takePackets(2);
        large.packet(2, subscribe("big/#", 0));
        final List<byte[]> sent = new ArrayList<>();
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (publishedTopics(sent).size() < 5 && System.nanoTime() - until < 0)
        {
            large.step();
            sent.addAll(large.outbound.takePackets(2));
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
        assertThat(publishedTopics(sent)).containsExactlyInAnyOrder("big/huge", "big/0", "big/1", "big/2", "big/3");
        assertThat(large.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();
    }

    @Test
    @DisplayName("MQTT-3.10.4-2: after its UNSUBACK, none of the rest of an unsubscribed filter's retained messages " +
        "is sent")
    void unsubscribeStopsTheParts()
    {
        storeRetained();
        harness.packet(2, connect("sub", true));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        final List<byte[]> sent = new ArrayList<>(harness.outbound.takePackets(2));
        harness.packet(2, unsubscribe("#"));
        stepFor(2, sent, 300);
        int unsuback = -1;
        for (int i = 0; i < sent.size(); i++)
        {
            if ((sent.get(i)[0] & 0xF0) >>> 4 == PacketType.UNSUBACK)
            {
                unsuback = i;
            }
        }
        assertThat(unsuback).as("the UNSUBACK").isPositive();
        assertThat(sent.subList(unsuback, sent.size())).noneMatch(RetainedPartsTest::isPublish);
        assertThat(publishedTopics(sent)).hasSizeLessThan(RETAINED);
        assertThat(harness.pipeline.routing().retainedStore().pinCount()).as("its paused walk let go of").isZero();
    }

    @Test
    @DisplayName("MQTT-3.8.4-3: a filter subscribed again while its retained messages are still going out gets all of " +
        "them anew, each once, and the first walk's rest is not sent besides")
    void subscribingAgainStartsAnew()
    {
        storeRetained();
        harness.packet(2, connect("sub", true));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        final List<byte[]> sent = new ArrayList<>();
        stepUntil(2, sent, () -> publishedTopics(sent).size() >= RETAINED);
        stepFor(2, sent, 150);
        assertThat(publishedTopics(sent)).doesNotHaveDuplicates().hasSize(RETAINED);
    }

    @Test
    @DisplayName("the rest goes only to the connection that subscribed: once it ends, its session's next connection " +
        "gets none of it")
    void anEndedConnectionGetsNoMore()
    {
        storeRetained();
        harness.packet(2, connect("sub", false));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        harness.outbound.takePackets(2);
        harness.offer(2, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.packet(3, connect("sub", false)); // the session, with its subscription, on a new connection
        final List<byte[]> sent = new ArrayList<>();
        stepFor(3, sent, 300);
        assertThat(publishedTopics(sent)).as("retained messages are sent for a SUBSCRIBE, not for a reconnect")
            .isEmpty();
        assertThat(harness.outbound.takePackets(2)).noneMatch(RetainedPartsTest::isPublish);
        assertThat(harness.pipeline.routing().retainedStore().pinCount()).as("its paused walk let go of").isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: twenty subscribers of '#' at once each get every retained message, their parts in turn")
    void manySubscribersEachGetAll()
    {
        storeRetained();
        final int subscribers = 20;
        for (int s = 0; s < subscribers; s++)
        {
            harness.packet(100 + s, connect("sub-" + s, true));
            harness.outbound.takePackets(100 + s);
            harness.packet(100 + s, subscribe("#", 0));
        }
        final List<List<byte[]>> sent = new ArrayList<>();
        for (int s = 0; s < subscribers; s++)
        {
            sent.add(new ArrayList<>());
        }
        final long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        final int[] counts = new int[subscribers];
        while (System.nanoTime() - until < 0)
        {
            harness.step();
            boolean all = true;
            for (int s = 0; s < subscribers; s++)
            {
                for (final byte[] packet : harness.outbound.takePackets(100 + s))
                {
                    counts[s] += isPublish(packet) ? 1 : 0;
                }
                all &= counts[s] >= RETAINED;
            }
            if (all)
            {
                break;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2));
        }
        assertThat(counts).containsOnly(RETAINED);
        assertThat(harness.counters.get(BrokerCounters.RETAINED_IN_PARTS)).isEqualTo(subscribers);
    }

    @Test
    @DisplayName("MQTT-3.3.1-6: a filter twice in one SUBSCRIBE gets its retained messages once, all of them " +
        "(review of 9da41ba: the second ended the first's walk, 3,159 of 5,000)")
    void aFilterTwiceInOneSubscribe()
    {
        storeRetained();
        harness.packet(2, connect("sub", true));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribeMany("#", "#"));
        final List<byte[]> sent = new ArrayList<>(harness.outbound.takePackets(2));
        stepUntil(2, sent, () -> publishedTopics(sent).size() >= RETAINED);
        stepFor(2, sent, 100);
        assertThat(publishedTopics(sent)).doesNotHaveDuplicates().hasSize(RETAINED);
    }

    @Test
    @DisplayName("MQTT-3.10.4-2: SUBSCRIBE and UNSUBSCRIBE over and over while a walk goes on keep nothing of the " +
        "gone subscriptions in line (review of 9da41ba: 3,000 cycles left 3,000)")
    void unsubscribedLeaveTheLine()
    {
        harness.packet(1, connect("pub", true));
        for (int i = 0; i < 100; i++)
        {
            harness.packet(1, publish("big/" + i, 200_000)); // 20 MB: a part each, 2.5 s of parts
        }
        harness.outbound.takePackets(1);
        harness.packet(2, connect("sub", true));
        harness.outbound.takePackets(2);
        harness.packet(2, subscribe("#", 0));
        harness.packet(2, subscribe("a/b", 0)); // waits behind the walk of '#'
        for (int i = 0; i < 1_000; i++)
        {
            harness.packet(2, subscribe("x/" + (i % 7), 0));
            harness.packet(2, unsubscribe("x/" + (i % 7)));
        }
        harness.outbound.takePackets(2);
        final RetainedLine line = harness.pipeline.routing().retainedLine();
        int most = 0;
        for (int session = 0; session < 8; session++)
        {
            most = Math.max(most, line.waiting(session));
        }
        assertThat(most).as("the subscriptions waiting: a/b alone").isEqualTo(1);
    }

    @Test
    @DisplayName("a slot carrying a part that fails in a later stage (a failed persistence batch) loses that part " +
        "(counted) and nothing else: its subscriber stays served (review of 9da41ba: it was left connected and " +
        "unbound)")
    void aFailedPartLeavesTheSubscriberServed()
    {
        final FailingStore store = new FailingStore();
        final PipelineHarness failing = new PipelineHarness(new BrokerContext(), ANONYMOUS, store);
        storeRetained(failing);
        failing.packet(2, connect("sub", true));
        failing.packet(2, subscribe("#", 0));
        failing.outbound.takePackets(2);
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(2 * RetainedLine.PART_INTERVAL_MS));
        failing.agent.doWork(); // routing puts the tick for the first part on the ring
        store.fail = true;
        failing.put(0, 1, true, publish("x/y"), IngressEvent.PACKET, io.ringmq.protocol.MqttVersion.V3_1_1, 0,
            IngressEvent.NONE); // in the same persistence batch
        try
        {
            failing.step();
        }
        catch (final io.ringmq.pipeline.persistence.StoreException aliveWriteFailed)
        {
            // the store's periodic alive write came due meanwhile and failed too (a running broker logs that): the
            // next cycle polls the batch
            failing.step();
        }
        store.fail = false;
        assertThat(failing.counters.get(BrokerCounters.RETAINED_NOT_SENT)).as("the part lost with its slot")
            .isEqualTo(1);
        failing.outbound.takePackets(2);
        failing.packet(1, PipelineTest.publish("z/live", 0, 0, false));
        assertThat(failing.closed(2)).isFalse();
        assertThat(failing.outbound.takePackets(2).stream().filter(RetainedPartsTest::isPublish)
            .map(RetainedPartsTest::topic)).as("a live message after it").contains("z/live");
    }
}
