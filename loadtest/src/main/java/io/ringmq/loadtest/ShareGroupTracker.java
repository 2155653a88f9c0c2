package io.ringmq.loadtest;

/**
 * fanin: what a shared subscription group received, across all its members, by publisher and sequence number.
 * The broker hands each message to one member, and may hand it again to another (a member that left with it
 * unacknowledged [MQTT-4.8.2-5]): a message counts once for the group however many members got it, a second copy
 * is a duplicate, and loss is what was published minus what the group received. Members live on several driver
 * threads, so each publisher's tracker is taken under its own lock (a lock per publisher: contention stays low).
 */
final class ShareGroupTracker
{
    private final SequenceTracker[] trackers;

    ShareGroupTracker(final int publishers)
    {
        trackers = new SequenceTracker[publishers];
        for (int i = 0; i < publishers; i++)
        {
            trackers[i] = new SequenceTracker();
        }
    }

    /**
     * @return whether no member of the group had received this message before.
     */
    boolean record(final int publisherId, final int sequence)
    {
        if (publisherId < 0 || publisherId >= trackers.length)
        {
            return false;
        }
        final SequenceTracker tracker = trackers[publisherId];
        synchronized (tracker)
        {
            return tracker.record(sequence);
        }
    }

    /**
     * Read once the drivers have stopped (their threads joined).
     */
    long unique()
    {
        return sum(SequenceTracker::unique);
    }

    long duplicates()
    {
        return sum(SequenceTracker::duplicates);
    }

    private long sum(final java.util.function.ToLongFunction<SequenceTracker> count)
    {
        long sum = 0;
        for (final SequenceTracker tracker : trackers)
        {
            synchronized (tracker)
            {
                sum += count.applyAsLong(tracker);
            }
        }
        return sum;
    }
}
