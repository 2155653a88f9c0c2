package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.SessionWindows;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 59223744 (helper-155): the plan's bookkeeping with stepCap rounds and small, random budgets (stepsLeft and
 * stepsWanted set before each plan, random clocks): lists exact, no copy twice, each taken copy dropped from every
 * entry naming it and held only away, places go down, freed exactly what was planned, steps within the limit.
 */
class AwayRoomStepsBookkeepingTest
{
    private final AwayCopies fixture = new AwayCopies();
    private final SessionWindows windows = fixture.windows;

    @Test
    @DisplayName("3,000 random shards, plans with small and random budgets, waits and clocks: lists exact, no copy taken " +
        "twice, each taken copy held only away and dropped from every entry, places going down, freed exactly what was " +
        "planned, steps within the limit")
    void smallBudgetsKeepTheBookkeeping() throws Exception
    {
        final SplittableRandom random = new SplittableRandom(62);
        int cut = 0;
        int waited = 0;
        int plansWithDrops = 0;
        for (int round = 0; round < 3_000; round++)
        {
            final ShardSessions sessions = new ShardSessions();
            final int count = random.nextInt(1, 40);
            final List<DeliverySession> all = new ArrayList<>();
            for (int s = 0; s < count; s++)
            {
                final DeliverySession session = new DeliverySession(s, true, 16, windows);
                sessions.put(session);
                all.add(session);
            }
            final int messages = random.nextInt(1, 200);
            final int share = random.nextInt(1, 8);
            for (int m = 0; m < messages; m++)
            {
                final SharedMessage message = fixture.copy(random.nextInt(1, 3_000));
                boolean any = false;
                for (final DeliverySession session : all)
                {
                    if (random.nextInt(share) == 0)
                    {
                        message.retain();
                        session.enqueue(message, 1, false, null, random.nextInt(5) == 0 ? 1 : 0);
                        any = true;
                        if (random.nextInt(40) == 0)
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
                if (random.nextInt(3) == 0)
                {
                    message.retain(); // a pin: held by a connected client too
                }
            }
            for (final DeliverySession session : all)
            {
                if (session.queueSize() > 0 && random.nextInt(10) != 0)
                {
                    sessions.queuedAway(session);
                }
            }
            final AwayRoom room = new AwayRoom();
            long nowMs = random.nextLong(0, 1L << 40);
            for (int p = 0; p < 6; p++)
            {
                nowMs += random.nextInt(3) - (random.nextInt(20) == 0 ? 5 : 0);
                AwayCopies.setField(room, "stepsLeft", random.nextLong(0, 400));
                AwayCopies.setField(room, "stepsAtMs", nowMs);
                ((long[])AwayCopies.field(room, "stepsWanted"))[0] = random.nextInt(4) == 0 ? random.nextLong(0, 400) : 0L;
                final long wanted = random.nextInt(3) == 0 ? Long.MAX_VALUE : random.nextLong(1, 40_000);
                final long planned = room.plan(sessions, wanted, nowMs);
                final long steps = room.steps();
                final long limit = (long)AwayCopies.field(room, "stepLimit");
                assertThat(steps).isLessThanOrEqualTo(limit);
                assertThat((long)AwayCopies.field(room, "stepsLeft")).isNotNegative();
                cut += steps == limit && limit > 0 ? 1 : 0;
                waited += limit == 0 ? 1 : 0;
                AwayCopies.checkOfferLists(room);
                long cost = 0;
                for (final SharedMessage m : AwayCopies.checkDrops(room, "round " + round))
                {
                    cost += m.cost();
                }
                assertThat(cost).isEqualTo(planned);
                plansWithDrops += room.drops() > 0 ? 1 : 0;
                if (random.nextBoolean())
                {
                    fixture.carryOut(room, planned, "round " + round);
                }
                else
                {
                    room.clear();
                }
            }
        }
        assertThat(cut).isPositive();
        assertThat(waited).isPositive();
        assertThat(plansWithDrops).as("plans that took copies back").isPositive();
    }
}
