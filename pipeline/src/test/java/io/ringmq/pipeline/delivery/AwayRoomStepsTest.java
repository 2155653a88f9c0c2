package io.ringmq.pipeline.delivery;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The entries plans step over are bounded in time ({@link AwayRoom#STEP_RATE}): an attacker's pins under every queue
 * away (copies a connected client holds too) made each plan cost the shard about 2.7 ms, and every event that wanted
 * room planned again (stop 60's open case). A plan waits until the steps it needs are saved, and then looks as deep as
 * the last one did; what lies under pins is given once they are, however often plans come (review of efe0eabd,
 * helper-154: plans cut short spent the steps for nothing, and one a millisecond starved an honest fleet); and the pins
 * of queues listed first do not take every step from a queue behind them.
 */
class AwayRoomStepsTest
{
    /**
     * Pins in each of the attacker's 1,023 queues: 204,600 in all, most of one plan's work, so that one plan with all
     * its steps still reaches a queue past them.
     */
    private static final int PINS = 200;
    private static final int QUEUES = ShardSessions.AWAY_LOOK;

    private final AwayCopies fixture = new AwayCopies();
    private final ShardSessions sessions = fixture.sessions;
    private final AwayRoom room = new AwayRoom();

    @BeforeEach
    void pins()
    {
        for (int s = 0; s < QUEUES - 1; s++)
        {
            final DeliverySession session = fixture.session();
            for (int m = 0; m < PINS; m++)
            {
                fixture.queue(session, fixture.pinned(10));
            }
        }
    }

    @Test
    @DisplayName("plans back to back within one millisecond step over one plan's work in all, then only look")
    void stepsInOneMillisecondAreOnePlans()
    {
        long steps = 0;
        for (int p = 0; p < 1_000; p++)
        {
            assertThat(plan(1, 5_000)).isZero();
            steps += room.steps();
            if (p == 0)
            {
                assertThat(room.steps()).as("the first plan steps over every pin").isEqualTo((QUEUES - 1) * PINS);
            }
        }
        assertThat(steps).isLessThanOrEqualTo(AwayRoom.STEP_BURST);
        assertThat(room.steps()).as("the last plan steps over nothing").isZero();
    }

    @Test
    @DisplayName("over 200 ms of plans, ten a millisecond, the steps are at most the burst plus the rate for each " +
        "millisecond, and most of the rate is used")
    void stepsOverTimeAreTheRate()
    {
        long steps = 0;
        for (long ms = 5_000; ms < 5_200; ms++)
        {
            for (int p = 0; p < 10; p++)
            {
                assertThat(plan(1, ms)).isZero();
                steps += room.steps();
            }
        }
        assertThat(steps).isLessThanOrEqualTo(AwayRoom.STEP_BURST + 200 * AwayRoom.STEP_RATE)
            .as("only the steps saved for the next whole plan are left").isGreaterThan(199 * AwayRoom.STEP_RATE);
    }

    @Test
    @DisplayName("until as many steps are saved as the last plan took, a plan looks at nothing, not even a copy on top " +
        "of a queue; then the copy is taken back")
    void plansWaitForTheStepsTheLastOneTook()
    {
        spendSteps(7_000);
        final SharedMessage alone = fixture.copy(100);
        fixture.queue(fixture.session(), alone);
        assertThat(plan(alone.cost(), 7_000)).isZero();
        assertThat(room.drops()).isZero();
        assertThat(plan(alone.cost(), 7_010)).as("10 ms: 81,920 more steps, fewer than the last plan's 204,600").isZero();
        assertThat(plan(alone.cost(), 7_020)).as("20 ms: enough").isEqualTo(alone.cost());
        assertThat(room.drops()).isOne();
        assertThat(room.steps()).as("it looked as deep as the last, past every pin").isEqualTo((QUEUES - 1) * PINS);
    }

    @Test
    @DisplayName("a copy under 20,000 pins waits for the steps, and is taken back once time brings them")
    void aCopyUnderPinsIsTakenOnceStepsCome()
    {
        spendSteps(9_000);
        final DeliverySession holder = fixture.session();
        final SharedMessage under = fixture.copy(100);
        fixture.queue(holder, under);
        for (int m = 0; m < 20_000; m++)
        {
            fixture.queue(holder, fixture.pinned(10));
        }
        assertThat(plan(under.cost(), 9_000)).as("no steps left: nothing").isZero();
        assertThat(room.drops()).isZero();
        assertThat(plan(under.cost(), 9_001)).as("one millisecond: 8,192 steps").isZero();
        assertThat(plan(under.cost(), 9_100)).as("a full plan's steps: past every pin").isEqualTo(under.cost());
        assertThat(room.drops()).isOne();
        assertThat(room.dropPlace(0)).isZero();
    }

    @Test
    @DisplayName("a clock set back refills nothing, and refills again from where it was set")
    void aClockSetBackRefillsNothing()
    {
        spendSteps(1_000_000);
        assertThat(plan(1, 10)).isZero();
        assertThat(room.steps()).isZero();
        assertThat(plan(1, 50)).isZero();
        assertThat(room.steps()).as("40 ms after the time set back: a whole plan's steps, past every pin")
            .isEqualTo((QUEUES - 1) * PINS);
    }

    private void spendSteps(final long atMs)
    {
        for (int p = 0; p < 10 && (p == 0 || room.steps() > 0); p++)
        {
            plan(1, atMs);
        }
        assertThat(room.steps()).as("spent").isZero();
    }

    private long plan(final long wanted, final long atMs)
    {
        room.clear();
        return room.plan(sessions, wanted, atMs);
    }
}
