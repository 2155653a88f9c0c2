package io.ringmq.pipeline.delivery;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * How the delivery half of a session moves between shards when its client reconnects through another I/O agent:
 * the shard that held it puts it in the new shard's inbox when it sees the CONNECT, and the new shard, which sees
 * the same CONNECT, waits for it there without blocking (the event stays unconsumed until it arrives). A rare
 * control hand-over between threads, not per-message traffic, so a concurrent queue serves.
 */
public final class ShardHandover
{
    private final ConcurrentLinkedQueue<DeliverySession>[] inboxes;

    @SuppressWarnings("unchecked")
    public ShardHandover(final int shardCount)
    {
        inboxes = new ConcurrentLinkedQueue[shardCount];
        for (int i = 0; i < shardCount; i++)
        {
            inboxes[i] = new ConcurrentLinkedQueue<>();
        }
    }

    /**
     * @return the shards it connects: the delivery shards of the broker.
     */
    public int shardCount()
    {
        return inboxes.length;
    }

    void send(final int toShard, final DeliverySession session)
    {
        inboxes[toShard].offer(session); // publishes the session's state to the receiving shard's thread
    }

    DeliverySession poll(final int shard)
    {
        return inboxes[shard].poll();
    }
}
