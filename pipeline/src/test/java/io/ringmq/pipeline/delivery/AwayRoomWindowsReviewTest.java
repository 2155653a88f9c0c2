package io.ringmq.pipeline.delivery;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of c39cb5cb (helper-156): with more than 1,024 sessions away the window of each plan moves on after every event
 * ({@link ShardSessions#lookFurther}), and one count of steps wanted for all windows broke what it stood for. Each
 * {@code plan} here is one event that wanted room, not carried out, and the window moves on after it, as
 * {@code MessageDelivery} does.
 */
class AwayRoomWindowsReviewTest
{
    private final AwayCopies fixture = new AwayCopies();
    private final ShardSessions sessions = fixture.sessions;
    private final AwayRoom room = new AwayRoom();

    @Test
    @DisplayName("a cheap window (8 pins a queue) beside the attacker's (its 500 KB queue under 20,000 pins, 1,023 " +
        "honest devices): no plan in the attacker's window takes from a device (250 of 759 did at c39cb5cb)")
    void aCheapWindowDoesNotLetTheNextPlanLookShallow()
    {
        final Set<DeliverySession> windowA = new HashSet<>();
        final DeliverySession big = fixture.session();
        windowA.add(big);
        for (int m = 0; m < 100; m++)
        {
            fixture.queue(big, fixture.copy(5_000));
        }
        for (int m = 0; m < 20_000; m++)
        {
            fixture.queue(big, fixture.pinned(10));
        }
        for (int s = 1; s < ShardSessions.AWAY_LOOK; s++)
        {
            final DeliverySession device = fixture.session();
            windowA.add(device);
            for (int m = 0; m < 10; m++)
            {
                fixture.queue(device, fixture.copy(100));
            }
        }
        for (int s = 0; s < ShardSessions.AWAY_LOOK; s++) // window B
        {
            final DeliverySession device = fixture.session();
            for (int m = 0; m < 10; m++)
            {
                fixture.queue(device, fixture.copy(100));
            }
            for (int m = 0; m < 8; m++)
            {
                fixture.queue(device, fixture.pinned(10));
            }
        }
        int byBig = 0;
        int byDevicesOfA = 0;
        int inB = 0;
        for (long ms = 1_000_000; ms < 1_002_000; ms++)
        {
            for (int p = 0; p < 5; p++)
            {
                if (event(ms) > 0)
                {
                    final DeliverySession first = room.dropSession(0);
                    byBig += first == big ? 1 : 0;
                    byDevicesOfA += first != big && windowA.contains(first) ? 1 : 0;
                    inB += windowA.contains(first) ? 0 : 1;
                }
                room.clear();
            }
        }
        assertThat(byDevicesOfA).isZero();
        assertThat(byBig).as("the attacker's queue gives when its window is planned").isPositive();
        assertThat(inB).as("the cheap window's plans are made at the rate (8,192 steps each)").isGreaterThan(1_500);
    }

    @Test
    @DisplayName("a window of 50,400 pins beside two windows of honest devices with nothing pinned: events in theirs get " +
        "room back at once (175 of 30,000 events did at c39cb5cb)")
    void aPinnedWindowDoesNotHoldBackTheOthers()
    {
        fixture.pinMass(900, 56);
        for (int s = 0; s < 124 + 2 * ShardSessions.AWAY_LOOK; s++)
        {
            final DeliverySession device = fixture.session();
            for (int m = 0; m < 50; m++)
            {
                fixture.queue(device, fixture.copy(100));
            }
        }
        int taken = 0;
        for (long ms = 1_000_000; ms < 1_001_000; ms++)
        {
            for (int p = 0; p < 30; p++)
            {
                taken += event(ms) > 0 ? 1 : 0;
                room.clear();
            }
        }
        assertThat(taken).as("of 30,000 events, two in three in the honest windows").isGreaterThanOrEqualTo(20_000);
    }

    @Test
    @DisplayName("2,048 honest devices on one topic (copies shared across two windows, never ready in either) over " +
        "private ones: stepping over the shared copies takes no steps, and every event gets room back (924 of 6,000 " +
        "did at c39cb5cb)")
    void copiesSharedAcrossWindowsAreNoPins()
    {
        final List<DeliverySession> fleet = new ArrayList<>();
        for (int s = 0; s < 2 * ShardSessions.AWAY_LOOK; s++)
        {
            fleet.add(fixture.session());
        }
        for (final DeliverySession device : fleet)
        {
            for (int m = 0; m < 3; m++)
            {
                fixture.queue(device, fixture.copy(100));
            }
        }
        for (int m = 0; m < 2; m++)
        {
            final SharedMessage telemetry = fixture.copy(100);
            for (final DeliverySession device : fleet)
            {
                fixture.queue(device, telemetry);
            }
        }
        int taken = 0;
        for (long ms = 1_000_000; ms < 1_000_200; ms++)
        {
            for (int p = 0; p < 30; p++)
            {
                taken += event(ms) > 0 ? 1 : 0;
                assertThat(room.steps()).isZero();
                room.clear();
            }
        }
        assertThat(taken).isEqualTo(6_000);
    }

    @Test
    @DisplayName("a plan made with fewer steps than its first offers need (the pins grew since the last plan there) " +
        "takes nothing: not the devices' open copies while the attacker's 500 KB queue under 50 pins is not reached")
    void aPlanCutShortInItsFirstOffersTakesNothing() throws ReflectiveOperationException
    {
        for (int s = 0; s < 900; s++)
        {
            final DeliverySession attacker = fixture.session();
            for (int m = 0; m < 300; m++)
            {
                fixture.queue(attacker, fixture.pinned(10));
            }
        }
        final DeliverySession big = fixture.session();
        for (int m = 0; m < 100; m++)
        {
            fixture.queue(big, fixture.copy(5_000));
        }
        for (int m = 0; m < 50; m++)
        {
            fixture.queue(big, fixture.pinned(10));
        }
        for (int s = 0; s < 100; s++)
        {
            fixture.queue(fixture.session(), fixture.copy(100));
        }
        assertThat(room.plan(sessions, 1, 1_000)).as("with all its steps").isPositive();
        assertThat(room.dropSession(0)).isSameAs(big);
        room.clear();
        AwayCopies.setField(room, "stepsLeft", 10_000L); // what the last plan here took is saved, and no more
        ((long[])AwayCopies.field(room, "stepsWanted"))[0] = 10_000L;
        assertThat(room.plan(sessions, 1, 1_000)).isZero();
        assertThat(room.drops()).isZero();
        assertThat(room.steps()).isEqualTo(10_000);
        assertThat(((long[])AwayCopies.field(room, "stepsWanted"))[0]).as("twice as many next time").isEqualTo(20_000);
    }

    /**
     * One event that wants a byte of room: a plan, and the window moves on.
     */
    private long event(final long atMs)
    {
        final long freed = room.plan(sessions, 1, atMs);
        sessions.lookFurther();
        return freed;
    }
}
