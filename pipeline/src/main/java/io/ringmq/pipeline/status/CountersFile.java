package io.ringmq.pipeline.status;

import org.agrona.IoUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The writer's side of a broker's counters file, laid out by {@link CountersFileDescriptor}: a memory-mapped file
 * named {@code ringmq-<pid>-<n>.counters} in a directory that {@code ringmq stat} reads, or the same layout in
 * process memory when nobody outside needs to see it (tests).
 * <p>
 * {@link #close()} deletes the file but leaves the mapping to the garbage collector, so a thread that still adds
 * to a counter, or reads one, after the broker stopped never touches unmapped memory.
 */
public final class CountersFile implements AutoCloseable
{
    private static final AtomicInteger NEXT_IN_PROCESS = new AtomicInteger();

    private final Path path;
    private final AtomicBuffer buffer;
    private final AtomicBuffer metaDataBuffer;
    private final AtomicBuffer valuesBuffer;
    private final AtomicBuffer errorLogBuffer;
    private boolean closed;

    private CountersFile(final Path path, final ByteBuffer memory)
    {
        this.path = path;
        buffer = new UnsafeBuffer(memory);
        CountersFileDescriptor.fillHeader(buffer, ProcessHandle.current().pid(), System.currentTimeMillis());
        metaDataBuffer = CountersFileDescriptor.metaDataBuffer(buffer);
        valuesBuffer = CountersFileDescriptor.valuesBuffer(buffer);
        errorLogBuffer = CountersFileDescriptor.errorLogBuffer(buffer);
    }

    /**
     * @return counters in process memory, with no file.
     */
    public static CountersFile inMemory()
    {
        return new CountersFile(null, ByteBuffer.allocateDirect(CountersFileDescriptor.fileLength()));
    }

    /**
     * Creates and maps a new counters file in {@code directory} (created if missing), under a name no other broker,
     * in this process or another, has: {@code ringmq-<pid>-<n>.counters}.
     *
     * @throws IOException when the directory or the file cannot be created.
     */
    /**
     * Removes the files of brokers whose process is gone (killed, so they never deleted theirs), as Aeron's media
     * driver cleans up after a dead one: {@code ringmq stat} then shows only brokers that run.
     */
    static void removeLeftOvers(final Path directory)
    {
        try
        {
            for (final Path file : CountersFileReader.find(directory, null))
            {
                final String name = file.getFileName().toString();
                final int from = CountersFileDescriptor.FILE_PREFIX.length();
                final int to = name.indexOf('-', from);
                if (to > from)
                {
                    final long pid = Long.parseLong(name.substring(from, to));
                    if (!ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                    {
                        Files.deleteIfExists(file);
                    }
                }
            }
        }
        catch (final IOException | NumberFormatException ex)
        {
            // a name not ours, or a file another broker removed first: nothing to clean here
        }
    }

    public static CountersFile create(final Path directory) throws IOException
    {
        Files.createDirectories(directory);
        removeLeftOvers(directory);
        final long pid = ProcessHandle.current().pid();
        while (true)
        {
            final Path path = directory.resolve(CountersFileDescriptor.FILE_PREFIX + pid + '-' +
                NEXT_IN_PROCESS.getAndIncrement() + CountersFileDescriptor.FILE_SUFFIX);
            final MappedByteBuffer mapped;
            try
            {
                // creates the file only if it does not exist (CREATE_NEW): the name is claimed atomically, and a file
                // left by a dead process with the same pid is skipped
                mapped = IoUtil.mapNewFile(path.toFile(), CountersFileDescriptor.fileLength(), false);
            }
            catch (final Exception ex) // IoUtil rethrows the IOException unchecked
            {
                if (ex instanceof FileAlreadyExistsException)
                {
                    continue;
                }
                throw new IOException("cannot create counters file " + path + ": " + ex, ex);
            }
            return new CountersFile(path, mapped);
        }
    }

    /**
     * @return the file, or null when the counters are in memory only.
     */
    public Path path()
    {
        return path;
    }

    /**
     * @return the whole file, header included.
     */
    public AtomicBuffer buffer()
    {
        return buffer;
    }

    public AtomicBuffer metaDataBuffer()
    {
        return metaDataBuffer;
    }

    public AtomicBuffer valuesBuffer()
    {
        return valuesBuffer;
    }

    public AtomicBuffer errorLogBuffer()
    {
        return errorLogBuffer;
    }

    /**
     * Deletes the file; the memory stays readable and writable until it is garbage.
     */
    public synchronized void close()
    {
        if (closed)
        {
            return;
        }
        closed = true;
        if (null != path)
        {
            IoUtil.deleteIfExists(path.toFile());
        }
    }
}
