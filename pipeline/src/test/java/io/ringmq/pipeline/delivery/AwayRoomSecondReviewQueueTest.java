package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.SessionWindows;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Second review of f7fdee10/63dfdbbf (AwayRoom step-over, SessionQueue.removeAt): unit level. removeAt against a list
 * model across wraps and growth; AwayRoom plans carried out as MessageDelivery.reclaim does, against a model of who
 * holds what.
 */
class AwayRoomSecondReviewQueueTest
{
    private final AwayCopies fixture = new AwayCopies();
    private final SharedMessage.Pool pool = fixture.pool;
    private final SessionWindows windows = fixture.windows;

    private record Entry(SharedMessage message, int qos, boolean retain, int[] ids, int group)
    {
    }

    @Test
    @DisplayName("removeAt: any place, wrapped or not, grown or not: order, bytes, qos0, head, vacated slots nulled")
    void removeAtMatchesAListModel() throws Exception
    {
        final SplittableRandom random = new SplittableRandom(7);
        for (int round = 0; round < 300; round++)
        {
            final SessionQueue queue = new SessionQueue();
            final List<Entry> model = new ArrayList<>();
            for (int op = 0; op < 200; op++)
            {
                final int kind = random.nextInt(10);
                if (kind < 5 || model.isEmpty())
                {
                    final Entry e = new Entry(fixture.copy(random.nextInt(1, 40)), random.nextInt(3), random.nextBoolean(),
                        random.nextBoolean() ? null : new int[] {random.nextInt(100)}, random.nextInt(3));
                    queue.add(e.message, e.qos, e.retain, e.ids, e.group);
                    model.add(e);
                }
                else if (kind < 7)
                {
                    queue.remove(); // moves head: later removeAt work on a wrapped buffer
                    model.remove(0);
                }
                else
                {
                    final int at = random.nextInt(model.size());
                    final int headBefore = (int)AwayCopies.field(queue, "head");
                    queue.removeAt(at);
                    model.remove(at);
                    assertThat((int)AwayCopies.field(queue, "head")).as("head unchanged").isEqualTo(headBefore);
                }
                check(queue, model);
            }
        }
    }

    private static void check(final SessionQueue queue, final List<Entry> model) throws Exception
    {
        assertThat(queue.size()).isEqualTo(model.size());
        long bytes = 0;
        int qos0 = 0;
        for (int i = 0; i < model.size(); i++)
        {
            final Entry e = model.get(i);
            assertThat(queue.message(i)).isSameAs(e.message);
            assertThat(queue.qos(i)).isEqualTo(e.qos);
            assertThat(queue.retain(i)).isEqualTo(e.retain);
            assertThat(queue.subscriptionIds(i)).isSameAs(e.ids);
            assertThat(queue.group(i)).isEqualTo(e.group);
            bytes += e.message.length();
            qos0 += e.qos == 0 ? 1 : 0;
        }
        assertThat(queue.bytes()).isEqualTo(bytes);
        assertThat(queue.qos0Count()).isEqualTo(qos0);
        int live = 0;
        for (final Object m : (Object[])AwayCopies.field(queue, "messages"))
        {
            live += null == m ? 0 : 1;
        }
        assertThat(live).as("no slot outside the entries keeps a message").isEqualTo(model.size());
        int ids = 0;
        for (final Object m : (Object[])AwayCopies.field(queue, "subscriptionIds"))
        {
            ids += null == m ? 0 : 1;
        }
        assertThat(ids).as("no slot outside the entries keeps ids").isLessThanOrEqualTo(model.size());
    }

