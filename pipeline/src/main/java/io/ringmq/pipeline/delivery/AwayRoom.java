package io.ringmq.pipeline.delivery;

import java.util.Arrays;

/**
 * Which queued messages of sessions away a full share takes back for a connected client
 * ({@code MessageDelivery.reclaim}), planned whole before anything is dropped, so nothing is dropped unless the plan
 * frees what is wanted. A copy is freed only by dropping it from every queue that names it, and only when those queues
 * are all it is held by ({@link SharedMessage#heldOnlyAway}): not in flight to anyone [MQTT-4.4.0-1], not queued for a
 * connected client, not the event being delivered.
 * <p>
 * Each session gives from the newest end of its queue down, stepping over what cannot be freed (up to
 * {@link #LOOK_DEEP} entries of it a plan): one tiny message newest in every queue and in flight to a connection that
 * never acknowledges made every queue under it give nothing (review of f7fdee10, helper-151). Copies come from the
 * sessions that queue the most first, messages that came through a shared subscription only when no other is left to
 * take. A copy that sessions away share (one topic, many devices) goes from all of them at once, when each has it as
 * the next it would give: before, each session gave back only copies it held alone, so sessions away that shared their
 * copies gave back nothing, and one host's sessions away plus its connections that never acknowledge held the whole
 * share (AwayReclaimTest, ReclaimSecondReviewTest). A copy the plan cannot take so is stepped over by all of its
 * holders.
 * <p>
 * A plan looks at one window of the shard's sessions away ({@link ShardSessions#awayWindow}): a copy some of whose
 * holders are outside it stays (open: two sessions of a host listed more than a window apart keep what they share
 * while more than 2,048 sessions are away). Owned by its shard's thread.
 */
final class AwayRoom
{
    /** The most copies one plan frees. */
    static final int MOST_COPIES = 64;
    /** The most copies one plan finds it cannot take before it gives up. */
    static final int MOST_BLOCKED = 32;
    /** The most entries of one session's queue a plan steps over as not to be freed. */
    static final int LOOK_DEEP = 64;
    /** The most queue entries one plan drops: each was queued once, so the work is bounded by what made the copies. */
    static final int MOST_DROPS = ShardSessions.AWAY_LOOK;

    private final DeliverySession[] window = new DeliverySession[ShardSessions.AWAY_LOOK];
    private int count;
    /** For each window session: the place in its queue the plan looks at next, from the newest down; -1 past the end. */
    private final int[] next = new int[ShardSessions.AWAY_LOOK];
    /** For each window session: the entries the plan stepped over. */
    private final int[] skipped = new int[ShardSessions.AWAY_LOOK];
    /** For each window session: the bytes of what the plan drops from its queue. */
    private final long[] dropBytes = new long[ShardSessions.AWAY_LOOK];
    /** The window sessions that have the copy being planned as their next: scratch. */
    private final int[] holders = new int[ShardSessions.AWAY_LOOK];
    /** The planned drops, in order: the window session, and the place in its queue. */
    private final int[] dropAt = new int[MOST_DROPS];
    private final int[] dropFrom = new int[MOST_DROPS];
    private int drops;
    /** Stamps the copies a plan finds it cannot take ({@link SharedMessage#blockedInPlan}). */
    private int plan;

    /**
     * Plans to free {@code wanted} bytes from the sessions away of the shard's next window: up to
     * {@link #MOST_COPIES} copies and {@link #MOST_DROPS} queue entries.
     *
     * @return what the plan frees: at least {@code wanted}, or what it could find in all when that is less.
     */
    long plan(final ShardSessions sessions, final long wanted)
    {
        count = sessions.awayWindow(window);
        drops = 0;
        for (int i = 0; i < count; i++)
        {
            next[i] = window[i].queueSize() - 1;
        }
        Arrays.fill(skipped, 0, count, 0);
        Arrays.fill(dropBytes, 0, count, 0);
        if (++plan == 0)
        {
            plan = 1; // 0 is a new copy's: never a plan's stamp
        }
        long freed = 0;
        int copies = 0;
        int blocked = 0;
        while (freed < wanted && copies < MOST_COPIES && blocked < MOST_BLOCKED)
        {
            final SharedMessage copy = nextCopy();
            if (null == copy)
            {
                break;
            }
            int found = 0;
            for (int i = 0; i < count; i++)
            {
                if (next[i] >= 0 && copy == window[i].queuedMessage(next[i]))
                {
                    holders[found++] = i;
                }
            }
            if (found != copy.awayQueued || drops + found > MOST_DROPS)
            {
                copy.blockedInPlan = plan; // a holder outside the window or with it deeper: every holder steps over it
                blocked++;
                continue;
            }
            for (int h = 0; h < found; h++)
            {
                final int i = holders[h];
                dropFrom[drops] = i;
                dropAt[drops++] = next[i];
                dropBytes[i] += copy.length();
                next[i]--;
            }
            copies++;
            freed += copy.cost();
        }
        return freed;
    }

    /**
     * @return how many queue entries the last plan drops.
     */
    int drops()
    {
        return drops;
    }

    /**
     * @return the session of the {@code d}th planned drop.
     */
    DeliverySession dropSession(final int d)
    {
        return window[dropFrom[d]];
    }

    /**
     * @return the place in its session's queue, from the oldest, of the {@code d}th planned drop: a session's drops
     * come from its newest down, so carried out in order each place is still where the plan saw it.
     */
    int dropPlace(final int d)
    {
        return dropAt[d];
    }

    /**
     * Forgets the last plan's sessions: the window holds none of them once it is carried out, or given up.
     */
    void clear()
    {
        Arrays.fill(window, 0, count, null);
        count = 0;
        drops = 0;
    }

    /**
     * @return the copy the plan takes next: the next entry of the window session whose queue keeps the most bytes
     * after what the plan drops already; one that came through a shared subscription only when no other can be (its
     * group would have it handed to another member when the session ends); null when none is left.
     */
    private SharedMessage nextCopy()
    {
        int best = -1;
        boolean bestGrouped = true;
        long bestBytes = -1;
        for (int i = 0; i < count; i++)
        {
            if (!stepToFreeable(i))
            {
                continue;
            }
            final boolean grouped = 0 != window[i].queuedGroup(next[i]);
            final long bytes = window[i].queuedBytes() - dropBytes[i];
            if (best < 0 || bestGrouped && !grouped || bestGrouped == grouped && bytes > bestBytes)
            {
                best = i;
                bestGrouped = grouped;
                bestBytes = bytes;
            }
        }
        return best < 0 ? null : window[best].queuedMessage(next[best]);
    }

    /**
     * Moves window session {@code i}'s next place down past entries that cannot be freed (held by more than sessions
     * away, or a copy this plan cannot take), up to {@link #LOOK_DEEP} of them.
     *
     * @return whether it has an entry that can be.
     */
    private boolean stepToFreeable(final int i)
    {
        final DeliverySession session = window[i];
        while (next[i] >= 0)
        {
            final SharedMessage copy = session.queuedMessage(next[i]);
            if (copy.heldOnlyAway() && plan != copy.blockedInPlan)
            {
                return true;
            }
            if (++skipped[i] > LOOK_DEEP)
            {
                next[i] = -1;
                return false;
            }
            next[i]--;
        }
        return false;
    }
}
