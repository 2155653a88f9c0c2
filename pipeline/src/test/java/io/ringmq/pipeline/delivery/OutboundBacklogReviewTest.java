package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.Outbound;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of "Ownership made structural": the outbound backlog's memory must follow what is outstanding, not what
 * passed through it.
 */
class OutboundBacklogReviewTest
{
    @Test
    @DisplayName("a backlog that never quite drains (an agent that takes a little less than is offered) keeps its "
        + "memory bounded by what is outstanding")
    void backlogThatNeverEmptiesIsCompacted() throws Exception
    {
        final int[] budget = new int[1];
        final Outbound slowAgent = new Outbound()
        {
            public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer,
                final int offset, final int length)
            {
                return budget[0]-- > 0;
            }

            public boolean close(final int agentIndex, final long connectionId)
            {
                return budget[0]-- > 0;
            }

            public void endOfBatch()
            {
            }
        };
        final OutboundBacklog backlog = new OutboundBacklog(1);
        final UnsafeBuffer packet = new UnsafeBuffer(new byte[100]);
        backlog.add(0, OutboundBacklog.SEND, 1, packet, 0, 100);
        backlog.add(0, OutboundBacklog.SEND, 1, packet, 0, 100); // two behind, always
        for (int i = 0; i < 200_000; i++) // 23 MB pass through; at most 3 packets (348 bytes) are ever outstanding
        {
            backlog.add(0, OutboundBacklog.SEND, 1, packet, 0, 100);
            budget[0] = 1;
            backlog.drain(slowAgent);
        }
        assertThat(backlog.isEmpty(0)).isFalse();
        final Field buffers = OutboundBacklog.class.getDeclaredField("buffers");
        buffers.setAccessible(true);
        final ExpandableArrayBuffer buffer = ((ExpandableArrayBuffer[])buffers.get(backlog))[0];
        assertThat(buffer.capacity()).as("bytes held for 3 outstanding packets").isLessThan(64 * 1024);
    }
}
