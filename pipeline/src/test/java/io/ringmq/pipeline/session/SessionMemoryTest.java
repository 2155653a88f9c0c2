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
    private final SessionMemory memory = new SessionMemory(10_000);
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
        assertThat(memory.hasRoomFor(10_000 - expected)).isTrue();
        assertThat(memory.hasRoomFor(10_000 - expected + 1)).isFalse();

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
        memory.maxBytes(1_000);
        assertThat(memory.hasRoomFor(1)).isFalse();
        assertThat(memory.heldBytes()).isGreaterThan(2_000);
    }
}
