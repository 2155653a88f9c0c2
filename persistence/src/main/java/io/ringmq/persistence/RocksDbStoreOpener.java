package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.LazyStore;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Opens the broker's RocksDB store at start only when there is something to recover: a data directory that holds
 * anything (a store, a pid file, a repair's leftovers, or a plain file in its place) is opened now, as
 * {@link RocksDbStore#open} does, so recovery, repair and the refusal of a directory in use happen before the port
 * opens; a missing or empty one is locked now ({@link DirectoryLock}: a second broker on it is refused at start)
 * and gets a {@link LazyStore} that creates and opens the store at the first record to keep (a
 * persistent session, a retained message, a message stored for a persistent session). Until then the process has
 * not loaded RocksDB's library at all: this class touches no RocksDB type.
 */
public final class RocksDbStoreOpener
{
    private RocksDbStoreOpener()
    {
    }

    /**
     * @throws io.ringmq.pipeline.persistence.StoreException as {@link RocksDbStore#open} does, for a directory that
     *                                                       holds anything.
     */
    public static DurableStore open(final RocksDbSettings settings)
    {
        final Path dir = settings.directory().toAbsolutePath().normalize();
        if (holdsAnything(dir))
        {
            return RocksDbStore.open(settings);
        }
        final DirectoryLock lock = DirectoryLock.acquire(dir); // a second broker on it is refused now, not later
        return new LazyStore(() -> RocksDbStore.open(settings), settings.describe(dir), lock::close);
    }

    /**
     * @return false only for a missing directory or one that can be listed and holds nothing but the lock of a
     * broker that never kept anything ({@link DirectoryLock}).
     */
    static boolean holdsAnything(final Path dir)
    {
        if (!Files.exists(dir))
        {
            return false;
        }
        if (!Files.isDirectory(dir))
        {
            return true; // RocksDbStore.open refuses it with its reason
        }
        try (Stream<Path> entries = Files.list(dir))
        {
            return entries.anyMatch(entry -> !DirectoryLock.FILE.equals(entry.getFileName().toString()));
        }
        catch (final IOException ex)
        {
            return true; // unreadable: the eager open reports why
        }
    }
}
