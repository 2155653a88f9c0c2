package io.ringmq.persistence;

import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The fsync of {@code --durability periodic}: a daemon thread ({@value #THREAD_NAME}) that syncs the write-ahead
 * log every interval when something was written since the last sync, so no stage thread ever waits for the disk.
 * A failed sync is counted and retried at the next interval.
 */
final class WalSyncThread implements Runnable
{
    static final String THREAD_NAME = "ringmq-fsync";

    private final RocksDB db;
    private final long intervalNs;
    private final AtomicLong writeCount;
    private final long initialWriteCount;
    private final AtomicLong syncCount = new AtomicLong();
    private final AtomicLong syncFailureCount = new AtomicLong();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile RocksDBException lastFailure;

    /**
     * @param writeCount the store's count of committed batches, read to skip a sync when nothing was written.
     */
    WalSyncThread(final RocksDB db, final long intervalMs, final AtomicLong writeCount)
    {
        this.db = db;
        this.intervalNs = TimeUnit.MILLISECONDS.toNanos(intervalMs);
        this.writeCount = writeCount;
        this.initialWriteCount = writeCount.get();
        this.thread = new Thread(this, THREAD_NAME);
        thread.setDaemon(true);
    }

    void start()
    {
        thread.start();
    }

    public void run()
    {
        long syncedWriteCount = initialWriteCount; // not read here: writes may come before this thread runs
        long deadlineNs = System.nanoTime() + intervalNs;
        while (running)
        {
            final long waitNs = deadlineNs - System.nanoTime();
            if (waitNs > 0)
            {
                LockSupport.parkNanos(this, waitNs);
                continue;
            }
            deadlineNs = Math.max(deadlineNs + intervalNs, System.nanoTime()); // a slow sync does not pile up
            final long written = writeCount.get(); // read before the sync: what it covers
            if (written != syncedWriteCount)
            {
                try
                {
                    db.syncWal();
                    syncedWriteCount = written;
                    syncCount.incrementAndGet();
                }
                catch (final RocksDBException ex)
                {
                    lastFailure = ex;
                    syncFailureCount.incrementAndGet();
                }
            }
        }
    }

    /**
     * Stops the thread and waits for it, so no sync runs once the store closes the database.
     */
    void stop()
    {
        running = false;
        LockSupport.unpark(thread);
        boolean interrupted = false;
        while (thread.isAlive())
        {
            try
            {
                thread.join();
            }
            catch (final InterruptedException ex)
            {
                interrupted = true;
            }
        }
        if (interrupted)
        {
            Thread.currentThread().interrupt();
        }
    }

    long syncCount()
    {
        return syncCount.get();
    }

    long syncFailureCount()
    {
        return syncFailureCount.get();
    }

    RocksDBException lastFailure()
    {
        return lastFailure;
    }
}