    /**
     * Random sessions away with random sharing, some copies also held elsewhere (a window, a connected queue, the
     * event): a plan carried out as reclaim does frees exactly what it says, drops only copies all of whose holders
     * are the dropped entries, and every queue keeps the rest in order.
     */
    @Test
    @DisplayName("plans carried out as reclaim does: exact, only whole copies, queues keep the rest in order")
    void plansAreExactAndKeepOrder()
    {
        final SplittableRandom random = new SplittableRandom(11);
        long planned = 0;
        for (int round = 0; round < 400; round++)
        {
            final ShardSessions sessions = new ShardSessions();
            final int count = random.nextInt(1, 12);
            final List<DeliverySession> away = new ArrayList<>();
            for (int s = 0; s < count; s++)
            {
                final DeliverySession session = new DeliverySession(s, true, 16, windows);
                sessions.put(session);
                away.add(session);
            }
            final Map<SharedMessage, Integer> extra = new IdentityHashMap<>();
            final int messages = random.nextInt(1, 120);
            for (int m = 0; m < messages; m++)
            {
                final SharedMessage message = fixture.copy(random.nextInt(1, 300));
                boolean any = false;
                for (final DeliverySession session : away)
                {
                    if (random.nextInt(3) == 0)
                    {
                        message.retain();
                        session.enqueue(message, random.nextInt(3), false, null, random.nextInt(5) == 0 ? 1 : 0);
                        sessions.queuedAway(session);
                        any = true;
                        if (random.nextInt(20) == 0) // the same copy twice in one queue
                        {
                            message.retain();
                            session.enqueue(message, 1, false, null, 0);
                        }
                    }
                }
                if (random.nextInt(6) == 0 || !any)
                {
                    message.retain(); // a window, a connected queue, or the event
                    extra.put(message, 1);
                }
            }
            final Map<DeliverySession, List<SharedMessage>> before = new HashMap<>();
            for (final DeliverySession session : away)
            {
                final List<SharedMessage> q = new ArrayList<>();
                for (int i = 0; i < session.queueSize(); i++)
                {
                    q.add(session.queuedMessage(i));
                }
                before.put(session, q);
            }
            final AwayRoom room = new AwayRoom();
            final long wanted = random.nextLong(1, 40_000);
            final long freeBefore = pool.freeBytes();
            final long plan = room.plan(sessions, wanted, 0);
            final Map<DeliverySession, List<Integer>> dropped = new IdentityHashMap<>();
            for (int d = 0; d < room.drops(); d++)
            {
                final DeliverySession session = room.dropSession(d);
                final int place = room.dropPlace(d);
                final List<Integer> done = dropped.computeIfAbsent(session, k -> new ArrayList<>());
                for (final int earlier : done)
                {
                    assertThat(place).as("a session's later drop below its earlier ones").isLessThan(earlier);
                }
                done.add(place);
                final SharedMessage message = session.queuedMessage(place);
                assertThat(extra).as("a copy held elsewhere is never dropped").doesNotContainKey(message);
                session.removeQueued(place);
                pool.release(message);
            }
            room.clear();
            assertThat(pool.freeBytes() - freeBefore).as("round " + round + ": planned " + plan).isEqualTo(plan);
            planned += plan;
            for (final DeliverySession session : away)
            {
                final List<SharedMessage> expect = new ArrayList<>(before.get(session));
                final List<Integer> places = dropped.getOrDefault(session, List.of());
                for (final int place : places) // newest first: each still where the plan saw it
                {
                    expect.remove(place);
                }
                final List<SharedMessage> now = new ArrayList<>();
                for (int i = 0; i < session.queueSize(); i++)
                {
                    now.add(session.queuedMessage(i));
                }
                assertThat(now).as("the rest, in order").containsExactlyElementsOf(expect);
            }
            // awayQueued: each live copy counts exactly the entries naming it
            final Map<SharedMessage, Integer> named = new IdentityHashMap<>();
            for (final DeliverySession session : away)
            {
                for (int i = 0; i < session.queueSize(); i++)
                {
                    named.merge(session.queuedMessage(i), 1, Integer::sum);
                }
            }
            named.forEach((m, n) -> assertThat(m.awayQueued).isEqualTo(n));
        }
        assertThat(planned).as("the rounds planned something").isPositive();
    }
}
