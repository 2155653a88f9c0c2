package io.ringmq.pipeline.persistence;

import java.nio.file.Path;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * The store's settings, a part of {@link io.ringmq.pipeline.BrokerContext}: whether sessions, their QoS 1 and 2
 * messages and retained messages are kept on disk, where, how durably, and the store's memory. Each of them is fixed
 * at start (a reload names a change as needing a restart).
 */
public final class PersistenceSettings
{
    private boolean persistent;
    private Path dataDir = Path.of("data");
    private Durability durability = Durability.PERIODIC;
    private long fsyncIntervalMs = 10;
    private boolean strictRecovery;
    private long cacheBytes = 8L * 1024 * 1024;
    private long writeBufferBytes = 8L * 1024 * 1024;

    /**
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    public PersistenceSettings conclude()
    {
        check(fsyncIntervalMs >= 1 && fsyncIntervalMs <= 60_000, "--fsync-interval must be 1 ms..60 s");
        check(cacheBytes >= 1024 * 1024, "--persistence-cache must be at least 1 MiB");
        check(writeBufferBytes >= 1024 * 1024, "--persistence-write-buffers must be at least 1 MiB");
        return this;
    }

    /**
     * @return true when sessions, their messages and retained messages are kept on disk ({@code --persistence
     * rocksdb}); false keeps them in memory only (the default of a context made in code; the command line's is
     * rocksdb).
     */
    public boolean persistent()
    {
        return persistent;
    }

    public PersistenceSettings persistent(final boolean persistent)
    {
        this.persistent = persistent;
        return this;
    }

    /**
     * @return where the store lives ({@code --data-dir}, default {@code ./data}).
     */
    public Path dataDir()
    {
        return dataDir;
    }

    public PersistenceSettings dataDir(final Path dataDir)
    {
        this.dataDir = dataDir;
        return this;
    }

    public Durability durability()
    {
        return durability;
    }

    /**
     * @param durability      when group commits reach the disk ({@code --durability}).
     * @param fsyncIntervalMs how often {@code periodic} fsyncs ({@code --fsync-interval}).
     * @return this.
     */
    public PersistenceSettings durability(final Durability durability, final long fsyncIntervalMs)
    {
        this.durability = durability;
        this.fsyncIntervalMs = fsyncIntervalMs;
        return this;
    }

    public long fsyncIntervalMs()
    {
        return fsyncIntervalMs;
    }

    /**
     * @return true when a start that finds a damaged store refuses to go on ({@code --strict-recovery}) instead of
     * starting with what it could recover.
     */
    public boolean strictRecovery()
    {
        return strictRecovery;
    }

    public PersistenceSettings strictRecovery(final boolean strictRecovery)
    {
        this.strictRecovery = strictRecovery;
        return this;
    }

    /**
     * @return the store's block cache ({@code --persistence-cache}).
     */
    public long cacheBytes()
    {
        return cacheBytes;
    }

    /**
     * @return the store's memtables, all together ({@code --persistence-write-buffers}).
     */
    public long writeBufferBytes()
    {
        return writeBufferBytes;
    }

    public PersistenceSettings memory(final long cacheBytes, final long writeBufferBytes)
    {
        this.cacheBytes = cacheBytes;
        this.writeBufferBytes = writeBufferBytes;
        return this;
    }

    @Override
    public String toString()
    {
        if (!persistent)
        {
            return "persistence=memory";
        }
        return "persistence=rocksdb data-dir=" + dataDir + " durability=" + durability.name().toLowerCase() +
            (durability == Durability.PERIODIC ? "(" + fsyncIntervalMs + "ms)" : "") +
            (strictRecovery ? " strict-recovery" : "");
    }
}
