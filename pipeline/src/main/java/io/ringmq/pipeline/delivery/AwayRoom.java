package io.ringmq.pipeline.delivery;

import java.util.Arrays;

/**
 * Which queued messages of sessions away a full share takes back for a connected client
 * ({@code MessageDelivery.reclaim}), planned whole before anything is dropped, so nothing is dropped unless the plan
 * frees what is wanted. A copy is freed only by dropping it from every queue that names it, and only when those queues
 * are all it is held by ({@link SharedMessage#heldOnlyAway}): not in flight to anyone [MQTT-4.4.0-1], not queued for a
 * connected client, not the event being delivered.
 * <p>
 * Every queue of the window offers the next entry it would give, from its newest down, stepping over what cannot be
 * freed (one tiny message newest in every queue and in flight to a connection that never acknowledges made every queue
 * under it give nothing, review of f7fdee10, helper-151). A copy is ready when every queue that names it offers it. The
 * plan takes the ready copy offered by the queue that keeps the most bytes, queues holding only messages that came
 * through a shared subscription last, drops it from all of its queues at once, and each of them offers its next.
 * A copy that sessions away share (one topic, many devices) so goes from all of them: before, each session gave back
 * only copies it held alone, and one host's sessions away that shared their copies, plus its connections that never
 * acknowledge, held the whole share (AwayReclaimTest, ReclaimSecondReviewTest). Copies are queued in the order their
 * events came, so a copy one holder has deeper becomes ready once that holder's newer entries are taken: a plan that
 * gave up on such copies instead was ended by 32 of them, one private message on top of one holder (review of
 * 63dfdbbf, helper-152). When no copy is ready, every offered one is stepped over, by all its queues, up to
 * {@link #MOST_STUCK} times a plan.
 * <p>
 * Offers change only for the queues of a copy taken or stepped over, so a plan costs about the window's queues once,
 * plus the entries it steps over and drops (a plan that looked at every queue again for each copy took 650 µs to take
 * 64 copies from 1,024 sessions, {@code AwayRoomBenchmark}). Its work is bounded by {@link #MOST_WORK}, not by the
 * entries of one queue it steps over: a bound of 64 a queue let 65 pins on top of the largest queues take them out of
 * every plan, and other hosts' devices gave instead (helper-152). A plan looks at one window of the shard's sessions
 * away ({@link ShardSessions#awayWindow}): a copy some of whose holders are outside it stays (open: two sessions of a
 * host listed more than a window apart keep what they share while more than 2,048 sessions are away).
 * <p>
 * The entries all plans step over are bounded in time as well: {@link #STEP_RATE} a millisecond, up to
 * {@link #STEP_BURST} saved. A plan within its work bound still cost the shard about 2.7 ms when an attacker's pins
 * filled it ({@code AwayRoomBenchmark.pinned}), and every event that wanted room planned again, so pins holding about
 * half the share made the shard spend its time stepping over them (stop 60's open case). A step is an entry a plan
 * passes because a connected client, a restored window or a copy in flight holds it too; a copy passed because some of
 * its holders are outside the window, or blocked in this plan, is work but no step (a fleet of 2,048 devices on one
 * topic spent steps on its shared copies, and 924 of 6,000 events got room back, review of c39cb5cb, helper-156).
 * <p>
 * A plan is made only once as many steps are saved as the last one in the same window took (twice its steps when they
 * cut it short and it freed too little); until then a plan looks at nothing and frees nothing. Plans with fewer steps
 * failed for want of them and spent them for nothing (a fleet away under a slow subscriber's 16 newest copies got 31 of
 * 10,000 plans, review of efe0eabd, helper-154), or, taking what lay open, let an attacker's queue under a pin keep
 * what it held while honest devices gave (review of 59223744, helper-155). The count is kept by window, as the list's
 * windows differ (helper-156), and a plan whose steps ran out before its first offers had looked as deep as they could
 * takes nothing. The first offers step breadth first, each queue one entry, then two, four and on, so that a queue with
 * one pin is not left without steps by the pins of the queues listed before it (helper-154). Owned by its shard's
 * thread.
 */
