package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.BrokerContext;

/**
 * What the outbound topic aliases of one delivery shard's connections may keep of topic bytes, all together: a
 * share of a quarter of {@code --max-session-memory}. A client allows up to 65,535 aliases and publishers choose
 * the topics (up to 65,535 bytes each): without this, one subscriber to {@code #} and a publisher of long distinct
 * topics made one connection keep {@link OutboundTopicAliases#MAX_KEPT} of them. Past it a topic goes in full,
 * without an alias: nothing the client sees changes but the bytes on the wire. Owned by the shard's thread.
 */
final class OutboundAliasBudget
{
    private long heldBytes;
    private long maxBytes;

    OutboundAliasBudget(final long maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    /**
     * @return one shard's share of what outbound aliases may keep with these limits.
     */
    static long maxBytesFor(final BrokerContext context, final int shardCount)
    {
        return context.memory().sessionMemoryBytes() / 4 / Math.max(1, shardCount);
    }

    /**
     * A reload: judged from the next alias on; what is kept past a lowered bound stays until its connection ends.
     */
    void maxBytes(final long maxBytes)
    {
        this.maxBytes = maxBytes;
    }

    /**
     * @return whether {@code bytes} more may be kept; if so, they are counted.
     */
    boolean take(final long bytes)
    {
        if (heldBytes + bytes > maxBytes)
        {
            return false;
        }
        heldBytes += bytes;
        return true;
    }

    void give(final long bytes)
    {
        heldBytes -= bytes;
    }

    long heldBytes()
    {
        return heldBytes;
    }
}
