package io.ringmq.pipeline.persistence;

import org.agrona.DirectBuffer;
import org.agrona.concurrent.UnsafeBuffer;

import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * A durable store that is not opened (nor created on disk) until something must be kept: the first write of a
 * record that is not bookkeeping (a persistent session, a retained message, a stored message). It stands for a store
 * whose directory was empty or missing at start, so there is nothing to recover; an idle broker then holds no
 * store at all (RocksDB's library, cache, memtables and threads: about 11 MB resident at {@code bin/ringmq}'s
 * 256m).
 *
 * <pre>
 *   writer(..) --put META key--> pending bookkeeping (epoch, alive-at, clean stop: latest value wins)
 *              --put/delete anything else--> opener.get() once --> the real writer of this thread:
 *                                             pending bookkeeping + this batch, committed together
 * </pre>
 *
 * Bookkeeping records ({@link Records#META}: the epoch recovery starts, the alive-at stamp written every second, the
 * clean-stop stamp) only describe records; with none, a store that holds them alone restores exactly what a
 * missing store does, so they wait in memory and go into the same atomic batch as the first real record, where
 * each still comes before what depends on it. A store never opened keeps nothing at {@link #close()}.
 * <p>
 * Each writer belongs to one thread, as {@link StoreWriter}s do; once bound to the opened store it calls it
 * directly (a plain field read per call). The opening itself happens once, under this object's monitor, on the
 * thread of the first real write: it fails as a write fails ({@link StoreException}: the slot is failed, nothing
 * that depended on it leaves) and the next write tries again.
 */
public final class LazyStore implements DurableStore
{
    private static final byte[] DELETED = new byte[0];

    private final Supplier<DurableStore> opener;
    private final String description;
    private final Runnable onClose;
    /** Bookkeeping committed while nothing was opened: key to value, or {@link #DELETED}; guarded by this. */
    private final TreeMap<byte[], byte[]> pending = new TreeMap<>(Arrays::compareUnsigned);
    private volatile DurableStore opened;
    private boolean closed;

    /**
     * @param opener      opens (creating) the real store; called at most once that succeeds.
     * @param description the store's line for the start banner until it is opened.
     */
    public LazyStore(final Supplier<DurableStore> opener, final String description)
    {
        this(opener, description, () -> { });
    }

    /**
     * @param onClose what else {@link #close()} lets go, after the store (the data directory's lock).
     */
    public LazyStore(final Supplier<DurableStore> opener, final String description, final Runnable onClose)
    {
        this.opener = opener;
        this.description = description;
        this.onClose = onClose;
    }

    public StoreWriter writer(final boolean groupCommit)
    {
        final DurableStore store = opened;
        return null != store ? store.writer(groupCommit) : new Writer(groupCommit);
    }

    /**
     * Nothing to visit: the directory held nothing when the broker started.
     */
    public RecoveryReport scan(final RecordVisitor visitor)
    {
        return new RecoveryReport();
    }

    public boolean isDurable()
    {
        return true;
    }

    /**
     * @return whether the real store has been opened (something was kept).
     */
    public boolean isOpened()
    {
        return null != opened;
    }

    /**
     * Nothing to visit until the real store is opened.
     */
    public int visit(final byte[] from, final byte[] to, final int limit, final RecordVisitor visitor)
    {
        final DurableStore store = opened;
        return null != store ? store.visit(from, to, limit, visitor) : 0;
    }

    public long writeStalls()
    {
        final DurableStore store = opened;
        return null != store ? store.writeStalls() : 0;
    }

    public String describe()
    {
        final DurableStore store = opened;
        return null != store ? store.describe() : description + " (created at the first record to keep)";
    }

    /**
     * Closes the real store if it was opened; bookkeeping still pending is dropped (there is nothing it describes).
     */
    public synchronized void close()
    {
        closed = true;
        pending.clear();
        final DurableStore store = opened;
        try
        {
            if (null != store)
            {
                store.close();
            }
        }
        finally
        {
            onClose.run();
        }
    }

    /**
     * Opens the real store once, and hands the bookkeeping kept so far to the writer that opened it.
     */
    private synchronized DurableStore open(final Writer first)
    {
        if (null != opened)
        {
            return opened;
        }
        if (closed)
        {
            throw new StoreException("the store is closed: " + description);
        }
        final DurableStore store = opener.get();
        first.adopt(store.writer(first.groupCommit), pending);
        pending.clear();
        opened = store; // published after the bookkeeping went into the opener's batch
        return store;
    }

    /**
     * @return false when the store was opened meanwhile: the batch must go to it instead.
     */
    private synchronized boolean keep(final TreeMap<byte[], byte[]> batch)
    {
        if (null != opened)
        {
            return false;
        }
        pending.putAll(batch);
        return true;
    }

    /**
     * One thread's writer: bookkeeping waits in {@link #batch}; the first other record opens the store and binds it.
     */
    private final class Writer implements StoreWriter
    {
        private final boolean groupCommit;
        /** This batch's bookkeeping while unbound: key to value, or {@link #DELETED}. */
        private final TreeMap<byte[], byte[]> batch = new TreeMap<>(Arrays::compareUnsigned);
        private StoreWriter bound;

        Writer(final boolean groupCommit)
        {
            this.groupCommit = groupCommit;
        }

        public void put(final DirectBuffer key, final int keyOffset, final int keyLength, final DirectBuffer value,
            final int valueOffset, final int valueLength)
        {
            if (null != bind(key, keyOffset))
            {
                bound.put(key, keyOffset, keyLength, value, valueOffset, valueLength);
            }
            else
            {
                batch.put(copy(key, keyOffset, keyLength), copy(value, valueOffset, valueLength));
            }
        }

        public void delete(final DirectBuffer key, final int keyOffset, final int keyLength)
        {
            if (null != bind(key, keyOffset))
            {
                bound.delete(key, keyOffset, keyLength);
            }
            else
            {
                batch.put(copy(key, keyOffset, keyLength), DELETED);
            }
        }

        public void deleteOnce(final DirectBuffer key, final int keyOffset, final int keyLength)
        {
            if (null != bind(key, keyOffset))
            {
                bound.deleteOnce(key, keyOffset, keyLength);
            }
            else
            {
                batch.put(copy(key, keyOffset, keyLength), DELETED);
            }
        }

        /**
         * Unbound, a range holds nothing but pending bookkeeping (the store is empty): that is deleted, and nothing
         * is opened.
         */
        public void deleteRange(final DirectBuffer from, final int fromOffset, final int fromLength,
            final DirectBuffer to, final int toOffset, final int toLength)
        {
            if (null == bound && null != opened)
            {
                bind(from, fromOffset);
            }
            if (null != bound)
            {
                bound.deleteRange(from, fromOffset, fromLength, to, toOffset, toLength);
                return;
            }
            final byte[] f = copy(from, fromOffset, fromLength);
            final byte[] t = copy(to, toOffset, toLength);
            synchronized (LazyStore.this)
            {
                for (final byte[] key : pending.subMap(f, t).keySet())
                {
                    batch.put(key, DELETED);
                }
            }
            for (final Map.Entry<byte[], byte[]> entry : batch.subMap(f, t).entrySet())
            {
                entry.setValue(DELETED);
            }
        }

        public void commit()
        {
            if (null == bound && !batch.isEmpty() && keep(batch))
            {
                batch.clear();
                return;
            }
            if (null == bound && null != opened)
            {
                adopt(opened.writer(groupCommit), null);
            }
            if (null != bound)
            {
                bound.commit();
            }
        }

        public boolean isEmpty()
        {
            return null != bound ? bound.isEmpty() : batch.isEmpty();
        }

        /**
         * @return the bound writer, binding it when the store is open or this record is not bookkeeping; null while
         * only bookkeeping was written.
         */
        private StoreWriter bind(final DirectBuffer key, final int keyOffset)
        {
            if (null == bound)
            {
                final DurableStore store = opened;
                if (null != store)
                {
                    adopt(store.writer(groupCommit), null);
                }
                else if (key.getByte(keyOffset) != Records.META)
                {
                    open(this);
                    if (null == bound) // opened by another writer meanwhile
                    {
                        adopt(opened.writer(groupCommit), null);
                    }
                }
            }
            return bound;
        }

        /**
         * Binds the real writer, and puts into it first the store's pending bookkeeping (when opening) and then this
         * batch's, so they commit with this batch.
         */
        private void adopt(final StoreWriter writer, final TreeMap<byte[], byte[]> storePending)
        {
            if (null != storePending)
            {
                replay(writer, storePending);
            }
            replay(writer, batch);
            batch.clear();
            bound = writer;
        }

        private void replay(final StoreWriter writer, final TreeMap<byte[], byte[]> records)
        {
            final UnsafeBuffer key = new UnsafeBuffer(0, 0);
            final UnsafeBuffer value = new UnsafeBuffer(0, 0);
            for (final Map.Entry<byte[], byte[]> record : records.entrySet())
            {
                key.wrap(record.getKey());
                if (record.getValue() == DELETED)
                {
                    writer.delete(key, 0, record.getKey().length);
                }
                else
                {
                    value.wrap(record.getValue());
                    writer.put(key, 0, record.getKey().length, value, 0, record.getValue().length);
                }
            }
        }

        private byte[] copy(final DirectBuffer buffer, final int offset, final int length)
        {
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            return bytes;
        }
    }
}
