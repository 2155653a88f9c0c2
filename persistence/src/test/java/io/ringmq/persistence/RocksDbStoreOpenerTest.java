package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.Durability;
import io.ringmq.pipeline.persistence.LazyStore;
import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;

import static io.ringmq.persistence.StoreFixtures.put;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link RocksDbStoreOpener}: a missing or empty data directory is not created until the first record to keep, in
 * every durability mode; what that record committed is recovered by the next open; a directory holding anything is
 * opened (and checked) at once.
 */
class RocksDbStoreOpenerTest
{
    private static final String EPOCH = "\u0000e"; // a bookkeeping (META) key
    private static final String ALIVE = "\u0000a";

    @TempDir
    Path directory;

    @ParameterizedTest
    @EnumSource(Durability.class)
    void aMissingDirectoryIsCreatedAtTheFirstRecordAndRecoveredByTheNextOpen(final Durability durability)
    {
        final Path data = directory.resolve("data");
        final RocksDbSettings settings = RocksDbSettings.defaults(data).withDurability(durability);
        final DurableStore store = RocksDbStoreOpener.open(settings);
        assertThat(store).isInstanceOf(LazyStore.class);
        assertThat(store.describe()).contains(data.toString()).contains("created at the first record");
        final StoreWriter writer = store.writer(true);
        put(writer, EPOCH, "1");
        writer.commit();
        put(writer, ALIVE, "2");
        writer.commit();
        assertThat(data.resolve("CURRENT")).as("bookkeeping alone creates no store").doesNotExist();

        put(writer, "session-1", "kept");
        writer.commit();
        assertThat(data.resolve("CURRENT")).exists();
        final StoreWriter shard = store.writer(false);
        put(shard, "session-1-message", "m");
        shard.commit();
        store.close();

        final DurableStore again = RocksDbStoreOpener.open(settings);
        try
        {
            assertThat(again).as("a directory with a store is opened at start").isInstanceOf(RocksDbStore.class);
            final StoreFixtures.Scan scan = StoreFixtures.scan((RocksDbStore)again);
            assertThat(scan.records()).containsEntry(EPOCH, "1").containsEntry(ALIVE, "2")
                .containsEntry("session-1", "kept").containsEntry("session-1-message", "m").hasSize(4);
            assertThat(scan.report().isClean()).isTrue();
        }
        finally
        {
            again.close();
        }
    }

    @Test
    void aFirstOpenFailingAfterRocksDbOpenedLeavesNoLockAndTheNextWriteOpensIt() throws Exception
    {
        final Path data = directory.resolve("data");
        final DurableStore store = RocksDbStoreOpener.open(RocksDbSettings.defaults(data));
        try
        {
            final Path blocker = Files.createDirectories(data.resolve("ringmq.pid.tmp").resolve("x"));
            final StoreWriter writer = store.writer(true);
            assertThatThrownBy(() -> put(writer, "session-1", "first")).as("the pid file cannot be written")
                .isInstanceOf(StoreException.class);
            Files.delete(blocker);
            Files.delete(blocker.getParent());

            final StoreWriter next = store.writer(true);
            put(next, "session-1", "kept");
            next.commit();
            assertThat(((LazyStore)store).isOpened()).as("opened once the cause is gone").isTrue();
        }
        finally
        {
            store.close();
        }
        final DurableStore again = RocksDbStoreOpener.open(RocksDbSettings.defaults(data));
        try
        {
            assertThat(StoreFixtures.scan((RocksDbStore)again).records()).containsEntry("session-1", "kept");
        }
        finally
        {
            again.close();
        }
    }

    @Test
    void aStoreNeverWrittenLeavesNothingBehind()
    {
        final Path data = directory.resolve("data");
        final DurableStore store = RocksDbStoreOpener.open(RocksDbSettings.defaults(data));
        final StoreWriter writer = store.writer(true);
        put(writer, ALIVE, "1");
        writer.commit();
        store.close();
        assertThat(data).as("its lock alone").isDirectoryContaining(p -> p.endsWith(DirectoryLock.FILE))
            .isDirectoryNotContaining(p -> !p.endsWith(DirectoryLock.FILE));
        assertThatThrownBy(() -> put(writer, "session-1", "late")).isInstanceOf(StoreException.class);
        assertThat(data.resolve("CURRENT")).as("nothing is created after close").doesNotExist();
        final DurableStore again = RocksDbStoreOpener.open(RocksDbSettings.defaults(data));
        again.close();
        assertThat(again).as("a directory holding only the lock is still empty").isInstanceOf(LazyStore.class);
    }

    @Test
    void anEmptyDirectoryIsLazyAndOneHoldingAnythingIsOpenedAtOnce() throws Exception
    {
        final Path empty = Files.createDirectories(directory.resolve("empty"));
        final DurableStore lazy = RocksDbStoreOpener.open(RocksDbSettings.defaults(empty));
        lazy.close();
        assertThat(lazy).isInstanceOf(LazyStore.class);
        assertThat(empty.resolve("CURRENT")).doesNotExist();

        final Path stale = Files.createDirectories(directory.resolve("stale"));
        Files.writeString(stale.resolve(DataDirectory.PID_FILE), "1\n");
        final DurableStore eager = RocksDbStoreOpener.open(RocksDbSettings.defaults(stale));
        eager.close();
        assertThat(eager).isInstanceOf(RocksDbStore.class);
    }

    @Test
    void aFileInPlaceOfTheDirectoryIsRefusedAtOnce() throws Exception
    {
        final Path file = Files.writeString(directory.resolve("data"), "not a directory");
        assertThatThrownBy(() -> RocksDbStoreOpener.open(RocksDbSettings.defaults(file)))
            .isInstanceOf(StoreException.class).hasMessageContaining("is a file");
    }
}
