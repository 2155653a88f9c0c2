package io.ringmq.pipeline;

import org.agrona.BufferUtil;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

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
 * This memory is not direct memory, but it is counted against the same limit, {@code -XX:MaxDirectMemorySize}: a
 * mapping is refused with an {@link OutOfMemoryError}, as {@link ByteBuffer#allocateDirect} would refuse it, when
 * the mappings made here would together exceed it (the JVM's own direct buffers are not added in: reading their
 * total needs {@code java.management}, some 60 classes more in an idle broker's metadata). The rings fill up under
 * load, so the limit a broker starts with still bounds what they can come to hold. As with a direct buffer, the
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
    /** {@code -XX:MaxDirectMemorySize}, or the JVM's default for it (the maximum heap). */
    private static final long LIMIT = maxDirectMemory();
    /** Bytes mapped here and not yet unmapped. */
    private static final AtomicLong MAPPED = new AtomicLong();
    /** What gives each mapping's bytes back to {@link #MAPPED}: at {@link #release}, or once the buffer is gone. */
    private static final Map<Long, Cleaner.Cleanable> RESERVATIONS = new ConcurrentHashMap<>();
    private static final Cleaner CLEANER = Cleaner.create();

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
        reserve(length);
        for (final Path directory : directories)
        {
            try
            {
                return counted(map(directory, length), length);
            }
            catch (final IOException ex)
            {
                reasons.add(ex.getMessage());
            }
        }
        MAPPED.addAndGet(-length); // not mapped: allocateDirect below counts itself
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
        final Cleaner.Cleanable reservation = RESERVATIONS.remove(BufferUtil.address(buffer));
        BufferUtil.free(buffer); // its cleaner: munmap for a mapping, free for a direct buffer
        if (null != reservation)
        {
            reservation.clean();
        }
    }

    /**
     * @return the bytes mapped by {@link #allocate} and not yet unmapped.
     */
    static long mappedBytes()
    {
        return MAPPED.get();
    }

    /**
     * Counts {@code length} more mapped bytes, or refuses them as the JDK refuses a direct buffer past its limit
     * (after one collection, which unmaps the buffers nothing refers to any more).
     */
    private static void reserve(final int length)
    {
        for (int attempt = 0; ; attempt++)
        {
            final long mapped = MAPPED.get();
            if (mapped + length <= LIMIT)
            {
                if (MAPPED.compareAndSet(mapped, mapped + length))
                {
                    return;
                }
                continue;
            }
            if (attempt >= 7)
            {
                throw new OutOfMemoryError("cannot reserve " + length + " bytes of ring memory: " + mapped +
                    " already mapped, -XX:MaxDirectMemorySize " + LIMIT);
            }
            // buffers nothing refers to are unmapped by their cleaners (as Bits.reserveMemory relies on for direct
            // buffers), which run on the cleaner's thread after a collection: on busy cores that can take a while,
            // so it waits up to 1.27 s in all, collecting again each time
            System.gc();
            try
            {
                Thread.sleep(10L << attempt);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                throw new OutOfMemoryError("interrupted while reserving " + length + " bytes of ring memory");
            }
        }
    }

    /**
     * Gives a mapping's bytes back to the count when it is released or collected; the action holds no reference to
     * the buffer, which would keep it from ever being collected.
     */
    private static MappedByteBuffer counted(final MappedByteBuffer buffer, final int length)
    {
        final long address = BufferUtil.address(buffer);
        final Cleaner.Cleanable reservation = CLEANER.register(buffer, () ->
        {
            RESERVATIONS.remove(address);
            MAPPED.addAndGet(-length);
        });
        RESERVATIONS.put(address, reservation);
        return buffer;
    }

    /**
     * The JDK's own figure ({@code jdk.internal.misc.VM.maxDirectMemory()}, a class loaded at start; the launcher and
     * the tests open its package as Agrona needs it), or where it cannot be read, the JDK's default: the heap's limit.
     */
    private static long maxDirectMemory()
    {
        try
        {
            final Object max = Class.forName("jdk.internal.misc.VM").getMethod("maxDirectMemory").invoke(null);
            return (Long)max;
        }
        catch (final ReflectiveOperationException | RuntimeException | LinkageError ex)
        {
            return Runtime.getRuntime().maxMemory();
        }
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
