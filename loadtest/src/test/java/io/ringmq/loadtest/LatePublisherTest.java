package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import static io.ringmq.loadtest.LoadTestTest.jsonDouble;
import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A paced publisher that falls behind its schedule, against a {@link ScriptedBroker} that answers each QoS 1 PUBLISH
 * slowly, so a synchronous publisher ({@code -inflight 1}) cannot keep the rate: it sends what it owes late, stamped
 * with the due times (no coordinated omission), never more, and what the grace after the end cuts off is reported.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LatePublisherTest
{
    /**
     * @return a broker that takes {@code delayMs} over each PUBACK, after routing the message on.
     */
    private static ScriptedBroker slowAcks(final long delayMs) throws IOException
    {
        return new ScriptedBroker()
        {
            int pubackCode(final Connection connection, final int publisherId, final int sequence)
            {
                try
                {
                    Thread.sleep(delayMs);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
                return 0;
            }
        };
    }

    @Test
    @DisplayName("behind its schedule, a publisher sends the rest after the end, stamped when due, and no more")
    void lateMessagesAreSentWithTheirDueTimes() throws IOException
    {
        try (ScriptedBroker broker = slowAcks(20)) // about 45 a second against 100 owed
        {
            final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "p2p", "-pubs", "1",
                "-qos", "1", "-inflight", "1", "-rate", "100", "-duration", "500ms", "-quiet");
            assertThat(jsonNumber(output, "published")).as(output).isEqualTo(50);
            assertThat(jsonNumber(output, "scheduled")).isEqualTo(50);
            assertThat(jsonNumber(output, "unsent")).isZero();
            assertThat(jsonNumber(output, "delivered")).isEqualTo(50);
            // the last message was due at 490 ms and sent after about a second: its latency counts the wait
            assertThat(jsonDouble(output, "latency_max_us")).isGreaterThan(300_000);
            assertThat(output).doesNotContain("problems:");
        }
    }

    @Test
    @DisplayName("a publisher still behind when the grace runs out stops; the summary says what it could not send")
    void whatTheGraceCutsOffIsReported() throws Exception
    {
        try (ScriptedBroker broker = slowAcks(100)) // about 10 a second against 100 owed
        {
            final LoadTest flags = new LoadTest();
            new CommandLine(flags).parseArgs("-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "1",
                "-qos", "1", "-inflight", "1", "-rate", "100", "-duration", "500ms", "-quiet");
            final Settings settings = flags.settings();
            settings.lateGraceNs = TimeUnit.MILLISECONDS.toNanos(300);
            final Report report = new ScenarioRunner(settings, null, "").runMessages(-1);
            assertThat(report.scheduled).isEqualTo(50);
            assertThat(report.published).as(report.json()).isBetween(3L, 20L);
            assertThat(report.behind).isEqualTo(1);
            assertThat(report.unsent).isEqualTo(report.scheduled - report.published);
            assertThat(report.acknowledged).isEqualTo(report.published);
            assertThat(report.problems()).isEqualTo(String.format(java.util.Locale.ROOT, "published %d of 50 "
                + "scheduled (1 publisher still %d messages behind 0.3 s after the end: the broker's window or the "
                + "socket held them back)", report.published, report.unsent));
            assertThat(report.json()).contains("\"scheduled\":50,\"unsent\":" + report.unsent + ",");
        }
    }

    @Test
    @DisplayName("a paced publisher whose window is full waits on its socket for the acknowledgement, not spinning")
    void aFullWindowIsWaitedForNotSpun() throws Exception
    {
        try (ScriptedBroker broker = slowAcks(50)) // each PUBACK 50 ms late: the window of 1 is full nearly always
        {
            final LoadTest flags = new LoadTest();
            new CommandLine(flags).parseArgs("-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "1",
                "-qos", "1", "-inflight", "1", "-rate", "200", "-duration", "1500ms", "-quiet");
            final Settings settings = flags.settings();
            settings.lateGraceNs = TimeUnit.MILLISECONDS.toNanos(100);
            final com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean)
                java.lang.management.ManagementFactory.getOperatingSystemMXBean();
            final long cpuBefore = os.getProcessCpuTime();
            final long wallBefore = System.nanoTime();
            final Report report = new ScenarioRunner(settings, null, "").runMessages(-1);
            final double cpuShare = (double)(os.getProcessCpuTime() - cpuBefore) / (System.nanoTime() - wallBefore);
            assertThat(report.behind).as(report.json()).isEqualTo(1); // the window was full, the schedule behind
            // spinning on an overdue publisher whose window is full is a whole core (1.0) for the run
            assertThat(cpuShare).as("the process's CPU per second of the run").isLessThan(0.5);
        }
    }

    @Test
    @DisplayName("a flooding publisher the broker stops answering is named: it sent under a tenth of the others")
    void aStarvedPublisherIsReported() throws IOException
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            int pubackCode(final Connection connection, final int publisherId, final int sequence)
            {
                if (publisherId == 1 && sequence >= 8)
                {
                    try
                    {
                        Thread.sleep(1_500); // past the run: this publisher's window stays full
                    }
                    catch (final InterruptedException ex)
                    {
                        Thread.currentThread().interrupt();
                    }
                }
                return 0;
            }
        })
        {
            final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "3",
                "-qos", "1", "-inflight", "4", "-payload", "64", "-duration", "500ms", "-quiet");
            assertThat(output).contains("problems:").contains("1 of 3 publishers sent under a tenth of the median");
        }
    }

    @Test
    @DisplayName("messages held for half the run and a second are counted as held; a slow tail is not")
    void heldNeedsHalfTheRunAndASecond()
    {
        final Histogram latency = new Histogram(3);
        for (int i = 0; i < 1_000; i++)
        {
            latency.recordValue(50_000); // 50 µs
        }
        latency.recordValue(300_000_000); // 0.3 s: a slow message, not a held one
        assertThat(RunProblems.heldCount(latency, RunProblems.heldBarNs(10, 0))).isZero();
        latency.recordValue(5_100_000_000L);
        latency.recordValue(9_990_000_000L);
        assertThat(RunProblems.heldBarNs(10, 0)).isEqualTo(5_000_000_000L);
        assertThat(RunProblems.heldCount(latency, RunProblems.heldBarNs(10, 0))).isEqualTo(2);
        assertThat(RunProblems.heldCount(latency, RunProblems.heldBarNs(30, 0))).isZero();
        // persistent: messages queued while the subscribers were away 5 s wait that long by design
        assertThat(RunProblems.heldCount(latency, RunProblems.heldBarNs(10, 5_000_000_000L))).isZero();
        assertThat(RunProblems.heldCount(latency, RunProblems.heldBarNs(10, 4_000_000_000L))).isEqualTo(1);
        // a short run: under a second is never called held
        assertThat(RunProblems.heldBarNs(0.5, 0)).isEqualTo(1_000_000_000L);
        final Histogram shortRun = new Histogram(3);
        shortRun.recordValue(400_000_000);
        assertThat(RunProblems.heldCount(shortRun, RunProblems.heldBarNs(0.5, 0))).isZero();
        assertThat(RunProblems.heldCount(null, RunProblems.heldBarNs(10, 0))).isZero();
        assertThat(RunProblems.heldCount(new Histogram(3), RunProblems.heldBarNs(10, 0))).isZero();
        // a long run: latencies are recorded up to a ceiling, so the bar never goes above it
        assertThat(RunProblems.heldBarNs(600, 0)).isEqualTo(DeliveryRecorder.HIGHEST_LATENCY_NS);
        final Histogram longRun = new Histogram(3);
        longRun.recordValue(DeliveryRecorder.HIGHEST_LATENCY_NS);
        assertThat(RunProblems.heldCount(longRun, RunProblems.heldBarNs(600, 0))).isEqualTo(1);
    }

    @Test
    @DisplayName("a few messages held as long as the run are named as held; many are a broker that fell behind")
    void heldMessagesAreAProblemLine()
    {
        final Histogram latency = new Histogram(3);
        for (int i = 0; i < 1_000; i++)
        {
            latency.recordValue(50_000);
        }
        latency.recordValue(5_100_000_000L);
        latency.recordValue(9_990_000_000L);
        final Report report = report("-mode", "pubsub", "-pubs", "10", "-subs", "100", "-duration", "10s");
        report.latency = latency;
        report.publishSeconds = 10;
        assertThat(report.problems()).isEqualTo(
            "2 messages took 5 s or more of a 10 s run, the longest 9.99 s (held until the load stopped?)");

        final Histogram behind = new Histogram(3);
        for (int i = 0; i < 1_000; i++)
        {
            behind.recordValue(1_000_000_000L * (i % 10)); // latency growing through the run
        }
        report.latency = behind;
        assertThat(report.problems()).startsWith("500 messages took 5 s or more of a 10 s run")
            .endsWith("(the broker fell behind the load)");

        final Report persistent = report("-mode", "persistent", "-pubs", "10", "-duration", "10s", "-offline", "5s");
        persistent.latency = latency;
        persistent.publishSeconds = 10;
        assertThat(persistent.problems()).as("queued while the subscribers were away, by design").isEmpty();
    }

    private static Report report(final String... args)
    {
        final LoadTest flags = new LoadTest();
        new CommandLine(flags).parseArgs(args);
        return new Report(flags.settings(), "");
    }

    @Test
    @DisplayName("publishers that sent about alike, or one alone, are not called starved")
    void starvedNeedsOthersToCompareWith()
    {
        assertThat(RunProblems.starved(new long[]{640, 24_000, 23_500, 25_100, 630, 24_800})).isEqualTo(2);
        assertThat(RunProblems.starved(new long[]{24_000, 12_000, 30_000})).isZero();
        assertThat(RunProblems.starved(new long[]{5})).isZero();
        assertThat(RunProblems.starved(new long[0])).isZero();
    }
}
