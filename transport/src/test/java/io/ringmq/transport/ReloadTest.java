package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A live reload of the password file: clients whose credentials still hold stay connected, the others are
 * disconnected, new users get in, and a bad file changes nothing.
 */
class ReloadTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;

    @Test
    @Timeout(60)
    @DisplayName("reload: a removed user is disconnected, a kept one stays, a new one gets in; a bad file changes "
        + "nothing")
    void reloadPasswordFile() throws Exception
    {
        final Path file = directory.resolve("passwd");
        user(file, "alice", "a-pw");
        user(file, "bob", "b-pw");
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0))
            .auth(a -> a.anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE).passwordFile(file)));
        final Paho alice = closeLater(Paho.connect(broker.port(), "alice", credentials("alice", "a-pw")));
        final Paho bob = closeLater(Paho.connect(broker.port(), "bob", credentials("bob", "b-pw")));
        alice.client.subscribe("t", 1);

        final Path next = directory.resolve("passwd.next"); // alice's entry as it was, bob gone, carol new
        Files.writeString(next, Files.readString(file, StandardCharsets.UTF_8).lines()
            .filter(line -> line.startsWith("alice:")).findFirst().orElseThrow() + "\n", StandardCharsets.UTF_8);
        user(next, "carol", "c-pw");
        Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        assertThat(broker.reload()).contains("reloaded");

        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (bob.client.isConnected() && System.nanoTime() < deadline)
        {
            Thread.onSpinWait();
        }
        assertThat(bob.client.isConnected()).as("bob was removed: disconnected").isFalse();
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_REVOKED)).isEqualTo(1);
        final Paho carol = closeLater(Paho.connect(broker.port(), "carol", credentials("carol", "c-pw")));
        carol.publish("t", "hello", 1, false);
        assertThat(alice.next().payload()).as("alice's entry did not change: she stayed").isEqualTo("hello");
        assertThatThrownBy(() -> Paho.connect(broker.port(), "bob2", credentials("bob", "b-pw")))
            .as("bob is refused now");

        Files.writeString(file, "this line is not user:hash\n", StandardCharsets.UTF_8);
        assertThatThrownBy(() -> broker.reload()).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("line 1");
        closeLater(Paho.connect(broker.port(), "carol2", credentials("carol", "c-pw"))); // the old file holds
        assertThat(alice.client.isConnected()).isTrue();
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a 5.0 client whose user was removed hears why: DISCONNECT 0x87 with a reason string")
    void revokedMqtt5ClientIsTold() throws Exception
    {
        final Path file = directory.resolve("passwd");
        user(file, "dave", "d-pw");
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0))
            .auth(a -> a.anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE).passwordFile(file)));
        final Paho5 dave = closeLater(new Paho5(broker.port(), "dave"));
        final org.eclipse.paho.mqttv5.client.MqttConnectionOptions options = Paho5.options();
        options.setUserName("dave");
        options.setPassword("d-pw".getBytes(StandardCharsets.UTF_8));
        dave.client.connect(options).waitForCompletion(10_000);

        Files.writeString(file, "", StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
        final org.eclipse.paho.mqttv5.client.MqttDisconnectResponse response =
            dave.disconnected.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(response.getReturnCode()).as("Not authorized").isEqualTo(0x87);
        assertThat(response.getReasonString()).contains("revoked");
    }

    @Test
    @Timeout(60)
    @DisplayName("ringmq reload --pid sends SIGHUP to a running broker, which reloads its password file")
    void reloadCommandSignalsTheBroker() throws Exception
    {
        final Path file = directory.resolve("passwd");
        user(file, "alice", "a-pw");
        try (ForkedBroker forked = ForkedBroker.start(directory, "--password-file", file.toString(),
            "--anonymous", "none"))
        {
            user(file, "dave", "d-pw");
            assertThat(Main.run("reload", "--pid", Long.toString(forked.pid()), "--counters-dir",
                directory.resolve("counters").toString())).isZero();
            awaitLogin(forked.port(), "dave", "d-pw").close();
        }
    }

    /**
     * @return a client logged in as a user a signalled reload added, polled for 20 s at most (a signal is handled
     *         asynchronously).
     */
    static Paho awaitLogin(final int port, final String user, final String password) throws Exception
    {
        final long deadline = System.nanoTime() + 20_000_000_000L;
        Paho client = null;
        while (null == client && System.nanoTime() < deadline)
        {
            try
            {
                client = Paho.connect(port, user, credentials(user, password));
            }
            catch (final org.eclipse.paho.client.mqttv3.MqttException notYet)
            {
                Thread.sleep(100); // the signal is handled asynchronously: poll until the user is let in
            }
        }
        assertThat(client).as(user + ", added to the file, got in after the reload").isNotNull();
        return client;
    }

    static void user(final Path file, final String user, final String password)
    {
        assertThat(Main.run("passwd", file.toString(), user, "--password", password, "--iterations", "1000"))
            .isZero();
    }

    static MqttConnectOptions credentials(final String user, final String password)
    {
        final MqttConnectOptions options = Paho.options(true);
        options.setUserName(user);
        options.setPassword(password.toCharArray());
        return options;
    }


    @Test
    @Timeout(60)
    @DisplayName("reload() with no new configuration keeps every listener: the broker still names its ports, and "
        + "its close lets go of them")
    void reloadKeepsTheListeners() throws Exception
    {
        final Path file = directory.resolve("passwd");
        user(file, "erin", "e-pw");
        broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)).auth(a -> a.passwordFile(file)));
        final int[] ports = broker.ports();
        assertThat(broker.reload()).contains("reloaded");
        assertThat(broker.ports()).containsExactly(ports);
        broker.close();
        try (java.nio.channels.ServerSocketChannel again = java.nio.channels.ServerSocketChannel.open())
        {
            again.bind(new java.net.InetSocketAddress("127.0.0.1", ports[0])); // free once the broker closed
        }
    }
}
