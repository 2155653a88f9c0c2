package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The per-address back-off of a real broker over real source addresses (the whole of 127/8 is loopback on Linux):
 * an address that is backing off stays so however many other addresses fail meanwhile.
 */
class AddressBackoffBrokerTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;

    /** A CONNECT from {@code source} (any 127/8 address), returning the CONNACK's return code. */
    private int connackFrom(final String source, final String clientId, final String user, final String password)
        throws Exception
    {
        try (Socket socket = new Socket())
        {
            socket.bind(new InetSocketAddress(source, 0));
            socket.connect(new InetSocketAddress("127.0.0.1", broker.port()), 5_000);
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(RawClient.connect(clientId, user, password));
            final InputStream in = socket.getInputStream();
            final byte[] connack = in.readNBytes(4);
            assertThat(connack).hasSize(4);
            assertThat(connack[0] & 0xFF).isEqualTo(PacketType.CONNACK << 4);
            return connack[3];
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("an address in back-off stays in back-off when more other addresses fail than the table holds")
    void backoffSurvivesOtherAddresses() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", "a-pw", 1_000);
        final BrokerContext context = TestBrokers.v5Context()
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK)
            .passwordFile(file));
        context.auth().credentialSettings().maxFailures(3).backoff(60_000, 60_000).trackedAddresses(2);
        launch(context);

        for (int i = 0; i < 3; i++)
        {
            assertThat(connackFrom("127.0.0.2", "g" + i, "alice", "guess" + i))
                .isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        }
        assertThat(connackFrom("127.0.0.2", "g3", "alice", "guess3")).as("127.0.0.2 backs off for 60 s")
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);

        // one wrong password from each of two other addresses (the attacker's own)
        assertThat(connackFrom("127.0.0.3", "h", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        assertThat(connackFrom("127.0.0.4", "i", "alice", "x")).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);

        final long hashes = broker.counters().get(BrokerCounters.AUTH_HASHES);
        assertThat(connackFrom("127.0.0.2", "g4", "alice", "guess4"))
            .as("127.0.0.2 is still within its 60 s back-off: refused without hashing")
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        assertThat(broker.counters().get(BrokerCounters.AUTH_HASHES)).isEqualTo(hashes);
    }

    @Test
    @Timeout(120)
    @DisplayName("one address more than the table, taken in turn with one wrong password less than the maximum "
        + "each: the failures still count, and a back-off starts within the window")
    void rotatingAddressesStillBackOff() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", "a-pw", 1_000);
        final BrokerContext context = TestBrokers.v5Context()
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK)
            .passwordFile(file));
        // 3 failures within 10 minutes back off for 10 minutes; 2 addresses tracked
        context.auth().credentialSettings().maxFailures(3).failureWindowMs(600_000).backoff(600_000, 600_000)
            .trackedAddresses(2);
        launch(context);
        final String[] sources = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
        int guess = 0;
        for (int round = 0; round < 20; round++)
        {
            for (final String source : sources)
            {
                for (int i = 0; i < 2; i++) // one less than the maximum
                {
                    if (connackFrom(source, "g" + guess, "alice", "guess" + guess) == ReasonCode.V3_NOT_AUTHORIZED)
                    {
                        assertThat(guess).as("refused without hashing by the 9th guess at the latest")
                            .isLessThan(9);
                        assertThat(broker.counters().get(BrokerCounters.AUTH_BACKOFFS)).isPositive();
                        return;
                    }
                    guess++;
                }
            }
        }
        throw new AssertionError(guess + " wrong passwords from 3 addresses, each hashed: no back-off");
    }
}
