package io.ringmq.loadtest;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.transport.RingMq;
import io.ringmq.transport.junit.RingMqExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The generator's modes and accounting against a real broker (an in-process ringmq on an ephemeral port; for
 * {@code fanin}, which needs MQTT 5 shared subscriptions, an in-process HiveMQ CE): exact counts at low fixed rates,
 * the JSON summary's fields, output files, and clear errors for bad flags.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class LoadTestTest
{
    /** One in-process broker for the class, closed after it; a test fails if it counted an unexpected error. */
    @RegisterExtension
    static final RingMqExtension BROKER =
        new RingMqExtension(() -> RingMq.builder().threading(BrokerContext.Threading.SHARED)).perClass();

    private static RingMq broker;

    @BeforeEach
    void broker(final RingMq running)
    {
        broker = running;
    }

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
            assertThat(LoadTest.run(args)).as(() -> captured.toString(StandardCharsets.UTF_8)).isEqualTo(expectedExit);
        }
        finally
        {
            System.setOut(out);
            System.setErr(err);
        }
        return captured.toString(StandardCharsets.UTF_8);
    }

    private static String addr()
    {
        return "127.0.0.1:" + broker.port();
    }

    /**
     * @return the number a JSON field holds, sign, fraction and exponent included; fails if the field is absent or
     * holds anything else (such as null).
     */
    static double jsonDouble(final String output, final String field)
    {
        final Matcher matcher = Pattern.compile("\"" + Pattern.quote(field) +
            "\":(-?[0-9]+(?:\\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)(?=[,}\\s])").matcher(output);
        assertThat(matcher.find()).as(field + " holds a number in " + output).isTrue();
        return Double.parseDouble(matcher.group(1));
    }

    static long jsonNumber(final String output, final String field)
    {
        return (long)jsonDouble(output, field);
    }

    @Test
    @DisplayName("pubsub at a low fixed rate delivers exactly what was published, to every subscriber")
    void pubsubCountsExactly(@TempDir final Path out)
    {
        final long startNs = System.nanoTime();
        final String output = run(0, "-addr", addr(), "-mode", "pubsub", "-subs", "3", "-pubs", "2", "-qos", "1",
            "-rate", "50", "-payload", "32", "-duration", "2s", "-out", out.toString());
        final double runSeconds = (System.nanoTime() - startNs) / 1e9;
        final long published = jsonNumber(output, "published");
        assertThat(published).isEqualTo(200); // 2 publishers x 50/s x 2 s
        assertThat(jsonNumber(output, "expected")).isEqualTo(published * 3);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(published * 3);
        assertThat(jsonNumber(output, "lost")).isZero();
        assertThat(jsonNumber(output, "duplicates")).isZero();
        assertThat(jsonNumber(output, "reordered")).isZero();
        // the broker is this JVM (found by its port): it did work, and no more than every core for the whole run
        final double cpuCeiling = Runtime.getRuntime().availableProcessors() * runSeconds + 0.1;
        assertThat(jsonDouble(output, "broker_cpu_s")).as("broker_cpu_s (-1 means not measured)")
            .isGreaterThan(0).isLessThanOrEqualTo(cpuCeiling);
        assertThat(jsonDouble(output, "generator_cpu_s")).isGreaterThan(0).isLessThanOrEqualTo(cpuCeiling);
        assertThat(jsonDouble(output, "broker_peak_rss_mb")).isGreaterThan(0);
        assertThat(jsonDouble(output, "latency_p99_us")).isGreaterThan(0);
        assertThat(out.resolve("latency.hgrm")).exists();
        assertThat(out.resolve("latency.hlog")).exists();
        assertThat(out.resolve("summary.json")).exists();
    }

    @Test
    @DisplayName("-pubs 10 -rate 100 -duration 2s publishes exactly 2,000, as the summary's scheduled and expected "
        + "counts say")
    void fixedRatePublishesExactlyRateTimesDuration(@TempDir final Path out) throws Exception
    {
        final String output = run(0, "-addr", addr(), "-pubs", "10", "-subs", "2", "-rate", "100", "-duration", "2s",
            "-qos", "1", "-out", out.toString());
        assertThat(jsonNumber(output, "published")).as(output).isEqualTo(2_000);
        assertThat(jsonNumber(output, "scheduled")).isEqualTo(2_000);
        assertThat(jsonNumber(output, "unsent")).isZero();
        assertThat(jsonNumber(output, "expected")).isEqualTo(2_000 * 2);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(2_000 * 2);
        assertThat(jsonNumber(output, "lost")).isZero();
        assertThat(output).contains("  published 2,000 of 2,000 scheduled; delivered 4,000 of 4,000 expected")
            .doesNotContain("problems:");
        assertThat(Files.readString(out.resolve("summary.json"))).contains("\"published\":2000,\"scheduled\":2000,");
        // pub mode, QoS 0: the same count, every message read by the broker
        final String pub = run(0, "-addr", addr(), "-mode", "pub", "-pubs", "10", "-rate", "100", "-duration", "2s",
            "-quiet");
        assertThat(jsonNumber(pub, "published")).as(pub).isEqualTo(2_000);
        assertThat(jsonNumber(pub, "acknowledged")).isEqualTo(2_000);
        assertThat(jsonNumber(pub, "expected")).isEqualTo(2_000);
        assertThat(pub).contains("  published 2,000 of 2,000 scheduled (read by the broker: 2,000)");
    }

    @Test
    @DisplayName("-pub-threads spreads the publishers over threads: each still sends exactly its schedule, every "
        + "subscriber gets every message once and in order")
    void publishersOnSeveralThreads(@TempDir final Path out) throws Exception
    {
        final String output = run(0, "-addr", addr(), "-mode", "pubsub", "-pubs", "7", "-subs", "2", "-qos", "1",
            "-rate", "50", "-duration", "2s", "-pub-threads", "3", "-threads", "2", "-out", out.toString());
        assertThat(jsonNumber(output, "published")).as(output).isEqualTo(7 * 50 * 2);
        assertThat(jsonNumber(output, "scheduled")).isEqualTo(7 * 50 * 2);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(7 * 50 * 2 * 2);
        assertThat(jsonNumber(output, "lost")).isZero();
        assertThat(jsonNumber(output, "duplicates")).isZero();
        assertThat(jsonNumber(output, "reordered")).isZero();
        // the layout: 7 publishers over 3 drivers after the 2 subscribers' drivers, round-robin
        final Settings settings = new Settings();
        settings.publishers = 7;
        settings.subscribers = 2;
        settings.threads = 2;
        settings.pubThreads = 3;
        assertThat(ScenarioRunner.driverLayout(settings)).containsExactly(2, 3);
        assertThat(java.util.stream.IntStream.range(0, 7).map(i -> ScenarioRunner.driverOf(settings, true, i)))
            .containsExactly(2, 3, 4, 2, 3, 4, 2);
        assertThat(ScenarioRunner.driverOf(settings, false, 1)).isEqualTo(1);
        settings.pubThreads = 8;
        assertThat(ScenarioRunner.driverLayout(settings)).as("never more drivers than publishers").containsExactly(2, 7);
        // paced starts interleave across drivers by publisher id: 4 publishers at 100/s start 0, 2.5, 5 and 7.5 ms in
        settings.publishers = 4;
        settings.rate = 100;
        final Publishers even = new Publishers(settings, new FlushList(null)); // start() flushes nothing
        final Publishers odd = new Publishers(settings, new FlushList(null));
        final Client[] clients = new Client[4];
        try
        {
            for (int i = 0; i < 4; i++)
            {
                clients[i] = new Client(i, true, java.nio.channels.SocketChannel.open(), settings);
                (i % 2 == 0 ? even : odd).add(clients[i]);
            }
            even.start(0);
            odd.start(0);
            assertThat(java.util.Arrays.stream(clients).mapToLong(c -> c.schedule.nextDueNs()))
                .containsExactly(0L, 2_500_000L, 5_000_000L, 7_500_000L);
        }
        finally
        {
            for (final Client client : clients)
            {
                if (null != client)
                {
                    client.channel.close();
                }
            }
        }
        // more threads than publishers: one publisher each
        final String pub = run(0, "-addr", addr(), "-mode", "pub", "-pubs", "2", "-pub-threads", "8", "-rate", "100",
            "-duration", "1s", "-quiet");
        assertThat(jsonNumber(pub, "published")).as(pub).isEqualTo(200);
        assertThat(jsonNumber(pub, "acknowledged")).isEqualTo(200);
        run(2, "-addr", addr(), "-pubs", "2", "-pub-threads", "0", "-duration", "1s");
    }

    @Test
    @DisplayName("a fractional rate x duration rounds down: -rate 3 -duration 2.5s sends 7 per publisher")
    void fractionalScheduleRoundsDown()
    {
        final String output = run(0, "-addr", addr(), "-mode", "p2p", "-pubs", "2", "-qos", "1", "-rate", "3",
            "-duration", "2.5s");
        assertThat(jsonNumber(output, "published")).as(output).isEqualTo(14);
        assertThat(jsonNumber(output, "scheduled")).isEqualTo(14);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(14);
    }

    @Test
    @DisplayName("pub mode counts only what the broker acknowledged, QoS 1 with a synchronous client")
    void pubQos1Synchronous() throws Exception
    {
        final String output = run(0, "-addr", addr(), "-mode", "pub", "-pubs", "2", "-qos", "1", "-inflight", "1",
            "-payload", "64", "-duration", "1s");
        assertThat(jsonNumber(output, "acknowledged")).isEqualTo(jsonNumber(output, "published"))
            .isGreaterThan(0);
    }

    @Test
    @DisplayName("conn mode: every level is established and alive after the hold")
    void connectionLevels()
    {
        final String output = run(0, "-addr", addr(), "-mode", "conn", "-levels", "50,200", "-hold", "200ms",
            "-dial-concurrency", "50");
        assertThat(output).contains("\"target\":50,\"established\":50,\"failed\":0,\"alive\":50")
            .contains("\"target\":200,\"established\":200,\"failed\":0,\"alive\":200")
            .contains("PINGREQ p50");
        // every held connection's PINGREQ came back, and its round trip was measured
        assertThat(output).containsPattern("\"ping_p99_ms\":[0-9.]+,\"broker_peak_rss_mb\"");
        assertThat(output).doesNotContain("\"ping_p99_ms\":0.000");
    }

    @Test
    @DisplayName("conn mode: a host that does not resolve fails each dial, counted, and the run ends (it killed the "
        + "driver thread and waited out two minutes)")
    void unresolvedHostFailsEachDial()
    {
        final String output = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(
            java.time.Duration.ofSeconds(60), () -> run(0, "-addr", "no-such-host.invalid:1883", "-mode", "conn",
                "-levels", "3", "-hold", "100ms"));
        assertThat(output).contains("\"target\":3,\"established\":0,\"failed\":3");
    }

    @Test
    @DisplayName("p2p: each publisher reaches exactly its own subscriber")
    void pointToPoint()
    {
        final String output = run(0, "-addr", addr(), "-mode", "p2p", "-pubs", "5", "-qos", "1", "-rate", "20",
            "-duration", "1s");
        final long published = jsonNumber(output, "published");
        assertThat(published).isEqualTo(100);
        assertThat(jsonNumber(output, "expected")).isEqualTo(published);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(published);
        assertThat(jsonNumber(output, "lost")).isZero();
    }

    @Test
    @DisplayName("persistent: subscribers away for half the run get everything queued when they come back")
    void persistentSessions()
    {
        final String output = run(0, "-addr", addr(), "-mode", "persistent", "-pubs", "4", "-rate", "40",
            "-duration", "2s", "-offline", "1s");
        final long published = jsonNumber(output, "published");
        assertThat(published).isEqualTo(320);
        assertThat(jsonNumber(output, "delivered")).isEqualTo(published);
        assertThat(jsonNumber(output, "resumed_sessions")).isEqualTo(4);
        assertThat(jsonNumber(output, "duplicates")).isZero();
    }

    @Test
    @DisplayName("conn mode with -ping-interval: held connections ping through the hold, each answered")
    void connectionLevelsPingThroughTheHold()
    {
        final String output = run(0, "-addr", addr(), "-mode", "conn", "-levels", "100", "-hold", "600ms",
            "-ping-interval", "100ms");
        assertThat(output).contains("\"target\":100,\"established\":100,\"failed\":0,\"alive\":100");
        assertThat(output).containsPattern("\"ping_p99_ms\":[0-9.]+,\"broker_peak_rss_mb\"")
            .doesNotContain("\"ping_p99_ms\":0.000");
        assertThat(run(2, "-addr", addr(), "-mode", "conn", "-ping-interval", "soon")).contains("-ping-interval");
    }

    @Test
    @DisplayName("conn-rate: connections are opened at the target rate")
    void connectionRate()
    {
        final String output = run(0, "-addr", addr(), "-mode", "conn-rate", "-conn-rate", "200", "-total", "300",
            "-hold", "100ms");
        assertThat(output).contains("\"target\":300,\"established\":300,\"failed\":0,\"alive\":300");
        assertThat(jsonNumber(output, "connects_per_s")).isBetween(150L, 260L);
    }

    @Test
    @DisplayName("MQTT 5 against HiveMQ CE: a shared subscription group splits the messages; persistent sessions "
        + "outlive their connections")
    void mqtt5FanInAndPersistentSessions(@TempDir final Path folder) throws Exception
    {
        try (EmbeddedHiveMq hivemq = EmbeddedHiveMq.start(folder))
        {
            final String output = run(0, "-addr", "127.0.0.1:" + hivemq.port(), "-mode", "fanin", "-protocol", "5",
                "-share-group", "benchmark", "-topic-prefix", "test", "-pubs", "20", "-subs", "4", "-qos", "1",
                "-rate", "10", "-payload", "16", "-duration", "2s");
            final long published = jsonNumber(output, "published");
            assertThat(published).isEqualTo(400); // 20 publishers x 10/s x 2 s
            // each message goes to one member of the group, not to all four
            assertThat(jsonNumber(output, "expected")).isEqualTo(published);
            assertThat(jsonNumber(output, "delivered")).isEqualTo(published);
            assertThat(jsonNumber(output, "duplicates")).isZero();
            assertThat(jsonNumber(output, "lost")).isZero();
            // 5.0 keeps a session after its connection only with a Session Expiry Interval [MQTT-3.1.2-23]
            final String persistent = run(0, "-addr", "127.0.0.1:" + hivemq.port(), "-mode", "persistent",
                "-protocol", "5", "-pubs", "4", "-rate", "40", "-duration", "2s", "-offline", "1s");
            final long sent = jsonNumber(persistent, "published");
            assertThat(sent).isEqualTo(320);
            assertThat(jsonNumber(persistent, "delivered")).as(persistent).isEqualTo(sent);
            assertThat(jsonNumber(persistent, "resumed_sessions")).as(persistent).isEqualTo(4);
            assertThat(jsonNumber(persistent, "duplicates")).isZero();
        }
    }

    @Test
    @DisplayName("bad flags are one clear line and exit code 2")
    void badFlags()
    {
        assertThat(run(2, "-mode", "chaos")).contains("-mode must be conn, conn-rate, pub, pubsub, fanin, p2p or persistent");
        assertThat(run(2, "-payload", "8")).contains("-payload must be at least 16");
        assertThat(run(2, "-duration", "forever")).contains("-duration: cannot read duration 'forever'");
        assertThat(run(2, "-addr", "nohost")).contains("-addr must be HOST:PORT");
        assertThat(run(2, "-qos", "3")).contains("-qos must be 0, 1 or 2");
        assertThat(run(2, "--bogus")).contains("Unknown option");
    }

    @Test
    void sequenceTrackerSeesLossDuplicatesAndReordering()
    {
        final SequenceTracker tracker = new SequenceTracker();
        for (final int sequence : new int[]{0, 1, 3, 2, 2, 5})
        {
            tracker.record(sequence);
        }
        assertThat(tracker.unique()).isEqualTo(5); // 4 never came: one lost of six sent
        assertThat(tracker.duplicates()).isEqualTo(1);
        assertThat(tracker.reordered()).isEqualTo(1);
    }

    @Test
    void brokerPidIsFoundByItsPort() throws Exception
    {
        assertThat(ProcSampler.findListener(broker.port())).isEqualTo(ProcessHandle.current().pid());
    }
}
