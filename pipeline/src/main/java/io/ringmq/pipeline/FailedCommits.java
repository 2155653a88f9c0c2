package io.ringmq.pipeline;

import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * QoS 2 PUBLISHes whose group commit failed, from the persistence stage back to routing: routing had noted their
 * packet ids as awaiting PUBREL, but no PUBREC left and the message went nowhere, so when the publisher sends it
 * again it must be routed as new, not answered as a duplicate [MQTT-4.3.3]. A failed commit is rare (a full or
 * failing disk): a concurrent queue of small arrays is enough.
 */
final class FailedCommits
{
    private final ConcurrentLinkedQueue<int[]> failed = new ConcurrentLinkedQueue<>();

    /**
     * The persistence stage's thread.
     */
    void qos2Publish(final int sessionId, final int packetId)
    {
        failed.add(new int[]{sessionId, packetId});
    }

    /**
     * @return the next (session id, packet id), or null; the routing stage's thread.
     */
    int[] poll()
    {
        return failed.poll();
    }
}
