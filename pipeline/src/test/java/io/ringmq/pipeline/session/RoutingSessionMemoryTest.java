package io.ringmq.pipeline.session;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A routing session holds no collection until it subscribes or receives QoS 2, and gives them back when they are
 * empty again (the last UNSUBSCRIBE; its connection's end for the QoS 2 packet ids).
 */
class RoutingSessionMemoryTest
{
    private final SessionRegistry registry = new SessionRegistry();

    @Test
    void subscriptionsAreMadeOnTheFirstAndDroppedWithTheLast()
    {
        final RoutingSession session = registry.create("c", 0, 0);
        assertThat(session.subscriptions()).isEmpty();
        assertThat(session.subscriptionCount()).isZero();
        assertThat(session.subscription("a/b")).isNull();
        assertThat(session.removeSubscription("a/b")).as("an UNSUBSCRIBE of nothing").isNull();
        final Subscription first = new Subscription(session, "a/b", null);
        final Subscription second = new Subscription(session, "$share/g/a/#", "g");
        session.addSubscription("a/b", first);
        session.addSubscription("$share/g/a/#", second);
        session.addSubscription("a/b", first); // the same filter again replaces it [MQTT-3.8.4-3]
        assertThat(session.subscriptionCount()).isEqualTo(2);
        assertThat(session.subscriptions()).containsExactlyInAnyOrder(first, second);
        assertThat(session.removeSubscription("a/b")).isSameAs(first);
        assertThat(session.removeSubscription("$share/g/a/#")).isSameAs(second);
        assertThat(session.subscriptions()).isEmpty();
        session.addSubscription("x", first);
        session.clearSubscriptions();
        assertThat(session.subscriptionCount()).isZero();
    }

    @Test
    @DisplayName("MQTT-4.3.3-2, MQTT-4.3.3-9: a QoS 2 packet id awaits its PUBREL; a PUBREL for one never "
        + "received changes nothing")
    void packetIdsAwaitingPubrel()
    {
        final RoutingSession session = registry.create("c", 60, 0);
        assertThat(session.awaitsPubrel(1)).isFalse();
        session.releasePubrel(1); // a PUBREL before any QoS 2 PUBLISH
        session.trim();
        session.awaitPubrel(1);
        session.awaitPubrel(65_535);
        assertThat(session.awaitsPubrel(1)).isTrue();
        session.trim(); // not empty: kept
        assertThat(session.awaitsPubrel(65_535)).isTrue();
        session.releasePubrel(1);
        session.releasePubrel(65_535);
        assertThat(session.awaitsPubrel(1)).isFalse();
        session.trim();
        assertThat(session.awaitsPubrel(65_535)).isFalse();
        session.awaitPubrel(7);
        assertThat(session.awaitsPubrel(7)).as("made again after it was given back").isTrue();
    }

    @Test
    void aDiscardedSessionsClientIdIsFreeAndAReplacedOneIsNotRemovedByTheOld()
    {
        final RoutingSession old = registry.create("c", 0, 0);
        registry.discard(old);
        assertThat(registry.find("c")).isNull();
        final RoutingSession now = registry.create("c", 0, 0);
        registry.discard(old); // twice: the new session of that client stays
        assertThat(registry.find("c")).isSameAs(now);
        assertThat(registry.size()).isEqualTo(1);
    }
}
