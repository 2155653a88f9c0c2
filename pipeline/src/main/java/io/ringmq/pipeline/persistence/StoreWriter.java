package io.ringmq.pipeline.persistence;

import org.agrona.DirectBuffer;

/**
 * A write batch of one thread: puts and deletes gather until {@link #commit()} writes them atomically. A failed
 * write throws {@link StoreException}; the stage marks its slot failed, so nothing that depended on it (a PUBACK)
 * leaves.
 */
public interface StoreWriter
{
    void put(DirectBuffer key, int keyOffset, int keyLength, DirectBuffer value, int valueOffset, int valueLength);

    void delete(DirectBuffer key, int keyOffset, int keyLength);

    /**
     * Deletes a key that was put at most once since it was last deleted (a message's record): a store may then drop
     * the put and its delete together when they meet, so a message acknowledged soon after it was kept costs the
     * disk nothing past the write-ahead log (RocksDB's SingleDelete).
     */
    default void deleteOnce(final DirectBuffer key, final int keyOffset, final int keyLength)
    {
        delete(key, keyOffset, keyLength);
    }

    /**
     * Deletes every key in {@code [from, to)}.
     */
    void deleteRange(DirectBuffer from, int fromOffset, int fromLength, DirectBuffer to, int toOffset, int toLength);

    /**
     * Writes what was batched since the last commit, as one atomic batch, durable as the writer's kind and the
     * store's durability mode say. Nothing to write: nothing happens.
     */
    void commit();

    /**
     * @return true when nothing was batched since the last commit.
     */
    boolean isEmpty();
}
