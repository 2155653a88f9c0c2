package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.RecordVisitor;
import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreException;
import org.agrona.concurrent.UnsafeBuffer;
import org.rocksdb.LiveFileMetaData;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Slice;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reads every record in key order for recovery, into two reused arrays. When the iterator stops on a corrupt block,
 * the scan is not over: it seeks past the end of the table that holds the next key ({@link LiveFileMetaData}'s
 * key ranges), reports the skipped key range and the tables in it, and goes on; each skip moves strictly forward,
 * so the scan ends. Strict: the first corruption throws.
 */
final class RocksDbScanner
{
    private static final int INITIAL_KEY_LENGTH = 256;
    private static final int INITIAL_VALUE_LENGTH = 4096;
    private static final int KEY_SHOWN_LENGTH = 24;

    private RocksDbScanner()
    {
    }

    /**
     * Visits up to {@code limit} records of {@code [from, to)} in key order, as the store holds them now; a record
     * the store cannot read ends the visit (the next one starts again from its caller's position).
     *
     * @return how many it visited.
     */
    static int visit(final RocksDB db, final byte[] from, final byte[] to, final int limit,
        final RecordVisitor visitor)
    {
        final Record record = new Record();
        int visited = 0;
        try (Slice upper = new Slice(to);
            ReadOptions readOptions = new ReadOptions().setFillCache(false).setIterateUpperBound(upper);
            RocksIterator it = db.newIterator(readOptions))
        {
            for (it.seek(from); it.isValid() && visited < limit; it.next())
            {
                record.read(it, visitor);
                visited++;
            }
        }
        return visited;
    }

    static void scan(final RocksDB db, final Path dir, final boolean strict, final RecordVisitor visitor,
        final RecoveryReport report)
    {
        final Record record = new Record();
        byte[] position = null; // the scan has passed every key <= position
        try (ReadOptions readOptions = new ReadOptions().setFillCache(false); // one pass: keep the cache for later
            RocksIterator it = db.newIterator(readOptions))
        {
            it.seekToFirst();
            while (true)
            {
                int keyLength = -1;
                for (; it.isValid(); it.next())
                {
                    keyLength = record.read(it, visitor);
                }
                try
                {
                    it.status();
                    return;
                }
                catch (final RocksDBException ex)
                {
                    if (keyLength >= 0)
                    {
                        position = Arrays.copyOf(record.keyBytes, keyLength);
                    }
                    final String problem = RocksDbStore.describe(ex);
                    if (strict)
                    {
                        throw new StoreException("store in " + dir + " unreadable after key " + show(position) +
                            " (" + problem + "); strict recovery stops here rather than start with the records after it lost", ex);
                    }
                    final byte[] resume = skip(db, position, problem, report);
                    if (resume == null)
                    {
                        return;
                    }
                    position = resume;
                    it.seek(successor(resume));
                }
            }
        }
    }

    /**
     * @return the largest key of the nearest table ending after {@code position}, to seek past; null when none.
     */
    private static byte[] skip(final RocksDB db, final byte[] position, final String problem,
        final RecoveryReport report)
    {
        byte[] end = null;
        for (final LiveFileMetaData file : db.getLiveFilesMetaData())
        {
            if (after(file.largestKey(), position) && (end == null || Arrays.compareUnsigned(file.largestKey(), end) < 0))
            {
                end = file.largestKey();
            }
        }
        if (end == null)
        {
            report.lost("records after key " + show(position) + " unreadable (" + problem + "): the rest skipped");
            return null;
        }
        final List<String> tables = new ArrayList<>();
        for (final LiveFileMetaData file : db.getLiveFilesMetaData())
        {
            if (after(file.largestKey(), position) && Arrays.compareUnsigned(file.smallestKey(), end) <= 0)
            {
                tables.add(file.fileName().replace("/", ""));
            }
        }
        report.lost("records after key " + show(position) + " up to key " + show(end) + " unreadable (" + problem +
            "), in table(s) " + String.join(", ", tables) + ": skipped");
        return end;
    }

    private static boolean after(final byte[] key, final byte[] position)
    {
        return position == null || Arrays.compareUnsigned(key, position) > 0;
    }

    private static byte[] successor(final byte[] key)
    {
        return Arrays.copyOf(key, key.length + 1); // the smallest key after it in bytewise order
    }

    static String show(final byte[] key)
    {
        if (key == null)
        {
            return "(start)";
        }
        final StringBuilder hex = new StringBuilder("0x");
        for (int i = 0; i < Math.min(key.length, KEY_SHOWN_LENGTH); i++)
        {
            hex.append(Character.forDigit((key[i] >> 4) & 0xF, 16)).append(Character.forDigit(key[i] & 0xF, 16));
        }
        return key.length > KEY_SHOWN_LENGTH ? hex.append("...").toString() : hex.toString();
    }

    /**
     * The iterator's current record, read into two arrays reused (and grown) from record to record.
     */
    private static final class Record
    {
        byte[] keyBytes = new byte[INITIAL_KEY_LENGTH];
        byte[] valueBytes = new byte[INITIAL_VALUE_LENGTH];
        final UnsafeBuffer key = new UnsafeBuffer(keyBytes);
        final UnsafeBuffer value = new UnsafeBuffer(valueBytes);

        /**
         * @return its key's length.
         */
        int read(final RocksIterator it, final RecordVisitor visitor)
        {
            final int keyLength = it.key(keyBytes);
            if (keyLength > keyBytes.length)
            {
                keyBytes = new byte[keyLength];
                key.wrap(keyBytes);
                it.key(keyBytes);
            }
            int valueLength = it.value(valueBytes);
            if (valueLength > valueBytes.length)
            {
                valueBytes = new byte[valueLength];
                value.wrap(valueBytes);
                valueLength = it.value(valueBytes);
            }
            visitor.onRecord(key, keyLength, value, valueLength);
            return keyLength;
        }
    }
}
