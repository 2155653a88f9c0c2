package io.ringmq.pipeline.persistence;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A store in memory. {@link #none()} keeps nothing ({@code --persistence memory}: the pipeline writes nothing);
 * {@link #retaining()} keeps every committed record in key order, so a test can stop a pipeline and recover a new
 * one from the same store without RocksDB.
 */
public final class MemoryStore implements DurableStore
{
    private static final MemoryStore NONE = new MemoryStore(false);

    private final boolean durable;
    private final ConcurrentSkipListMap<byte[], byte[]> records = new ConcurrentSkipListMap<>(Arrays::compareUnsigned);

    private MemoryStore(final boolean durable)
    {
        this.durable = durable;
    }

    /**
     * @return the store of {@code --persistence memory}: nothing is kept.
     */
    public static MemoryStore none()
    {
        return NONE;
    }

    /**
     * @return a store that keeps its records for as long as the object lives.
     */
    public static MemoryStore retaining()
    {
        return new MemoryStore(true);
    }

    /**
     * @return how many records it holds.
     */
    public int size()
    {
        return records.size();
    }

    public StoreWriter writer(final boolean groupCommit)
    {
        return new Writer();
    }

    public RecoveryReport scan(final RecordVisitor visitor)
    {
        final UnsafeBuffer key = new UnsafeBuffer(0, 0);
        final UnsafeBuffer value = new UnsafeBuffer(0, 0);
        for (final Map.Entry<byte[], byte[]> record : records.entrySet())
        {
            key.wrap(record.getKey());
            value.wrap(record.getValue());
            visitor.onRecord(key, record.getKey().length, value, record.getValue().length);
        }
        return new RecoveryReport();
    }

    public int visit(final byte[] from, final byte[] to, final int limit, final RecordVisitor visitor)
    {
        final UnsafeBuffer key = new UnsafeBuffer(0, 0);
        final UnsafeBuffer value = new UnsafeBuffer(0, 0);
        int visited = 0;
        for (final Map.Entry<byte[], byte[]> record : records.subMap(from, true, to, false).entrySet())
        {
            if (visited == limit)
            {
                break;
            }
            key.wrap(record.getKey());
            value.wrap(record.getValue());
            visitor.onRecord(key, record.getKey().length, value, record.getValue().length);
            visited++;
        }
        return visited;
    }

    public boolean isDurable()
    {
        return durable;
    }

    public long writeStalls()
    {
        return 0;
    }

    public String describe()
    {
        return durable ? "memory (kept in this process only)" : "memory (nothing kept across a restart)";
    }

    public void close()
    {
    }

    private final class Writer implements StoreWriter
    {
        private final List<Runnable> batch = new ArrayList<>();

        public void put(final DirectBuffer key, final int keyOffset, final int keyLength, final DirectBuffer value,
            final int valueOffset, final int valueLength)
        {
            final byte[] k = copy(key, keyOffset, keyLength);
            final byte[] v = copy(value, valueOffset, valueLength);
            batch.add(() -> records.put(k, v));
        }

        public void delete(final DirectBuffer key, final int keyOffset, final int keyLength)
        {
            final byte[] k = copy(key, keyOffset, keyLength);
            batch.add(() -> records.remove(k));
        }

        public void deleteRange(final DirectBuffer from, final int fromOffset, final int fromLength,
            final DirectBuffer to, final int toOffset, final int toLength)
        {
            final byte[] f = copy(from, fromOffset, fromLength);
            final byte[] t = copy(to, toOffset, toLength);
            batch.add(() -> records.subMap(f, t).clear());
        }

        public void commit()
        {
            if (durable)
            {
                synchronized (records) // one batch at a time, as a store applies a write batch atomically
                {
                    batch.forEach(Runnable::run);
                }
            }
            batch.clear();
        }

        public boolean isEmpty()
        {
            return batch.isEmpty();
        }

        private byte[] copy(final DirectBuffer buffer, final int offset, final int length)
        {
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            return bytes;
        }
    }
}
