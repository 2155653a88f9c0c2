package io.ringmq.persistence;

import io.ringmq.pipeline.persistence.StoreException;
import io.ringmq.pipeline.persistence.StoreWriter;
import org.agrona.DirectBuffer;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

import java.nio.ByteBuffer;

/**
 * One thread's {@link StoreWriter} on a reused {@link WriteBatch}. Keys and values are copied into one direct
 * buffer each (grown when a record is larger) and handed to the batch's direct-buffer overloads, so the steady
 * state allocates nothing per record; after a commit larger than 4 MiB the batch and the value buffer are made
 * anew, so a burst of large messages does not keep its peak of native memory.
 */
final class RocksDbWriter implements StoreWriter
{
    private static final int INITIAL_KEY_LENGTH = 256;
    private static final int INITIAL_VALUE_LENGTH = 4096;

    private final RocksDbStore store;
    private final WriteOptions writeOptions;
    /** A batch or buffer that grew past this for one large commit is made anew, so its peak is not kept. */
    private static final long SHRINK_ABOVE = 4L * 1024 * 1024;

    private WriteBatch batch = new WriteBatch();
    /** Records batched since the last commit. */
    private int pending;
    private ByteBuffer keyBuffer = ByteBuffer.allocateDirect(INITIAL_KEY_LENGTH);
    private ByteBuffer valueBuffer = ByteBuffer.allocateDirect(INITIAL_VALUE_LENGTH);

    /**
     * @param writeOptions the store's, shared: sync for the group commit in {@code sync}, no sync otherwise.
     */
    RocksDbWriter(final RocksDbStore store, final WriteOptions writeOptions)
    {
        this.store = store;
        this.writeOptions = writeOptions;
    }

    public void put(final DirectBuffer key, final int keyOffset, final int keyLength, final DirectBuffer value,
        final int valueOffset, final int valueLength)
    {
        store.checkOpen(); // a batch freed by the store's close must not be touched
        final ByteBuffer k = fillKey(key, keyOffset, keyLength);
        if (valueBuffer.capacity() < valueLength)
        {
            valueBuffer = ByteBuffer.allocateDirect(grow(valueBuffer.capacity(), valueLength));
        }
        value.getBytes(valueOffset, valueBuffer, 0, valueLength);
        valueBuffer.limit(valueLength).position(0);
        try
        {
            batch.put(k, valueBuffer);
            pending++;
        }
        catch (final RocksDBException ex)
        {
            throw store.failure("put into write batch", ex);
        }
    }

    private byte[] onceKey = new byte[0];

    public void delete(final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        store.checkOpen();
        try
        {
            batch.delete(fillKey(key, keyOffset, keyLength));
            pending++;
        }
        catch (final RocksDBException ex)
        {
            throw store.failure("delete in write batch", ex);
        }
    }

    public void deleteOnce(final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        store.checkOpen();
        byte[] bytes = onceKey;
        if (bytes.length != keyLength)
        {
            bytes = new byte[keyLength]; // message keys have one length: this array is made once
            onceKey = bytes;
        }
        key.getBytes(keyOffset, bytes);
        try
        {
            batch.singleDelete(bytes); // copied into the batch: the array is reused
            pending++;
        }
        catch (final RocksDBException ex)
        {
            throw new StoreException("cannot batch a delete: " + ex.getMessage(), ex);
        }
    }

    public void deleteRange(final DirectBuffer from, final int fromOffset, final int fromLength,
        final DirectBuffer to, final int toOffset, final int toLength)
    {
        store.checkOpen();
        final byte[] f = new byte[fromLength]; // rare (a session's whole journal): arrays are fine here
        final byte[] t = new byte[toLength];
        from.getBytes(fromOffset, f);
        to.getBytes(toOffset, t);
        try
        {
            batch.deleteRange(f, t);
            pending++;
        }
        catch (final RocksDBException ex)
        {
            throw store.failure("delete range in write batch", ex);
        }
    }

    public void commit()
    {
        store.checkOpen();
        if (pending == 0)
        {
            return;
        }
        try
        {
            store.write(writeOptions, batch);
        }
        catch (final StoreException ex)
        {
            if (!store.isClosed())
            {
                // a failed batch is not retried here: the stage marks its slots failed, and a delivery shard's
                // journal batches its ends again (ShardJournal)
                batch.clear();
            }
            pending = 0;
            throw ex;
        }
        if (batch.getDataSize() > SHRINK_ABOVE)
        {
            batch.close(); // WriteBatch.clear keeps its capacity: a large one is let go
            batch = new WriteBatch();
        }
        else
        {
            batch.clear();
        }
        pending = 0;
        if (valueBuffer.capacity() > SHRINK_ABOVE)
        {
            valueBuffer = ByteBuffer.allocateDirect(INITIAL_VALUE_LENGTH);
        }
    }

    public boolean isEmpty()
    {
        store.checkOpen();
        return pending == 0; // counted here: asked once per poll of a stage, no call into the native batch
    }

    /**
     * Frees the native batch; called by the store's close.
     */
    void free()
    {
        batch.close();
    }

    private ByteBuffer fillKey(final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        if (keyBuffer.capacity() < keyLength)
        {
            keyBuffer = ByteBuffer.allocateDirect(grow(keyBuffer.capacity(), keyLength));
        }
        key.getBytes(keyOffset, keyBuffer, 0, keyLength);
        keyBuffer.limit(keyLength).position(0);
        return keyBuffer;
    }

    private static int grow(final int capacity, final int needed)
    {
        int length = capacity;
        while (length < needed)
        {
            length = length > (Integer.MAX_VALUE >> 1) ? Integer.MAX_VALUE : length << 1;
        }
        return length;
    }
}