final class AwayRoom
{
    /** The most copies one plan frees. */
    static final int MOST_COPIES = 64;
    /** The most queue entries one plan drops: each was queued once, so the work is bounded by what made the copies. */
    static final int MOST_DROPS = ShardSessions.AWAY_LOOK;
    /**
     * The most work of one plan, in queue entries stepped over and queues offering: more entries stepped over than
     * one host's connections can hold as pins within their part of a 16 MiB share (each pin at least a copy and two
     * entries).
     */
    static final int MOST_WORK = 256 * ShardSessions.AWAY_LOOK;
    /** The most times a plan finds no copy ready and steps every queue over its offer. */
    static final int MOST_STUCK = 16;
    /** Windows whose steps wanted are kept apart; further ones share (a million sessions away: four to a slot). */
    static final int WINDOWS_KEPT = 256;
    /**
     * The work the first offers may take: the rest is for taking the copies they found (with the whole bound spent on
     * looking, a copy offered in the first round was never taken).
     */
    static final int MOST_LOOKING = MOST_WORK - 4 * ShardSessions.AWAY_LOOK;
    /**
     * Entries all plans together may step over a millisecond, on average: at 9-20 ns an entry
     * ({@code AwayRoomBenchmark.pinned}, C2), up to a sixth of the shard's thread. Besides, every plan that is made
     * looks at the top of each queue of its window, which takes no steps: 20-50 µs for 1,024 queues.
     */
    static final long STEP_RATE = 8_192;
    /** The most steps saved while no plan steps: one plan at its most work. */
    static final long STEP_BURST = MOST_WORK;

    private static final int NONE = -1;
    /**
     * What a heap key adds for a queue that holds any message that did not come through a shared subscription: those
     * come first. Judged by the whole queue, not the entry it offers: one message through a group of the attacker's own
     * on top of a 400 KB queue put every honest device's queue first (review of 659e40df, helper-153).
     */
    private static final long UNGROUPED = 1L << 62;

    private final DeliverySession[] window = new DeliverySession[ShardSessions.AWAY_LOOK];
    private int count;
    /** For each window queue: the place it offers from, from the newest down; -1 past the end. */
    private final int[] next = new int[ShardSessions.AWAY_LOOK];
    /** For each window queue: the copy it offers, or null. */
    private final SharedMessage[] offered = new SharedMessage[ShardSessions.AWAY_LOOK];
    /** For each window queue: the next queue offering the same copy, or {@link #NONE}. */
    private final int[] sameOffer = new int[ShardSessions.AWAY_LOOK];
    /** For each window queue: its offers so far, what a heap entry is checked against. */
    private final int[] offers = new int[ShardSessions.AWAY_LOOK];
    /** For each window queue: the bytes it keeps after what the plan drops. */
    private final long[] bytesLeft = new long[ShardSessions.AWAY_LOOK];
    /** The queues offering the copy being taken or stepped over: scratch. */
    private final int[] holders = new int[ShardSessions.AWAY_LOOK];
    /** The planned drops, in order: the window queue, and the place in it. */
    private final int[] dropAt = new int[MOST_DROPS];
    private final int[] dropFrom = new int[MOST_DROPS];
    private int drops;
    private int work;
    /** Entries this plan stepped over, and the most it may ({@link #STEP_RATE}). */
    private long steps;
    private long stepLimit;
    /** Steps left to plans, as of {@link #stepsAtMs}. */
    private long stepsLeft = STEP_BURST;
    private long stepsAtMs;
    /**
     * For each window of the list of sessions away ({@link ShardSessions#windowKey}): the steps saved before the next
     * plan there is made, as many as the last one there took, or twice its steps when they cut it short. Kept by window:
     * one learned in a window with pins held back plans in windows that need none (30 events a millisecond got room
     * back 175 times in a second), and one learned in a cheap window let the next plan in the attacker's look shallow
     * and take from honest devices (review of c39cb5cb, helper-156).
     */
    private final long[] stepsWanted = new long[WINDOWS_KEPT];
    /** The most entries one {@link #offerNext} call steps over: how far the first offers go in this round. */
    private long stepCap;
    /** The work {@link #offerNext} stops at: {@link #MOST_LOOKING} for the first offers, then {@link #MOST_WORK}. */
    private int workLimit;
    /**
     * Stamps a plan's marks on copies ({@link SharedMessage#blockedInPlan}, {@link SharedMessage#offeredInPlan}): a
     * long, so that no stamp comes round again while a copy that bears it lives (an int did after 2^31 plans, and a
     * copy offered then kept its old count and list, review of 659e40df, helper-153).
     */
    private long plan;
    /** Queues whose offer is ready, by key (a max-heap; an entry whose queue offered since is skipped). */
    private int[] heapQueue = new int[2 * ShardSessions.AWAY_LOOK];
    private int[] heapOffer = new int[2 * ShardSessions.AWAY_LOOK];
    private long[] heapKey = new long[2 * ShardSessions.AWAY_LOOK];
    private int heapSize;

