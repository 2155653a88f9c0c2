package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.SessionWindows;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A delivery session holds no window and no queue until a message needs one, grows them as needed (a slot keeps
 * its number), and gives them back once empty and quiet: at the end of its connection, or after a sweep found it
 * unused since the sweep before.
 */
class DeliverySessionMemoryTest
{
    private final SharedMessage.Pool pool = new SharedMessage.Pool(0, 16, Long.MAX_VALUE);
    private final SessionWindows windows = new SessionWindows(8);

    private SharedMessage message(final int payloadLength)
    {
        final UnsafeBuffer bytes = new UnsafeBuffer(new byte[payloadLength + 1]);
        final SharedMessage message = pool.copy(bytes, 0, 1, bytes, 0, 0, bytes, 1, payloadLength, Message.NEVER, 1);
        message.retain();
        return message;
    }

    private DeliverySession online(final int maxInflight)
    {
        final DeliverySession session = new DeliverySession(1, true, maxInflight, windows);
        session.connectionId = 7;
        return session;
    }

    @Test
    void anIdleSessionHoldsNoWindowQueueOrAliases()
    {
        final DeliverySession session = online(32);
        assertThat(session.windowCapacity()).isZero();
        assertThat(session.queueSize()).isZero();
        assertThat(session.queuedBytes()).isZero();
        assertThat(session.aliases()).isNull();
        assertThat(session.hasPacketIds()).as("packet ids are made with the first QoS 1 or 2 message").isFalse();
        assertThat(session.findInflight(1)).isEqualTo(-1);
        assertThat(session.inflightInOrder()).isEmpty();
        assertThat(session.canSendNow()).isTrue();
        assertThat(session.nextUnsent()).isEqualTo(-1);
        assertThat(windows.free(1)).isEqualTo(32);
        session.topicAliasMaximum(0, new OutboundAliasBudget(Long.MAX_VALUE));
        assertThat(session.aliases()).as("a client that allows no aliases gets none kept").isNull();
        session.topicAliasMaximum(10, new OutboundAliasBudget(Long.MAX_VALUE));
        assertThat(session.aliases()).isNotNull();
        session.topicAliasMaximum(0, new OutboundAliasBudget(Long.MAX_VALUE));
        assertThat(session.aliases()).as("a 5.0 client back without aliases: its old ones go").isNull();
    }

    @Test
    @DisplayName("MQTT-2.3.1-4, MQTT-2.2.1-4: the window grows as messages go in flight, each slot keeps its "
        + "message and a packet id unused by any other in flight")
    void theWindowGrowsUpToItsLimitAndKeepsItsSlots()
    {
        final DeliverySession session = online(10);
        final List<Integer> slots = new ArrayList<>();
        final Set<Integer> packetIds = new HashSet<>();
        final List<SharedMessage> messages = new ArrayList<>();
        for (int i = 0; i < 10; i++)
        {
            final SharedMessage message = message(i + 1);
            messages.add(message);
            final int slot = session.addInflight(message, 1 + i % 2, i % 3 == 0, null, i);
            assertThat(session.hasPacketIds()).isTrue();
            slots.add(slot);
            packetIds.add(session.inflightPacketId(slot));
            assertThat(session.windowCapacity()).isGreaterThanOrEqualTo(slot + 1).isLessThanOrEqualTo(10);
        }
        assertThat(session.windowCapacity()).isEqualTo(10);
        assertThat(packetIds).hasSize(10);
        assertThat(windows.free(1)).isZero();
        assertThat(session.canSendNow()).isFalse();
        for (int i = 0; i < 10; i++)
        {
            final int slot = slots.get(i);
            assertThat(session.inflightMessage(slot)).isSameAs(messages.get(i));
            assertThat(session.inflightQos(slot)).isEqualTo(1 + i % 2);
            assertThat(session.inflightState(slot)).isEqualTo(i % 2 == 0 ? DeliverySession.AWAIT_PUBACK :
                DeliverySession.AWAIT_PUBREC);
            assertThat(session.inflightRetain(slot)).isEqualTo(i % 3 == 0);
            assertThat(session.inflightGroup(slot)).isEqualTo(i);
            assertThat(session.findInflight(session.inflightPacketId(slot))).isEqualTo(slot);
        }
        assertThat(session.inflightInOrder()).containsExactly(slots.stream().mapToInt(Integer::intValue).toArray());
    }

    @Test
    void aMessagePastTheWindowIsRefusedNotGrownInto()
    {
        final DeliverySession session = online(3);
        for (int i = 0; i < 3; i++)
        {
            session.addInflight(message(1), 1, false, null, 0);
        }
        assertThatThrownBy(() -> session.addInflight(message(1), 1, false, null, 0))
            .isInstanceOf(IllegalStateException.class);
        assertThat(session.windowCapacity()).isEqualTo(3);
    }

