package io.ringmq.pipeline.session;

import io.ringmq.pipeline.Message;
import io.ringmq.pipeline.auth.ClientAcl;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What sessions count against {@code --max-session-memory}, as their state changes, and that a discarded session
 * gives all of it back whatever is done with it afterwards.
 */
class SessionMemoryTest
{
    private final SessionMemory memory = new SessionMemory(10_000, 10_000);
    private final SessionRegistry registry = new SessionRegistry(memory);

    private static Message will(final int payloadLength)
    {
        return new Message(new byte[] {'w', '/', '1'}, new byte[payloadLength], 1, false);
    }

    @Test
    @DisplayName("a session counts its client id, user name, will and filters, each with an allowance")
    void countsWhatASessionHolds()
    {
        final RoutingSession session = registry.create("client", 0, 0);
        assertThat(memory.heldBytes()).isEqualTo(SessionMemory.STRING_LENGTH + 6);
        session.acl(ClientAcl.OPEN, "user-name", session.clientId());
        session.will(will(1_000));
        session.addSubscription("a/b", new Subscription(session, "a/b", null));
        session.addSubscription("a/b", new Subscription(session, "a/b", null)); // replaced: counted once
        final long expected = SessionMemory.STRING_LENGTH + 6 + SessionMemory.STRING_LENGTH + 9 +
            SessionMemory.WILL_LENGTH + 3 + 1_000 +
            SessionMemory.SUBSCRIPTION_LENGTH + SessionMemory.STRING_LENGTH + 3 + 3 + 2 * SessionMemory.LEVEL_LENGTH;
        assertThat(memory.heldBytes()).isEqualTo(expected).isEqualTo(session.heldBytes());
        assertThat(memory.hasRoomForConnect(10_000 - expected, 0)).isTrue();
        assertThat(memory.hasRoomForConnect(10_000 - expected + 1, 0)).isFalse();

        session.acl(ClientAcl.OPEN, "user-name", "another-id"); // rules compiled for another id: it holds it too
        assertThat(memory.heldBytes()).isEqualTo(expected + SessionMemory.STRING_LENGTH + 10);
        session.acl(ClientAcl.OPEN, null, session.clientId());
        session.will(null);
        session.removeSubscription("a/b");
        assertThat(memory.heldBytes()).isEqualTo(SessionMemory.STRING_LENGTH + 6);
    }

    @Test
    @DisplayName("a discarded session gives back everything it held, and what is done with it later is not counted")
    void discardGivesItAllBack()
    {
        for (int i = 0; i < 1_000; i++)
        {
            final RoutingSession session = registry.create("c" + i, 0, 0);
            session.will(will(100));
            session.addSubscription("x/" + i, new Subscription(session, "x/" + i, null));
            registry.discard(session);
            session.will(null); // as the stage does after discarding it: nothing counted twice
            session.clearSubscriptions();
            registry.releaseDiscarded(registry.takeDiscarded().size());
        }
        assertThat(memory.heldBytes()).isZero();
    }

    @Test
    @DisplayName("MQTT-4.3.3-9: packet ids awaiting PUBREL count while awaited, once each, and the set with them")
    void awaitedPacketIds()
    {
        final RoutingSession session = registry.create("q", 0, 0);
        final long empty = memory.heldBytes();
        for (int id = 1; id <= 100; id++)
        {
            session.awaitPubrel(id);
            session.awaitPubrel(id); // a resend before PUBREL: the same id
        }
        assertThat(memory.totalBytes() - empty)
            .isEqualTo(SessionMemory.PUBREL_SET_LENGTH + 100L * SessionMemory.PUBREL_ID_LENGTH);
        assertThat(memory.heldBytes()).as("apart: only the shard routing QoS 2 counts them").isEqualTo(empty);
        for (int id = 1; id <= 100; id++)
        {
            session.releasePubrel(id);
        }
        session.releasePubrel(7); // a PUBREL for an id no longer awaited
        session.trim();
        assertThat(memory.totalBytes()).isEqualTo(empty);
    }

    @Test
    @DisplayName("a lowered bound refuses from the next request; what is held stays")
    void loweredBound()
    {
        registry.create("a", 0, 0).will(will(2_000));
        memory.maxBytes(1_000, 1_000);
        assertThat(memory.hasRoomForConnect(1, 0)).isFalse();
        assertThat(memory.heldBytes()).isGreaterThan(2_000);
    }

