package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.StoreException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The data directory's own files beside RocksDB's: {@value #PID_FILE}, which names the broker that holds the
 * directory so a second one is refused with that pid, and the {@value #LOST_DIRECTORY} folder where a repair puts
 * what it could not use.
 */
final class DataDirectory
{
    static final String PID_FILE = "ringmq.pid";
    static final String LOST_DIRECTORY = "lost";

    private DataDirectory()
    {
    }

    /**
     * @return the directory as an absolute path, created when missing.
     * @throws StoreException when it is a plain file or cannot be created.
     */
    static Path prepare(final Path directory)
    {
        final Path dir = directory.toAbsolutePath().normalize();
        if (Files.exists(dir) && !Files.isDirectory(dir))
        {
            throw new StoreException("data directory " + dir + " is a file, not a directory: " +
                "pass a directory (it is created when missing)");
        }
        try
        {
            Files.createDirectories(dir);
        }
        catch (final IOException ex)
        {
            throw new StoreException("cannot create data directory " + dir + ": " + ex, ex);
        }
        return dir;
    }

    /**
     * @return the pid in {@value #PID_FILE}, or -1 when there is none or it is unreadable.
     */
    static long readPid(final Path dir)
    {
        try
        {
            return Long.parseLong(Files.readString(dir.resolve(PID_FILE), StandardCharsets.US_ASCII).trim());
        }
        catch (final IOException | NumberFormatException ex)
        {
            return -1;
        }
    }

    /**
     * Writes this process's pid; called once RocksDB's lock is held, so a stale file is simply replaced.
     */
    static void writePid(final Path dir)
    {
        final Path tmp = dir.resolve(PID_FILE + ".tmp");
        try
        {
            Files.writeString(tmp, ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
            Files.move(tmp, dir.resolve(PID_FILE), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
        }
        catch (final IOException ex)
        {
            throw new StoreException("cannot write " + dir.resolve(PID_FILE) + ": " + ex, ex);
        }
    }

    static void deletePid(final Path dir)
    {
        try
        {
            Files.deleteIfExists(dir.resolve(PID_FILE));
        }
        catch (final IOException ignore)
        {
            // a stale pid file is replaced by the next broker that gets the lock
        }
    }

    /**
     * @return the refusal for a directory whose lock another broker (or this process) holds.
     */
    static StoreException lockHeld(final Path dir, final long holderPid, final Throwable cause)
    {
        final String holder;
        if (holderPid < 0)
        {
            holder = "another broker";
        }
        else if (holderPid == ProcessHandle.current().pid())
        {
            holder = "this process (pid " + holderPid + ")";
        }
        else
        {
            holder = "the broker with pid " + holderPid;
        }
        return new StoreException("data directory " + dir + " is in use by " + holder +
            ": stop it, or give this broker another data directory", cause);
    }

    /**
     * Moves a file into {@value #LOST_DIRECTORY}/, under a new name when one is already there.
     *
     * @return its name in {@value #LOST_DIRECTORY}/.
     */
    static String moveToLost(final Path dir, final Path file) throws IOException
    {
        final Path lost = Files.createDirectories(dir.resolve(LOST_DIRECTORY));
        final String name = file.getFileName().toString();
        Path target = lost.resolve(name);
        for (int i = 1; Files.exists(target); i++)
        {
            target = lost.resolve(name + "." + i);
        }
        Files.move(file, target);
        return target.getFileName().toString();
    }

    static void deleteRecursively(final Path path) throws IOException
    {
        if (!Files.exists(path))
        {
            return;
        }
        try (Stream<Path> walk = Files.walk(path))
        {
            for (final Path p : (Iterable<Path>)walk.sorted(Comparator.reverseOrder())::iterator)
            {
                Files.delete(p);
            }
        }
    }
}
