package io.ringmq.pipeline.persistence;

import java.util.ArrayList;
import java.util.List;

/**
 * What a store found while opening and scanning: repairs it made and what they lost, and records it could not
 * read. Recovery adds the records the pipeline could not decode, and prints it in one line at start.
 */
public final class RecoveryReport
{
    private final List<String> losses = new ArrayList<>();
    private long unreadableRecords;

    /**
     * @param what one finding, e.g. {@code "write-ahead log 000012.log truncated at byte 4096"}.
     */
    public synchronized void lost(final String what)
    {
        losses.add(what);
    }

    public synchronized void unreadableRecord()
    {
        unreadableRecords++;
    }

    public synchronized List<String> losses()
    {
        return new ArrayList<>(losses);
    }

    public synchronized long unreadableRecords()
    {
        return unreadableRecords;
    }

    /**
     * @return true when nothing was lost.
     */
    public synchronized boolean isClean()
    {
        return losses.isEmpty() && unreadableRecords == 0;
    }

    @Override
    public synchronized String toString()
    {
        if (isClean())
        {
            return "nothing lost";
        }
        return "LOST: " + (unreadableRecords > 0 ? unreadableRecords + " unreadable record(s)" +
            (losses.isEmpty() ? "" : "; ") : "") + String.join("; ", losses);
    }
}
