package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: a reload changes {@code --auto-id-prefix} together with {@code --max-client-id-length} and
 * {@code --clientid-prefixes}, never a running prefix with new limits (which gave every client the same id, or none).
 */
@Timeout(60)
class AssignedIdReloadReviewTest extends InProcessBrokerTest
{
    private String assigned(final int port) throws Exception
    {
        final Hive5 client = closeLater(new Hive5(Hive5.builder(port, "x").identifier(""), false));
        return client.client.connect().getAssignedClientIdentifier().orElseThrow().toString();
    }

    @Test
    @DisplayName("review: --auto-id-prefix is taken live by a reload (the next CONNECT)")
    void reloadedPrefixIsTaken() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        assertThat(assigned(port)).startsWith("auto-");
        broker.reload(TestBrokers.v5Context().limits(l -> l.autoIdPrefix("tenant-")).conclude());
        assertThat(assigned(port)).startsWith("tenant-");
    }

    @Test
    @DisplayName("review: a reload to the default prefix and --max-client-id-length 23 (valid together) from a 23-byte "
        + "prefix: every client without an id gets its own random id, none takes another's session over")
    void reloadedLengthWithTheOldPrefix() throws Exception
    {
        final String prefix = "tenant-a-assigned-ids-x"; // 23 bytes
        final int port = launch(TestBrokers.v5Context().limits(l -> l.autoIdPrefix(prefix)));
        // valid on its own: "auto-" (5) + 16 <= 23
        broker.reload(TestBrokers.v5Context().limits(l -> l.maxClientIdLength(23)).conclude());
        final String first = assigned(port);
        final String second = assigned(port);
        assertThat(first).as("assigned ids").isNotEqualTo(second);
        assertThat(broker.counters().get(io.ringmq.pipeline.status.BrokerCounters.CONNECTIONS_TAKEN_OVER))
            .as("sessions taken over").isZero();
    }

    @Test
    @DisplayName("review: a reload to a --max-client-id-length below the running prefix's length: a client without "
        + "an id still gets an answer and an id")
    void reloadedLengthBelowThePrefix() throws Exception
    {
        final int port = launch(TestBrokers.v5Context().limits(l -> l.autoIdPrefix("x".repeat(30))));
        broker.reload(TestBrokers.v5Context().limits(l -> l.maxClientIdLength(23)).conclude());
        try (RawClient client = new RawClient(port).v5())
        {
            assertThat(client.handshake(RawClient.connect5("", null))).as("CONNACK reason").isZero();
        }
    }

    @Test
    @DisplayName("review: a reload to auto_id_prefix tenant-a- with clientid_prefixes tenant- (valid together): a "
        + "client without an id is assigned tenant-a-..., not refused")
    void reloadedPrefixWithClientIdPrefixes() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        broker.reload(TestBrokers.v5Context().limits(l -> l.autoIdPrefix("tenant-a-").clientIdPrefix("tenant-"))
            .conclude());
        try (RawClient client = new RawClient(port).v5())
        {
            assertThat(client.handshake(RawClient.connect5("", null))).as("CONNACK reason").isZero();
        }
    }
}
