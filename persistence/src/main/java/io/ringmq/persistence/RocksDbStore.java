package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.Durability;
import io.ringmq.pipeline.persistence.RecordVisitor;
import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.rocksdb.FlushOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.Status;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The {@link DurableStore} on RocksDB: one column family, keys in bytewise order, the write-ahead log always on.
 *
 * <pre>
 *   persistence stage --writer(true)---+                      +--> ringmq-fsync: syncWal() every interval
 *   delivery shard 0 --writer(false)--+--> WriteBatch --> db.write --> WAL (+ memtable)      (periodic only)
 *   delivery shard N --writer(false)--+     (sync=true only for the group commit in sync mode)
 * </pre>
 *
 * A write reaches the operating system before {@link StoreWriter#commit()} returns, in every mode, so a crash of
 * the process loses nothing committed; the {@link Durability} mode decides when it reaches the disk. Opening
 * creates a missing directory, refuses a directory another broker holds (naming its pid from
 * {@value DataDirectory#PID_FILE}), notes a torn log tail, and repairs a corrupt store ({@link RocksDbRepair})
 * unless {@link RocksDbSettings#strict()}. What it found comes back from {@link #scan(RecordVisitor)}.
 * <p>
 * {@link #close()} must follow the stop of every thread that holds a writer.
 */
public final class RocksDbStore implements DurableStore
{
    static
    {
        RocksDB.loadLibrary();
    }

    private final RocksDbSettings settings;
    private final Path dir;
    private final RocksDbOptions options;
    private final StallListener stallListener;
    private final RocksDB db;
    private final RecoveryReport report;
    private final WriteOptions syncWriteOptions = new WriteOptions().setSync(true);
    private final WriteOptions plainWriteOptions = new WriteOptions().setSync(false);
    private final AtomicLong writeCount = new AtomicLong();
    private final List<RocksDbWriter> writers = new ArrayList<>();
    private final WalSyncThread syncThread;
    private final AtomicBoolean closed = new AtomicBoolean();

    private RocksDbStore(final RocksDbSettings settings, final Path dir, final RocksDbOptions options,
        final StallListener stallListener, final RocksDB db, final RecoveryReport report)
    {
        this.settings = settings;
        this.dir = dir;
        this.options = options;
        this.stallListener = stallListener;
        this.db = db;
        this.report = report;
        this.syncThread = settings.durability() == Durability.PERIODIC ?
            new WalSyncThread(db, settings.fsyncIntervalMs(), writeCount) : null;
    }

    /**
     * Opens (creating, checking, repairing when allowed) the store in {@code settings.directory()}.
     *
     * @throws StoreException when the directory is a file, held by another broker, or corrupt under strict
     *                        recovery, or RocksDB cannot open it for another reason; the message names the
     *                        directory.
     */
    public static RocksDbStore open(final RocksDbSettings settings)
    {
        final Path dir = DataDirectory.prepare(settings.directory());
        final RecoveryReport report = new RecoveryReport();
        final StallListener stallListener = new StallListener();
        final RocksDbOptions options = new RocksDbOptions(settings, stallListener);
        RocksDB db = null;
        try
        {
            final long holderPid = DataDirectory.readPid(dir);
            restoreSetAside(dir); // logs an interrupted repair set aside are read, never dropped
            final List<String> tornLogs = tornLogs(dir);
            db = openOrRepair(settings, dir, options, report, holderPid);
            if (report.isClean()) // a repair checks and reports the logs itself
            {
                tornLogs.forEach(report::lost);
            }
            DataDirectory.writePid(dir);
            final RocksDbStore store = new RocksDbStore(settings, dir, options, stallListener, db, report);
            if (store.syncThread != null)
            {
                store.syncThread.start();
            }
            return store;
        }
        catch (final RuntimeException ex)
        {
            if (null != db)
            {
                db.close(); // lets go of RocksDB's LOCK: a store opened lazily tries again at the next write
            }
            options.close();
            stallListener.close();
            throw ex;
        }
    }

    private static void restoreSetAside(final Path dir)
    {
        try
        {
            RocksDbRepair.restoreSetAside(dir);
        }
        catch (final java.io.IOException ex)
        {
            throw new StoreException("cannot put back the write-ahead logs an interrupted repair set aside in " + dir +
                ": " + ex.getMessage(), ex);
        }
    }

    public StoreWriter writer(final boolean groupCommit)
    {
        final boolean sync = groupCommit && settings.durability() == Durability.SYNC;
        final RocksDbWriter writer = new RocksDbWriter(this, sync ? syncWriteOptions : plainWriteOptions);
        synchronized (writers)
        {
            checkOpen();
            writers.add(writer);
        }
        return writer;
    }

    public RecoveryReport scan(final RecordVisitor visitor)
    {
        checkOpen();
        RocksDbScanner.scan(db, dir, settings.strict(), visitor, report);
        return report;
    }

    public int visit(final byte[] from, final byte[] to, final int limit, final RecordVisitor visitor)
    {
        checkOpen();
        return RocksDbScanner.visit(db, from, to, limit, visitor);
    }

    public boolean isDurable()
    {
        return true;
    }

    public long writeStalls()
    {
        return stallListener.stallCount();
    }

    public String describe()
    {
        return settings.describe(dir);
    }

    /**
     * @return the absolute data directory.
     */
    public Path directory()
    {
        return dir;
    }

    /**
     * @return periodic syncs of the write-ahead log done so far; 0 outside {@link Durability#PERIODIC}.
     */
    public long periodicSyncCount()
    {
        return syncThread == null ? 0 : syncThread.syncCount();
    }

    /**
     * @return periodic syncs that failed (each retried at the next interval).
     */
    public long periodicSyncFailureCount()
    {
        return syncThread == null ? 0 : syncThread.syncFailureCount();
    }

    /**
     * Stops the fsync thread, syncs the write-ahead log once more (in every mode), closes RocksDB and frees every
     * native object. Idempotent.
     */
    public void close()
    {
        if (!closed.compareAndSet(false, true))
        {
            return;
        }
        RocksDBException syncFailure = null;
        try
        {
            if (syncThread != null)
            {
                syncThread.stop();
            }
            try
            {
                db.syncWal(); // first: in every durability mode, what was committed is on the disk
            }
            catch (final RocksDBException ex)
            {
                syncFailure = ex;
            }
            synchronized (writers)
            {
                writers.forEach(RocksDbWriter::free);
                writers.clear();
            }
            db.close();
        }
        finally
        {
            syncWriteOptions.close();
            plainWriteOptions.close();
            options.close();
            stallListener.close();
            DataDirectory.deletePid(dir);
        }
        if (syncFailure != null)
        {
            throw failure("final sync of the write-ahead log at close", syncFailure);
        }
    }

    /**
     * Writes one batch; called by the writers.
     */
    void write(final WriteOptions writeOptions, final WriteBatch batch)
    {
        checkOpen();
        try
        {
            db.write(writeOptions, batch);
            writeCount.incrementAndGet(); // after the write: the fsync thread's sync then covers it
        }
        catch (final RocksDBException ex)
        {
            throw failure("write of " + batch.count() + " record(s)", ex);
        }
    }

    /**
     * Flushes the memtables into a table file and waits; for tests that need table files.
     */

    void flush()
    {
        try (FlushOptions flush = new FlushOptions().setWaitForFlush(true))
        {
            db.flush(flush);
        }
        catch (final RocksDBException ex)
        {
            throw failure("flush", ex);
        }
    }

    StoreException failure(final String what, final RocksDBException ex)
    {
        final String problem = describe(ex);
        final String hint = problem.contains("No space left") ? " (disk full)" : "";
        return new StoreException("rocksdb store in " + dir + ": " + what + " failed" + hint + ": " + problem, ex);
    }

    /**
     * @return the status code and message of a RocksDB failure, e.g. {@code Corruption: block checksum mismatch}.
     */
    static String describe(final RocksDBException ex)
    {
        final Status status = ex.getStatus();
        final String message = ex.getMessage() == null ? "" : ex.getMessage();
        if (status == null || message.startsWith(status.getCodeString()))
        {
            return message;
        }
        return status.getCodeString() + ": " + message;
    }

    boolean isClosed()
    {
        return closed.get();
    }

    void checkOpen()
    {
        if (closed.get())
        {
            throw new StoreException("rocksdb store in " + dir + " is closed");
        }
    }

    private static RocksDB openOrRepair(final RocksDbSettings settings, final Path dir, final RocksDbOptions options,
        final RecoveryReport report, final long holderPid)
    {
        String corruption = missingCurrent(dir);
        if (corruption == null)
        {
            try
            {
                return RocksDB.open(options.build(false), dir.toString());
            }
            catch (final RocksDBException ex)
            {
                final String problem = describe(ex);
                if (problem.contains("LOCK") || problem.toLowerCase().contains("lock hold"))
                {
                    throw DataDirectory.lockHeld(dir, holderPid, ex);
                }
                if (!isCorruption(ex, problem))
                {
                    throw new StoreException("cannot open rocksdb store in " + dir + ": " + problem, ex);
                }
                corruption = problem;
            }
        }
        if (settings.strict())
        {
            throw new StoreException("rocksdb store in " + dir + " is corrupt (" + corruption + "); strict " +
                "recovery refuses to repair it: start without strict recovery to repair it, losing what cannot " +
                "be read, or restore the directory from a backup");
        }
        RocksDbRepair.repair(dir, options, report, corruption);
        try
        {
            return RocksDB.open(options.build(false), dir.toString());
        }
        catch (final RocksDBException ex)
        {
            throw new StoreException("rocksdb store in " + dir + " still does not open after a repair (" +
                describe(ex) + "); the repair found: " + report, ex);
        }
    }

    /**
     * RocksDB would create a new, empty store where CURRENT is missing: with data files still there, that is a
     * corruption to repair (or refuse), not a first start.
     */
    private static String missingCurrent(final Path dir)
    {
        if (Files.exists(dir.resolve("CURRENT")))
        {
            return null;
        }
        final boolean hasData = !RocksDbRepair.list(dir, ".sst").isEmpty() ||
            !RocksDbRepair.list(dir, ".log").isEmpty() || !RocksDbRepair.list(dir, "MANIFEST-").isEmpty();
        return hasData ? "Corruption: CURRENT file missing beside the store's other files" : null;
    }

    private static boolean isCorruption(final RocksDBException ex, final String problem)
    {
        final Status status = ex.getStatus();
        if (status != null && status.getCode() == Status.Code.Corruption)
        {
            return true;
        }
        return problem.contains("Corruption") || problem.contains(".sst") || problem.contains("MANIFEST") ||
            problem.contains("CURRENT");
    }

    private static List<String> tornLogs(final Path dir)
    {
        final List<String> found = new ArrayList<>();
        for (final Path log : RocksDbRepair.list(dir, ".log"))
        {
            try
            {
                final WalCheck.Result check = WalCheck.check(log);
                if (!check.isClean())
                {
                    found.add("write-ahead log " + log.getFileName() + ": " + check.problem() + "; its last " +
                        (check.fileLength() - check.goodLength()) + " byte(s) (from byte " + check.goodLength() +
                        " of " + check.fileLength() + ") are a torn write and were dropped");
                }
            }
            catch (final IOException ex)
            {
                found.add("write-ahead log " + log.getFileName() + " unreadable: " + ex);
            }
        }
        return found;
    }
}
