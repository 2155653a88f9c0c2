package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The embedding API: {@link RingMq#builder()} starts a broker in-process on safe defaults, takes the command line's
 * options, refuses bad ones with one clear line, and {@link RingMq#close()} stops it, once.
 */
@Timeout(60)
class EmbeddingTest
{
    @Test
    @DisplayName("defaults: 127.0.0.1, a free port, counters in a temporary directory; a Paho round trip; close twice")
    void startsTalksAndStops() throws Exception
    {
        final RingMq broker = RingMq.builder().start();
        final Path countersFile;
        try
        {
            assertThat(broker.port()).isPositive();
            assertThat(broker.uri()).isEqualTo("tcp://127.0.0.1:" + broker.port());
            assertThat(broker.context().bindAddress()).isEqualTo("127.0.0.1");
            assertThat(broker.context().auth().anonymous()).isEqualTo(Authenticator.AnonymousPolicy.LOOPBACK);
            countersFile = broker.countersFile();
            assertThat(countersFile).exists();
            assertThat(countersFile.getParent().getFileName().toString()).startsWith("ringmq-counters-");
            assertThat(countersFile.getParent().getParent())
                .isEqualTo(Path.of(System.getProperty("java.io.tmpdir")));

            final MqttClient client = new MqttClient(broker.uri(), "embedded", new MemoryPersistence());
            try (Paho subscriber = Paho.connect(broker.port(), "subscriber"))
            {
                subscriber.client.subscribe("embedded/#", 1);
                client.connect(Paho.options(true));
                client.publish("embedded/hello", "hi".getBytes(StandardCharsets.UTF_8), 1, false);
                final Paho.Received received = subscriber.next();
                assertThat(received).isNotNull();
                assertThat(received.topic()).isEqualTo("embedded/hello");
                assertThat(received.payload()).isEqualTo("hi");
                client.disconnect();
            }
            finally
            {
                client.close();
            }
            assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isGreaterThanOrEqualTo(1);
        }
        finally
        {
            broker.close();
        }
        assertThat(broker.isClosed()).isTrue();
        broker.close(); // a second close does nothing
        assertThat(countersFile).doesNotExist();
        assertThat(countersFile.getParent()).doesNotExist();
        assertThat(broker.unexpectedErrors()).isZero();
        assertThat(broker.errors()).isEmpty();
        assertThatThrownBy(() -> Paho.connect(broker.port(), "too-late")).isInstanceOf(MqttException.class);
    }

    @Test
    @DisplayName("user(): the wrong password and no password are refused, the right one is accepted")
    void credentials() throws Exception
    {
        try (RingMq broker = RingMq.builder().user("alice", "secret")
            .anonymous(Authenticator.AnonymousPolicy.NONE).start())
        {
            assertRefused(broker, null, null);
            assertRefused(broker, "alice", "wrong");
            try (Paho paho = Paho.connect(broker.port(), "alice", credentials("alice", "secret")))
            {
                assertThat(paho.client.isConnected()).isTrue();
            }
        }
    }

    @Test
    @DisplayName("passwordFile(): users from a mosquitto_passwd-style file")
    void passwordFile(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "bob", "hunter2", 1_000);
        try (RingMq broker = RingMq.builder().passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE).start())
        {
            assertRefused(broker, "bob", "hunter3");
            try (Paho paho = Paho.connect(broker.port(), "bob", credentials("bob", "hunter2")))
            {
                assertThat(paho.client.isConnected()).isTrue();
            }
        }
    }

    @Test
    @DisplayName("option(), args() and context() reach the settings; later options win; a config file loses")
    void optionsApplied(@TempDir final Path directory) throws Exception
    {
        final Path config = directory.resolve("ringmq.conf");
        Files.writeString(config, "# embedded\nmax-queued 3\nmax-client-id-length=40\n");
        final RingMqBuilder builder = RingMq.builder()
            .configFile(config)
            .option("max-inflight", "64")
            .option("--max-inflight", "65")
            .option("max-queued", "7")
            .option("limit-loopback")
            .args("--max-connections", "50")
            .threading(BrokerContext.Threading.SHARED)
            .context(context -> context.acceptBacklog(16));
        try (RingMq broker = builder.start())
        {
            final BrokerContext context = broker.context();
            assertThat(context.limits().maxInflight()).isEqualTo(65);
            assertThat(context.limits().maxQueued()).isEqualTo(7);
            assertThat(context.limits().maxClientIdLength()).isEqualTo(40);
            assertThat(context.limitLoopback()).isTrue();
            assertThat(context.limits().maxConnections()).isEqualTo(50);
            assertThat(context.threads().threading()).isEqualTo(BrokerContext.Threading.SHARED);
            assertThat(context.acceptBacklog()).isEqualTo(16);
            try (Paho paho = Paho.connect(broker.port(), "options"))
            {
                assertThat(paho.client.isConnected()).isTrue();
            }
        }
        assertThat(RingMq.builder().option("limit-loopback", "false").toContext().limitLoopback()).isFalse();
    }

    @Test
    @DisplayName("a builder starts independent brokers, each on its own port")
    void oneBuilderTwoBrokers() throws Exception
    {
        final RingMqBuilder builder = RingMq.builder().option("max-inflight", "8");
        try (RingMq first = builder.start(); RingMq second = builder.start())
        {
            assertThat(first.port()).isNotEqualTo(second.port());
            assertThat(first.countersFile()).isNotEqualTo(second.countersFile());
            try (Paho a = Paho.connect(first.port(), "same-id"); Paho b = Paho.connect(second.port(), "same-id"))
            {
                assertThat(a.client.isConnected()).isTrue();
                assertThat(b.client.isConnected()).isTrue();
            }
            first.close();
            assertThatThrownBy(() -> Paho.connect(first.port(), "gone")).isInstanceOf(MqttException.class);
            try (Paho c = Paho.connect(second.port(), "still-there"))
            {
                assertThat(c.client.isConnected()).isTrue();
            }
        }
    }

    @Test
    @DisplayName("the invoker threading mode runs no thread: the caller steps the broker")
    void invoker()
    {
        try (RingMq broker = RingMq.builder().option("threading", "invoker").start())
        {
            assertThat(broker.context().threads().threading()).isEqualTo(BrokerContext.Threading.INVOKER);
            assertThat(broker.invoke()).isGreaterThanOrEqualTo(0);
        }
        try (RingMq broker = RingMq.builder().start())
        {
            assertThatThrownBy(broker::invoke).isInstanceOf(IllegalStateException.class);
        }
    }

    @Test
    @DisplayName("a bad option is an IllegalArgumentException naming it, and nothing starts")
    void badOptions()
    {
        assertBad(RingMq.builder().option("max-inflght", "64"), "Unknown option: '--max-inflght=64'",
            "did you mean --max-inflight");
        assertBad(RingMq.builder().option("max-inflight", "lots"), "--max-inflight", "'lots'");
        assertBad(RingMq.builder().option("max-inflight", "0"), "--max-inflight must be 1..65535");
        assertBad(RingMq.builder().option("ring-size", "1000"), "--ring-size must be a power of two");
        assertBad(RingMq.builder().option("threading", "turbo"), "--threading must be one of");
        assertBad(RingMq.builder().option("connect-timeout", "soon"), "cannot read duration 'soon'");
        assertBad(RingMq.builder().option("user", "u"), "--user and --pass go together");
        assertBad(RingMq.builder().option("pin", "gpu=1"), "--pin: unknown role 'gpu'");
        assertBad(RingMq.builder().args("passwd", "file", "user"), "is not a broker option");
        assertBad(RingMq.builder().option("bind", "no.such.host.invalid"), "--bind: unknown address");
        assertBad(RingMq.builder().context(context -> context.limits(l -> l.maxSessions(0))), "--max-sessions must be");
        assertThatThrownBy(() -> RingMq.builder().option(" ", "1")).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @DisplayName("a port in use and a missing password file are an UncheckedIOException saying why")
    void startupFailures(@TempDir final Path directory) throws Exception
    {
        try (ServerSocket taken = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            assertThatThrownBy(() -> RingMq.builder().port(taken.getLocalPort()).start())
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("cannot listen on 127.0.0.1:" + taken.getLocalPort());
        }
        assertThatThrownBy(() -> RingMq.builder().passwordFile(directory.resolve("missing")).start())
            .isInstanceOf(UncheckedIOException.class).hasMessageContaining("cannot read password file");
        assertThatThrownBy(() -> RingMq.builder().configFile(directory.resolve("missing.conf")).start())
            .isInstanceOf(UncheckedIOException.class).hasMessageContaining("cannot read config file");
    }

    private static void assertBad(final RingMqBuilder builder, final String... fragments)
    {
        assertThatThrownBy(builder::start)
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessageStartingWith("bad ringmq option: ")
            .hasMessageContainingAll(fragments)
            .hasMessageNotContaining("\n");
    }

    private static void assertRefused(final RingMq broker, final String user, final String password)
    {
        assertThatThrownBy(() -> Paho.connect(broker.port(), "refused", credentials(user, password)).close())
            .isInstanceOf(MqttException.class)
            .satisfies(ex -> assertThat(((MqttException)ex).getReasonCode()).isIn(
                (int)MqttException.REASON_CODE_FAILED_AUTHENTICATION, (int)MqttException.REASON_CODE_NOT_AUTHORIZED));
    }

    private static MqttConnectOptions credentials(final String user, final String password)
    {
        final MqttConnectOptions options = Paho.options(true);
        if (null != user)
        {
            options.setUserName(user);
            options.setPassword(password.toCharArray());
        }
        return options;
    }
}
