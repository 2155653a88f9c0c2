package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.Durability;
import io.ringmq.pipeline.persistence.StoreException;

import java.nio.file.Path;
import java.util.Objects;

/**
 * How a {@link RocksDbStore} opens, validated once in the constructor. {@link #defaults(Path)} gives every default;
 * the {@code with*} methods return a changed copy.
 *
 * <table>
 *   <caption>defaults</caption>
 *   <tr><td>durability</td><td>{@link Durability#PERIODIC}</td><td>no stage waits for an fsync</td></tr>
 *   <tr><td>fsync interval</td><td>{@value #DEFAULT_FSYNC_INTERVAL_MS} ms</td><td>a machine crash loses at most
 *       this long</td></tr>
 *   <tr><td>block cache</td><td>8 MiB</td><td>recovery reads everything once at start; after that the broker
 *       writes far more than it reads, so the cache only holds index blocks and recent data</td></tr>
 *   <tr><td>write buffers</td><td>8 MiB</td><td>all memtables together: two of 4 MiB, one filling while the other
 *       flushes; a broker's records are small and short-lived, most are deleted before a flush</td></tr>
 *   <tr><td>strict</td><td>false</td><td>repair what can be repaired and report the loss, rather than refuse to
 *       start</td></tr>
 * </table>
 *
 * @param directory         the data directory; created when missing.
 * @param durability        when commits reach the disk.
 * @param fsyncIntervalMs   the period of the fsync thread in {@link Durability#PERIODIC}.
 * @param blockCacheLength  bytes of the LRU block cache (data, index and filter blocks).
 * @param writeBufferLength bytes of all memtables together, charged to the same cache.
 * @param strict            true to refuse to open or scan past corruption instead of repairing and reporting it.
 */
public record RocksDbSettings(
    Path directory,
    Durability durability,
    long fsyncIntervalMs,
    long blockCacheLength,
    long writeBufferLength,
    boolean strict)
{
    /** The period of the fsync thread in {@link Durability#PERIODIC}. */
    public static final long DEFAULT_FSYNC_INTERVAL_MS = 10;
    /** 8 MiB of block cache. */
    public static final long DEFAULT_BLOCK_CACHE_LENGTH = 8L << 20;
    /** 8 MiB for all memtables together. */
    public static final long DEFAULT_WRITE_BUFFER_LENGTH = 8L << 20;

    /** Below this a memtable flushes every few records. */
    static final long MIN_WRITE_BUFFER_LENGTH = 64L << 10;

    /**
     * Validates every field.
     */
    public RocksDbSettings
    {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(durability, "durability");
        if (fsyncIntervalMs < 1)
        {
            throw new StoreException("fsync interval must be at least 1 ms, was " + fsyncIntervalMs);
        }
        if (blockCacheLength < 0)
        {
            throw new StoreException("block cache must not be negative, was " + blockCacheLength);
        }
        if (writeBufferLength < MIN_WRITE_BUFFER_LENGTH)
        {
            throw new StoreException("write buffers must be at least " + MIN_WRITE_BUFFER_LENGTH + " bytes, was " +
                writeBufferLength);
        }
    }

    /**
     * @param directory the data directory.
     * @return periodic durability every 10 ms, 8 MiB cache, 8 MiB write buffers, not strict.
     */
    public static RocksDbSettings defaults(final Path directory)
    {
        return new RocksDbSettings(directory, Durability.PERIODIC, DEFAULT_FSYNC_INTERVAL_MS,
            DEFAULT_BLOCK_CACHE_LENGTH, DEFAULT_WRITE_BUFFER_LENGTH, false);
    }

    public RocksDbSettings withDurability(final Durability durability)
    {
        return new RocksDbSettings(directory, durability, fsyncIntervalMs, blockCacheLength, writeBufferLength, strict);
    }

    public RocksDbSettings withFsyncIntervalMs(final long fsyncIntervalMs)
    {
        return new RocksDbSettings(directory, durability, fsyncIntervalMs, blockCacheLength, writeBufferLength, strict);
    }

    public RocksDbSettings withBlockCacheLength(final long blockCacheLength)
    {
        return new RocksDbSettings(directory, durability, fsyncIntervalMs, blockCacheLength, writeBufferLength, strict);
    }

    public RocksDbSettings withWriteBufferLength(final long writeBufferLength)
    {
        return new RocksDbSettings(directory, durability, fsyncIntervalMs, blockCacheLength, writeBufferLength, strict);
    }

    public RocksDbSettings withStrict(final boolean strict)
    {
        return new RocksDbSettings(directory, durability, fsyncIntervalMs, blockCacheLength, writeBufferLength, strict);
    }

    /**
     * @return the store's line for the start banner, e.g. {@code rocksdb /var/lib/ringmq durability=sync ...}.
     */
    public String describe(final Path absoluteDirectory)
    {
        final String durabilityName = durability == Durability.PERIODIC ?
            "periodic(" + fsyncIntervalMs + "ms)" : durability.name().toLowerCase();
        return "rocksdb " + absoluteDirectory + " durability=" + durabilityName + " cache=" + size(blockCacheLength) +
            " write-buffers=" + size(writeBufferLength) + (strict ? " strict" : "");
    }

    private static String size(final long length)
    {
        if (length >= (1L << 20) && length % (1L << 20) == 0)
        {
            return (length >> 20) + "MiB";
        }
        if (length >= 1024 && length % 1024 == 0)
        {
            return (length >> 10) + "KiB";
        }
        return length + "B";
    }
}
