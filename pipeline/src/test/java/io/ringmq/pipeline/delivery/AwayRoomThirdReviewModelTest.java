package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.SessionWindows;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Third review of 659e40df (AwayRoom: ready copies, offers kept across steps, a heap of ready offers): the incremental
 * bookkeeping against a naive model that recomputes every queue's offer from scratch at each step (same rules: step
 * over what is not held only away or blocked, ready when every entry naming a copy is offered, best key = a queue
 * holding anything not through a shared subscription, then bytes left; stuck = block every offer, at most 16 times).
 * Compared up to the first tie between distinct copies (the heap's order among equal keys is not specified). Also
 * checks the offerer lists and counts left at a plan's end, and plans run again over the same copies (stamps of plan N
 * seen by plan N+1), some from a plan number past 2^31 (an int stamp wrapped there, helper-153: stamps are longs now).
 */
class AwayRoomThirdReviewModelTest
{
    private final AwayCopies fixture = new AwayCopies();
    private final SessionWindows windows = fixture.windows;

    private record ModelPlan(List<SharedMessage> taken, long freed, boolean tie, int stuck, int dropBlocked)
    {
    }

    private static final long UNGROUPED = 1L << 62;

    /** The naive model: every step recomputes every offer. */
    private static ModelPlan model(final List<DeliverySession> window, final long wanted)
    {
        final int n = window.size();
        final int[] next = new int[n];
        final long[] left = new long[n];
        for (int i = 0; i < n; i++)
        {
            next[i] = window.get(i).queueSize() - 1;
            left[i] = window.get(i).queuedBytes();
        }
        final Set<SharedMessage> blocked = Collections.newSetFromMap(new IdentityHashMap<>());
        final List<SharedMessage> taken = new ArrayList<>();
        long freed = 0;
        int copies = 0;
        int drops = 0;
        int stuck = 0;
        int dropBlocked = 0;
        while (freed < wanted && copies < AwayRoom.MOST_COPIES && drops < AwayRoom.MOST_DROPS)
        {
            final SharedMessage[] offer = new SharedMessage[n];
            final Map<SharedMessage, List<Integer>> by = new LinkedHashMap<>();
            for (int i = 0; i < n; i++)
            {
                while (next[i] >= 0)
                {
                    final SharedMessage m = window.get(i).queuedMessage(next[i]);
                    if (m.heldOnlyAway() && !blocked.contains(m))
                    {
                        offer[i] = m;
                        break;
                    }
                    next[i]--;
                }
                if (null != offer[i])
                {
                    by.computeIfAbsent(offer[i], k -> new ArrayList<>()).add(i);
                }
            }
            int best = -1;
            long bestKey = -1;
            boolean tie = false;
            for (int i = 0; i < n; i++)
            {
                if (null == offer[i] || by.get(offer[i]).size() != offer[i].awayQueued)
                {
                    continue;
                }
                final long key = (window.get(i).queuesOnlyThroughGroups() ? 0 : UNGROUPED) + left[i];
                if (key > bestKey)
                {
                    best = i;
                    bestKey = key;
                    tie = false;
                }
                else if (key == bestKey && offer[i] != offer[best])
                {
                    tie = true;
                }
            }
            if (tie)
            {
                return new ModelPlan(taken, freed, true, stuck, dropBlocked);
            }
            if (best < 0)
            {
                if (++stuck > AwayRoom.MOST_STUCK || by.isEmpty())
                {
                    break;
                }
                blocked.addAll(by.keySet());
                continue;
            }
            final SharedMessage c = offer[best];
            final List<Integer> found = by.get(c);
            if (drops + found.size() > AwayRoom.MOST_DROPS)
            {
                blocked.add(c);
                dropBlocked++;
                continue;
            }
            for (final int i : found)
            {
                drops++;
                left[i] -= c.length();
                next[i]--;
            }
            copies++;
            freed += c.cost();
            taken.add(c);
        }
        return new ModelPlan(taken, freed, false, stuck, dropBlocked);
    }

