package io.ringmq.pipeline;

import org.agrona.concurrent.ManyToOneConcurrentLinkedQueue;

/**
 * Messages a shared subscription member took and never acknowledged before its session ended: its delivery shard
 * hands them here and the routing stage sends each to another member of the same group (5.0 section 4.8.2: "If the
 * Client's Session terminates before the Client reconnects, the Server SHOULD send the Application Message to
 * another Client that is subscribed to the same Shared Subscription"). Many shards offer, routing polls; a rare
 * path, so one small object per message is fine.
 */
public final class SharedRedispatch
{
    /**
     * One message for a group.
     *
     * @param groupId the shared subscription group it came through.
     * @param message the message, with the properties that travel with it and when it expires.
     */
    public record Entry(int groupId, Message message)
    {
    }

    private final ManyToOneConcurrentLinkedQueue<Entry> queue = new ManyToOneConcurrentLinkedQueue<>();

    /**
     * A delivery shard's side.
     */
    public void offer(final int groupId, final Message message)
    {
        queue.offer(new Entry(groupId, message));
    }

    /**
     * The routing stage's side.
     *
     * @return the oldest entry, or null.
     */
    public Entry poll()
    {
        return queue.poll();
    }

    public boolean isEmpty()
    {
        return queue.isEmpty();
    }
}
