package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The matrix report's side-by-side table.
 */
class MatrixTableTest
{
    @Test
    @DisplayName("a paced row shows how late the generator itself sent at p99 beside each broker's p99; an unpaced row "
        + "shows none")
    void pacedRowsShowTheGeneratorsSendLag()
    {
        final Map<String, Report> paced = new LinkedHashMap<>();
        paced.put("ringmq", report(100, 1_850_000, 1_000)); // below 2,048 ns a histogram value is exact
        paced.put("mosquitto", report(100, 1_250_000, 2_000));
        final String table = Matrix.table(paced);
        assertThat(table.lines().findFirst().orElseThrow()).endsWith("| generator CPU s | generator send lag p99 µs |");
        assertThat(table.lines().filter(line -> line.startsWith("| ringmq |"))).singleElement().asString()
            .endsWith("| 1 |");
        assertThat(table.lines().filter(line -> line.startsWith("| mosquitto |"))).singleElement().asString()
            .endsWith("| 2 |");

        final Map<String, Report> unpaced = new LinkedHashMap<>();
        unpaced.put("ringmq", report(0, 1_000, 0));
        assertThat(Matrix.table(unpaced).lines().filter(line -> line.startsWith("| ringmq |"))).singleElement()
            .asString().endsWith("| – |");
    }

    @Test
    @DisplayName("--rounds: each broker's median run goes in the table (the lower middle of an even count), every "
        + "round's rate in run order under it")
    void roundsReportTheMedianRunAndEveryRound()
    {
        final Map<String, List<Report>> runs = new LinkedHashMap<>();
        final Report middle = published(2_000_000);
        runs.put("ringmq", List.of(published(3_000_000), middle, published(1_000_000)));
        final Report lowerMiddle = published(2_500_000);
        runs.put("flashmq", List.of(published(2_600_000), lowerMiddle, published(2_400_000), published(2_550_000)));
        runs.put("mosquitto", List.of(published(100_000)));

        final Map<String, Report> medians = Matrix.medians(runs);

        assertThat(medians.keySet()).containsExactly("ringmq", "flashmq", "mosquitto");
        assertThat(medians.get("ringmq")).isSameAs(middle);
        assertThat(medians.get("flashmq")).isSameAs(lowerMiddle);
        assertThat(Matrix.roundsLine(runs)).contains("msg/s per round, in run order: " +
            "ringmq 3,000,000 / 2,000,000 / 1,000,000; flashmq 2,600,000 / 2,500,000 / 2,400,000 / 2,550,000; " +
            "mosquitto 100,000.");
    }

    @Test
    @DisplayName("--rounds of a connections scenario: runs ranked by the last level's connects per second")
    void connectionRoundsRankByConnectsPerSecond()
    {
        final Report slow = connections(1.0);
        final Report middle = connections(0.5);
        final Report fast = connections(0.25);
        final Map<String, List<Report>> runs = Map.of("ringmq", List.of(slow, fast, middle));

        assertThat(Matrix.medians(runs).get("ringmq")).isSameAs(middle);
        assertThat(Matrix.roundsLine(runs)).contains("connects/s of the last level per round, in run order: ringmq " +
            "5,000 / 20,000 / 10,000.");
    }

    @Test
    @DisplayName("--rounds: a failed round keeps its place as 'failed', the median is of the others and says so; a "
        + "broker that failed every round has no row")
    void failedRoundsAreShownInPlace()
    {
        final Map<String, List<Report>> runs = new LinkedHashMap<>();
        final Report lower = published(1_000_000);
        runs.put("ringmq", Arrays.asList(null, published(1_500_000), lower));
        runs.put("dud", Arrays.asList(null, null));

        assertThat(Matrix.medians(runs)).containsOnlyKeys("ringmq");
        assertThat(Matrix.medians(runs).get("ringmq")).as("the lower middle of two").isSameAs(lower);
        assertThat(Matrix.roundsLine(runs)).contains("msg/s per round, in run order: ringmq failed / 1,500,000 / " +
            "1,000,000 (median of 2 of 3); dud failed / failed (median of 0 of 2).");
    }

