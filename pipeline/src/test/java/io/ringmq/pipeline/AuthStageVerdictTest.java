package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.pipeline.auth.CredentialSettings;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.agrona.ExpandableArrayBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The auth stage's CONNECT path with credential workers: it admits only on a worker's verdict reached under the
 * password file it holds, never hashes itself, and fails closed.
 */
class AuthStageVerdictTest
{
    @TempDir
    Path directory;

    @Test
    @DisplayName("no verdict for a user name and password: refused with server unavailable (fail closed), no hash")
    void noVerdictIsARefusal() throws Exception
    {
        final Fixture fixture = new Fixture();
        final IngressEvent event = connect(1, "alice", "a-pw", CredentialRequest.NO_VERDICT);
        fixture.auth.onEvent(event);
        assertThat(event.authCode).isEqualTo(ReasonCode.V3_SERVER_UNAVAILABLE);
        final IngressEvent anonymous = connect(2, null, null, CredentialRequest.NO_VERDICT);
        fixture.auth.onEvent(anonymous);
        assertThat(anonymous.authCode).as("anonymous: decided on the stage, cheaply (policy none)")
            .isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        fixture.workers.close();
    }

    @Test
    @DisplayName("a verdict of the current file admits; one reached under a file since reloaded is refused, counted")
    void staleVerdictIsRefused() throws Exception
    {
        final Fixture fixture = new Fixture();
        final long verdict = fixture.authenticator.verify("alice", "a-pw".getBytes(StandardCharsets.UTF_8));
        final IngressEvent current = connect(1, "alice", "a-pw", verdict);
        fixture.auth.onEvent(current);
        assertThat(current.authCode).isEqualTo(IngressEvent.AUTH_ACCEPTED);

        fixture.auth.reload(PasswordFile.load(fixture.path));
        fixture.auth.doDutyCycle();
        final IngressEvent stale = connect(2, "alice", "a-pw", verdict);
        fixture.auth.onEvent(stale);
        assertThat(stale.authCode).isEqualTo(ReasonCode.V3_SERVER_UNAVAILABLE);
        assertThat(fixture.counters.get(BrokerCounters.AUTH_STALE_VERDICTS)).isEqualTo(1);

        final IngressEvent refused = connect(3, "alice", "x",
            Authenticator.verdictOf(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD));
        fixture.auth.onEvent(refused);
        assertThat(refused.authCode).isEqualTo(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
        fixture.workers.close();
    }

    @Test
    @DisplayName("a reused slot carries no earlier verdict: every packet() resets it")
    void slotReuseForgetsTheVerdict()
    {
        final IngressEvent event = connect(1, "alice", "a-pw", 0);
        final ExpandableArrayBuffer bytes = new ExpandableArrayBuffer(64);
        event.packet(0, 2, MqttVersion.V3_1_1, false, PacketType.CONNECT, bytes, 0, null, -1);
        assertThat(event.credentialVerdict).isEqualTo(CredentialRequest.NO_VERDICT);
        event.credentialVerdict = 0;
        event.end(IngressEvent.CONNECTION_LOST, 0, 2, MqttVersion.V3_1_1);
        assertThat(event.credentialVerdict).isEqualTo(CredentialRequest.NO_VERDICT);
    }

    private final class Fixture
    {
        final Path path = directory.resolve("passwd");
        final BrokerCounters counters = new BrokerCounters();
        final Authenticator authenticator;
        final CredentialWorkers workers;
        final AuthStage auth;

        Fixture() throws Exception
        {
            PasswordFile.write(path, "alice", "a-pw", 100);
            authenticator = new Authenticator(Authenticator.AnonymousPolicy.NONE, null, null, PasswordFile.load(path));
            workers = new CredentialWorkers(authenticator, new CredentialSettings(), 0, counters);
            auth = new AuthStage(authenticator, counters, 1024, ConnectionControl.NONE);
        }
    }

    private static IngressEvent connect(final long connectionId, final String user, final String password,
        final long verdict)
    {
        final IngressEvent event;
        if (null != user)
        {
            event = AuthStageReloadReviewTest.connect(connectionId, user, password);
        }
        else
        {
            final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V3_1_1).cleanStart(true)
                .keepAlive(60);
            encoder.clientId().wrap("c" + connectionId);
            final ExpandableArrayBuffer bytes = new ExpandableArrayBuffer(64);
            event = new IngressEvent(256);
            event.packet(0, connectionId, MqttVersion.V3_1_1, false, PacketType.CONNECT, bytes,
                encoder.encode(bytes, 0), null, -1);
        }
        event.credentialVerdict = verdict;
        return event;
    }
}
