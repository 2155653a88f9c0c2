package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.StoreException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The data directory held by one broker before its store exists: an OS lock on {@value #FILE} (with the holder's
 * pid in it), taken at start, so that a second broker given the same directory is refused at start, as it is when
 * the store exists (RocksDB's own LOCK), not later at its first persistent client. The file stays when the lock is
 * let go; a directory holding only it is still an empty one ({@link RocksDbStoreOpener}).
 * <p>
 * The OS lock belongs to the process, and closing any descriptor of the file lets go of it: a second broker in this
 * JVM (tests, embedding) is refused by {@link #HELD} before it opens the file, or its refusal would unlock the first.
 */
final class DirectoryLock implements AutoCloseable
{
    static final String FILE = "ringmq.lock";

    /** The lock files this JVM holds, by real path. */
    private static final Set<Path> HELD = ConcurrentHashMap.newKeySet();

    private final Path held;
    private final FileChannel channel;
    private final FileLock lock;

    private DirectoryLock(final Path held, final FileChannel channel, final FileLock lock)
    {
        this.held = held;
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Creates the directory when missing and locks it.
     *
     * @throws StoreException when it cannot be created or another broker (in this process or another) holds it.
     */
    static DirectoryLock acquire(final Path dir)
    {
        Path held = null;
        FileChannel channel = null;
        try
        {
            Files.createDirectories(dir);
            final Path file = dir.toRealPath().resolve(FILE);
            if (!HELD.add(file))
            {
                throw new StoreException("data directory " + dir + " is in use by another broker in this process (pid " +
                    ProcessHandle.current().pid() + "): give each broker its own --data-dir");
            }
            held = file;
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.READ);
            FileLock lock;
            try
            {
                lock = channel.tryLock();
            }
            catch (final OverlappingFileLockException heldHere)
            {
                lock = null; // not through this class: refused all the same
            }
            if (null == lock)
            {
                final String holder = new String(Files.readAllBytes(file), StandardCharsets.US_ASCII).strip();
                channel.close();
                throw new StoreException("data directory " + dir + " is in use by another broker" +
                    (holder.isEmpty() ? "" : " (pid " + holder + ")") + ": give each broker its own --data-dir");
            }
            channel.truncate(0);
            channel.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)),
                0);
            return new DirectoryLock(file, channel, lock);
        }
        catch (final IOException | RuntimeException ex)
        {
            closeQuietly(channel);
            if (null != held)
            {
                HELD.remove(held);
            }
            if (ex instanceof RuntimeException)
            {
                throw (RuntimeException)ex;
            }
            throw new StoreException("cannot lock data directory " + dir + ": " + ex.getMessage(), ex);
        }
    }

    public void close()
    {
        try
        {
            lock.release();
        }
        catch (final IOException ignored)
        {
            // the channel's close below lets it go too
        }
        closeQuietly(channel);
        HELD.remove(held);
    }

    private static void closeQuietly(final FileChannel channel)
    {
        if (null != channel)
        {
            try
            {
                channel.close();
            }
            catch (final IOException ignored)
            {
                // nothing more to let go
            }
        }
    }
}
