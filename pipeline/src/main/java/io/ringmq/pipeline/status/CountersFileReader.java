package io.ringmq.pipeline.status;

import org.agrona.IoUtil;
import org.agrona.concurrent.AtomicBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.errors.ErrorConsumer;
import org.agrona.concurrent.errors.ErrorLogReader;
import org.agrona.concurrent.status.CountersReader;

import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The reader's side of a counters file, as another process sees it ({@code ringmq stat}, as Aeron's
 * {@code CncFileReader} serves {@code AeronStat}): maps the file read-only and reads the counters and the
 * distinct error log without touching any broker thread. Owned by one thread; {@link #close()} unmaps.
 */
public final class CountersFileReader implements AutoCloseable
{
    private final Path path;
    private final MappedByteBuffer mapped;
    private final CountersReader counters;
    private final AtomicBuffer errorLog;
    private final long pid;
    private final long startTimestampMs;

    private CountersFileReader(final Path path, final MappedByteBuffer mapped)
    {
        this.path = path;
        this.mapped = mapped;
        final AtomicBuffer file = new UnsafeBuffer(mapped);
        final int version = CountersFileDescriptor.version(file);
        if (CountersFileDescriptor.VERSION != version)
        {
            throw new IllegalStateException(path + ": " + (0 == version ? "not laid out yet" :
                "version " + version + ", this ringmq reads version " + CountersFileDescriptor.VERSION));
        }
        pid = CountersFileDescriptor.pid(file);
        startTimestampMs = CountersFileDescriptor.startTimestampMs(file);
        counters = new CountersReader(CountersFileDescriptor.metaDataBuffer(file),
            CountersFileDescriptor.valuesBuffer(file));
        errorLog = CountersFileDescriptor.errorLogBuffer(file);
    }

    /**
     * Maps an existing counters file read-only.
     *
     * @throws IOException           when it is missing or cannot be mapped.
     * @throws IllegalStateException when it is not a counters file this code reads.
     */
    public static CountersFileReader open(final Path path) throws IOException
    {
        if (!Files.isRegularFile(path))
        {
            throw new NoSuchFileException(path.toString(), null, "no counters file");
        }
        if (Files.size(path) < CountersFileDescriptor.HEADER_LENGTH)
        {
            throw new IllegalStateException(path + ": too short for a counters file");
        }
        final MappedByteBuffer mapped;
        try
        {
            mapped = IoUtil.mapExistingFile(path.toFile(), FileChannel.MapMode.READ_ONLY, "counters");
        }
        catch (final RuntimeException ex)
        {
            throw new IOException("cannot map " + path + ": " + ex.getMessage(), ex);
        }
        try
        {
            return new CountersFileReader(path, mapped);
        }
        catch (final RuntimeException ex)
        {
            IoUtil.unmap(mapped);
            throw ex;
        }
    }

    /**
     * @return the counters files in {@code directory}, by name; those of one process when {@code pid} is not null.
     */
    public static List<Path> find(final Path directory, final Long pid) throws IOException
    {
        final List<Path> files = new ArrayList<>();
        if (!Files.isDirectory(directory))
        {
            return files;
        }
        final String glob = CountersFileDescriptor.FILE_PREFIX + (null == pid ? "" : pid + "-") + "*" +
            CountersFileDescriptor.FILE_SUFFIX;
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory, glob))
        {
            stream.forEach(files::add);
        }
        files.sort(null);
        return files;
    }

    public Path path()
    {
        return path;
    }

    /**
     * @return the pid of the broker that wrote the file.
     */
    public long pid()
    {
        return pid;
    }

    public long startTimestampMs()
    {
        return startTimestampMs;
    }

    /**
     * @return whether the broker's process is still running (a file left by a killed broker says no).
     */
    public boolean isBrokerAlive()
    {
        final java.util.Optional<ProcessHandle> process = ProcessHandle.of(pid);
        if (process.isEmpty() || !process.get().isAlive() || !Files.exists(path))
        {
            return false;
        }
        // a process that started after the file was written has only reused the pid of the broker that wrote it
        final java.util.Optional<java.time.Instant> started = process.get().info().startInstant();
        return started.isEmpty() || started.get().toEpochMilli() <= startTimestampMs() + 1_000;
    }

    /**
     * @return the counters, live.
     */
    public CountersReader counters()
    {
        return counters;
    }

    /**
     * Reads the distinct error log.
     *
     * @return how many distinct errors were read.
     */
    public int readErrors(final ErrorConsumer consumer)
    {
        return ErrorLogReader.read(errorLog, consumer);
    }

    public void close()
    {
        IoUtil.unmap(mapped);
    }
}
