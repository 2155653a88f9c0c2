package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static io.ringmq.persistence.StoreFixtures.copy;
import static io.ringmq.persistence.StoreFixtures.files;
import static io.ringmq.persistence.StoreFixtures.key;
import static io.ringmq.persistence.StoreFixtures.put;
import static io.ringmq.persistence.StoreFixtures.scan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Damages a store's files the ways a crash or a bad disk does, and checks what opening and scanning make of it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RocksDbCorruptionTest
{
    private static final String VALUE = "value-".repeat(10);

    @TempDir
    Path tmp;

    @Test
    void aTornWriteAheadLogTailIsDroppedAndReported() throws IOException
    {
        final Path dir = tmp.resolve("data");
        write(dir, 0, 100, false);
        final Path log = newest(files(dir, ".log"));
        final long length = Files.size(log);
        truncate(log, length - 20); // the last record, cut mid-record

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).hasSize(99).containsKey(key(98)).doesNotContainKey(key(99));
            assertThat(scan.report().losses()).singleElement().asString()
                .contains("write-ahead log " + log.getFileName())
                .contains("torn write")
                .contains("from byte");
        }
    }

    @Test
    void aTruncatedTableIsMovedToLostAndTheLogStillReplays() throws IOException
    {
        final Path dir = tmp.resolve("data");
        write(dir, 0, 200, true); // flushed into a table
        write(dir, 200, 250, false); // only in the write-ahead log
        final Path table = newest(files(dir, ".sst"));
        truncate(table, Files.size(table) / 2);
        final Path strictCopy = copy(dir, tmp.resolve("strict"));

        assertThatThrownBy(() -> RocksDbStore.open(RocksDbSettings.defaults(strictCopy).withStrict(true)))
            .isInstanceOf(StoreException.class)
            .hasMessageContaining(strictCopy.toString())
            .hasMessageContaining("corrupt");

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).hasSize(50).containsKey(key(200)).containsKey(key(249));
            final List<String> losses = scan.report().losses();
            assertThat(losses).anySatisfy(loss -> assertThat(loss)
                .contains("table " + table.getFileName())
                .contains("moved to lost/" + table.getFileName()));
            assertThat(losses).anySatisfy(loss -> assertThat(loss)
                .contains("did not open")
                .contains("repaired")
                .contains("replayed"));
            assertThat(dir.resolve("lost").resolve(table.getFileName())).exists();
            assertThat(dir.resolve("repair")).doesNotExist();
        }
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).hasSize(50);
            assertThat(scan.report().isClean()).as(scan.report().toString()).isTrue();
        }
    }

    @Test
    void aGarbledTableBlockIsSkippedAtScanUnlessStrict() throws IOException
    {
        final Path dir = tmp.resolve("data");
        write(dir, 0, 2000, true);
        final Path table = newest(files(dir, ".sst"));
        garble(table, 100, 64); // inside the first data block
        final Path strictCopy = copy(dir, tmp.resolve("strict"));

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(strictCopy).withStrict(true)))
        {
            assertThatThrownBy(() -> scan(store))
                .isInstanceOf(StoreException.class)
                .hasMessageContaining("strict");
        }
        catch (final StoreException ex)
        {
            assertThat(ex).hasMessageContaining("corrupt"); // caught at open: as good
        }

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).hasSizeLessThan(2000);
            assertThat(scan.report().isClean()).isFalse();
            assertThat(scan.report().toString()).contains(table.getFileName().toString());
        }
    }

    @Test
    void aMissingCurrentIsPointedAtTheNewestManifest() throws IOException
    {
        final Path dir = tmp.resolve("data");
        write(dir, 0, 100, true);
        write(dir, 100, 150, false);
        Files.delete(dir.resolve("CURRENT"));
        final Path strictCopy = copy(dir, tmp.resolve("strict"));

        assertThatThrownBy(() -> RocksDbStore.open(RocksDbSettings.defaults(strictCopy).withStrict(true)))
            .isInstanceOf(StoreException.class)
            .hasMessageContaining("CURRENT");

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).hasSize(150);
            assertThat(scan.report().losses()).anySatisfy(loss -> assertThat(loss)
                .contains("CURRENT missing: pointed it at MANIFEST-"));
        }
    }

    @Test
    void aMissingManifestIsRebuiltFromTheTables() throws IOException
    {
        final Path dir = tmp.resolve("data");
        write(dir, 0, 100, true);
        write(dir, 100, 150, false);
        for (final Path manifest : files(dir, "MANIFEST-"))
        {
            Files.delete(manifest);
        }

        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            final TreeMap<String, String> records = scan.records();
            assertThat(records).hasSize(150).containsEntry(key(0), VALUE + 0).containsEntry(key(149), VALUE + 149);
            assertThat(scan.report().losses()).anySatisfy(loss -> assertThat(loss)
                .contains("rebuilt from 1 table(s) with 100 record(s)"));
        }
    }

    private static void write(final Path dir, final int from, final int to, final boolean flush)
    {
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreWriter writer = store.writer(true);
            for (int i = from; i < to; i++)
            {
                put(writer, key(i), VALUE + i);
                writer.commit(); // one write-ahead log record each
            }
            if (flush)
            {
                store.flush();
            }
        }
    }

    private static Path newest(final List<Path> files)
    {
        assertThat(files).isNotEmpty();
        return files.get(files.size() - 1);
    }

    private static void truncate(final Path file, final long length) throws IOException
    {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.setLength(length);
        }
    }

    private static void garble(final Path file, final long at, final int length) throws IOException
    {
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw"))
        {
            raf.seek(at);
            final byte[] bytes = new byte[length];
            raf.readFully(bytes);
            for (int i = 0; i < length; i++)
            {
                bytes[i] ^= (byte)0x5A;
            }
            raf.seek(at);
            raf.write(bytes);
        }
    }
}
