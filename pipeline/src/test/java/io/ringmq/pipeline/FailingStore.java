package io.ringmq.pipeline;

import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.ArrayList;
import java.util.List;

/**
 * A durable store in memory whose commits fail while {@link #fail} is set (a full disk, for a while); a failed
 * batch is cleared, not retried, as RocksDB's writer does.
 */
final class FailingStore implements DurableStore
{
    final MemoryStore inner = MemoryStore.retaining();
    volatile boolean fail;

    public StoreWriter writer(final boolean groupCommit)
    {
        final StoreWriter writer = inner.writer(groupCommit);
        return new StoreWriter()
        {
            private final List<java.util.function.Consumer<StoreWriter>> ops = new ArrayList<>();

            private UnsafeBuffer copy(final org.agrona.DirectBuffer buffer, final int offset, final int length)
            {
                final byte[] bytes = new byte[length];
                buffer.getBytes(offset, bytes);
                return new UnsafeBuffer(bytes);
            }

            public void put(final org.agrona.DirectBuffer key, final int keyOffset, final int keyLength,
                final org.agrona.DirectBuffer value, final int valueOffset, final int valueLength)
            {
                final UnsafeBuffer k = copy(key, keyOffset, keyLength);
                final UnsafeBuffer v = copy(value, valueOffset, valueLength);
                ops.add(w -> w.put(k, 0, keyLength, v, 0, valueLength));
            }

            public void delete(final org.agrona.DirectBuffer key, final int keyOffset, final int keyLength)
            {
                final UnsafeBuffer k = copy(key, keyOffset, keyLength);
                ops.add(w -> w.delete(k, 0, keyLength));
            }

            public void deleteRange(final org.agrona.DirectBuffer from, final int fromOffset,
                final int fromLength, final org.agrona.DirectBuffer to, final int toOffset, final int toLength)
            {
                final UnsafeBuffer f = copy(from, fromOffset, fromLength);
                final UnsafeBuffer t = copy(to, toOffset, toLength);
                ops.add(w -> w.deleteRange(f, 0, fromLength, t, 0, toLength));
            }

            public void commit()
            {
                if (fail)
                {
                    ops.clear(); // as RocksDbWriter: a failed batch is cleared, not retried
                    throw new io.ringmq.pipeline.persistence.StoreException("no space left on device");
                }
                ops.forEach(op -> op.accept(writer));
                ops.clear();
                writer.commit();
            }

            public boolean isEmpty()
            {
                return ops.isEmpty();
            }
        };
    }

    public io.ringmq.pipeline.persistence.RecoveryReport scan(
        final io.ringmq.pipeline.persistence.RecordVisitor visitor)
    {
        return inner.scan(visitor);
    }

    public int visit(final byte[] from, final byte[] to, final int limit,
        final io.ringmq.pipeline.persistence.RecordVisitor visitor)
    {
        return inner.visit(from, to, limit, visitor);
    }

    public boolean isDurable()
    {
        return true;
    }

    public long writeStalls()
    {
        return 0;
    }

    public String describe()
    {
        return "failing";
    }

    public void close()
    {
    }
}
