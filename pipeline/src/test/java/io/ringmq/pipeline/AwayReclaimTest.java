package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A full share of --max-message-memory gives room back from the queues of sessions away to a connected session that
 * holds nothing, of an address that holds nothing: the largest queue first, its newest messages first, a copy that
 * sessions away share from all of them at once, never what is in flight to a session away, and with their records
 * ended. The attack it closes is
 * {@code AddressHoldReviewTest.oneAddressThroughSessionsAwayAndHogs}; these are its variants and what the honest
 * sessions away keep.
 */
class AwayReclaimTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;

    @Test
    @DisplayName("one address's 16 sessions away queue up to the three quarters, a restart, then its 8 connected " +
        "subscribers never acknowledge: a subscriber on another address gets all 20 of its messages")
    void restartBetweenSessionsAwayAndHogs()
    {
        final MemoryStore store = MemoryStore.retaining();
        final PipelineHarness before = smallShare(store);
        before.addressKey(HOST_B);
        before.packet(100, connect("pub", true));
        AddressHoldReviewTest.offlineQueuesFilled(before, HOST_A);

        final PipelineHarness after = smallShare(store);
        after.addressKey(HOST_B);
        after.packet(100, connect("pub", true));
        hogs(after, HOST_A, 8, 100);
        after.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(after)).as("its messages").hasSize(20);
    }

    @Test
    @DisplayName("one address fills the queues of its 16 sessions away, then its 8 connected subscribers never " +
        "acknowledge: a subscriber on another address gets all 21 of its messages sent three at a time (within the " +
        "quarter of the share sessions away leave to connected clients)")
    void burstsAfterSessionsAwayAndHogs()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        hogs(harness, HOST_A, 8, AddressHoldReviewTest.offlineQueuesFilled(harness, HOST_A));
        harness.addressKey(HOST_B);
        harness.packet(2, connect("live", true));
        harness.packet(2, subscribe("t", 1));
        harness.outbound.takeTypes(2);
        final List<Integer> got = new ArrayList<>();
        for (int burst = 0; burst < 7; burst++)
        {
            for (int m = 0; m < 3; m++)
            {
                harness.packet(100, MessageMemoryTest.publish("t", 1, 300 + burst * 3 + m, burst * 3 + m));
            }
            got.addAll(received(harness, 2));
        }
        assertThat(got).as("its messages, in order").hasSize(21).isSorted();
    }

    /**
     * Was open until AwayRoom: only a copy one session away held alone was taken back (dropping a shared one from one
     * queue frees nothing until its last holder drops it), so one host whose sessions away share their copies, then
     * whose connections never acknowledge, held nearly all of the share. Now a copy that only queues of sessions away
     * hold is dropped from all of them at once, each copy counting those entries ({@code SharedMessage.awayQueued}).
     */
    @Test
    @DisplayName("one address's 8 sessions away share every queued copy (one topic), then its 8 connected " +
        "subscribers never acknowledge: a subscriber on another address gets all 20 of its messages (before: 0 of 20)")
    void sessionsAwaySharingTheirCopies()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_A);
        for (int i = 0; i < 8; i++)
        {
            away(harness, 10 + i, "away" + i, "a");
        }
        for (int m = 0; m < 16; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("a", 1, m + 1, m)); // up to the three quarters: 11 copies
        }
        hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
    }

    @Test
    @DisplayName("the room a connected subscriber needs comes from the session away that queues the most, newest " +
        "first: two sessions away with one message each keep it, and the largest keeps what it has in flight " +
        "[MQTT-4.4.0-1]")
    void largestQueueGivesBackFirst()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(2);
        harness.addressKey(HOST_C);
        int packetId = 1;
        for (int s = 0; s < 2; s++) // listed as away first: taking from the first listed would take theirs
        {
            away(harness, 20 + s, "small" + s, "s/" + s);
            harness.packet(100, MessageMemoryTest.publish("s/" + s, 1, packetId++, 100 + s));
        }
        harness.packet(10, connect("big", false));
        harness.packet(10, subscribe("b", 1));
        for (int m = 0; m < 9; m++) // 2 in flight, never acknowledged, then 7 queued as its client goes
        {
            if (m == 2)
            {
                harness.offer(10, true, new byte[0], IngressEvent.CONNECTION_LOST);
            }
            harness.packet(100, MessageMemoryTest.publish("b", 1, packetId++, m));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("all within the three quarters")
            .isZero();
        hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        final long reclaimed = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        assertThat(reclaimed).as("messages taken back from sessions away").isBetween(1L, 7L);

        harness.addressKey(HOST_C);
        for (int s = 0; s < 2; s++)
        {
            harness.packet(80 + s, connect("small" + s, false));
            assertThat(received(harness, 80 + s)).as("small" + s + "'s message").containsExactly(100 + s);
        }
        harness.packet(90, connect("big", false));
        final List<Integer> big = received(harness, 90);
        assertThat(big).as("big's messages: its two in flight, then what was not taken back, oldest first")
            .hasSize(9 - (int)reclaimed)
            .startsWith(0, 1, 2)
            .isSorted();
    }

    @Test
    @DisplayName("messages queued for a session away through a shared subscription are taken back last (its session's " +
        "end would hand them to another member): though its queue is the largest, the subscriber of another address " +
        "is served from the others")
    void sharedSubscriptionMessagesStay()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_C);
        away(harness, 9, "member", "$share/g/s"); // the largest queue away: the first a search would find
        for (int m = 0; m < 3; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("s", 1, 900 + m, 900 + m));
        }
        hogs(harness, HOST_A, 8, AddressHoldReviewTest.offlineQueuesFilled(harness, HOST_A));
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        assertThat(harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK)).as("taken back").isPositive();
        harness.addressKey(HOST_C);
        harness.packet(90, connect("member", false));
        assertThat(received(harness, 90)).as("the member's messages").containsExactly(900, 901, 902);
    }

    @Test
    @DisplayName("a message taken back from a session away ends its record: after a restart it does not come back")
    void takenBackStaysGone()
    {
        final MemoryStore store = MemoryStore.retaining();
        final PipelineHarness harness = smallShare(store);
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        harness.addressKey(HOST_C);
        away(harness, 10, "away", "b");
        for (int m = 0; m < 16; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("b", 1, m + 1, m)); // 11 kept, the three quarters
        }
        hogs(harness, HOST_A, 8, 200);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
        final long reclaimed = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        assertThat(reclaimed).as("taken back (by the hogs' first messages, or the subscriber's)").isPositive();
        harness.settle(); // the ends a running broker writes within its fsync interval

        final PipelineHarness after = smallShare(store);
        after.addressKey(HOST_C);
        after.packet(10, connect("away", false));
        final List<Integer> back = received(after, 10);
        assertThat(back).as("what the session away gets after the restart").hasSize(11 - (int)reclaimed)
            .startsWith(0).isSorted();
    }

    @Test
    @DisplayName("one message to 200 subscribers of a new address with the share full and every copy sessions away " +
        "queue in flight to another session away: one look for room to take back, not one per subscriber")
    void oneSearchPerEventWhenNothingIsThere() throws Exception
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_C);
        for (int i = 0; i < 8; i++) // what one queues, the other has in flight [MQTT-4.4.0-1]: none may be taken back
        {
            harness.addressKey(HOST_C);
            away(harness, 10 + 2 * i, "awayA" + i, "p/" + i);
            harness.addressKey(io.ringmq.pipeline.auth.AddressKeys.NONE); // not limited: its window counts with no address
            harness.packet(11 + 2 * i, connect("awayB" + i, false));
            harness.packet(11 + 2 * i, subscribe("p/" + i, 1));
            for (int m = 0; m < 2; m++)
            {
                harness.packet(100, MessageMemoryTest.publish("p/" + i, 1, 1 + 2 * i + m, m)); // to three quarters
            }
            harness.offer(11 + 2 * i, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        hogs(harness, HOST_A, 8, 200); // connections of one host fill the last quarter
        harness.addressKey(host(2, 0));
        for (int i = 0; i < 200; i++)
        {
            harness.packet(1_000 + i, connect("sub" + i, true));
            harness.packet(1_000 + i, subscribe("y", 1));
            harness.outbound.takeTypes(1_000 + i);
        }
        final long searches = awayList(harness, "awaySearches");
        final long dropped = harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        harness.packet(100, MessageMemoryTest.publish("y", 1, 20, 0));
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED) - dropped).as("the share is full")
            .isEqualTo(200);
        assertThat(harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK)).as("taken back").isZero();
        assertThat(awayList(harness, "awaySearches") - searches).as("searches of the sessions away").isEqualTo(1);
    }

    @Test
    @DisplayName("2,000 sessions away that queued a message each are listed once; as they end they leave the list, " +
        "and what it grew is given back")
    void sessionsThatEndLeaveTheList() throws Exception
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .memory(m -> m.maxMessageMemory(16 * 1024 * 1024)), ANONYMOUS);
        harness.addressKey(HOST_B);
        harness.packet(100, connect("pub", true));
        harness.addressKey(HOST_C);
        for (int i = 0; i < 2_000; i++)
        {
            away(harness, 1_000 + i, "away" + i, "a/" + i);
            harness.packet(100, PipelineTest.publish("a/" + i, 1, 1 + i, false));
            harness.packet(100, PipelineTest.publish("a/" + i, 1, 1 + i, false)); // a second: listed once still
        }
        assertThat(awayList(harness, "awayCount")).as("listed").isEqualTo(2_000);
        for (int i = 0; i < 2_000; i++)
        {
            harness.packet(5_000 + i, connect("away" + i, true)); // a clean start ends the session
            harness.offer(5_000 + i, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        assertThat(awayList(harness, "awayCount")).as("listed once they ended").isZero();
        assertThat(awayList(harness, "away")).as("the list's room once they ended").isLessThanOrEqualTo(1_024);
    }

    /**
     * @return a field of the delivery shards' lists of sessions away, added up: an int, or an array's length.
     */
    static long awayList(final PipelineHarness harness, final String field) throws ReflectiveOperationException
    {
        final List<Object> found = new ArrayList<>();
        AddressHoldReviewTest.find(harness.pipeline, "ShardSessions", found,
            java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
        long sum = 0;
        for (final Object sessions : found)
        {
            final java.lang.reflect.Field f = sessions.getClass().getDeclaredField(field);
            f.setAccessible(true);
            final Object value = f.get(sessions);
            sum += value instanceof Object[] ? ((Object[])value).length : ((Number)value).longValue();
        }
        return sum;
    }

    private static long host(final int c, final int d) throws java.net.UnknownHostException
    {
        return io.ringmq.pipeline.auth.AddressKeys.of(
            java.net.InetAddress.getByAddress(new byte[] {10, 0, (byte)c, (byte)d}));
    }

    static PipelineHarness smallShare(final MemoryStore store)
    {
        return new PipelineHarness(new BrokerContext().memory(m -> m.maxMessageMemory(64 * 1024))
            .limits(l -> l.maxInflight(16)), ANONYMOUS, store);
    }

    /**
     * A persistent session of {@code clientId} subscribes to {@code topic} at QoS 1 on {@code connection}, and its client
     * goes away.
     */
    static void away(final PipelineHarness harness, final long connection, final String clientId,
        final String topic)
    {
        harness.packet(connection, connect(clientId, false));
        harness.packet(connection, subscribe(topic, 1));
        harness.offer(connection, true, new byte[0], IngressEvent.CONNECTION_LOST);
    }

    /**
     * {@code count} connected subscribers of {@code host} (connections 40 and up) on topics of their own, each sent four
     * QoS 1 messages of 4 KiB by connection 100 that it never acknowledges.
     */
    static void hogs(final PipelineHarness harness, final long host, final int count, final int firstPacketId)
    {
        harness.addressKey(host);
        int packetId = firstPacketId;
        for (int i = 0; i < count; i++)
        {
            harness.packet(40 + i, connect("hog" + i, true));
            harness.packet(40 + i, subscribe("h/" + i, 1));
            for (int m = 0; m < 4; m++)
            {
                harness.packet(100, MessageMemoryTest.publish("h/" + i, 1, packetId++, m));
            }
        }
    }

    /**
     * @return the numbers of the messages sent to {@code connection} since the last look, in order, each acknowledged,
     * until no more come.
     */
    static List<Integer> received(final PipelineHarness harness, final long connection)
    {
        final List<Integer> numbers = new ArrayList<>();
        int before;
        do
        {
            before = numbers.size();
            for (final byte[] p : harness.outbound.takePackets(connection))
            {
                if ((p[0] & 0xF0) >> 4 == PacketType.PUBLISH)
                {
                    numbers.add(Integer.parseInt(PipelineTest.payloadsOf(List.of(p)).get(0).substring(0, 8)));
                    harness.packet(connection, PipelineTest.ack(PacketType.PUBACK, PipelineTest.packetId(p)));
                }
            }
        }
        while (numbers.size() > before);
        return numbers;
    }
}
