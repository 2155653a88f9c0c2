package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The command line: help, version, clear one-line errors for bad options, the config file, and passwd.
 */
class MainTest
{
    /**
     * Runs the command line in this JVM, asserting its exit code.
     *
     * @return what it printed, standard output and error together.
     */
    static String run(final int expectedExit, final String... args)
    {
        final PrintStream out = System.out;
        final PrintStream err = System.err;
        final ByteArrayOutputStream captured = new ByteArrayOutputStream();
        final PrintStream capture = new PrintStream(captured, true, StandardCharsets.UTF_8);
        System.setOut(capture);
        System.setErr(capture);
        try
        {
            final int exit = Main.run(args);
            assertThat(exit).as(captured.toString(StandardCharsets.UTF_8)).isEqualTo(expectedExit);
        }
        finally
        {
            System.setOut(out);
            System.setErr(err);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    @Test
    void helpAndVersion()
    {
        assertThat(run(0, "--help")).contains("--max-inflight", "--threading", "--pin", "passwd");
        assertThat(run(0, "--version")).contains("ringmq");
    }

    @Test
    @DisplayName("a bad option value is one clear line, exit 2")
    void badValues()
    {
        assertThat(run(2, "--threading", "turbo"))
            .contains("--threading must be one of dedicated, shared-network, shared, invoker: 'turbo'")
            .doesNotContain("Exception");
        assertThat(run(2, "--threading", "invoker")).contains("--threading invoker runs no thread");
        assertThat(run(2, "--max-packet-size", "100000000")).contains("--max-packet-size must be at most");
        assertThat(run(2, "--ring-size", "1000")).contains("--ring-size must be a power of two");
        assertThat(run(2, "--connect-timeout", "soon")).contains("cannot read duration 'soon'");
        assertThat(run(2, "--user", "u")).contains("--user and --pass go together");
        assertThat(run(2, "--no-such-option")).contains("Unknown option");
        assertThat(run(2, "--pin", "gpu=1")).contains("--pin: unknown role 'gpu'");
    }

    @Test
    @DisplayName("a port in use and an unreadable password file are one clear line, exit 1")
    void startupFailures(@TempDir final Path directory) throws Exception
    {
        try (ServerSocket taken = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress()))
        {
            assertThat(run(1, "--bind", "127.0.0.1", "--port", Integer.toString(taken.getLocalPort())))
                .contains("cannot listen on 127.0.0.1:" + taken.getLocalPort()).doesNotContain("\tat ");
        }
        assertThat(run(1, "--port", "0", "--password-file", directory.resolve("missing").toString()))
            .contains("cannot read password file");
        final Path bad = directory.resolve("bad");
        Files.writeString(bad, "no-colon-here\n");
        assertThat(run(1, "--port", "0", "--password-file", bad.toString())).contains("line 1: expected user:hash");
    }

    @Test
    @DisplayName("-c FILE reads the same options; the command line wins")
    void configFile(@TempDir final Path directory) throws Exception
    {
        final Path config = directory.resolve("ringmq.conf");
        Files.writeString(config, "# a comment\nport 1884\nmax-inflight=7\n--threading shared\n");
        final String[] args = Main.withConfigFile(new String[]{"-c", config.toString(), "--port", "0"}).args();
        assertThat(args).containsSubsequence("--port", "1884", "--max-inflight", "7", "--threading", "shared",
            "-c", config.toString(), "--port", "0");
        assertThat(run(2, "-c", directory.resolve("absent").toString())).contains("cannot read config file");
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    @DisplayName("SIGTERM stops the broker cleanly and prints its counters")
    void sigtermStopsCleanly(@TempDir final Path directory) throws Exception
    {
        final String javaBinary = ProcessHandle.current().info().command().orElse("java");
        final Process process = new ProcessBuilder(javaBinary, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), Main.class.getName(), "--bind", "127.0.0.1", "--port", "0",
            "--data-dir", directory.resolve("data").toString())
            .redirectErrorStream(true).start();
        try
        {
            final java.io.BufferedReader output = new java.io.BufferedReader(
                new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            String line = output.readLine();
            while (null != line && !(line.startsWith("ringmq ") && line.contains("listening on")))
            {
                line = output.readLine();
            }
            assertThat(line).as("the broker announced it was listening").isNotNull();
            process.toHandle().destroy(); // SIGTERM, leaving our end of its output open
            final StringBuilder rest = new StringBuilder();
            while (null != (line = output.readLine())) // until the process ends and closes its output
            {
                rest.append(line).append('\n');
            }
            assertThat(process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            assertThat(rest.toString()).contains("ringmq stopped; counters:");
        }
        finally
        {
            process.destroyForcibly();
        }
    }

    @Test
    void passwdWritesAVerifiableEntry(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        assertThat(run(0, "passwd", "--password", "pw", "--iterations", "1000", file.toString(), "alice"))
            .contains("wrote alice");
        final String line = Files.readString(file).strip();
        assertThat(line).startsWith("alice:$7$1000$");
        assertThat(io.ringmq.pipeline.auth.PasswordFile.load(file).hashOf("alice")
            .matches("pw".getBytes(StandardCharsets.UTF_8))).isTrue();
    }

    @Test
    @org.junit.jupiter.api.Timeout(60)
    @DisplayName("--password-file passwd names a file called passwd, not the passwd subcommand")
    void passwordFileNamedPasswd(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        assertThat(run(0, "passwd", file.toString(), "alice", "--password", "pw", "--iterations", "1000"))
            .contains("wrote alice");

        // run where the file is, so that the option's value is the bare word "passwd", as a user would type it
        final String javaBinary = ProcessHandle.current().info().command().orElse("java");
        final Process process = new ProcessBuilder(javaBinary, "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), Main.class.getName(), "--bind", "127.0.0.1", "--port", "0",
            "--password-file", "passwd")
            .directory(directory.toFile()).redirectErrorStream(true).start();
        final java.util.concurrent.BlockingQueue<String> lines = new java.util.concurrent.LinkedBlockingQueue<>();
        final Thread reader = new Thread(() ->
        {
            try (java.io.BufferedReader output = new java.io.BufferedReader(
                new java.io.InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
            {
                String line;
                while (null != (line = output.readLine()))
                {
                    lines.add(line);
                }
            }
            catch (final java.io.IOException closed)
            {
                // the process was destroyed: nothing more to read
            }
        }, "ringmq-output");
        reader.setDaemon(true);
        reader.start();
        try
        {
            final StringBuilder seen = new StringBuilder();
            final long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(30);
            String listening = null;
            while (null == listening && process.isAlive() && System.nanoTime() < deadline)
            {
                final String line = lines.poll(100, java.util.concurrent.TimeUnit.MILLISECONDS);
                if (null != line)
                {
                    seen.append(line).append('\n');
                    listening = line.startsWith("ringmq ") && line.contains("listening on") ? line : null;
                }
            }
            assertThat(listening).as("the broker announced it was listening; its output:%n%s", seen).isNotNull();
            final int port = Integer.parseInt(listening.substring(listening.lastIndexOf(':') + 1).strip());

            // the entry in the file is what the broker checks: the right password connects, a wrong one does not
            final com.hivemq.client.mqtt.mqtt3.Mqtt3BlockingClient alice = com.hivemq.client.mqtt.mqtt3.Mqtt3Client
                .builder().identifier("alice").serverHost("127.0.0.1").serverPort(port).buildBlocking();
            alice.connectWith().simpleAuth().username("alice").password("pw".getBytes(StandardCharsets.UTF_8))
                .applySimpleAuth().send();
            alice.disconnect();
            final com.hivemq.client.mqtt.mqtt3.Mqtt3BlockingClient mallory = com.hivemq.client.mqtt.mqtt3.Mqtt3Client
                .builder().identifier("mallory").serverHost("127.0.0.1").serverPort(port).buildBlocking();
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> mallory.connectWith().simpleAuth()
                    .username("alice").password("wrong".getBytes(StandardCharsets.UTF_8)).applySimpleAuth().send())
                .isInstanceOf(com.hivemq.client.mqtt.mqtt3.exceptions.Mqtt3ConnAckException.class);
        }
        finally
        {
            process.destroyForcibly();
            assertThat(process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    @DisplayName("--tls-threads reaches the broker's settings (it was parsed and dropped), and a bad count is one "
        + "clear line")
    void tlsThreadsFlag()
    {
        final Main main = new Main();
        new picocli.CommandLine(main).parseArgs("--tls-threads", "3");
        assertThat(main.context().conclude().threads().tlsThreads()).isEqualTo(3);
        assertThat(run(2, "--tls-threads", "0")).contains("--tls-threads must be 1..256");
    }

    @Test
    @DisplayName("with no options the CLI's settings are BrokerContext's defaults but for the two a command line "
        + "chooses apart from an embedded broker: a store under ./data and a warm-up at start")
    void noOptionsMeansTheContextsDefaults()
    {
        final Main main = new Main();
        new picocli.CommandLine(main).parseArgs();
        final io.ringmq.pipeline.BrokerContext cli = main.context().conclude();
        assertThat(cli.toString()).contains("persistence=rocksdb data-dir=data", "warmup=" + Warmup.DEFAULT_CONNECTIONS);
        final io.ringmq.pipeline.BrokerContext embedded = new io.ringmq.pipeline.BrokerContext().conclude();
        assertThat(embedded.toString()).contains("persistence=memory");
        embedded.persistence(p -> p.persistent(true).dataDir(java.nio.file.Path.of("data")))
            .threads(t -> t.warmupConnections(Warmup.DEFAULT_CONNECTIONS));
        assertThat(cli.toString()).as("every other setting").isEqualTo(embedded.conclude().toString());
    }

    @Test
    @DisplayName("the edge's limits reach the broker's settings, and a bad one is one clear line")
    void edgeLimitFlags()
    {
        final Main main = new Main();
        new picocli.CommandLine(main).parseArgs("--max-connect-size", "1024", "--max-connections-per-address", "5",
            "--limit-loopback", "--memory-budget", "1073741824", "--max-topic-levels", "8", "--max-topic-length", "100");
        final io.ringmq.pipeline.BrokerContext context = main.context().conclude();
        assertThat(context.maxConnectSize()).isEqualTo(1024);
        assertThat(context.maxConnectionsPerAddress()).isEqualTo(5);
        assertThat(context.limitLoopback()).isTrue();
        assertThat(context.memory().memoryBudgetBytes()).isEqualTo(1L << 30);
        assertThat(context.limits().maxTopicLevels()).isEqualTo(8);
        assertThat(context.limits().maxTopicLength()).isEqualTo(100);
        assertThat(context.toString()).contains("max-connect-size=1024", "memory-budget=1073741824");
        assertThat(new io.ringmq.pipeline.BrokerContext().conclude().toString()).contains("memory-budget=auto",
            "max-connections-per-address=1000", "max-topic-levels=128", "max-topic-length=65535");
        assertThat(run(2, "--max-topic-levels", "0")).contains("--max-topic-levels must be positive");
        assertThat(run(2, "--memory-budget", "1000")).contains("--memory-budget must be at least 1 MiB");
    }

    @Test
    @DisplayName("--pass-file and --pass-env keep the password out of 'ps'; the --auth-* flags reach the settings")
    void passwordSourcesAndAuthFlags(@org.junit.jupiter.api.io.TempDir final java.nio.file.Path directory)
        throws Exception
    {
        final java.nio.file.Path secret = directory.resolve("secret");
        java.nio.file.Files.writeString(secret, "from-a-file\nignored\n");
        final Main fromFile = new Main();
        new picocli.CommandLine(fromFile).parseArgs("--user", "ops", "--pass-file", secret.toString(),
            "--auth-threads", "3", "--auth-queue", "10", "--auth-max-failures", "7", "--auth-failure-window", "2m",
            "--auth-backoff", "2s", "--auth-backoff-max", "1m", "--auth-tracked-addresses", "99",
            "--auth-cache-size", "0", "--auth-exempt-loopback");
        final io.ringmq.pipeline.BrokerContext context = fromFile.context().conclude();
        assertThat(context.auth().password()).isEqualTo("from-a-file");
        final io.ringmq.pipeline.auth.CredentialSettings settings = context.auth().credentialSettings();
        assertThat(settings.threads()).isEqualTo(3);
        assertThat(settings.queueLength()).isEqualTo(10);
        assertThat(settings.maxFailures()).isEqualTo(7);
        assertThat(settings.failureWindowMs()).isEqualTo(120_000);
        assertThat(settings.backoffMs()).isEqualTo(2_000);
        assertThat(settings.backoffMaxMs()).isEqualTo(60_000);
        assertThat(settings.trackedAddresses()).isEqualTo(99);
        assertThat(settings.cacheSize()).isZero();
        assertThat(settings.exemptLoopback()).isTrue();
        assertThat(context.toString()).contains("auth-threads=3", "auth-exempt-loopback").doesNotContain("from-a-file");

        final String env = System.getenv().containsKey("PATH") ? "PATH" : System.getenv().keySet().iterator().next();
        final Main fromEnv = new Main();
        new picocli.CommandLine(fromEnv).parseArgs("--user", "ops", "--pass-env", env);
        assertThat(fromEnv.context().auth().password()).isEqualTo(System.getenv(env));

        assertThat(run(2, "--user", "u", "--pass", "p", "--pass-env", env)).contains("exclude each other");
        assertThat(run(2, "--user", "u", "--pass-env", "RINGMQ_NO_SUCH_VARIABLE_42")).contains("is not set");
        assertThat(run(2, "--user", "u", "--pass-file", directory.resolve("missing").toString()))
            .contains("--pass-file");
        assertThat(run(2, "--auth-backoff", "10s", "--auth-backoff-max", "1s")).contains("--auth-backoff");
        assertThat(run(2, "--auth-queue", "0")).contains("--auth-queue must be positive");
    }

    @Test
    @DisplayName("ringmq passwd-bench: one bounded row per iteration count, with the cores a 5,000/s storm needs")
    void passwdBench()
    {
        final String out = run(0, "passwd-bench", "--iterations", "10,20", "--seconds", "0.02", "--windows", "1",
            "--threads", "1");
        assertThat(out).contains("iterations", "cores for 5000/s");
        assertThat(out.lines().filter(line -> line.strip().startsWith("10 ") || line.strip().startsWith("20 ")))
            .hasSize(2);
    }

    @Test
    @org.junit.jupiter.api.DisplayName("out of memory at start names what ran out: the heap (recovery) or the rings' "
        + "direct memory")
    void outOfMemoryAtStartSaysWhich()
    {
        assertThat(Main.outOfMemoryAtStart(new OutOfMemoryError("Java heap space")))
            .startsWith("not enough heap to start").contains("--data-dir").contains("--memory-limit");
        assertThat(Main.outOfMemoryAtStart(new OutOfMemoryError("cannot reserve 16777216 bytes of ring memory")))
            .startsWith("not enough memory for the rings and message logs").contains("MaxDirectMemorySize");
        assertThat(Main.outOfMemoryAtStart(new OutOfMemoryError())).contains("(null)");
    }
}
