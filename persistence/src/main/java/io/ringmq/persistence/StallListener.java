package io.ringmq.persistence;

import org.rocksdb.AbstractEventListener;
import org.rocksdb.WriteStallCondition;
import org.rocksdb.WriteStallInfo;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Counts the times RocksDB slowed ({@code DELAYED}) or stopped ({@code STOPPED}) writes because flushes or
 * compactions fell behind. Called on RocksDB's background threads, rarely.
 */
final class StallListener extends AbstractEventListener
{
    private final AtomicLong stallCount = new AtomicLong();

    StallListener()
    {
        super(EnabledEventCallback.ON_STALL_CONDITIONS_CHANGED);
    }

    @Override
    public void onStallConditionsChanged(final WriteStallInfo info)
    {
        if (info.getCurrentCondition() != WriteStallCondition.NORMAL)
        {
            stallCount.incrementAndGet();
        }
    }

    long stallCount()
    {
        return stallCount.get();
    }
}