    /**
     * Plans to free {@code wanted} bytes from the sessions away of the shard's next window: up to
     * {@link #MOST_COPIES} copies and {@link #MOST_DROPS} queue entries, within {@link #MOST_WORK} and the steps left
     * at {@code nowMs} ({@link #STEP_RATE}).
     *
     * @return what the plan frees: at least {@code wanted}, or what it could find in all when that is less.
     */
    long plan(final ShardSessions sessions, final long wanted, final long nowMs)
    {
        if (nowMs > stepsAtMs)
        {
            final long elapsed = nowMs - stepsAtMs; // negative only past an overflow: a clock absurdly far ahead
            stepsLeft = Math.min(STEP_BURST, stepsLeft + (elapsed < 0 ? STEP_BURST : Math.min(elapsed, STEP_BURST)) *
                STEP_RATE);
        }
        stepsAtMs = nowMs; // a clock set back refills from where it was set, not from a time that may be far ahead
        steps = 0;
        final int key = sessions.windowKey() & (WINDOWS_KEPT - 1);
        if (stepsLeft < stepsWanted[key])
        {
            stepLimit = 0;
            count = 0;
            drops = 0;
            return 0; // not yet: a plan with fewer steps would look less deep than the last, and let queues it does
                      // not reach keep what they hold while the queues it does reach give
        }
        stepLimit = Math.min(stepsLeft, MOST_WORK);
        count = sessions.awayWindow(window);
        drops = 0;
        work = count;
        heapSize = 0;
        plan++; // from 1: 0 is a new copy's, never a plan's
        stepCap = 0;
        workLimit = MOST_LOOKING;
        for (int i = 0; i < count; i++)
        {
            next[i] = window[i].queueSize() - 1;
            bytesLeft[i] = window[i].queuedBytes();
            offers[i] = 0;
            offerNext(i);
        }
        for (stepCap = 1; steps < stepLimit && work < MOST_LOOKING && offerFurther(); stepCap *= 2)
        {
            work += count;
        }
        stepCap = Long.MAX_VALUE;
        workLimit = MOST_WORK;
        // the steps ran out before the first offers had looked as deep as they could, and more steps would have let
        // them: what they found is not what the window offers, and taking it would spare the queues not reached
        final boolean shallow = steps == stepLimit && stepLimit < MOST_WORK && anyLookingFurther();
        long freed = 0;
        int copies = 0;
        int stuck = 0;
        while (!shallow && freed < wanted && copies < MOST_COPIES && drops < MOST_DROPS && work < MOST_WORK)
        {
            final int best = popReady();
            if (best == NONE)
            {
                if (++stuck > MOST_STUCK || !stepOverEveryOffer())
                {
                    break;
                }
                continue;
            }
            final SharedMessage copy = offered[best];
            final int found = offerers(copy);
            if (drops + found > MOST_DROPS)
            {
                copy.blockedInPlan = plan;
            }
            else
            {
                for (int h = 0; h < found; h++)
                {
                    final int i = holders[h];
                    dropFrom[drops] = i;
                    dropAt[drops++] = next[i];
                    bytesLeft[i] -= copy.length();
                    next[i]--;
                }
                copies++;
                freed += copy.cost();
            }
            for (int h = 0; h < found; h++)
            {
                offerNext(holders[h]);
            }
        }
        stepsLeft -= steps;
        // cut short by the steps or the work, and too little: wait for twice as many; else for as many as it took, so
        // that no plan looks less deep than the last one did (one that took 16,384 a time, then one cut short at 8,192,
        // took room back every third millisecond where the rate pays for every other; and plans with too few steps
        // that took what lay open let an attacker's queue under a pin keep it while honest devices gave, review of
        // 59223744, helper-155)
        stepsWanted[key] = freed < wanted && (steps == stepLimit || work >= MOST_LOOKING) ?
            Math.min(STEP_BURST, 2 * Math.max(1, stepLimit)) : steps;
        return freed;
    }

    /**
     * @return whether any queue of the window offers nothing yet and has entries left below.
     */
    private boolean anyLookingFurther()
    {
        for (int i = 0; i < count; i++)
        {
            if (null == offered[i] && next[i] >= 0)
            {
                return true;
            }
        }
        return false;
    }

    /**
     * One round of the first offers: each queue that offers nothing yet and has entries left below goes on, stepping
     * over up to {@link #stepCap} more.
     *
     * @return whether any queue had further to go.
     */
    private boolean offerFurther()
    {
        boolean any = false;
        for (int i = 0; i < count && steps < stepLimit; i++)
        {
            if (null == offered[i] && next[i] >= 0)
            {
                any = true;
                offerNext(i);
            }
        }
        return any;
    }

