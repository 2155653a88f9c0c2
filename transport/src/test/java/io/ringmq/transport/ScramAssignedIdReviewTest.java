package io.ringmq.transport;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: a client admitted through a SCRAM exchange without a client id is assigned a random one, and its ACL
 * {@code %c} pattern stands for it.
 */
@Timeout(30)
class ScramAssignedIdReviewTest
{
    private static String exchange(final RawClient client, final String clientId) throws Exception
    {
        final ScramClient scram = new ScramClient("alice", "wonderland", "fyko+d2lbbFgONRv9qkxdawL");
        client.send(RawClient.connect5(clientId, 60, RawClient.scram(scram.first())));
        assertThat(client.finishScram(scram)).isZero();
        final var assigned = client.decoder().connack().properties().slice(PropertyId.ASSIGNED_CLIENT_IDENTIFIER);
        return null == assigned ? null : assigned.asString();
    }

    @Test
    @DisplayName("review: MQTT-3.1.3-6 through SCRAM-SHA-256: a random assigned id, and %c rules for it")
    void scramWithoutClientIdGetsARandomIdAndItsPatternRules(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, "pattern readwrite devices/%c/#\n");
        try (RingMq broker = RingMq.builder().passwordFile(file)
            .anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> context.observability(o -> o.sysIntervalMs(0)).auth(a -> a.aclFile(acl))).start();
            RawClient client = new RawClient(broker.port()).v5())
        {
            final String id = exchange(client, "");
            assertThat(id).startsWith("auto-").hasSize(5 + 36);
            client.send(RawClient.subscribe5(1, "devices/" + id + "/#", 1));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            client.send(RawClient.publish5("devices/" + id + "/s", "x".getBytes(), 0, 0, null));
            assertThat(client.readPacket(5_000)).as("its own message through %c").isEqualTo(PacketType.PUBLISH);
        }
    }
}
