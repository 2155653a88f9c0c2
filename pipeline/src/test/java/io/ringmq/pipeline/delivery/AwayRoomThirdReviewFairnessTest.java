package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.SessionWindows;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Third review of 659e40df (helper-153), at the plan's level: which queue gives first when the largest one has a
 * message through a shared subscription on top. (Its other finding here, a copy one queue names twice, which is never
 * ready, no longer arises: delivery gives such a target a copy of its own, AwayRoomThirdReviewTest.)
 */
class AwayRoomThirdReviewFairnessTest
{
    private static final int DEVICES = 60;
    private static final int BIG = 4_000;

    private final AwayCopies fixture = new AwayCopies();
    private final SharedMessage.Pool pool = fixture.pool;
    private final SessionWindows windows = fixture.windows;

    /**
     * One attacker session away with 100 private copies of 4 KB and {@code grouped} one-byte copies of its alone on top,
     * each through a shared subscription (a group of its own); {@code DEVICES} honest devices away with one 4 KB copy
     * each.
     *
     * @return entries the attacker gives, entries the devices give, bytes planned, what was wanted.
     */
    private long[] plan(final int grouped, final int wantedCopies)
    {
        final ShardSessions sessions = new ShardSessions();
        final DeliverySession attacker = new DeliverySession(0, true, 16, windows);
        sessions.put(attacker);
        long cost = 0;
        for (int m = 0; m < 100; m++)
        {
            final SharedMessage c = fixture.copy(BIG);
            c.retain();
            attacker.enqueue(c, 1, false, null, 0);
            cost = c.cost();
        }
        for (int k = 0; k < grouped; k++)
        {
            final SharedMessage g = fixture.copy(1);
            g.retain();
            attacker.enqueue(g, 1, false, null, 1);
        }
        sessions.queuedAway(attacker);
        for (int s = 1; s <= DEVICES; s++)
        {
            final DeliverySession device = new DeliverySession(s, true, 16, windows);
            sessions.put(device);
            final SharedMessage c = fixture.copy(BIG);
            c.retain();
            device.enqueue(c, 1, false, null, 0);
            sessions.queuedAway(device);
        }
        final AwayRoom room = new AwayRoom();
        final long planned = room.plan(sessions, wantedCopies * cost, 0);
        long fromAttacker = 0;
        long fromDevices = 0;
        for (int d = 0; d < room.drops(); d++)
        {
            if (room.dropSession(d) == attacker)
            {
                fromAttacker++;
            }
            else
            {
                fromDevices++;
            }
        }
        room.clear();
        return new long[] {fromAttacker, fromDevices, planned, wantedCopies * cost};
    }

    @Test
    @DisplayName("control: the largest queue (400 KB) gives the 5 copies, no device does")
    void control()
    {
        final long[] r = plan(0, 5);
        assertThat(r[0]).isEqualTo(5);
        assertThat(r[1]).isZero();
    }

    @Test
    @DisplayName("one one-byte shared-subscription message on top of the largest queue (a group of its own): the 400 KB " +
        "queue still gives first (at 659e40df, and 63dfdbbf, the key's group bit came from the top entry alone, so " +
        "every device's message was taken first)")
    void oneGroupedCopyOnTopShouldNotPutTheDevicesFirst()
    {
        final long[] r = plan(1, 5);
        assertThat(r[1]).as("devices that gave (attacker gave " + r[0] + ")").isZero();
    }
}
