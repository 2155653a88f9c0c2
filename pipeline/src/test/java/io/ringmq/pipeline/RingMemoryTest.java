package io.ringmq.pipeline;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The rings' memory ({@link RingMemory}): zero-filled, of the length asked, aligned, resident only where written, no
 * file left behind, released on demand, and a directory it cannot map in reported with the reason.
 */
class RingMemoryTest
{
    private static final int MIB = 1024 * 1024;

    @TempDir
    Path directory;

    @Test
    @DisplayName("a mapping is zero-filled, of exactly the length asked, page aligned, and leaves no file behind")
    void mappedMemoryIsZeroFilledSizedAlignedAndNameless() throws IOException
    {
        assumeDiskBacked(directory);
        final int length = 3 * RingMemory.PAGE_LENGTH + 123; // not a whole number of pages
        final MappedByteBuffer buffer = RingMemory.map(directory, length);
        try
        {
            assertThat(buffer.capacity()).isEqualTo(length);
            assertThat(BufferUtil.address(buffer) % RingMemory.PAGE_LENGTH).isZero();
            for (int i = 0; i < length; i++)
            {
                assertThat(buffer.get(i)).as("byte %d", i).isZero();
            }
            buffer.put(length - 1, (byte)7);
            assertThat(buffer.get(length - 1)).isEqualTo((byte)7);
            try (Stream<Path> left = Files.list(directory))
            {
                assertThat(left).as("the file is deleted once mapped").isEmpty();
            }
        }
        finally
        {
            RingMemory.release(buffer);
        }
    }

    @Test
    @DisplayName("only the pages written are resident: 8 MiB mapped, one page written")
    void onlyWrittenPagesAreResident() throws IOException
    {
        assumeDiskBacked(directory);
        assumeTrue(Files.isReadable(Path.of("/proc/self/smaps")), "Linux /proc/self/smaps");
        final MappedByteBuffer buffer = RingMemory.map(directory, 8 * MIB);
        try
        {
            final long address = BufferUtil.address(buffer);
            buffer.putLong(5 * RingMemory.PAGE_LENGTH, 42L);
            final long[] rssAndAnonymousKb = residency(address);
            assertThat(rssAndAnonymousKb[0]).as("resident kB of the mapping").isLessThanOrEqualTo(64);
            assertThat(rssAndAnonymousKb[1]).as("anonymous kB: the page written").isGreaterThanOrEqualTo(4);
            assertThat(buffer.getLong(5 * RingMemory.PAGE_LENGTH)).isEqualTo(42L);
        }
        finally
        {
            RingMemory.release(buffer);
        }
    }

    @Test
    @DisplayName("release unmaps at once: the mapping is gone from the process")
    void releaseUnmaps() throws IOException
    {
        assumeDiskBacked(directory);
        assumeTrue(Files.isReadable(Path.of("/proc/self/maps")), "Linux /proc/self/maps");
        final MappedByteBuffer buffer = RingMemory.map(directory, MIB);
        final long address = BufferUtil.address(buffer);
        assertThat(mapping(address)).as("a private mapping of the deleted file").contains("ringmq-ring-")
            .contains("(deleted)").matches("\\S+ rw-p .*");

        RingMemory.release(buffer);

        assertThat(mapping(address)).isEmpty();
    }

    @Test
    @DisplayName("an Agrona many-to-one ring over it works through several wraps")
    void ringOverMappedMemory()
    {
        final int capacity = 64 * 1024;
        final ByteBuffer memory = RingMemory.allocate(capacity + RingBufferDescriptor.TRAILER_LENGTH);
        final ManyToOneRingBuffer ring = new ManyToOneRingBuffer(new UnsafeBuffer(memory));
        final UnsafeBuffer message = new UnsafeBuffer(new byte[1000]);
        final long[] sum = new long[1];
        long expected = 0;
        for (int i = 0; i < 1000; i++) // 1000 x ~1 KB: about 16 wraps of 64 KiB
        {
            message.putInt(0, i);
            assertThat(ring.write(1, message, 0, message.capacity())).isTrue();
            expected += i;
            ring.read((type, buffer, index, length) -> sum[0] += buffer.getInt(index));
        }
        assertThat(sum[0]).isEqualTo(expected);
    }

    @Test
    @DisplayName("a message log over it keeps entries across wraps")
    void messageLogOverMappedMemory()
    {
        final MessageLog log = new MessageLog(64 * 1024);
        final UnsafeBuffer entry = new UnsafeBuffer(new byte[10_000]);
        final UnsafeBuffer view = new UnsafeBuffer(0, 0);
        for (int i = 0; i < 50; i++)
        {
            entry.putInt(entry.capacity() - 4, i);
            final long end = log.append(entry, 0, entry.capacity());
            assertThat(end).isPositive();
            log.wrap(view, end, entry.capacity());
            assertThat(view.getInt(entry.capacity() - 4)).isEqualTo(i);
            log.release(end);
        }
    }

    @Test
    @DisplayName("a directory that does not exist is reported with its path, the length and the cause")
    void missingDirectoryIsReported()
    {
        final Path missing = directory.resolve("missing");
        assertThatThrownBy(() -> RingMemory.map(missing, MIB))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("cannot map 1048576 bytes in " + missing);
    }

