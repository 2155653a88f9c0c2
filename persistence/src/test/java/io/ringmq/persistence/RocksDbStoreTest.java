package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.Durability;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.ringmq.persistence.StoreFixtures.delete;
import static io.ringmq.persistence.StoreFixtures.deleteRange;
import static io.ringmq.persistence.StoreFixtures.key;
import static io.ringmq.persistence.StoreFixtures.put;
import static io.ringmq.persistence.StoreFixtures.scan;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RocksDbStoreTest
{
    @TempDir
    Path tmp;

    @Test
    void putDeleteAndDeleteRangeSurviveCloseAndReopen()
    {
        final Path dir = tmp.resolve("data");
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreWriter writer = store.writer(true);
            assertThat(writer.isEmpty()).isTrue();
            put(writer, "a", "1");
            put(writer, "b", "2");
            put(writer, "c", "3");
            for (int i = 0; i < 10; i++)
            {
                put(writer, "d" + i, "x" + i);
            }
            assertThat(writer.isEmpty()).isFalse();
            writer.commit();
            assertThat(writer.isEmpty()).isTrue();
            writer.commit(); // empty: nothing happens

            delete(writer, "b");
            deleteRange(writer, "d2", "d5");
            put(writer, "a", "1bis");
            writer.commit();
        }
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreFixtures.Scan scan = scan(store);
            assertThat(scan.records()).containsOnlyKeys("a", "c", "d0", "d1", "d5", "d6", "d7", "d8", "d9");
            assertThat(scan.records()).containsEntry("a", "1bis").containsEntry("d5", "x5");
            assertThat(scan.report().isClean()).as(scan.report().toString()).isTrue();
        }
    }

    @Test
    void visitReadsARangeInStepsAndSeesWhatItsThreadCommitted()
    {
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(tmp.resolve("data"))))
        {
            final StoreWriter writer = store.writer(true);
            for (final String k : new String[]{"a", "b1", "b2", "b3", "b4", "c"})
            {
                put(writer, k, "v" + k);
            }
            writer.commit();
            final java.util.List<String> seen = new java.util.ArrayList<>();
            final io.ringmq.pipeline.persistence.RecordVisitor collect = (key, keyLength, value, valueLength) ->
                seen.add(key.getStringWithoutLengthAscii(0, keyLength) + "=" +
                    value.getStringWithoutLengthAscii(0, valueLength));
            assertThat(store.visit("b".getBytes(), "c".getBytes(), 3, collect)).isEqualTo(3);
            assertThat(seen).containsExactly("b1=vb1", "b2=vb2", "b3=vb3");
            seen.clear();
            // from the least key after the last one seen: the rest of the range, then it ends
            assertThat(store.visit("b3\0".getBytes(), "c".getBytes(), 3, collect)).isEqualTo(1);
            assertThat(seen).containsExactly("b4=vb4");
            delete(writer, "b4");
            writer.commit();
            seen.clear();
            assertThat(store.visit("b".getBytes(), "c".getBytes(), 10, collect)).isEqualTo(3);
            assertThat(seen).doesNotContain("b4=vb4");
            assertThat(store.visit("x".getBytes(), "y".getBytes(), 10, collect)).as("an empty range").isZero();
        }
    }

    @Test
    void recordsLargerThanTheWritersBuffersGrowThem()
    {
        final Path dir = tmp.resolve("data");
        final String bigKey = "k".repeat(1000);
        final String bigValue = "v".repeat(100_000);
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final StoreWriter writer = store.writer(false);
            put(writer, bigKey, bigValue);
            put(writer, "small", "s");
            writer.commit();
        }
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            assertThat(scan(store).records()).containsEntry(bigKey, bigValue).containsEntry("small", "s");
        }
    }

    @Test
    void writersOfTwoThreadsCommitIndependently() throws Exception
    {
        final Path dir = tmp.resolve("data");
        final int perThreadCount = 2000;
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            final CountDownLatch start = new CountDownLatch(1);
            final Thread[] threads = new Thread[2];
            final Throwable[] failures = new Throwable[2];
            for (int t = 0; t < threads.length; t++)
            {
                final int id = t;
                final StoreWriter writer = store.writer(id == 0);
                threads[t] = new Thread(() ->
                {
                    try
                    {
                        start.await();
                        for (int i = 0; i < perThreadCount; i++)
                        {
                            put(writer, "t" + id + "-" + key(i), "v" + i);
                            if (i % 100 == 99)
                            {
                                writer.commit();
                            }
                        }
                        writer.commit();
                    }
                    catch (final Throwable ex)
                    {
                        failures[id] = ex;
                    }
                });
                threads[t].start();
            }
            start.countDown();
            for (final Thread thread : threads)
            {
                thread.join(TimeUnit.SECONDS.toMillis(30));
            }
            assertThat(failures).containsOnlyNulls();
            final TreeMap<String, String> records = scan(store).records();
            assertThat(records).hasSize(2 * perThreadCount);
            assertThat(records).containsEntry("t1-" + key(perThreadCount - 1), "v" + (perThreadCount - 1));
        }
    }

    @ParameterizedTest
    @EnumSource(Durability.class)
    void everyDurabilityModeKeepsCommittedRecords(final Durability durability) throws Exception
    {
        final Path dir = tmp.resolve("data");
        final RocksDbSettings settings = RocksDbSettings.defaults(dir).withDurability(durability).withFsyncIntervalMs(2);
        try (RocksDbStore store = RocksDbStore.open(settings))
        {
            final StoreWriter groupCommit = store.writer(true);
            final StoreWriter journal = store.writer(false);
            for (int i = 0; i < 50; i++)
            {
                put(groupCommit, key(i), "g" + i);
                groupCommit.commit();
                put(journal, "j" + key(i), "j" + i);
                journal.commit();
            }
            if (durability == Durability.PERIODIC)
            {
                final long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (store.periodicSyncCount() == 0 && System.nanoTime() < deadlineNs)
                {
                    Thread.onSpinWait();
                    Thread.sleep(1);
                }
                assertThat(store.periodicSyncCount()).isPositive();
                assertThat(store.periodicSyncFailureCount()).isZero();
                assertThat(Thread.getAllStackTraces().keySet()).anyMatch(t -> t.getName().equals("ringmq-fsync"));
            }
            else
            {
                assertThat(store.periodicSyncCount()).isZero();
            }
        }
        try (RocksDbStore store = RocksDbStore.open(settings))
        {
            assertThat(scan(store).records()).hasSize(100);
        }
    }

    @Test
    void aSecondOpenOfTheSameDirectoryIsRefusedNamingItAndTheHolder()
    {
        final Path dir = tmp.resolve("data");
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            assertThat(dir.resolve("ringmq.pid")).hasContent(Long.toString(ProcessHandle.current().pid()));
            assertThatThrownBy(() -> RocksDbStore.open(RocksDbSettings.defaults(dir)))
                .isInstanceOf(StoreException.class)
                .hasMessageContaining(dir.toAbsolutePath().toString())
                .hasMessageContaining("in use")
                .hasMessageContaining("pid " + ProcessHandle.current().pid());
            // the refused open took nothing from the first
            final StoreWriter writer = store.writer(true);
            put(writer, "still", "works");
            writer.commit();
            assertThat(scan(store).records()).containsEntry("still", "works");
        }
        assertThat(dir.resolve("ringmq.pid")).doesNotExist();
        try (RocksDbStore again = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            assertThat(scan(again).records()).containsEntry("still", "works");
        }
    }

    @Test
    void aMissingDirectoryIsCreatedAndAFileIsRefused() throws Exception
    {
        final Path dir = tmp.resolve("a/b/c");
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            assertThat(dir).isDirectory();
            assertThat(scan(store).records()).isEmpty();
            assertThat(scan(store).report().isClean()).isTrue();
        }
        final Path file = Files.writeString(tmp.resolve("plain"), "not a directory");
        assertThatThrownBy(() -> RocksDbStore.open(RocksDbSettings.defaults(file)))
            .isInstanceOf(StoreException.class)
            .hasMessageContaining(file.toString())
            .hasMessageContaining("is a file");
    }

    @Test
    void describeNamesTheSettings()
    {
        final Path dir = tmp.resolve("data");
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dir)))
        {
            assertThat(store.describe())
                .isEqualTo("rocksdb " + dir.toAbsolutePath() + " durability=periodic(10ms) cache=8MiB write-buffers=8MiB");
            assertThat(store.isDurable()).isTrue();
            assertThat(store.writeStalls()).isZero();
        }
        final RocksDbSettings sync = RocksDbSettings.defaults(dir).withDurability(Durability.SYNC)
            .withBlockCacheLength(512 << 10).withWriteBufferLength(4 << 20).withStrict(true);
        try (RocksDbStore store = RocksDbStore.open(sync))
        {
            assertThat(store.describe()).endsWith("durability=sync cache=512KiB write-buffers=4MiB strict");
        }
    }

    @Test
    void closeIsIdempotentAndAClosedStoreRefusesWrites()
    {
        final RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(tmp.resolve("data")));
        final StoreWriter writer = store.writer(true);
        put(writer, "a", "1");
        store.close();
        store.close();
        assertThatThrownBy(writer::commit).isInstanceOf(StoreException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> store.writer(true)).isInstanceOf(StoreException.class);
    }

    @Test
    void badSettingsAreRefused()
    {
        assertThatThrownBy(() -> RocksDbSettings.defaults(tmp).withFsyncIntervalMs(0))
            .isInstanceOf(StoreException.class).hasMessageContaining("fsync interval");
        assertThatThrownBy(() -> RocksDbSettings.defaults(tmp).withWriteBufferLength(1))
            .isInstanceOf(StoreException.class).hasMessageContaining("write buffers");
    }

    /**
     * A microcheck, not a benchmark: 100k puts through one reused writer in {@code none} mode all land.
     */
    @Test
    void hundredThousandPutsThroughOneWriter()
    {
        final int recordCount = 100_000;
        final UnsafeBuffer key = new UnsafeBuffer(new byte[16]);
        final UnsafeBuffer value = new UnsafeBuffer(new byte[64]);
        final RocksDbSettings settings = RocksDbSettings.defaults(tmp.resolve("data")).withDurability(Durability.NONE);
        try (RocksDbStore store = RocksDbStore.open(settings))
        {
            final StoreWriter writer = store.writer(true);
            for (int i = 0; i < recordCount; i++)
            {
                key.putLong(0, Long.reverseBytes(i)); // big-endian: key order is insertion order
                key.putLong(8, i);
                value.putInt(0, i);
                writer.put(key, 0, 16, value, 0, 64);
                if (i % 256 == 255)
                {
                    writer.commit();
                }
            }
            writer.commit();
            final long[] seen = new long[2];
            store.scan((k, keyLength, v, valueLength) ->
            {
                if (v.getInt(0) == seen[0] && keyLength == 16 && valueLength == 64)
                {
                    seen[1]++;
                }
                seen[0]++;
            });
            assertThat(seen[0]).isEqualTo(recordCount);
            assertThat(seen[1]).isEqualTo(recordCount);
        }
    }
}