    @Test
    @DisplayName("--rounds of a paced scenario: runs ranked by their p99, the figure the row is read by")
    void pacedRoundsRankByP99()
    {
        final Report fast = report(100, 1_000_000, 1_000);
        final Report middle = report(100, 2_000_000, 1_000);
        final Report slow = report(100, 9_000_000, 1_000);
        final Map<String, List<Report>> runs = Map.of("ringmq", List.of(slow, fast, middle));

        assertThat(Matrix.medians(runs).get("ringmq")).isSameAs(middle);
        assertThat(Matrix.roundsLine(runs)).contains("p99 µs per round, in run order: ringmq 9,003 / 1,000 / 2,001.");
    }

    @Test
    @DisplayName("matrix --rounds 2: a peer not installed is skipped once, a broker that cannot start fails in each "
        + "round, named with its round; --rounds 0 is refused")
    void roundsEndToEndWithoutABroker(@TempDir final Path dir) throws Exception
    {
        final Matrix matrix = withoutPeers(dir, "{\"name\": \"rounds\", \"brokers\": [\"flashmq\", \"dud\"], " +
            "\"scenarios\": [{\"name\": \"one\", \"args\": \"-mode pub -pubs 1 -qos 0 -duration 1s\"}]}");
        matrix.rounds = 2;
        final String md = runAndRead(matrix);
        assertThat(md).contains("matrix " + matrix.file + " --rounds 2`")
            .contains("- failed: dud (round 1): unknown broker 'dud'")
            .contains("- failed: dud (round 2): unknown broker 'dud'")
            .contains("dud failed / failed (median of 0 of 2)");
        assertThat(md.split("- skipped: flashmq", -1)).hasSize(2);

        matrix.rounds = 0;
        final List<String> refused = new ArrayList<>();
        try
        {
            matrix.call();
        }
        catch (final picocli.CommandLine.ParameterException ex)
        {
            refused.add(ex.getMessage());
        }
        assertThat(refused).containsExactly("--rounds must be 1 to 100, not 0");
    }

    /**
     * @return a matrix runner for the matrix file {@code json} (written into {@code dir}), its reports under
     * {@code dir/out}, quiet, and with no optional peer installed (an empty PATH for FlashMQ).
     */
    static Matrix withoutPeers(final Path dir, final String json) throws Exception
    {
        final Matrix matrix = new Matrix();
        matrix.file = Files.writeString(dir.resolve("m.json"), json);
        matrix.out = dir.resolve("out");
        matrix.quiet = true;
        matrix.env = Map.of("PATH", dir.resolve("nowhere").toString());
        return matrix;
    }

    /**
     * @return the report.md of a run of {@code matrix}, which must succeed.
     */
    static String runAndRead(final Matrix matrix) throws Exception
    {
        assertThat(matrix.call()).isZero();
        try (Stream<Path> folders = Files.list(matrix.out))
        {
            return Files.readString(folders.findFirst().orElseThrow().resolve("report.md"));
        }
    }

    /**
     * @return a pub run's report at {@code rate} messages per second over one second.
     */
    private static Report published(final long rate)
    {
        final Settings settings = new Settings();
        settings.mode = "pub";
        final Report report = new Report(settings, "test");
        report.acknowledged = rate;
        report.publishSeconds = 1;
        return report;
    }

    /**
     * @return a connections run's report whose one level of 5,000 connections was dialled in {@code dialSeconds}.
     */
    private static Report connections(final double dialSeconds)
    {
        final Settings settings = new Settings();
        settings.mode = "conn";
        final Report report = new Report(settings, "test");
        report.levels.add(new Report.Level(5_000, 5_000, 0, 5_000, new Histogram(3), new Histogram(3), 0,
            dialSeconds));
        return report;
    }

    /**
     * @return a pubsub run's report at {@code rate} per publisher (0: unlimited) whose latencies and send lags are
     * all the values given, in ns.
     */
    private static Report report(final int rate, final long latencyNs, final long sendLagNs)
    {
        final Settings settings = new Settings();
        settings.rate = rate;
        final Report report = new Report(settings, "test");
        report.latency = new Histogram(3);
        report.latency.recordValue(latencyNs);
        if (rate > 0)
        {
            report.sendLag = new Histogram(3);
            report.sendLag.recordValue(sendLagNs);
        }
        return report;
    }
}
