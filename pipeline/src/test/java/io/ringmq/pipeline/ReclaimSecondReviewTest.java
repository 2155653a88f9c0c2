package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Second review of the room taken back from sessions away (75a94ed..52577d8, helper-149): the half floor counted a copy
 * once for every address holding it, unlimited addresses had no floor at all, a device lost messages to a message
 * that did not fit all the same, and every restored session was listed as away.
 */
class ReclaimSecondReviewTest
{
    private static final long HOST_A = HeldMemoryReviewTest.HOST_A;
    private static final long HOST_B = HeldMemoryReviewTest.HOST_B;
    private static final long HOST_C = HeldMemoryReviewTest.HOST_C;
    private static final long HOST_E = AddressKeys.of(ReclaimReviewTest.address(10, 0, 0, 5));

    /**
     * The half floor sums what every limited address holds; at 52577d8 a copy two addresses held was counted for each,
     * so one 4 KiB broadcast in flight to 8 readers on 8 addresses counted 33 KiB of a 64 KiB share, past half, and
     * the attack of oneAddressThroughSessionsAwayAndHogs starved the honest subscriber again.
     */
    @Test
    @DisplayName("a broadcast in flight to readers on 8 addresses leaves the room taken back on: the honest " +
        "subscriber gets its 20 messages though one host holds its sessions away and connections that never " +
        "acknowledge (at 52577d8: 0 of 20)")
    void broadcastToManyAddressesLeavesReclaimOn()
    {
        assertThat(attackWithBroadcastInFlight(true)).as("the honest subscriber's messages, readers on 8 addresses")
            .hasSize(20);
    }

    @Test
    @DisplayName("the same broadcast in flight to 8 readers behind one address (the same memory held): 20 of 20")
    void broadcastToOneAddressLeavesReclaimOn()
    {
        assertThat(attackWithBroadcastInFlight(false)).as("the honest subscriber's messages, readers on 1 address")
            .hasSize(20);
    }