    /**
     * Subscribes {@code session} to {@code prefix + n}, n = 0, 1, ..., while the bound lets it.
     */
    private static void subscribeUntilRefused(final SessionMemory bounded, final RoutingSession session,
        final String prefix)
    {
        for (int n = 0; bounded.filterRefusal(session, SessionMemory.subscriptionLength(prefix + n)) ==
            SessionMemory.ROOM; n++)
        {
            session.addSubscription(prefix + n, new Subscription(session, prefix + n, null));
        }
    }

    @Test
    @DisplayName("filters fill at most three quarters of the bound: the last quarter is kept for CONNECTs (client "
        + "ids, user names, wills); a CONNECT that adds nothing always gets in")
    void lastQuarterKeptForNewSessions()
    {
        final SessionMemory bounded = new SessionMemory(100_000, 100_000);
        final SessionRegistry sessions = new SessionRegistry(bounded);
        final RoutingSession subscriber = sessions.create("s", 0, 0);
        final String filter = "f/" + "x".repeat(1_000);
        subscribeUntilRefused(bounded, subscriber, filter);
        assertThat(bounded.heldBytes()).isBetween(75_000L - SessionMemory.subscriptionLength(filter + 99), 75_000L);
        assertThat(bounded.filterRefusal(subscriber, SessionMemory.subscriptionLength(filter)))
            .isEqualTo(io.ringmq.pipeline.status.BrokerCounters.SESSION_MEMORY_REFUSED);
        assertThat(bounded.hasRoomForConnect(SessionMemory.sessionLength("newcomer", 0), 0))
            .as("a new session without a will still gets in").isTrue();
        final long newcomer = SessionMemory.sessionLength("newcomer", 0);
        final long willRoom = 100_000 - bounded.heldBytes() - newcomer;
        assertThat(bounded.hasRoomForConnect(newcomer, willRoom)).as("a will in the last quarter").isTrue();
        assertThat(bounded.hasRoomForConnect(newcomer, willRoom + 1)).isFalse();
        assertThat(bounded.hasRoomForConnect(100_001 - bounded.heldBytes(), 0)).isFalse();
        bounded.maxBytes(1_000, 1_000);
        assertThat(bounded.hasRoomForConnect(0, 0)).as("a resume without a will, past a lowered bound").isTrue();
    }

    @Test
    @DisplayName("one session holds at most its share in filters, and in packet ids awaiting PUBREL apart; its will "
        + "does not count against it; the others still get room")
    void oneSessionsShare()
    {
        final SessionMemory bounded = new SessionMemory(1_000_000, 20_000);
        final SessionRegistry sessions = new SessionRegistry(bounded);
        final RoutingSession greedy = sessions.create("greedy", 0, 0);
        greedy.will(new Message(new byte[] {'w'}, new byte[15_000], 1, false)); // counted in the bound, not the share
        final RoutingSession other = sessions.create("other", 0, 0);
        subscribeUntilRefused(bounded, greedy, "g/");
        assertThat(greedy.filterBytes()).isLessThanOrEqualTo(20_000).isGreaterThan(19_000);
        assertThat(bounded.filterRefusal(greedy, SessionMemory.subscriptionLength("g/x")))
            .isEqualTo(io.ringmq.pipeline.status.BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED);
        assertThat(bounded.awaitedRefusal(greedy, 20_000)).as("packet ids: a share of their own")
            .isEqualTo(SessionMemory.ROOM);
        assertThat(bounded.awaitedRefusal(greedy, 20_001))
            .isEqualTo(io.ringmq.pipeline.status.BrokerCounters.CLIENT_SESSION_MEMORY_REFUSED);
        assertThat(bounded.filterRefusal(other, SessionMemory.subscriptionLength("o/1"))).isEqualTo(SessionMemory.ROOM);
        assertThat(bounded.awaitedRefusal(other, SessionMemory.PUBREL_ID_LENGTH)).isEqualTo(SessionMemory.ROOM);

        greedy.removeSubscription("g/0");
        assertThat(bounded.filterRefusal(greedy, SessionMemory.subscriptionLength("g/0")))
            .as("room again once it lets one go").isEqualTo(SessionMemory.ROOM);
    }
}
