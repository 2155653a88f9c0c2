package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * DESIGN: every agent bounds its work per duty cycle. The I/O agent registers at most
 * {@link ConnectionRegistry#DRAIN_LIMIT} accepted sockets a cycle (a connection storm waits in its hand-off queue
 * rather than holding the agent away from its connections), and says it has work while some wait, so it does not
 * sleep on them.
 */
class BoundedDrainsTest
{
    private static final int CONNECTIONS = 700;

    @Test
    @Timeout(60)
    @DisplayName("a storm of 700 connections is registered at most DRAIN_LIMIT a duty cycle, all of them in the end")
    void registrationsPerCycleAreBounded() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            for (int i = 0; i < CONNECTIONS; i++)
            {
                edge.client();
            }
            int most = 0;
            int cycles = 0;
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (edge.agent.connectionCount() < CONNECTIONS && System.nanoTime() < deadline)
            {
                final int before = edge.agent.connectionCount();
                edge.agent.doWork();
                cycles++;
                final int registered = edge.agent.connectionCount() - before;
                most = Math.max(most, registered);
                if (registered == ConnectionRegistry.DRAIN_LIMIT)
                {
                    assertThat(edge.agent.hasPendingWork()).as("more wait: the agent must not sleep").isTrue();
                }
            }
            assertThat(edge.agent.connectionCount()).isEqualTo(CONNECTIONS);
            assertThat(most).as("registered in one duty cycle at most, in %d cycles", cycles)
                .isLessThanOrEqualTo(ConnectionRegistry.DRAIN_LIMIT);
        }
    }
}
