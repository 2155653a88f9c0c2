package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a reload takes from a new configuration: the live limits, never the settings sized at start, and the hand
 * over to the owners of the limits.
 */
class LiveLimitsTest
{
    private static BrokerContext running()
    {
        return new BrokerContext().port(0).memory(m -> m.ringSize(1024)).limits(l -> l.maxPacketSize(64 * 1024)
            .maxConnections(10))
            .conclude();
    }

    @Test
    @DisplayName("the live limits are taken, the restart-only settings keep their running values")
    void liveTakenRestartKept()
    {
        final BrokerContext running = running();
        final BrokerContext next = new BrokerContext().port(0).memory(m -> m.ringSize(4096))
            .limits(l -> l.maxPacketSize(2048)
            .maxConnections(3)
            .maxQueued(7)).observability(o -> o.sysIntervalMs(500))
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.NONE))
            .limits(l -> l.receiveMaximum(10)
            .maxSessions(50)).conclude();
        final BrokerContext live = ReloadPlan.liveContext(running, next);
        assertThat(live.limits().maxConnections()).isEqualTo(3);
        assertThat(live.limits().maxPacketSize()).isEqualTo(2048);
        assertThat(live.limits().maxQueued()).isEqualTo(7);
        assertThat(live.observability().sysIntervalMs()).isEqualTo(500);
        assertThat(live.auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.NONE);
        assertThat(live.memory().ringSize()).as("sized at start").isEqualTo(1024);
        assertThat(live.limits().receiveMaximum()).as("promised in every CONNACK")
            .isEqualTo(running.limits().receiveMaximum());
        assertThat(live.limits().maxSessions()).isEqualTo(running.limits().maxSessions());
        assertThat(live.memory().messageLogBytes()).isEqualTo(running.memory().messageLogBytes());
        assertThat(running.limits().maxConnections()).as("the running context is not touched").isEqualTo(10);
        assertThat(ReloadPlan.restartOnlyChanges(running, next))
            .containsExactlyInAnyOrder("ring-size", "receive-maximum",
            "max-sessions");
        assertThat(ReloadPlan.liveChanges(running, next)).contains("max-connections", "max-packet-size", "max-queued",
            "sys-interval", "anonymous");
    }

    @Test
    @DisplayName("hostile: a packet size above what the rings were sized for is not taken (it needs a restart)")
    void packetSizeAboveTheRings()
    {
        final BrokerContext running = running();
        final BrokerContext next = new BrokerContext().port(0).memory(m -> m.ringSize(1024))
            .limits(l -> l.maxPacketSize(LimitSettings.MAX_PACKET_SIZE_LIMIT).maxConnections(10)).conclude();
        assertThat(ReloadPlan.liveContext(running, next).limits().maxPacketSize()).isEqualTo(64 * 1024);
        assertThat(ReloadPlan.restartOnlyChanges(running, next)).anySatisfy(name -> assertThat(name)
            .startsWith("max-packet-size above"));
        assertThat(ReloadPlan.liveChanges(running, next)).doesNotContain("max-packet-size");
        assertThat(ReloadPlan.liveChanges(running, running())).as("the same configuration: nothing to do").isEmpty();
    }

    @Test
    @Timeout(10)
    @DisplayName("each follower takes the published limits on its own thread; the publisher waits for all")
    void followersTakeOnTheirThreads() throws Exception
    {
        final BrokerContext first = running();
        final LiveLimits live = new LiveLimits(first);
        final AtomicReference<BrokerContext> seen = new AtomicReference<>();
        final Thread[] owners = new Thread[3];
        for (int i = 0; i < owners.length; i++)
        {
            final BrokerContext[] held = {live.follow()};
            owners[i] = new Thread(() ->
            {
                while (!Thread.currentThread().isInterrupted())
                {
                    final BrokerContext next = live.changed(held[0]);
                    if (null != next)
                    {
                        held[0] = next;
                        seen.set(next);
                        live.took(next);
                    }
                    Thread.onSpinWait();
                }
            });
            owners[i].setDaemon(true);
            owners[i].start();
        }
        final BrokerContext second = ReloadPlan.liveContext(first, new BrokerContext().port(0)
            .limits(l -> l.maxConnections(2))
            .conclude());
        live.publish(second);
        assertThat(live.awaitTaken(5_000)).isTrue();
        assertThat(seen.get()).isSameAs(second);
        for (final Thread owner : owners)
        {
            owner.interrupt();
            owner.join(1_000);
        }
        live.publish(ReloadPlan.liveContext(first, running()));
        assertThat(live.awaitTaken(50)).as("no owner runs: the wait ends at its bound").isFalse();
    }

    @Test
    @DisplayName("hostile: an owner that took the limits of an earlier reload late (after the next was published) "
        + "is not counted as having taken the next: the reload's wait goes on until it has")
    void lateTakeOfAnEarlierReloadIsNotCounted()
    {
        final BrokerContext first = running();
        final LiveLimits live = new LiveLimits(first);
        final BrokerContext slowHeld = live.follow();
        final BrokerContext fastHeld = live.follow();
        final BrokerContext second = ReloadPlan.liveContext(first, new BrokerContext().port(0)
            .limits(l -> l.maxConnections(2))
            .conclude());
        final BrokerContext third = ReloadPlan.liveContext(first, new BrokerContext().port(0)
            .limits(l -> l.maxConnections(3))
            .conclude());

        live.publish(second);
        final BrokerContext slowTakes = live.changed(slowHeld); // the slow owner sees the second, is preempted
        assertThat(slowTakes).isSameAs(second);
        assertThat(live.awaitTaken(10)).as("the second reload timed out (one owner stuck)").isFalse();
        live.publish(third);
        live.took(slowTakes); // the slow owner counts itself done with the second
        live.took(live.changed(fastHeld)); // the fast one takes the third
        assertThat(live.awaitTaken(10)).as("the slow owner still holds the second").isFalse();

        final BrokerContext slowNext = live.changed(slowTakes);
        assertThat(slowNext).isSameAs(third);
        live.took(slowNext);
        assertThat(live.awaitTaken(10)).isTrue();
    }
}