    @Test
    @DisplayName("plans match the naive model (copies taken, in order, and bytes freed), lists stay exact, drops go " +
        "newest down in each queue and free exactly the plan, over repeated plans and the plan counter's wrap")
    void plansMatchTheNaiveModel() throws Exception
    {
        final SplittableRandom random = new SplittableRandom(61);
        int compared = 0;
        int ties = 0;
        int dropBound = 0;
        int stuckPlans = 0;
        int stuckOut = 0;
        for (int round = 0; round < 500; round++)
        {
            final ShardSessions sessions = new ShardSessions();
            final int count = random.nextInt(1, 48);
            final List<DeliverySession> all = new ArrayList<>();
            final List<DeliverySession> window = new ArrayList<>();
            for (int s = 0; s < count; s++)
            {
                final DeliverySession session = new DeliverySession(s, true, 16, windows);
                sessions.put(session);
                all.add(session);
            }
            final int messages = random.nextInt(1, 160);
            final int style = random.nextInt(4); // 0 sparse, 1 dense, 2 everyone shares, 3 layered non-ready
            for (int m = 0; m < messages; m++)
            {
                final SharedMessage message = fixture.copy(random.nextInt(1, 3_000));
                boolean any = false;
                final int share = style == 2 && random.nextInt(3) > 0 ? 1 : style == 1 ? 2 : style == 3 ? 4 : 6;
                for (final DeliverySession session : all)
                {
                    if (random.nextInt(share) == 0)
                    {
                        message.retain();
                        session.enqueue(message, 1, false, null, random.nextInt(5) == 0 ? 1 : 0);
                        any = true;
                        if (style != 2 && random.nextInt(style == 3 ? 6 : 30) == 0) // the same copy twice in one queue
                        {
                            message.retain();
                            session.enqueue(message, 1, false, null, 0);
                        }
                    }
                }
                if (!any)
                {
                    message.retain();
                    all.get(random.nextInt(count)).enqueue(message, 1, false, null, 0);
                }
                if (random.nextInt(8) == 0)
                {
                    message.retain(); // a window, a connected queue, or the event
                }
            }
            for (final DeliverySession session : all)
            {
                if (session.queueSize() > 0 && (style == 2 || random.nextInt(12) != 0)) // some away sessions are outside the window
                {
                    sessions.queuedAway(session);
                    window.add(session);
                }
            }
            final AwayRoom room = new AwayRoom();
            if (random.nextInt(4) == 0)
            {
                AwayCopies.setField(room, "plan", (long)Integer.MAX_VALUE - random.nextInt(3));
            }
            final int plans = random.nextInt(1, 4);
            for (int p = 0; p < plans; p++)
            {
                final long wanted = random.nextInt(3) == 0 ? Long.MAX_VALUE : random.nextLong(1, 80_000);
                final ModelPlan expect = model(window, wanted);
                final long planned = room.plan(sessions, wanted, p * 1_000L); // a second apart: each plan has all its steps
                AwayCopies.checkOfferLists(room);
                assertThat((int)AwayCopies.field(room, "work")).as("work bound").isLessThan(AwayRoom.MOST_WORK);
                final List<SharedMessage> taken = AwayCopies.checkDrops(room, "round " + round);
                dropBound += expect.dropBlocked() > 0 ? 1 : 0;
                stuckPlans += expect.stuck() > 0 ? 1 : 0;
                stuckOut += expect.stuck() > AwayRoom.MOST_STUCK ? 1 : 0;
                final String as = "round " + round + " plan " + p + " style " + style;
                if (expect.tie())
                {
                    ties++;
                    assertThat(taken.subList(0, Math.min(taken.size(), expect.taken().size()))).as(as)
                        .containsExactlyElementsOf(expect.taken());
                }
                else
                {
                    compared++;
                    assertThat(taken).as(as + " copies taken").containsExactlyElementsOf(expect.taken());
                    assertThat(planned).as(as + " freed").isEqualTo(expect.freed());
                }
                if (random.nextBoolean() || p == plans - 1)
                {
                    fixture.carryOut(room, planned, as);
                }
                else
                {
                    room.clear(); // given up: the copies keep this plan's stamps into the next
                }
            }
        }
        System.out.println("compared " + compared + " ties " + ties + " drop-blocked " + dropBound + " stuck " +
            stuckPlans + " stuck out " + stuckOut);
        assertThat(compared).as("plans compared whole").isGreaterThan(300);
        assertThat(dropBound).as("plans that blocked a copy for the drop bound").isPositive();
        assertThat(stuckPlans).as("plans stuck at least once").isPositive();
        assertThat(stuckOut).as("plans that ran out of stuck rounds").isPositive();
    }
}
