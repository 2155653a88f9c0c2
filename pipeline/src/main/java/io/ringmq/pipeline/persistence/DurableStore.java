package io.ringmq.pipeline.persistence;

/**
 * The persistence port: an ordered key-value store with write batches, behind the persistence stage and the
 * delivery shards' journals. The pipeline owns every record's layout ({@link Records}); a store only keeps bytes
 * in key order. {@code persistence/} implements it on RocksDB; {@link MemoryStore} keeps it in memory (tests, and
 * {@code --persistence memory}, where {@link #isDurable()} is false and nothing is written at all).
 */
public interface DurableStore extends AutoCloseable
{
    /**
     * @param groupCommit true for the persistence stage's writer, whose {@link StoreWriter#commit()} follows the
     *                    durability mode (fsync per batch in {@code sync}); false for a delivery shard's journal,
     *                    whose commits reach the write-ahead log (safe from a process crash) and are fsynced with
     *                    the next group commit or periodic sync.
     * @return a writer for one thread.
     */
    StoreWriter writer(boolean groupCommit);

    /**
     * Visits every record in key order; called once at start, before any stage runs. A record the store cannot
     * read is skipped and counted in the report, not thrown (unless the store was opened strict).
     *
     * @return what the store itself found while opening and scanning (repairs, unreadable records).
     */
    RecoveryReport scan(RecordVisitor visitor);

    /**
     * Visits records in key order while the broker runs, as the store holds them now (what the calling thread
     * committed is seen): upkeep in small steps, such as the persistence stage's sweep of expired retained messages.
     * A record the store cannot read ends the visit.
     *
     * @param from  the first key, inclusive.
     * @param to    the end of the range, exclusive.
     * @param limit the most records to visit.
     * @return how many it visited: fewer than {@code limit} when the range ended.
     */
    int visit(byte[] from, byte[] to, int limit, RecordVisitor visitor);

    /**
     * @return false for a store that keeps nothing across a restart: the pipeline then writes nothing to it.
     */
    boolean isDurable();

    /**
     * @return times the store slowed or stopped writes (compaction or flush behind), since it opened.
     */
    long writeStalls();

    /**
     * @return one line for the start banner, e.g. {@code rocksdb ./data durability=sync}.
     */
    String describe();

    @Override
    void close();
}
