package io.ringmq.loadtest;

import java.util.BitSet;

/**
 * What one subscriber received from one publisher, by sequence number: unique messages, duplicates, and messages
 * that arrived after a later one (reordered). Loss is what the publisher sent minus the unique count.
 */
final class SequenceTracker
{
    private final BitSet seen = new BitSet();
    private long highest = -1;
    private long unique;
    private long duplicates;
    private long reordered;

    /**
     * @return whether this is the first time {@code sequence} came.
     */
    boolean record(final long sequence)
    {
        if (sequence < 0 || sequence > Integer.MAX_VALUE)
        {
            return false;
        }
        final int index = (int)sequence;
        if (seen.get(index))
        {
            duplicates++;
            return false;
        }
        seen.set(index);
        unique++;
        if (sequence < highest)
        {
            reordered++;
        }
        else
        {
            highest = sequence;
        }
        return true;
    }

    long unique()
    {
        return unique;
    }

    long duplicates()
    {
        return duplicates;
    }

    long reordered()
    {
        return reordered;
    }
}