    @Test
    @DisplayName("a file where the directory should be is reported")
    void fileInsteadOfDirectoryIsReported() throws IOException
    {
        assumeDiskBacked(directory);
        final Path file = Files.createFile(directory.resolve("plain"));
        assertThatThrownBy(() -> RingMemory.map(file, MIB))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("cannot map 1048576 bytes in " + file);
    }

    @Test
    @DisplayName("a directory on tmpfs is refused: each page written would be held twice, in shmem and anonymous")
    void tmpfsIsRefused() throws IOException
    {
        final Path shm = Path.of("/dev/shm");
        assumeTrue(Files.isDirectory(shm) && "tmpfs".equals(Files.getFileStore(shm).type()), "/dev/shm on tmpfs");
        assertThatThrownBy(() -> RingMemory.map(shm, MIB))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("cannot map 1048576 bytes in /dev/shm: it is on tmpfs");
    }

    @Test
    @DisplayName("where no directory will do, allocate falls back to zero-filled direct memory of the same length")
    void fallsBackToDirectMemory() throws IOException
    {
        final ByteBuffer buffer = RingMemory.allocate(List.of(directory.resolve("missing")), 3 * 4096 + 5);
        try
        {
            assertThat(buffer.isDirect()).isTrue();
            if (Files.isReadable(Path.of("/proc/self/maps")))
            {
                assertThat(mapping(BufferUtil.address(buffer))).as("not a mapping of a ring file")
                    .doesNotContain("ringmq-ring-");
            }
            assertThat(buffer.capacity()).isEqualTo(3 * 4096 + 5);
            assertThat(BufferUtil.address(buffer) % 8).as("aligned for Agrona's rings").isZero();
            for (int i = 0; i < buffer.capacity(); i++)
            {
                assertThat(buffer.get(i)).isZero();
            }
        }
        finally
        {
            RingMemory.release(buffer);
        }
    }

    @Test
    @DisplayName("a length of zero or less is refused")
    void nonPositiveLengthIsRefused()
    {
        assertThatThrownBy(() -> RingMemory.allocate(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RingMemory.allocate(-4096)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RingMemory.map(directory, Integer.MIN_VALUE))
            .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("mapped memory counts against -XX:MaxDirectMemorySize: past it the mapping is refused with an "
        + "OutOfMemoryError, as a direct buffer would be, and a release gives its bytes back")
    void mappingsCountAgainstTheDirectMemoryLimit()
    {
        // other tests' buffers may be collected (and uncounted) at any time: the count only ever falls by itself
        final ByteBuffer buffer = RingMemory.allocate(List.of(directory), 1 << 20);
        assumeTrue(buffer instanceof MappedByteBuffer, "mapped in the test's directory");
        final long counted = RingMemory.mappedBytes();
        assertThat(counted).isGreaterThanOrEqualTo(1 << 20);
        RingMemory.release(buffer);
        final long before = RingMemory.mappedBytes();
        assertThat(before).as("a release gives the bytes back").isLessThanOrEqualTo(counted - (1 << 20));
        // this JVM runs with -Xmx1g and no MaxDirectMemorySize: its limit is the heap's, under 1 GiB
        assertThatThrownBy(() -> RingMemory.allocate(List.of(directory), 1 << 30))
            .isInstanceOf(OutOfMemoryError.class);
        // at most what was counted before: the collection it tried first may have unmapped older buffers
        assertThat(RingMemory.mappedBytes()).as("a refused mapping leaves nothing counted").isLessThanOrEqualTo(before);
    }

    private static void assumeDiskBacked(final Path directory) throws IOException
    {
        final String type = Files.getFileStore(directory).type().toLowerCase(Locale.ROOT);
        assumeFalse(RingMemory.MEMORY_FILE_SYSTEMS.contains(type), "the temporary directory is on " + type);
    }

    /**
     * @return {Rss, Anonymous} in kB of the mapping holding {@code address}, from /proc/self/smaps.
     */
    private static long[] residency(final long address) throws IOException
    {
        final List<String> lines = Files.readAllLines(Path.of("/proc/self/smaps"));
        boolean inside = false;
        final long[] result = {-1, -1};
        for (final String line : lines)
        {
            if (isRangeLine(line))
            {
                inside = contains(line, address);
            }
            else if (inside && line.startsWith("Rss:"))
            {
                result[0] = kilobytes(line);
            }
            else if (inside && line.startsWith("Anonymous:"))
            {
                result[1] = kilobytes(line);
            }
        }
        assertThat(result[0]).as("the mapping is in /proc/self/smaps").isNotNegative();
        return result;
    }

    /**
     * @return the line of /proc/self/maps whose range holds {@code address}, or "" when none does.
     */
    private static String mapping(final long address) throws IOException
    {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(line -> contains(line, address))
            .findFirst().orElse("");
    }

    private static boolean isRangeLine(final String line)
    {
        final int dash = line.indexOf('-');
        return dash > 0 && line.indexOf(' ') > dash && line.substring(0, dash).chars().allMatch(
            c -> Character.digit(c, 16) >= 0);
    }

    private static boolean contains(final String rangeLine, final long address)
    {
        final int dash = rangeLine.indexOf('-');
        final long start = Long.parseUnsignedLong(rangeLine.substring(0, dash), 16);
        final long end = Long.parseUnsignedLong(rangeLine.substring(dash + 1, rangeLine.indexOf(' ')), 16);
        return address >= start && address < end;
    }

    private static long kilobytes(final String line)
    {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
    }
}
