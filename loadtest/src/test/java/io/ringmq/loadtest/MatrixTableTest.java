package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.Map;

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
