package io.ringmq.transport;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.pipeline.auth.ScramSha256;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.ringmq.transport.RawClient.scram;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * MQTT 5.0 enhanced authentication end to end (section 4.12): SCRAM-SHA-256 against a password file entry written by
 * {@code ringmq passwd --scram}, over a raw client that speaks the AUTH exchange byte for byte.
 */
@Timeout(30)
class EnhancedAuthTest
{
    private RingMq broker;

    @BeforeEach
    void start(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        broker = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> context.observability(o -> o.sysIntervalMs(0))).start();
    }

    @AfterEach
    void stop()
    {
        broker.close();
    }

    private static byte[] bytes(final Slice slice)
    {
        return slice.toByteArray();
    }

    /**
     * @return the CONNACK reason code after a full SCRAM exchange with {@code password}.
     */
    private int exchange(final RawClient client, final String password, final ScramClient[] used) throws Exception
    {
        final ScramClient scram = new ScramClient("alice", password, "fyko+d2lbbFgONRv9qkxdawL");
        used[0] = scram;
        client.send(RawClient.connect5("scram-client", 60, scram(scram.first())));
        assertThat(client.readPacket(5_000)).as("server-first in an AUTH [MQTT-4.12.0-2]").isEqualTo(PacketType.AUTH);
        assertThat(client.decoder().auth().reasonCode()).isEqualTo(ReasonCode.CONTINUE_AUTHENTICATION);
        assertThat(client.decoder().auth().properties().slice(PropertyId.AUTHENTICATION_METHOD).asString())
            .as("the same method [MQTT-4.12.0-5]").isEqualTo(ScramSha256.NAME);
        final byte[] serverFirst = bytes(client.decoder().auth().properties().slice(PropertyId.AUTHENTICATION_DATA));
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION,
            scram(scram.last(serverFirst))));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        return client.decoder().connack().reasonCode();
    }

    @Test
    @DisplayName("MQTT-4.12.0-2 SCRAM-SHA-256: AUTH 0x18 with server-first, then CONNACK 0x00 with server-final")
    void scramSucceeds() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            final ScramClient[] scram = new ScramClient[1];
            assertThat(exchange(client, "wonderland", scram)).isZero();
            final MqttProperties connack = client.decoder().connack().properties();
            assertThat(connack.slice(PropertyId.AUTHENTICATION_METHOD).asString()).isEqualTo(ScramSha256.NAME);
            assertThat(scram[0].verifies(bytes(connack.slice(PropertyId.AUTHENTICATION_DATA))))
                .as("the server proves it knows the user's key").isTrue();
            client.send(RawClient.ping());
            assertThat(client.readPacket(5_000)).as("admitted: a PINGREQ is answered").isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    @DisplayName("MQTT-4.12.0-4 a wrong SCRAM password: CONNACK 0x86 and the connection closes")
    void wrongPassword() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(exchange(client, "looking-glass", new ScramClient[1]))
                .isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
            assertThat(client.closedWithin(5_000)).as("closed after the refusal [MQTT-3.2.2-5]").isTrue();
        }
    }

    @Test
    @DisplayName("failed SCRAM exchanges count toward the address's back-off: after 5, a SCRAM CONNECT is refused "
        + "with 0x87 before any exchange, and the right password too until the back-off ends")
    void scramGuessesBackOff() throws Exception
    {
        for (int i = 0; i < 5; i++)
        {
            try (RawClient client = new RawClient(broker.port()).v5())
            {
                assertThat(exchange(client, "guess-" + i, new ScramClient[1]))
                    .isEqualTo(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
            }
        }
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            final ScramClient scram = new ScramClient("alice", "wonderland", "fyko+d2lbbFgONRv9qkxdawL");
            client.send(RawClient.connect5("scram-client", 60, scram(scram.first())));
            assertThat(client.readPacket(5_000)).as("no exchange while backing off").isEqualTo(PacketType.CONNACK);
            assertThat(client.decoder().connack().reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        }
        assertThat(broker.counters().get(io.ringmq.pipeline.status.BrokerCounters.AUTH_BACKOFFS)).isEqualTo(1);
    }

    @Test
    @DisplayName("an exchange the client never finishes (keep-alive 0) is closed by the connect timeout: no CONNACK, "
        + "no admission, so it may not hold a connection past it")
    void unfinishedExchangeTimesOut(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        try (RingMq quick = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(context -> context.observability(o -> o.sysIntervalMs(0)).limits(l -> l.connectTimeoutMs(1_000)))
            .start();
            RawClient client = new RawClient(quick.port()).v5())
        {
            final ScramClient scram = new ScramClient("alice", "wonderland", "fyko+d2lbbFgONRv9qkxdawL");
            client.send(RawClient.connect5("never-finishes", 0, scram(scram.first())));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
            assertThat(client.closedWithin(5_000)).as("closed by the connect timeout").isTrue();
        }
    }

    @Test
    @DisplayName("MQTT-4.12.0-1 an Authentication Method the broker does not offer: CONNACK 0x8C")
    void unknownMethod() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            client.send(RawClient.connect5("kerberos", 60,
                new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "GSSAPI")));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            assertThat(client.decoder().connack().reasonCode()).isEqualTo(ReasonCode.BAD_AUTHENTICATION_METHOD);
        }
    }

    /**
     * Runs a re-authentication on a connected client.
     *
     * @return the packet type that ends it (AUTH or DISCONNECT), its reason code in {@code reason[0]}.
     */
    private static int reauthenticate(final RawClient client, final String password, final int[] reason,
        final ScramClient[] used) throws Exception
    {
        final ScramClient scram = new ScramClient("alice", password, "re-auth-nonce-4711");
        used[0] = scram;
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.RE_AUTHENTICATE, scram(scram.first())));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
        assertThat(client.decoder().auth().reasonCode()).isEqualTo(ReasonCode.CONTINUE_AUTHENTICATION);
        final byte[] serverFirst = bytes(client.decoder().auth().properties().slice(PropertyId.AUTHENTICATION_DATA));
        client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION,
            scram(scram.last(serverFirst))));
        final int type = client.readPacket(5_000);
        reason[0] = type == PacketType.AUTH ? client.decoder().auth().reasonCode() :
            client.decoder().disconnect().reasonCode();
        return type;
    }

    @Test
    @DisplayName("MQTT-4.12.1-1 re-authentication with the same method: AUTH 0x19, 0x18, then AUTH 0x00 with the "
        + "server's proof, and the connection goes on")
    void reauthentication() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(exchange(client, "wonderland", new ScramClient[1])).isZero();
            final int[] reason = new int[1];
            final ScramClient[] scram = new ScramClient[1];
            assertThat(reauthenticate(client, "wonderland", reason, scram)).isEqualTo(PacketType.AUTH);
            assertThat(reason[0]).isEqualTo(ReasonCode.SUCCESS);
            assertThat(scram[0].verifies(bytes(client.decoder().auth().properties()
                .slice(PropertyId.AUTHENTICATION_DATA)))).isTrue();
            client.send(RawClient.ping());
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    @DisplayName("MQTT-4.12.1-2 a failed re-authentication: DISCONNECT with its reason code, and the connection closes")
    void failedReauthentication() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(exchange(client, "wonderland", new ScramClient[1])).isZero();
            final int[] reason = new int[1];
            assertThat(reauthenticate(client, "queen-of-hearts", reason, new ScramClient[1]))
                .isEqualTo(PacketType.DISCONNECT);
            assertThat(reason[0]).as("0x86 is a CONNACK's code: a DISCONNECT says 0x87").isEqualTo(
                ReasonCode.NOT_AUTHORIZED);
            assertThat(client.closedWithin(5_000)).isTrue();
        }
    }

    @Test
    @DisplayName("MQTT-4.12.1-1 re-authentication with another method, or an AUTH 0x18 with no exchange under way: "
        + "DISCONNECT 0x82")
    void strayAuth() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(exchange(client, "wonderland", new ScramClient[1])).isZero();
            client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.RE_AUTHENTICATE,
                new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "GSSAPI")));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.PROTOCOL_ERROR);
        }
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            assertThat(exchange(client, "wonderland", new ScramClient[1])).isZero();
            client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION, scram(null)));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.PROTOCOL_ERROR);
        }
    }

    @Test
    @DisplayName("MQTT-3.2.0-1 an AUTH of another method during the CONNECT's exchange: the CONNECT is refused with "
        + "CONNACK 0x82 (no DISCONNECT before a CONNACK)")
    void wrongAuthDuringConnect() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()).v5())
        {
            final ScramClient scram = new ScramClient("alice", "wonderland", "nonce-of-a-confused-client");
            client.send(RawClient.connect5("confused", 60, scram(scram.first())));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.AUTH);
            client.send(RawClient.reasonPacket5(PacketType.AUTH, ReasonCode.CONTINUE_AUTHENTICATION,
                new MqttProperties().set(PropertyId.AUTHENTICATION_METHOD, "GSSAPI")));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            assertThat(client.decoder().connack().reasonCode()).isEqualTo(ReasonCode.PROTOCOL_ERROR);
        }
    }

    @Test
    @DisplayName("a plain user name and password CONNECT works against a SCRAM entry too")
    void plainPasswordAgainstScramEntry() throws Exception
    {
        try (RawClient client = new RawClient(broker.port()))
        {
            assertThat(client.handshake(RawClient.connect("plain", "alice", "wonderland"))).isZero();
        }
    }
}
