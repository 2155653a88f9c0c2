package io.ringmq.persistence;

import org.rocksdb.BlockBasedTableConfig;
import org.rocksdb.InfoLogLevel;
import org.rocksdb.LRUCache;
import org.rocksdb.Options;
import org.rocksdb.WALRecoveryMode;
import org.rocksdb.WriteBufferManager;

import java.util.ArrayList;
import java.util.List;

/**
 * The native option objects of one store, kept so that {@link #close()} frees them all. Memory is bounded by one
 * LRU cache of {@code blockCacheLength + writeBufferLength} bytes: data, index and filter blocks live in it, and a
 * {@link WriteBufferManager} charges every memtable to it, so the store's native memory stays around that sum
 * (plus RocksDB's fixed overhead, a few MiB).
 */
final class RocksDbOptions implements AutoCloseable
{
    /** Table files open at once; each holds a file descriptor and its index reader. */
    static final int MAX_OPEN_FILES = 256;
    /** One flush and one compaction at a time: a broker box has its cores for the pipeline. */
    static final int MAX_BACKGROUND_JOBS = 2;
    /** Memtables per column family: one filling while the other flushes. */
    static final int MAX_WRITE_BUFFER_COUNT = 2;
    /** RocksDB's own info log: rotated at 1 MiB, two kept. */
    static final long INFO_LOG_LENGTH = 1L << 20;
    static final long INFO_LOG_COUNT = 2;

    private final RocksDbSettings settings;
    private final LRUCache cache;
    private final WriteBufferManager writeBufferManager;
    private final StallListener stallListener;
    private final List<Options> built = new ArrayList<>();

    RocksDbOptions(final RocksDbSettings settings, final StallListener stallListener)
    {
        this.settings = settings;
        this.stallListener = stallListener;
        this.cache = new LRUCache(settings.blockCacheLength() + settings.writeBufferLength());
        this.writeBufferManager = new WriteBufferManager(settings.writeBufferLength(), cache);
    }

    /**
     * @param bestEffortsRecovery true only for the repair, which opens to the newest consistent set of tables.
     * @return options for one {@code RocksDB.open}; freed by {@link #close()}.
     */
    Options build(final boolean bestEffortsRecovery)
    {
        final BlockBasedTableConfig table = new BlockBasedTableConfig()
            .setBlockCache(cache)
            .setCacheIndexAndFilterBlocks(true) // index and filter memory counted in the cache, not beside it
            .setPinL0FilterAndIndexBlocksInCache(true);
        final Options options = new Options()
            .setCreateIfMissing(true)
            .setTableFormatConfig(table)
            .setWriteBufferManager(writeBufferManager)
            .setWriteBufferSize(settings.writeBufferLength() / MAX_WRITE_BUFFER_COUNT)
            .setMaxWriteBufferNumber(MAX_WRITE_BUFFER_COUNT)
            .setMaxTotalWalSize(4 * settings.writeBufferLength())
            .setMaxOpenFiles(MAX_OPEN_FILES)
            .setMaxBackgroundJobs(MAX_BACKGROUND_JOBS)
            .setWalRecoveryMode(WALRecoveryMode.TolerateCorruptedTailRecords) // a torn last write of a crash
            .setMaxLogFileSize(INFO_LOG_LENGTH)
            .setKeepLogFileNum(INFO_LOG_COUNT)
            .setInfoLogLevel(InfoLogLevel.INFO_LEVEL)
            .setBestEffortsRecovery(bestEffortsRecovery);
        if (stallListener != null)
        {
            options.setListeners(List.of(stallListener));
        }
        built.add(options);
        return options;
    }

    public void close()
    {
        for (final Options options : built)
        {
            options.close();
        }
        built.clear();
        writeBufferManager.close();
        cache.close();
    }
}
