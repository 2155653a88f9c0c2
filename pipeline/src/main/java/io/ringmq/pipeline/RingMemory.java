package io.ringmq.pipeline;

import org.agrona.BufferUtil;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Off-heap memory for the broker's rings and logs that is zero-filled yet resident only where it is written.
 * <p>
 * {@link ByteBuffer#allocateDirect} zeroes every page it hands out, so a ring of 8 MiB is 8 MiB of resident memory
 * from the start, however little of it an idle broker ever uses. Here a ring is instead a private
 * ({@code MAP_PRIVATE}) mapping of a sparse temporary file, deleted as soon as it is mapped:
 * <pre>
 *   ftruncate(length)      a file of holes: no disk block, nothing to zero
 *   mmap(MAP_PRIVATE)      reading a page sees zeros; the first write to it copies it into anonymous memory
 *   unlink                 no name left behind; the mapping keeps the inode alive until it is unmapped
 * </pre>
 * A page becomes resident (anonymous memory, like the heap) when the ring first writes to it; nothing ever goes back
 * to the file, so the disk sees no write. A ring that wraps under load becomes resident over time, up to its length.
 * Each first write also leaves a clean page of the file in the page cache, which the kernel may drop at any time and
 * which is not the process's resident memory; on tmpfs that page could not be dropped (no disk behind it), so a
 * directory on tmpfs, ramfs or hugetlbfs is never used.
 * <p>
 * The file goes in {@code java.io.tmpdir}, or in {@code /var/tmp} where that one is on tmpfs (as {@code /tmp} is on
 * several distributions). Where neither will do (a read-only file system, a full inode table), {@link #allocate}
 * falls back to {@link ByteBuffer#allocateDirect}, resident at once as before, and says why once in the log.
 * <p>
 * This memory is not direct memory: {@code -XX:MaxDirectMemorySize} does not count it. As with a direct buffer, the
 * garbage collector unmaps it once nothing refers to the buffer; {@link #release} does it at once, for callers that
 * know no thread will touch it again.
 */
public final class RingMemory
{
    /** A page: the mappings start at a page boundary, more than any ring's alignment needs. */
    public static final int PAGE_LENGTH = 4096;
    /** File systems whose pages live in memory only: a mapping there would hold every touched page twice. */
    static final Set<String> MEMORY_FILE_SYSTEMS = Set.of("tmpfs", "ramfs", "hugetlbfs", "devtmpfs");
    private static final String FILE_PREFIX = "ringmq-ring-";
    private static final System.Logger LOG = System.getLogger("io.ringmq");
    private static volatile boolean fallbackReported;

    private RingMemory()
    {
    }

    /**
     * Zero-filled memory of {@code length} bytes: mapped (page aligned) so that only written pages are resident, or
     * where it cannot be mapped, from {@link ByteBuffer#allocateDirect} (the reason is logged once per process).
     */
    public static ByteBuffer allocate(final int length)
    {
        return allocate(directories(), length);
    }

    /**
     * @param directories where to try to map, in order.
     */
    static ByteBuffer allocate(final List<Path> directories, final int length)
    {
        checkLength(length);
        final List<String> reasons = new ArrayList<>();
        for (final Path directory : directories)
        {
            try
            {
                return map(directory, length);
            }
            catch (final IOException ex)
            {
                reasons.add(ex.getMessage());
            }
        }
        if (!fallbackReported)
        {
            fallbackReported = true;
            LOG.log(System.Logger.Level.WARNING, "rings allocated as direct memory, resident from the start: " +
                (reasons.isEmpty() ? "no directory to map in" : String.join("; ", reasons)));
        }
        return ByteBuffer.allocateDirect(length); // malloc's alignment, 16 bytes: more than the rings' 8
    }

    /**
     * Maps {@code length} zero-filled bytes through a sparse temporary file in {@code directory}, deleted before this
     * returns.
     *
     * @throws IOException with the directory, the length and the cause, when the directory is on a memory file
     *                     system ({@link #MEMORY_FILE_SYSTEMS}), or the file cannot be made or mapped.
     */
    public static MappedByteBuffer map(final Path directory, final int length) throws IOException
    {
        checkLength(length);
        final String type;
        try
        {
            type = Files.getFileStore(directory).type().toLowerCase(Locale.ROOT);
        }
        catch (final IOException | RuntimeException ex)
        {
            throw new IOException("cannot map " + length + " bytes in " + directory + ": " + ex, ex);
        }
        if (MEMORY_FILE_SYSTEMS.contains(type))
        {
            throw new IOException("cannot map " + length + " bytes in " + directory + ": it is on " + type +
                ", where every page written would be held twice");
        }
        Path file = null;
        try
        {
            file = Files.createTempFile(directory, FILE_PREFIX, ".map"); // owner-only permissions
            try (RandomAccessFile sparse = new RandomAccessFile(file.toFile(), "rw"))
            {
                sparse.setLength(length); // ftruncate: holes, no block written
                return sparse.getChannel().map(FileChannel.MapMode.PRIVATE, 0, length);
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            throw new IOException("cannot map " + length + " bytes in " + directory + ": " + ex, ex);
        }
        finally
        {
            if (null != file)
            {
                Files.deleteIfExists(file); // the mapping keeps the memory; the name goes
            }
        }
    }

    /**
     * Gives memory from {@link #allocate} or {@link #map} back now (unmapped, or freed); the buffer and every view
     * of it must never be touched again.
     */
    public static void release(final ByteBuffer buffer)
    {
        BufferUtil.free(buffer); // its cleaner: munmap for a mapping, free for a direct buffer
    }

    /**
     * @return where {@link #allocate} tries to map, in order: {@code java.io.tmpdir}, then {@code /var/tmp}.
     */
    static List<Path> directories()
    {
        final List<Path> directories = new ArrayList<>(2);
        final String tmp = System.getProperty("java.io.tmpdir");
        if (null != tmp && !tmp.isEmpty())
        {
            directories.add(Path.of(tmp));
        }
        final Path varTmp = Path.of("/var/tmp");
        if (!directories.contains(varTmp) && Files.isDirectory(varTmp))
        {
            directories.add(varTmp);
        }
        return directories;
    }

    private static void checkLength(final int length)
    {
        if (length <= 0)
        {
            throw new IllegalArgumentException("ring memory length must be positive: " + length);
        }
    }
}