    private static List<String> attackWithBroadcastInFlight(final boolean manyAddresses)
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        final int packetId = AddressHoldReviewTest.offlineQueuesFilled(harness, HOST_A);
        for (int r = 0; r < 8; r++)
        {
            harness.addressKey(manyAddresses ? AddressKeys.of(ReclaimReviewTest.address(10, 7, 0, 1 + r)) : HOST_C);
            harness.packet(200 + r, connect("reader" + r, true));
            harness.packet(200 + r, subscribe("news", 1));
            harness.outbound.takeTypes(200 + r);
        }
        harness.addressKey(HOST_B);
        harness.packet(100, MessageMemoryTest.publish("news", 1, 900, 900)); // its PUBACKs are on their way
        AwayReclaimTest.hogs(harness, HOST_A, 8, packetId + 10);
        harness.addressKey(HOST_B);
        return HeldMemoryReviewTest.liveGetsItsTwenty(harness);
    }

    /**
     * Where addresses are not limited (loopback without --limit-loopback, the default; an address exempt from
     * --max-connections-per-address) nothing is counted, and at 52577d8 nothing bounded what such clients took back:
     * 40 connections that each took one message and never acknowledged took every message 16 persistent devices away
     * had queued. A client that is not limited takes nothing back now.
     */
    @Test
    @DisplayName("40 connections of an address that is not limited, one unacknowledged message each: 16 devices away " +
        "keep all 11 of their queued messages (at 52577d8: 0)")
    void unlimitedAddressesTakeNothingBack()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.smallShare(16);
        harness.addressKey(AddressKeys.NONE);
        harness.packet(100, connect("pub", true));
        int packetId = AddressHoldReviewTest.offlineQueuesFilled(harness, AddressKeys.NONE);
        final long queuedDrops = harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED);
        for (int i = 0; i < 40; i++)
        {
            harness.packet(300 + i, connect("x" + i, true));
            harness.packet(300 + i, subscribe("x/" + i, 1));
            harness.packet(100, MessageMemoryTest.publish("x/" + i, 1, packetId++, i));
        }
        int kept = 0;
        for (int i = 0; i < 16; i++)
        {
            harness.packet(500 + i, connect("away" + i, false));
            kept += AwayReclaimTest.received(harness, 500 + i).size();
        }
        assertThat(16 - queuedDrops).as("what the devices away queued").isEqualTo(11);
        assertThat(kept).as("what they keep of their 11").isEqualTo(11);
        assertThat(harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK)).as("taken back").isZero();
    }

    /**
     * At 52577d8 reclaim dropped before it knew the drops could make room enough: the only copies sessions away held
     * alone were one device's two messages (eight devices share every other copy). The host's connections that never
     * acknowledge took one of them (by design: within their quarter); then a client of another address was sent three
     * 12 KiB messages, and the device's other message was taken back for the first, which was dropped all the same.
     */
    @Test
    @DisplayName("a device away keeps its message when taking it back would not make room for a connected client's " +
        "12 KiB message (at 52577d8 it lost it, and the message was dropped all the same)")
    void nothingDroppedThatCannotMakeRoomEnough()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_C);
        for (int i = 0; i < 8; i++)
        {
            AwayReclaimTest.away(harness, 10 + i, "fan" + i, "a"); // share every copy: none gives room back
        }
        AwayReclaimTest.away(harness, 30, "dev", "d");
        int packetId = 1;
        harness.packet(100, MessageMemoryTest.publish("d", 1, packetId++, 0));
        harness.packet(100, MessageMemoryTest.publish("d", 1, packetId++, 1));
        for (int m = 0; m < 12; m++)
        {
            harness.packet(100, MessageMemoryTest.publish("a", 1, packetId++, 10 + m)); // up to the three quarters
        }
        AwayReclaimTest.hogs(harness, HOST_A, 8, 200);
        final long takenBefore = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK);
        harness.addressKey(HOST_E);
        harness.packet(2, connect("big", true));
        harness.packet(2, subscribe("big", 1));
        harness.outbound.takeTypes(2);
        for (int i = 0; i < 3; i++)
        {
            harness.packet(100, sized("big", 600 + i, 600 + i, 12 * 1024));
        }
        final int big = AwayReclaimTest.received(harness, 2).size();
        final long taken = harness.counters.get(BrokerCounters.AWAY_MESSAGES_TAKEN_BACK) - takenBefore;
        assertThat(taken == 0 || big > 0).as("messages of the device taken back (" + taken + ") for 12 KiB messages " +
            "none of which arrived (" + big + " of 3)").isTrue();
    }

    /**
     * Was open until AwayRoom: messages that came through a shared subscription were never taken back (a session's
     * end hands them to another member). One host subscribes its persistent sessions through groups of their own
     * ($share/gN/a/N, one member each) before they go away: what they queued, up to the three quarters, was never given
     * back, and its connections that never acknowledge filled the rest. Now they are taken back last, when no other
     * message of a session away can be.
     */
    @Test
    @DisplayName("one host's sessions away queue through shared subscriptions of their own, then its connections " +
        "never acknowledge: a subscriber on another address gets its 20 messages (before: 0 of 20)")
    void sessionsAwayThroughSharedSubscriptions()
    {
        final PipelineHarness harness = HeldMemoryReviewTest.shareWithPublisher(16);
        harness.addressKey(HOST_A);
        for (int i = 0; i < 16; i++)
        {
            AwayReclaimTest.away(harness, 10 + i, "away" + i, "$share/g" + i + "/a/" + i);
        }
        for (int i = 0; i < 16; i++)
        {
            harness.packet(100, MessageMemoryTest.publish("a/" + i, 1, i + 1, i));
        }
        AwayReclaimTest.hogs(harness, HOST_A, 8, 100);
        harness.addressKey(HOST_B);
        assertThat(HeldMemoryReviewTest.liveGetsItsTwenty(harness)).as("its messages").hasSize(20);
    }

    /**
     * At 52577d8 every restored persistent session was listed as away (DeliveryShard.restoreSession), queue or not,
     * and stayed listed until a search for room happened to pass it: 2,000 restored sessions that queued nothing, each
     * resumed and gone again, were all still listed (an array slot and a map entry each).
     */
    @Test
    @DisplayName("2,000 restored sessions with nothing queued are not listed as sessions away (at 52577d8: all 2,000)")
    void restoredSessionsWithNothingQueuedNotListed() throws Exception
    {
        final MemoryStore store = MemoryStore.retaining();
        final PipelineHarness before = ReclaimReviewTest.smallShare(store);
        for (int i = 0; i < 2_000; i++)
        {
            before.packet(10 + i, connect("p" + i, false));
            before.packet(10 + i, subscribe("p/" + i, 1));
            before.offer(10 + i, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        before.settle();
        final PipelineHarness after = ReclaimReviewTest.smallShare(store);
        assertThat(AwayReclaimTest.awayList(after, "awayCount")).as("listed after the restart").isZero();
        for (int i = 0; i < 2_000; i++)
        {
            after.packet(5_000 + i, connect("p" + i, false));
            after.offer(5_000 + i, true, new byte[0], IngressEvent.CONNECTION_LOST);
        }
        assertThat(AwayReclaimTest.awayList(after, "awayCount")).as("listed once each resumed and left").isZero();
    }

    /**
     * @return a QoS 1 PUBLISH of {@code size} payload bytes whose first 8 are {@code number}.
     */
    static byte[] sized(final String topic, final int packetId, final int number, final int size)
    {
        final byte[] payload = new byte[size];
        java.util.Arrays.fill(payload, (byte)' ');
        System.arraycopy(String.format("%08d", number).getBytes(java.nio.charset.StandardCharsets.US_ASCII), 0,
            payload, 0, 8);
        final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(packetId).topic(topic)
            .payload(payload);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
