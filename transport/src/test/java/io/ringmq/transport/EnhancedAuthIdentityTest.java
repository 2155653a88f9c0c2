package io.ringmq.transport;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.pipeline.auth.ScramSha256;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The user a SCRAM exchange proved is the user the broker knows the client by, everywhere: its client id under
 * {@code --use-username-as-clientid}, its ACL rules at the auth stage and at routing, on a new and on a resumed
 * session. A CONNECT's User Name the exchange did not prove chooses nothing: such a CONNECT is refused.
 */
@Timeout(60)
class EnhancedAuthIdentityTest
{
    @TempDir
    Path directory;
    private RingMq broker;

    @AfterEach
    void stop()
    {
        if (null != broker)
        {
            broker.close();
        }
    }

    /**
     * alice has a SCRAM entry, bob and admin plain ones; an ACL file when {@code acl} is not null.
     *
     * @return the broker's port.
     */
    private int start(final String acl, final Consumer<io.ringmq.pipeline.BrokerContext> context) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("alice-secret", 4096));
        PasswordFile.write(file, "bob", PasswordHash.create("bob-secret", 1000));
        PasswordFile.write(file, "admin", PasswordHash.create("admin-secret", 1000));
        final Path aclFile = directory.resolve("acl");
        if (null != acl)
        {
            Files.writeString(aclFile, acl, StandardCharsets.UTF_8);
        }
        broker = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)
            .context(c ->
            {
                c.observability(o -> o.sysIntervalMs(0)).threads(t -> t.ioThreads(1));
                if (null != acl)
                {
                    c.auth(a -> a.aclFile(aclFile));
                }
                context.accept(c);
            }).start();
        return broker.port();
    }

    private static byte[] connect5(final String clientId, final String userName, final String password,
        final boolean cleanStart, final MqttProperties properties)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(cleanStart)
            .keepAlive(60).properties(properties);
        encoder.clientId().wrap(clientId);
        if (null != userName)
        {
            encoder.userName().wrap(userName);
        }
        if (null != password)
        {
            encoder.password().wrap(password);
        }
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    private static MqttProperties sessionKept()
    {
        return new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 3600);
    }

    /**
     * A whole SCRAM exchange as alice, with her password, in a CONNECT that carries {@code userName} (or none).
     *
     * @return the CONNACK's reason code.
     */
    private static int scramAsAlice(final RawClient client, final String clientId, final String userName,
        final boolean cleanStart) throws Exception
    {
        final ScramClient scram = new ScramClient("alice", "alice-secret", "fyko+d2lbbFgONRv9qkxdawL");
        client.send(connect5(clientId, userName, null, cleanStart, sessionKept()
            .set(PropertyId.AUTHENTICATION_METHOD, ScramSha256.NAME)
            .set(PropertyId.AUTHENTICATION_DATA, scram.first())));
        return client.finishScram(scram);
    }

    /**
     * @return the topic of the next PUBLISH, or null when the broker closes the connection or sends nothing in time.
     */
    private static String nextTopic(final RawClient client, final int timeoutMs) throws Exception
    {
        try
        {
            return client.readPacketOrClosed(timeoutMs) == PacketType.PUBLISH ?
                client.decoder().publish().topic().asString() : null;
        }
        catch (final SocketTimeoutException quiet)
        {
            return null;
        }
    }

    private static void publishAsAdmin(final int port, final String topic) throws Exception
    {
        try (RawClient admin = new RawClient(port).v5())
        {
            assertThat(admin.handshake(connect5("admin-c", "admin", "admin-secret", true, null))).isZero();
            admin.send(RawClient.publish5(topic, "m".getBytes(StandardCharsets.UTF_8), 1, 1, null));
            assertThat(admin.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
    }

    @Test
    @DisplayName("--use-username-as-clientid: a SCRAM exchange as alice in a CONNECT whose User Name says bob is "
        + "refused with 0x87; bob's session and its queued message stay his")
    void userNameTheExchangeDidNotProveIsRefused() throws Exception
    {
        final int port = start(null, context -> context.auth(a -> a.useUserNameAsClientId(true)));
        try (RawClient bob = new RawClient(port).v5())
        {
            assertThat(bob.handshake(connect5("any", "bob", "bob-secret", true, sessionKept()))).isZero();
            bob.send(RawClient.subscribe5(1, "bob/inbox", 1));
            assertThat(bob.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            bob.send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.NORMAL_DISCONNECTION, null));
            assertThat(bob.closedWithin(5_000)).isTrue();
        }
        publishAsAdmin(port, "bob/inbox");
        try (RawClient alice = new RawClient(port).v5())
        {
            assertThat(scramAsAlice(alice, "any", "bob", false)).isEqualTo(ReasonCode.NOT_AUTHORIZED);
            assertThat(alice.decoder().connack().isSessionPresent()).isFalse();
            assertThat(nextTopic(alice, 2_000)).as("nothing of bob's").isNull();
        }
        try (RawClient bob = new RawClient(port).v5())
        {
            bob.send(connect5("any", "bob", "bob-secret", false, sessionKept()));
            assertThat(bob.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
            assertThat(bob.decoder().connack().isSessionPresent()).isTrue();
            assertThat(nextTopic(bob, 5_000)).as("the message queued for him").isEqualTo("bob/inbox");
        }
        assertThat(broker.counters().get(io.ringmq.pipeline.status.BrokerCounters.AUTH_FAILURES)).isEqualTo(1);
    }

    @Test
    @DisplayName("--use-username-as-clientid: a SCRAM CONNECT without a User Name is admitted, its client id the "
        + "user it proved: a second one takes the first over and resumes its session")
    void scramUserIsTheClientId() throws Exception
    {
        final int port = start(null, context -> context.auth(a -> a.useUserNameAsClientId(true)));
        try (RawClient first = new RawClient(port).v5(); RawClient second = new RawClient(port).v5())
        {
            assertThat(scramAsAlice(first, "one", null, true)).isZero();
            first.send(RawClient.subscribe5(1, "alice/inbox", 1));
            assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(scramAsAlice(second, "two", null, false)).isZero();
            assertThat(second.decoder().connack().isSessionPresent()).as("alice's session, by her user").isTrue();
            assertThat(first.readPacketOrClosed(5_000)).as("taken over: DISCONNECT 0x8E")
                .isEqualTo(PacketType.DISCONNECT);
            publishAsAdmin(port, "alice/inbox");
            assertThat(nextTopic(second, 5_000)).isEqualTo("alice/inbox");
        }
    }

    @Test
    @DisplayName("an ACL file: a SCRAM client without a User Name gets its user's rules at routing too: a filter it "
        + "may partly read delivers what it may read, and nothing else, before and after it resumes its session")
    void scramUserRulesAtRouting() throws Exception
    {
        final int port = start("user alice\ntopic read news/#\nuser admin\ntopic readwrite #\n", context -> { });
        try (RawClient alice = new RawClient(port).v5())
        {
            assertThat(scramAsAlice(alice, "alice-c", null, true)).isZero();
            alice.send(RawClient.subscribe5(1, "+/a", 1)); // partly readable: news/a yes, other/a no
            assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            final byte[] suback = alice.lastPacket();
            assertThat(suback[suback.length - 1] & 0xFF).as("granted QoS 1").isEqualTo(1);
            publishAsAdmin(port, "other/a");
            publishAsAdmin(port, "news/a");
            assertThat(nextTopic(alice, 5_000)).as("other/a filtered, news/a delivered").isEqualTo("news/a");
            alice.send(RawClient.reasonPacket5(PacketType.DISCONNECT, ReasonCode.NORMAL_DISCONNECTION, null));
            assertThat(alice.closedWithin(5_000)).isTrue();
        }
        try (RawClient alice = new RawClient(port).v5())
        {
            assertThat(scramAsAlice(alice, "alice-c", null, false)).isZero();
            assertThat(alice.decoder().connack().isSessionPresent()).isTrue();
            publishAsAdmin(port, "other/a");
            publishAsAdmin(port, "news/a");
            assertThat(nextTopic(alice, 5_000)).as("the resumed subscription, judged by alice's rules")
                .isEqualTo("news/a");
        }
    }

    @Test
    @DisplayName("a SCRAM CONNECT whose User Name is the user it proves is admitted as before")
    void sameUserNameIsAdmitted() throws Exception
    {
        final int port = start(null, context -> context.auth(a -> a.useUserNameAsClientId(true)));
        try (RawClient alice = new RawClient(port).v5())
        {
            assertThat(scramAsAlice(alice, "any", "alice", true)).isZero();
        }
    }
}
