package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.pipeline.status.CountersFile;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import org.agrona.ExpandableArrayBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of the live reload in the auth stage, stepped by hand.
 */
class AuthStageReloadReviewTest
{
    @TempDir
    Path directory;

    @Test
    @DisplayName("reload: a client admitted by --user/--pass is not revoked because a password-file entry of the "
        + "same name changed (its credentials still hold)")
    void commandLineUserIsNotRevokedByTheFile() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "ops", "file-pw", 1000);
        final Authenticator authenticator =
            new Authenticator(Authenticator.AnonymousPolicy.NONE, "ops", "cli-pw", PasswordFile.load(file));
        final List<Long> revoked = new ArrayList<>();
        try (CountersFile countersFile = CountersFile.inMemory())
        {
            final AuthStage auth = new AuthStage(authenticator, new BrokerCounters(countersFile), 1024,
                (agentIndex, connectionId) -> revoked.add(connectionId));

            final IngressEvent event = connect(7L, "ops", "cli-pw");
            auth.onEvent(event);
            assertThat(event.authCode).as("admitted by --user/--pass").isEqualTo(IngressEvent.AUTH_ACCEPTED);

            PasswordFile.write(file, "ops", "another-file-pw", 1000); // the file's ops changes; --pass does not
            auth.reload(PasswordFile.load(file));
            auth.doDutyCycle();
            assertThat(revoked).as("the client's --user/--pass credentials still hold").isEmpty();
        }
    }

    static IngressEvent connect(final long connectionId, final String user, final String password)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V3_1_1).cleanStart(true)
            .keepAlive(60);
        encoder.clientId().wrap("c" + connectionId);
        encoder.userName().wrap(user);
        encoder.password().wrap(password);
        final ExpandableArrayBuffer bytes = new ExpandableArrayBuffer(256);
        final int length = encoder.encode(bytes, 0);
        final IngressEvent event = new IngressEvent(256);
        event.packet(0, connectionId, MqttVersion.V3_1_1, false, PacketType.CONNECT, bytes, length, null, -1);
        return event;
    }
}