    /**
     * @return the entries the last plan stepped over.
     */
    long steps()
    {
        return steps;
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
     * Forgets the last plan's sessions and copies: the window holds none of them once it is carried out, or given up.
     */
    void clear()
    {
        Arrays.fill(window, 0, count, null);
        Arrays.fill(offered, 0, count, null);
        count = 0;
        drops = 0;
    }

    /**
     * Window queue {@code i} offers the next entry it can give, from its place down past entries that cannot be freed
     * (held by more than sessions away, or stepped over by this plan), while the plan has work and steps left; once
     * every queue naming that copy offers it, they all go into the heap of ready offers.
     */
    private void offerNext(final int i)
    {
        offers[i]++;
        offered[i] = null;
        final DeliverySession session = window[i];
        long stepped = 0;
        while (next[i] >= 0 && work < workLimit)
        {
            final SharedMessage copy = session.queuedMessage(next[i]);
            if (copy.heldOnlyAway() && plan != copy.blockedInPlan)
            {
                if (copy.offeredInPlan != plan)
                {
                    copy.offeredInPlan = plan;
                    copy.offeredBy = 0;
                    copy.firstOfferer = NONE;
                }
                offered[i] = copy;
                sameOffer[i] = copy.firstOfferer;
                copy.firstOfferer = i;
                if (++copy.offeredBy == copy.awayQueued)
                {
                    for (int j = copy.firstOfferer; j != NONE; j = sameOffer[j])
                    {
                        push(j);
                    }
                }
                return;
            }
            final boolean pin = !copy.heldOnlyAway(); // what a step is: a copy blocked in this plan is work only
            if (pin && steps == stepLimit || stepped++ == stepCap)
            {
                break; // the shard's steps are spent, or this round's: this queue offers nothing yet
            }
            steps += pin ? 1 : 0;
            work++;
            next[i]--;
        }
    }

    /**
     * @return how many window queues offer {@code copy}, listed in {@link #holders}; its list of them is spent (each
     * offers again).
     */
    private int offerers(final SharedMessage copy)
    {
        int found = 0;
        for (int j = copy.firstOfferer; j != NONE; j = sameOffer[j])
        {
            holders[found++] = j;
        }
        copy.firstOfferer = NONE;
        copy.offeredBy = 0;
        work += found;
        return found;
    }

    /**
     * No offered copy is ready (a holder outside the window, or one that names it twice): each is stepped over by every
     * queue that offers it, for the rest of the plan.
     *
     * @return whether any queue offered one.
     */
    private boolean stepOverEveryOffer()
    {
        boolean any = false;
        for (int i = 0; i < count; i++)
        {
            if (null != offered[i])
            {
                offered[i].blockedInPlan = plan;
                any = true;
            }
        }
        for (int i = 0; i < count; i++)
        {
            if (null != offered[i])
            {
                offered[i].firstOfferer = NONE;
                offerNext(i);
            }
        }
        work += count;
        return any;
    }

    /**
     * @return the queue with the best ready offer: one holding anything that did not come through a shared subscription
     * first (a group would have its messages handed to another member when the session ends), then the one that keeps
     * the most bytes; NONE.
     */
    private int popReady()
    {
        while (heapSize > 0)
        {
            final int i = heapQueue[0];
            final int offer = heapOffer[0];
            heapSize--;
            if (heapSize > 0)
            {
                siftDown(heapQueue[heapSize], heapOffer[heapSize], heapKey[heapSize]);
            }
            if (offer == offers[i] && null != offered[i] && offered[i].offeredBy == offered[i].awayQueued)
            {
                return i;
            }
        }
        return NONE;
    }

    private void push(final int i)
    {
        if (heapSize == heapQueue.length)
        {
            heapQueue = Arrays.copyOf(heapQueue, heapSize * 2);
            heapOffer = Arrays.copyOf(heapOffer, heapSize * 2);
            heapKey = Arrays.copyOf(heapKey, heapSize * 2);
        }
        final long key = (window[i].queuesOnlyThroughGroups() ? 0 : UNGROUPED) + bytesLeft[i];
        int at = heapSize++;
        while (at > 0)
        {
            final int parent = (at - 1) >> 1;
            if (heapKey[parent] >= key)
            {
                break;
            }
            heapQueue[at] = heapQueue[parent];
            heapOffer[at] = heapOffer[parent];
            heapKey[at] = heapKey[parent];
            at = parent;
        }
        heapQueue[at] = i;
        heapOffer[at] = offers[i];
        heapKey[at] = key;
        work++;
    }

    private void siftDown(final int queue, final int offer, final long key)
    {
        int at = 0;
        while (true)
        {
            int child = 2 * at + 1;
            if (child >= heapSize)
            {
                break;
            }
            if (child + 1 < heapSize && heapKey[child + 1] > heapKey[child])
            {
                child++;
            }
            if (heapKey[child] <= key)
            {
                break;
            }
            heapQueue[at] = heapQueue[child];
            heapOffer[at] = heapOffer[child];
            heapKey[at] = heapKey[child];
            at = child;
        }
        heapQueue[at] = queue;
        heapOffer[at] = offer;
        heapKey[at] = key;
    }
}
