package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Pins what the DeliveryShard split (c3f3ff8) moved: a reloaded --max-inflight reaches the sessions a CONNECT makes
 * (now in ShardConnections, which keeps its own copy of the limits), while a session connected before keeps its
 * window. No test covered the shard's half of a --max-inflight reload before.
 */
class DeliverySplitReloadReviewTest
{
    @Test
    @DisplayName("reload --max-inflight 2 -> 4: a session connected after it gets 4 in flight, one from before keeps 2")
    void reloadedInflightReachesNewSessionsOnly()
    {
        final BrokerContext context = new BrokerContext().limits(l -> l.maxInflight(2).maxQueued(100));
        final PipelineHarness harness = new PipelineHarness(context,
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null));
        harness.packet(1, PipelineTest.connect("before", true));
        harness.packet(1, PipelineTest.subscribe("q", 1));

        harness.pipeline.limits().publish(ReloadPlan.liveContext(context, 
            new BrokerContext().limits(l -> l.maxInflight(4).maxQueued(100)).conclude()));
        harness.step(); // every owner takes the limits at its next duty cycle

        harness.packet(3, PipelineTest.connect("after", true));
        harness.packet(3, PipelineTest.subscribe("q", 1));
        harness.packet(2, PipelineTest.connect("pub", true));
        harness.outbound.sent.clear();
        for (int i = 1; i <= 6; i++)
        {
            harness.packet(2, PipelineTest.publish("q", 1, i, false));
        }
        assertThat(harness.outbound.takeTypes(1)).as("connected before the reload: its window stays 2")
            .containsExactly(PacketType.PUBLISH, PacketType.PUBLISH);
        assertThat(harness.outbound.takeTypes(3)).as("connected after the reload: the new window of 4")
            .containsExactly(PacketType.PUBLISH, PacketType.PUBLISH, PacketType.PUBLISH, PacketType.PUBLISH);
    }
}
