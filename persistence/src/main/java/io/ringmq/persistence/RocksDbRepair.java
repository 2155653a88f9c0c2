package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreException;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.SstFileReader;
import org.rocksdb.SstFileReaderIterator;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Repairs a store that RocksDB would not open, keeping what can be read and naming what cannot. RocksJava has no
 * {@code RepairDB}, so this does its work with what RocksJava has:
 *
 * <ol>
 *   <li>write-ahead logs are set aside in {@code repair/wal/}, to be replayed last;</li>
 *   <li>every table is checked ({@link SstFileReader#verifyChecksum()}); an unreadable one goes to {@code lost/};
 *       the good ones are hard-linked into {@code repair/tables/};</li>
 *   <li>a missing {@code CURRENT} is pointed at the newest {@code MANIFEST};</li>
 *   <li>RocksDB opens with best-efforts recovery: the newest state whose tables are all there; a table it leaves
 *       out goes to {@code lost/} from its link. When no MANIFEST is usable, the store is rebuilt from the good
 *       tables instead, oldest first;</li>
 *   <li>the set-aside logs are replayed in order, write batch by write batch, through a scratch store's recovery
 *       (a {@link WalReplay} filter), skipping corrupt records.</li>
 * </ol>
 *
 * Each step adds what it lost to the {@link RecoveryReport}.
 */
final class RocksDbRepair
{
    static final String WORK_DIRECTORY = "repair";
    private static final int REBUILD_BATCH_COUNT = 1024;

    private final Path dir;
    private final RocksDbOptions options;
    private final RecoveryReport report;
    private final Path work;
    private final Path walDir;
    private final Path tableDir;

    private RocksDbRepair(final Path dir, final RocksDbOptions options, final RecoveryReport report)
    {
        this.dir = dir;
        this.options = options;
        this.report = report;
        this.work = dir.resolve(WORK_DIRECTORY);
        this.walDir = work.resolve("wal");
        this.tableDir = work.resolve("tables");
    }

    /**
     * @param cause why RocksDB would not open, for the report.
     */
    static void repair(final Path dir, final RocksDbOptions options, final RecoveryReport report, final String cause)
    {
        try
        {
            new RocksDbRepair(dir, options, report).run(cause);
        }
        catch (final IOException | RocksDBException ex)
        {
            throw new StoreException("repair of the store in " + dir + " failed (" + ex + ") after: " + cause, ex);
        }
    }

    /**
     * Puts back the write-ahead logs an interrupted repair had set aside (killed, or failed before it replayed them),
     * so the store's next open replays them, or the next repair sets them aside again: they are never deleted
     * unread.
     */
    static void restoreSetAside(final Path dir) throws IOException
    {
        final Path setAside = dir.resolve(WORK_DIRECTORY).resolve("wal");
        if (!Files.isDirectory(setAside))
        {
            return;
        }
        for (final Path log : list(setAside, ".log"))
        {
            final Path home = dir.resolve(log.getFileName());
            if (!Files.exists(home))
            {
                Files.move(log, home);
            }
        }
    }

    private void run(final String cause) throws IOException, RocksDBException
    {
        restoreSetAside(dir);
        DataDirectory.deleteRecursively(work);
        Files.createDirectories(walDir);
        Files.createDirectories(tableDir);

        for (final Path log : list(dir, ".log"))
        {
            Files.move(log, walDir.resolve(log.getFileName()));
        }
        int goodTableCount = 0;
        for (final Path table : list(dir, ".sst"))
        {
            if (checkTable(table))
            {
                Files.createLink(tableDir.resolve(table.getFileName()), table);
                goodTableCount++;
            }
        }
        pointCurrentAtNewestManifest();

        final String how;
        final String berFailure = openBestEfforts();
        if (berFailure == null)
        {
            for (final Path table : list(tableDir, ".sst"))
            {
                if (!Files.exists(dir.resolve(table.getFileName())))
                {
                    report.lost("table " + table.getFileName() + " is not in the newest consistent state: moved to " +
                        DataDirectory.LOST_DIRECTORY + "/" + DataDirectory.moveToLost(dir, table));
                }
            }
            how = "reopened at the newest state whose tables are all readable";
        }
        else
        {
            how = rebuildFromTables(berFailure);
        }
        final String replayed;
        try (WalReplay replay = new WalReplay(dir, walDir, options, report))
        {
            replayed = replay.replay(list(walDir, ".log"));
        }
        report.lost("store in " + dir + " did not open (" + cause + "): repaired; " + goodTableCount +
            " readable table(s), " + how + ", " + replayed);
        DataDirectory.deleteRecursively(work);
    }

    /**
     * @return true when the table reads through; else it is in lost/ and reported.
     */
    private boolean checkTable(final Path table) throws IOException
    {
        final long length = Files.size(table);
        long entryCount = -1;
        String problem = null;
        try (Options plain = new Options(); SstFileReader reader = new SstFileReader(plain))
        {
            reader.open(table.toString());
            entryCount = reader.getTableProperties().getNumEntries();
            reader.verifyChecksum();
        }
        catch (final RocksDBException ex)
        {
            problem = RocksDbStore.describe(ex);
        }
        if (problem == null)
        {
            return true;
        }
        final String moved = DataDirectory.moveToLost(dir, table);
        report.lost("table " + table.getFileName() + " (" + length + " bytes) unreadable (" + problem +
            "): moved to " + DataDirectory.LOST_DIRECTORY + "/" + moved + ", " +
            (entryCount >= 0 ? "its " + entryCount + " record(s) lost" : "its records lost"));
        return false;
    }

    private void pointCurrentAtNewestManifest() throws IOException
    {
        final List<Path> manifests = list(dir, "MANIFEST-");
        if (manifests.isEmpty())
        {
            return;
        }
        final Path current = dir.resolve("CURRENT");
        String named = null;
        if (Files.exists(current))
        {
            named = Files.readString(current, StandardCharsets.US_ASCII).trim();
            if (!named.isEmpty() && Files.exists(dir.resolve(named)))
            {
                return;
            }
        }
        final String newest = manifests.get(manifests.size() - 1).getFileName().toString();
        Files.writeString(current, newest + "\n", StandardCharsets.US_ASCII);
        report.lost((named == null ? "CURRENT missing" : "CURRENT named a missing manifest '" + named + "'") +
            ": pointed it at " + newest);
    }

    /**
     * @return null when RocksDB opened with best-efforts recovery, else why not.
     */
    private String openBestEfforts()
    {
        if (list(dir, "MANIFEST-").isEmpty())
        {
            return "no MANIFEST";
        }
        try (RocksDB db = RocksDB.open(options.build(true), dir.toString()))
        {
            db.syncWal(); // opening wrote the recovered state's MANIFEST: that was the point
            return null;
        }
        catch (final RocksDBException ex)
        {
            return RocksDbStore.describe(ex);
        }
    }

    private String rebuildFromTables(final String manifestProblem) throws IOException, RocksDBException
    {
        for (final Path stale : list(dir, ""))
        {
            final String name = stale.getFileName().toString();
            if (name.endsWith(".sst"))
            {
                Files.delete(stale); // its hard link in repair/tables/ is read below
            }
            else if (name.startsWith("MANIFEST-") || name.equals("CURRENT") || name.startsWith("OPTIONS-"))
            {
                report.lost("unusable " + name + " (" + manifestProblem + "): moved to " +
                    DataDirectory.LOST_DIRECTORY + "/" + DataDirectory.moveToLost(dir, stale));
            }
        }
        long recordCount = 0;
        final List<Path> tables = list(tableDir, ".sst");
        try (RocksDB db = RocksDB.open(options.build(false), dir.toString());
            WriteOptions writeOptions = new WriteOptions();
            WriteBatch batch = new WriteBatch();
            Options plain = new Options();
            ReadOptions readOptions = new ReadOptions().setFillCache(false))
        {
            for (final Path table : tables) // oldest first: a newer table's value wins
            {
                try (SstFileReader reader = new SstFileReader(plain);
                    SstFileReaderIterator it = openIterator(reader, table, readOptions))
                {
                    for (it.seekToFirst(); it.isValid(); it.next())
                    {
                        batch.put(it.key(), it.value());
                        recordCount++;
                        if (batch.count() >= REBUILD_BATCH_COUNT)
                        {
                            db.write(writeOptions, batch);
                            batch.clear();
                        }
                    }
                    it.status();
                }
                db.write(writeOptions, batch);
                batch.clear();
            }
        }
        return "rebuilt from " + tables.size() + " table(s) with " + recordCount + " record(s) without a MANIFEST " +
            "(a delete kept only in a table may be undone)";
    }

    private static SstFileReaderIterator openIterator(final SstFileReader reader, final Path table,
        final ReadOptions readOptions) throws RocksDBException
    {
        reader.open(table.toString());
        return reader.newIterator(readOptions);
    }

    /**
     * @param suffix a name suffix such as {@code .sst}, or a prefix ending in {@code -} such as {@code MANIFEST-}.
     * @return the plain files of the directory that match, in name order (RocksDB's file numbers are zero-padded).
     */
    static List<Path> list(final Path directory, final String suffix)
    {
        final List<Path> files = new ArrayList<>();
        if (!Files.isDirectory(directory))
        {
            return files;
        }
        try (Stream<Path> stream = Files.list(directory))
        {
            stream.filter(Files::isRegularFile)
                .filter(p -> suffix.endsWith("-") ? p.getFileName().toString().startsWith(suffix) :
                    p.getFileName().toString().endsWith(suffix))
                .sorted(Comparator.comparing(Path::getFileName))
                .forEach(files::add);
        }
        catch (final IOException ex)
        {
            throw new StoreException("cannot list " + directory + ": " + ex, ex);
        }
        return files;
    }
}
