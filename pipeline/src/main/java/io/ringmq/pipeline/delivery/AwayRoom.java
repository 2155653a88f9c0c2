package io.ringmq.pipeline.delivery;

/**
 * Which queued messages of sessions away a full share takes back for a connected client
 * ({@code MessageDelivery.reclaim}), planned whole before anything is dropped, so nothing is dropped unless the plan
 * frees what is wanted. A copy is freed only by dropping it from every queue that names it, and only when those queues
 * are all it is held by ({@link SharedMessage#heldOnlyAway}): not in flight to anyone [MQTT-4.4.0-1], not queued for a
 * connected client, not the event being delivered. Each session gives from the newest end of its queue.
 * <p>
 * Copies are taken from the sessions that queue the most first, messages that came through a shared subscription
 * only when no other is left to take. A copy that sessions away share (one topic, many devices) goes from all of them
 * at once: before, each session gave back only copies it held alone, so sessions away that shared their copies gave
 * back nothing, and one host's sessions away plus its connections that never acknowledge held the whole share
 * (AwayReclaimTest, ReclaimSecondReviewTest). A plan looks at one window of the shard's sessions away
 * ({@link ShardSessions#awayWindow}): a copy some of whose holders are outside it stays, and so does every copy queued
 * behind it. Owned by its shard's thread.
 */
final class AwayRoom
{
    /** The most copies one plan frees. */
    static final int MOST_COPIES = 64;
    /** The most copies one plan finds it cannot free before it gives up. */
    static final int MOST_BLOCKED = 64;

    private final DeliverySession[] window = new DeliverySession[ShardSessions.AWAY_LOOK];
    /** How many newest entries of each window session the plan drops. */
    private final int[] drops = new int[ShardSessions.AWAY_LOOK];
    /** What those entries hold of its queue's bytes. */
    private final long[] dropBytes = new long[ShardSessions.AWAY_LOOK];
    private int count;
    /** Stamps the copies a plan finds it cannot free ({@link SharedMessage#blockedInPlan}). */
    private int plan;

    /**
     * Plans to free {@code wanted} bytes from the sessions away of the shard's next window: copies whose holders are
     * all queues in the window, up to {@link #MOST_COPIES} of them and {@link ShardSessions#AWAY_LOOK} queue entries
     * in all (each dropped entry was one queued, so the work is bounded by what made the copies).
     *
     * @return what the plan frees: at least {@code wanted}, or what it could find in all when that is less.
     */
    long plan(final ShardSessions sessions, final long wanted)
    {
        count = sessions.awayWindow(window);
        java.util.Arrays.fill(drops, 0, count, 0);
        java.util.Arrays.fill(dropBytes, 0, count, 0);
        if (++plan == 0)
        {
            plan = 1; // 0 is a new copy's: never a plan's stamp
        }
        long freed = 0;
        int copies = 0;
        int entries = 0;
        int blocked = 0;
        while (freed < wanted && copies < MOST_COPIES && blocked < MOST_BLOCKED)
        {
            final SharedMessage copy = nextCopy();
            if (null == copy)
            {
                break;
            }
            final int holders = holdersOf(copy);
            if (holders != copy.awayQueued || entries + holders > ShardSessions.AWAY_LOOK)
            {
                copy.blockedInPlan = plan; // a holder outside the window, or deeper in a queue: it stays
                blocked++;
                continue;
            }
            for (int i = 0; i < count; i++)
            {
                if (copy == next(i))
                {
                    drops[i]++;
                    dropBytes[i] += copy.length();
                }
            }
            entries += holders;
            copies++;
            freed += copy.cost();
        }
        return freed;
    }

    /**
     * @return the sessions of the last plan's window: {@link #session} and {@link #drops} for each.
     */
    int sessions()
    {
        return count;
    }

    DeliverySession session(final int i)
    {
        return window[i];
    }

    /**
     * @return how many of the newest queued messages of window session {@code i} the last plan drops.
     */
    int drops(final int i)
    {
        return drops[i];
    }

    /**
     * Forgets the last plan's sessions: the window holds none of them once it is carried out.
     */
    void clear()
    {
        java.util.Arrays.fill(window, 0, count, null);
        count = 0;
    }

    /**
     * @return the copy the plan takes next: the next entry of the window session whose queue keeps the most bytes
     * after what the plan drops already, among those whose next entry can be freed; one that came through a shared
     * subscription only when no other can (its group would have it handed to another member when the session ends).
     */
    private SharedMessage nextCopy()
    {
        int best = -1;
        boolean bestGrouped = true;
        long bestBytes = -1;
        for (int i = 0; i < count; i++)
        {
            final SharedMessage copy = next(i);
            if (null == copy || !copy.heldOnlyAway() || plan == copy.blockedInPlan)
            {
                continue;
            }
            final boolean grouped = 0 != window[i].queuedGroup(window[i].queueSize() - 1 - drops[i]);
            final long bytes = window[i].queuedBytes() - dropBytes[i];
            if (best < 0 || bestGrouped && !grouped || bestGrouped == grouped && bytes > bestBytes)
            {
                best = i;
                bestGrouped = grouped;
                bestBytes = bytes;
            }
        }
        return best < 0 ? null : next(best);
    }

    /**
     * @return how many window sessions have {@code copy} as their next entry.
     */
    private int holdersOf(final SharedMessage copy)
    {
        int holders = 0;
        for (int i = 0; i < count; i++)
        {
            if (copy == next(i))
            {
                holders++;
            }
        }
        return holders;
    }

    /**
     * @return the newest entry of window session {@code i}'s queue that the plan does not drop yet; null when it
     * drops all.
     */
    private SharedMessage next(final int i)
    {
        final int at = window[i].queueSize() - 1 - drops[i];
        return at < 0 ? null : window[i].queuedMessage(at);
    }
}
