package io.ringmq.pipeline.delivery;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of efe0eabd (helper-154): the budget of steps ({@link AwayRoom#STEP_RATE}) starved honest plans. A plan that
 * the steps cut short freed nothing and spent them, so under one plan a millisecond the saved steps never reached what
 * an honest plan needed; and the queues listed first took every step from one behind them. Each plan here is made and
 * not carried out, so each sees the same queues.
 */
class AwayRoomStepsReviewTest
{
    private final AwayCopies fixture = new AwayCopies();
    private final ShardSessions sessions = fixture.sessions;
    private final AwayRoom room = new AwayRoom();

    @Test
    @DisplayName("1,024 devices away on one topic under a slow subscriber's 16 newest copies (16,384 steps a plan): " +
        "one plan a millisecond takes room back at the rate's pace (31 of 10,000 at efe0eabd)")
    void honestFleetUnderASlowSubscriber()
    {
        final SharedMessage open = fleet(8, 16);
        assertThat(new AwayRoom().plan(sessions, open.cost(), 0)).as("with all its steps").isEqualTo(open.cost());
        int taken = 0;
        for (long ms = 1_000_000; ms < 1_010_000; ms++)
        {
            taken += plan(open.cost(), ms) >= open.cost() ? 1 : 0;
        }
        // 8,192 steps a millisecond pay for a plan of 16,384 every other one
        assertThat(taken).isGreaterThanOrEqualTo(4_500);
        int takenTenAMs = 0;
        for (long ms = 2_000_000; ms < 2_001_000; ms++)
        {
            for (int p = 0; p < 10; p++)
            {
                takenTenAMs += plan(open.cost(), ms) >= open.cost() ? 1 : 0;
            }
        }
        assertThat(takenTenAMs).as("ten plans a millisecond (16 at efe0eabd)").isGreaterThanOrEqualTo(450);
    }

    @Test
    @DisplayName("one pin on top of each of 1,024 fleet queues (1,024 steps a plan): up to eight plans a millisecond " +
        "all take room back, and more plans than that take it back at the rate, the others looking at nothing")
    void onePinFleet()
    {
        final SharedMessage open = fleet(1, 1);
        plan(1L << 40, 0); // the saved steps spent
        for (final int perMs : new int[] {8, 50})
        {
            int taken = 0;
            final long start = 1_000_000L * perMs;
            for (long ms = start; ms < start + 1_000; ms++)
            {
                for (int p = 0; p < perMs; p++)
                {
                    taken += plan(open.cost(), ms) >= open.cost() ? 1 : 0;
                }
            }
            assertThat(taken).as(perMs + " plans a millisecond").isGreaterThanOrEqualTo(perMs == 8 ? 7_900 : 7_000);
        }
    }

    @Test
    @DisplayName("an attacker's 1,023 queues of 300 pins listed first (more than a plan's work), an honest copy under " +
        "one pin behind them: taken back by each plan the rate pays for, one in 32 ms (never, looked at queue by queue)")
    void pinsListedFirstLeaveStepsForAQueueBehind()
    {
        for (int s = 0; s < ShardSessions.AWAY_LOOK - 1; s++)
        {
            final DeliverySession attacker = fixture.session();
            for (int m = 0; m < 300; m++)
            {
                fixture.queue(attacker, fixture.pinned(10));
            }
        }
        final DeliverySession honest = fixture.session();
        final SharedMessage open = fixture.copy(1_000);
        fixture.queue(honest, open);
        fixture.queue(honest, fixture.pinned(10));
        int taken = 0;
        for (long ms = 1_000_000; ms < 1_010_000; ms++)
        {
            taken += plan(open.cost(), ms) >= open.cost() ? 1 : 0;
        }
        // the first offers step one entry of each queue, then two, four...: the honest queue offers in the first round;
        // every plan that steps goes on until its work is spent (the largest queues give first, so each is looked
        // through: review of 63dfdbbf, helper-152), and 8,192 steps a millisecond pay for one such plan in 32
        assertThat(taken).isGreaterThanOrEqualTo(280);
    }

    @Test
    @DisplayName("an attacker's 50,400 pins (56 copies in 900 queues) and its 500 KB queue under one pin, 100 honest " +
        "devices with open tops: every plan made takes from the attacker's queue, none from a device (at 59223744, " +
        "1,670 of 2,000 plans took from the devices; review of 59223744, helper-155)")
    void theQueueKeepingTheMostGivesUnderAPinMass()
    {
        final DeliverySession big = fixture.session();
        for (int m = 0; m < 100; m++)
        {
            fixture.queue(big, fixture.copy(5_000));
        }
        fixture.queue(big, fixture.pinned(10));
        fixture.pinMass(900, 56);
        for (int s = 0; s < 100; s++)
        {
            final DeliverySession device = fixture.session();
            for (int m = 0; m < 10; m++)
            {
                fixture.queue(device, fixture.copy(100));
            }
        }
        int byBig = 0;
        int byDevices = 0;
        for (long ms = 1_000_000; ms < 1_002_000; ms++)
        {
            room.plan(sessions, 1, ms);
            if (room.drops() > 0)
            {
                byBig += room.dropSession(0) == big ? 1 : 0;
                byDevices += room.dropSession(0) == big ? 0 : 1;
            }
            room.clear();
        }
        assertThat(byDevices).isZero();
        // each plan steps over the 50,401 pins, and 8,192 steps a millisecond pay for one in about six
        assertThat(byBig).isGreaterThanOrEqualTo(300);
    }

    /**
     * 1,024 sessions away on one topic: {@code open} older copies only they hold, then {@code pins} newer ones that a
     * connected slow subscriber holds too.
     *
     * @return the newest open copy.
     */
    private SharedMessage fleet(final int open, final int pins)
    {
        final List<DeliverySession> fleet = new ArrayList<>();
        for (int s = 0; s < ShardSessions.AWAY_LOOK; s++)
        {
            fleet.add(fixture.session());
        }
        SharedMessage newestOpen = null;
        for (int m = 0; m < open + pins; m++)
        {
            final SharedMessage copy = m < open ? fixture.copy(1_000) : fixture.pinned(1_000);
            for (final DeliverySession session : fleet)
            {
                fixture.queue(session, copy);
            }
            newestOpen = m < open ? copy : newestOpen;
        }
        return newestOpen;
    }

    private long plan(final long wanted, final long atMs)
    {
        final long freed = room.plan(sessions, wanted, atMs);
        room.clear();
        return freed;
    }
}
