package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.RecoveryReport;
import org.rocksdb.AbstractWalFilter;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WALRecoveryMode;
import org.rocksdb.WalFilter;
import org.rocksdb.WalProcessingOption;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Replays write-ahead logs set aside by a repair into the repaired store, in order and write batch by write batch,
 * so deletes replay as deletes. RocksJava cannot read a log by itself, so a scratch store is opened on the logs'
 * folder with a {@link WalFilter} that hands each recovered batch to the repaired store and keeps none; corrupt
 * records are skipped ({@link WALRecoveryMode#SkipAnyCorruptedRecords}) and {@link WalCheck} names them.
 */
final class WalReplay extends AbstractWalFilter
{
    private static final LogRecordFoundResult IGNORE =
        new LogRecordFoundResult(WalProcessingOption.IGNORE_CURRENT_RECORD, false);
    private static final LogRecordFoundResult STOP = new LogRecordFoundResult(WalProcessingOption.STOP_REPLAY, false);

    private final Path dir;
    private final Path walDir;
    private final RocksDbOptions options;
    private final RecoveryReport report;
    private RocksDB target;
    private WriteOptions writeOptions;
    private long batchCount;
    private RocksDBException failure;

    WalReplay(final Path dir, final Path walDir, final RocksDbOptions options, final RecoveryReport report)
    {
        this.dir = dir;
        this.walDir = walDir;
        this.options = options;
        this.report = report;
    }

    /**
     * @return what was replayed, for the repair's summary.
     */
    String replay(final List<Path> logs) throws IOException, RocksDBException
    {
        if (logs.isEmpty())
        {
            return "no write-ahead log to replay";
        }
        for (final Path log : logs)
        {
            final WalCheck.Result check = WalCheck.check(log);
            if (!check.isClean())
            {
                report.lost("write-ahead log " + log.getFileName() + ": " + check.problem() + "; " +
                    (check.fileLength() - check.goodLength()) + " byte(s) after byte " + check.goodLength() +
                    " skipped");
            }
        }
        try (RocksDB db = RocksDB.open(options.build(false), dir.toString());
            WriteOptions wo = new WriteOptions();
            Options scratchOptions = new Options()
                .setCreateIfMissing(true)
                .setWalRecoveryMode(WALRecoveryMode.SkipAnyCorruptedRecords)
                .setWalFilter(this))
        {
            target = db;
            writeOptions = wo;
            final Path scratchDir = walDir.resolve("scratch");
            adopt(logs, scratchDir, scratchOptions);
            try (RocksDB scratch = RocksDB.open(scratchOptions, scratchDir.toString())) // opening replays the logs
            {
                scratch.syncWal();
                if (failure != null)
                {
                    throw failure;
                }
            }
            finally
            {
                target = null;
                writeOptions = null;
            }
            db.syncWal();
        }
        return "replayed " + batchCount + " write batch(es) from " + logs.size() + " write-ahead log(s)";
    }

    /**
     * RocksDB will not create a store in a folder that holds logs, so the scratch store is created empty first,
     * then given the logs under numbers above all of its own, in their order, so its next open replays them all.
     */
    private static void adopt(final List<Path> logs, final Path scratchDir, final Options scratchOptions)
        throws IOException, RocksDBException
    {
        Files.createDirectories(scratchDir);
        try (RocksDB created = RocksDB.open(scratchOptions, scratchDir.toString()))
        {
            created.syncWal();
        }
        long number = 0;
        for (final Path file : RocksDbRepair.list(scratchDir, ""))
        {
            number = Math.max(number, fileNumber(file));
        }
        for (final Path log : logs)
        {
            Files.move(log, scratchDir.resolve(String.format("%06d.log", ++number)));
        }
    }

    private static long fileNumber(final Path file)
    {
        final String name = file.getFileName().toString();
        final int start = name.startsWith("MANIFEST-") ? "MANIFEST-".length() :
            name.startsWith("OPTIONS-") ? "OPTIONS-".length() : 0;
        int end = start;
        while (end < name.length() && Character.isDigit(name.charAt(end)))
        {
            end++;
        }
        return end > start ? Long.parseLong(name.substring(start, end)) : 0;
    }

    public void columnFamilyLogNumberMap(final Map<Integer, Long> cfLognumber,
        final Map<String, Integer> cfNameId)
    {
    }

    public LogRecordFoundResult logRecordFound(final long logNumber, final String logFileName,
        final WriteBatch batch, final WriteBatch newBatch)
    {
        try
        {
            target.write(writeOptions, batch);
            batchCount++;
            return IGNORE; // the scratch store keeps nothing
        }
        catch (final RocksDBException ex)
        {
            failure = ex;
            return STOP;
        }
    }

    public String name()
    {
        return "ringmq-wal-replay";
    }
}
