package io.ringmq.transport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Damage done to a copy of a broker's data directory, as a disk or an operator might do it: a write-ahead log cut
 * short, bytes of a table file overwritten. The broker that made the directory must have exited.
 */
final class DataDirectoryDamage
{
    /** Something done to a copy of a data directory. */
    interface Damage
    {
        void apply(Path dataDir) throws IOException;
    }

    private DataDirectoryDamage()
    {
    }

    /**
     * @return the non-empty file whose name ends with {@code suffix} and sorts last (RocksDB numbers its files in
     * zero-padded increasing order, so that is the newest).
     */
    static Optional<Path> newest(final Path dir, final String suffix) throws IOException
    {
        return files(dir, suffix).stream().max(Comparator.comparing(path -> path.getFileName().toString()));
    }

    /**
     * @return the largest file whose name ends with {@code suffix}.
     */
    static Optional<Path> largest(final Path dir, final String suffix) throws IOException
    {
        return files(dir, suffix).stream().max(Comparator.comparingLong(DataDirectoryDamage::size));
    }

    private static List<Path> files(final Path dir, final String suffix) throws IOException
    {
        if (!Files.isDirectory(dir))
        {
            return List.of();
        }
        try (Stream<Path> files = Files.walk(dir))
        {
            return files.filter(Files::isRegularFile).filter(path -> path.getFileName().toString().endsWith(suffix))
                .filter(path -> size(path) > 0).toList();
        }
    }

    private static long size(final Path path)
    {
        try
        {
            return Files.size(path);
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * @return every file under the directory with its size, for a failure message.
     */
    static String listing(final Path dir) throws IOException
    {
        if (!Files.isDirectory(dir))
        {
            return dir + " does not exist";
        }
        try (Stream<Path> files = Files.walk(dir))
        {
            return files.filter(Files::isRegularFile)
                .map(path -> dir.relativize(path) + " (" + size(path) + " B)").sorted().toList().toString();
        }
    }

    /**
     * Copies a directory tree.
     *
     * @return the copy.
     */
    static Path copy(final Path from, final Path to) throws IOException
    {
        try (Stream<Path> files = Files.walk(from))
        {
            for (final Path path : files.toList())
            {
                final Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path))
                {
                    Files.createDirectories(target);
                }
                else
                {
                    Files.copy(path, target);
                }
            }
        }
        return to;
    }

    /**
     * Cuts a file to half its length, as a write that never reached the disk.
     */
    static Damage truncateHalf(final String fileName)
    {
        return dataDir ->
        {
            try (FileChannel channel = FileChannel.open(dataDir.resolve(fileName), StandardOpenOption.WRITE))
            {
                channel.truncate(channel.size() / 2);
            }
        };
    }

    /**
     * Inverts 256 bytes a third of the way into a file (a table file's data blocks, before its index and footer).
     */
    static Damage garble(final String fileName)
    {
        return dataDir ->
        {
            try (FileChannel channel = FileChannel.open(dataDir.resolve(fileName), StandardOpenOption.READ,
                StandardOpenOption.WRITE))
            {
                final long at = channel.size() / 3;
                final ByteBuffer bytes = ByteBuffer.allocate((int)Math.min(256, channel.size() - at));
                channel.read(bytes, at);
                for (int i = 0; i < bytes.limit(); i++)
                {
                    bytes.put(i, (byte)~bytes.get(i));
                }
                bytes.rewind();
                channel.write(bytes, at);
            }
        };
    }
}