    @Test
    void flagsOfASlotChangeIndependently()
    {
        final DeliverySession session = online(4);
        final int slot = session.addInflight(message(1), 2, true, new int[]{5}, 3);
        session.inflightUnsent(slot, true);
        session.inflightState(slot, DeliverySession.AWAIT_PUBCOMP);
        assertThat(session.inflightQos(slot)).isEqualTo(2);
        assertThat(session.inflightRetain(slot)).isTrue();
        assertThat(session.inflightState(slot)).isEqualTo(DeliverySession.AWAIT_PUBCOMP);
        assertThat(session.nextUnsent()).isEqualTo(slot);
        assertThat(session.hasInflightRoom()).as("an unsent message goes first").isFalse();
        session.inflightUnsent(slot, false);
        session.inflightUnsent(slot, false);
        assertThat(session.nextUnsent()).isEqualTo(-1);
        assertThat(session.inflightState(slot)).isEqualTo(DeliverySession.AWAIT_PUBCOMP);
        assertThat(session.inflightSubscriptionIds(slot)).containsExactly(5);
    }

    @Test
    void aSweepGivesBackOnlyWhatStayedEmptyAndUnusedSinceTheSweepBefore()
    {
        final DeliverySession session = online(8);
        final int slot = session.addInflight(message(1), 1, false, null, 0);
        assertThat(session.trim(true)).as("used since the last sweep").isFalse();
        assertThat(session.trim(true)).as("not empty").isFalse();
        assertThat(session.windowCapacity()).isPositive();
        pool.release(session.removeInflight(slot));
        assertThat(session.trim(true)).as("empty and quiet: given back").isTrue();
        assertThat(session.windowCapacity()).isZero();
        assertThat(session.trim(true)).isFalse();
    }

    @Test
    @DisplayName("MQTT-2.3.1-4, MQTT-2.2.1-4: packet ids go on after a window was given back and made anew")
    void packetIdsGoOnAcrossAGivenBackWindow()
    {
        final DeliverySession session = online(8);
        final int first = session.inflightPacketId(session.addInflight(message(1), 1, false, null, 0));
        pool.release(session.removeInflight(session.findInflight(first)));
        assertThat(session.trim(false)).isTrue();
        final int second = session.inflightPacketId(session.addInflight(message(1), 1, false, null, 0));
        assertThat(second).isEqualTo(first + 1);
    }

    @Test
    void theQueueKeepsItsOrderAcrossGrowthAndWrapAndIsGivenBackOffline()
    {
        final DeliverySession session = online(1);
        session.addInflight(message(1), 1, false, null, 0);
        final List<SharedMessage> queued = new ArrayList<>();
        for (int round = 0; round < 3; round++)
        {
            for (int i = 0; i < 3 + round * 5; i++)
            {
                final SharedMessage message = message(10);
                queued.add(message);
                session.enqueue(message, 1 + i % 2, i % 2 == 0, null, i);
            }
            for (int i = 0; i < 2; i++)
            {
                assertThat(session.peekMessage()).isSameAs(queued.remove(0));
                session.dequeue();
            }
        }
        assertThat(session.queueSize()).isEqualTo(queued.size());
        assertThat(session.queuedBytes()).isEqualTo(queued.size() * (long)queued.get(0).length());
        for (int i = 0; i < queued.size(); i++)
        {
            assertThat(session.queuedMessage(i)).isSameAs(queued.get(i));
        }
        while (session.queueSize() > 0)
        {
            assertThat(session.peekMessage()).isSameAs(queued.remove(0));
            session.dequeue();
        }
        session.connectionId = -1;
        assertThat(session.trim(false)).as("offline and empty: the queue goes at once").isTrue();
        assertThat(session.queueSize()).isZero();
        assertThat(session.windowCapacity()).as("the window still holds a message").isPositive();
    }

    @Test
    void clearDropsEverythingItHeld()
    {
        final DeliverySession session = online(2);
        final SharedMessage inflight = message(1);
        final SharedMessage waiting = message(1);
        session.addInflight(inflight, 1, false, null, 0);
        session.enqueue(waiting, 1, false, null, 0);
        session.clear(pool);
        assertThat(session.windowCapacity()).isZero();
        assertThat(session.queueSize()).isZero();
        assertThat(windows.free(1)).isEqualTo(2);
    }

    @Test
    void aShardSweepGivesBackAfterAQuietInterval()
    {
        final ShardSessions sessions = new ShardSessions();
        final DeliverySession session = online(4);
        sessions.put(session);
        pool.release(session.removeInflight(session.addInflight(message(1), 1, false, null, 0)));
        assertThat(sessions.sweep(1_000)).as("used lately").isZero();
        assertThat(sessions.sweep(1_000 + ShardSessions.SWEEP_INTERVAL_MS / 2)).as("no sweep due yet").isZero();
        assertThat(session.windowCapacity()).isPositive();
        assertThat(sessions.sweep(1_000 + ShardSessions.SWEEP_INTERVAL_MS)).isEqualTo(1);
        assertThat(session.windowCapacity()).isZero();
    }
}
