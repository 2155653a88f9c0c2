package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Small helpers shared by the store tests: string records, a scan into a map, file lookups.
 */
final class StoreFixtures
{
    private StoreFixtures()
    {
    }

    static void put(final StoreWriter writer, final String key, final String value)
    {
        final UnsafeBuffer k = new UnsafeBuffer(key.getBytes(StandardCharsets.UTF_8));
        final UnsafeBuffer v = new UnsafeBuffer(value.getBytes(StandardCharsets.UTF_8));
        writer.put(k, 0, k.capacity(), v, 0, v.capacity());
    }

    static void delete(final StoreWriter writer, final String key)
    {
        final UnsafeBuffer k = new UnsafeBuffer(key.getBytes(StandardCharsets.UTF_8));
        writer.delete(k, 0, k.capacity());
    }

    static void deleteRange(final StoreWriter writer, final String from, final String to)
    {
        final UnsafeBuffer f = new UnsafeBuffer(from.getBytes(StandardCharsets.UTF_8));
        final UnsafeBuffer t = new UnsafeBuffer(to.getBytes(StandardCharsets.UTF_8));
        writer.deleteRange(f, 0, f.capacity(), t, 0, t.capacity());
    }

    /**
     * Scanned records, and the report the scan returned.
     */
    record Scan(TreeMap<String, String> records, RecoveryReport report)
    {
    }

    static Scan scan(final RocksDbStore store)
    {
        final TreeMap<String, String> records = new TreeMap<>();
        final RecoveryReport report = store.scan((key, keyLength, value, valueLength) ->
            records.put(key.getStringWithoutLengthUtf8(0, keyLength), value.getStringWithoutLengthUtf8(0, valueLength)));
        return new Scan(records, report);
    }

    static String key(final int i)
    {
        return String.format("k%06d", i);
    }

    static List<Path> files(final Path dir, final String suffix) throws IOException
    {
        try (Stream<Path> list = Files.list(dir))
        {
            return list.filter(p -> p.getFileName().toString().endsWith(suffix) ||
                (suffix.endsWith("-") && p.getFileName().toString().startsWith(suffix))).sorted().toList();
        }
    }

    static Path copy(final Path from, final Path to) throws IOException
    {
        Files.createDirectories(to);
        try (Stream<Path> list = Files.list(from))
        {
            for (final Path p : list.filter(Files::isRegularFile).toList())
            {
                Files.copy(p, to.resolve(p.getFileName()));
            }
        }
        return to;
    }
}
