package io.ringmq.loadtest;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The SVG plots of one scenario, one line per broker: latency by percentile, deliveries per second over time, and
 * p99 latency over time.
 */
final class Plots
{
    private static final double[] PERCENTILES = {0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999};
    /** Percentiles placed by log10(100 / (100 - p)): 90 at 1, 99 at 2, ... */
    private static final Axis PERCENTILE_AXIS = new Axis(0, 5, false, new double[]{0, 1, 2, 3, 4, 5},
        new String[]{"0", "90", "99", "99.9", "99.99", "99.999"});

    private Plots()
    {
    }

    /**
     * @return the file names written (relative to {@code folder}).
     */
    static List<String> write(final Path folder, final String prefix, final Map<String, Report> reports)
        throws IOException
    {
        final List<Svg.Series> percentiles = new ArrayList<>();
        final List<Svg.Series> throughput = new ArrayList<>();
        final List<Svg.Series> p99 = new ArrayList<>();
        for (final Map.Entry<String, Report> entry : reports.entrySet())
        {
            final Report report = entry.getValue();
            if (null != report.latency && report.latency.getTotalCount() > 0)
            {
                final double[] x = new double[PERCENTILES.length];
                final double[] y = new double[PERCENTILES.length];
                for (int i = 0; i < PERCENTILES.length; i++)
                {
                    x[i] = Math.log10(100.0 / (100.0 - PERCENTILES[i]));
                    y[i] = report.latency.getValueAtPercentile(PERCENTILES[i]) / 1000.0;
                }
                percentiles.add(new Svg.Series(entry.getKey(), x, y));
            }
            if (!report.series.isEmpty() && report.unique > 0)
            {
                final int n = report.series.size();
                final double[] x = new double[n];
                final double[] rate = new double[n];
                final double[] tail = new double[n];
                for (int i = 0; i < n; i++)
                {
                    x[i] = report.series.get(i)[0];
                    rate[i] = report.series.get(i)[1];
                    tail[i] = Math.max(1, report.series.get(i)[2]);
                }
                throughput.add(new Svg.Series(entry.getKey(), x, rate));
                p99.add(new Svg.Series(entry.getKey(), x, tail));
            }
        }
        final List<String> files = new ArrayList<>();
        final String title = prefix.isEmpty() ? "" : prefix.substring(0, prefix.length() - 1) + ": ";
        if (!percentiles.isEmpty())
        {
            final double[] latency = Svg.range(percentiles, true);
            files.add(save(folder, prefix + "latency-percentiles.svg", Svg.chart(title + "latency by percentile",
                "percentile", "latency (log)", percentiles, PERCENTILE_AXIS,
                Axis.latencyLog(latency[0], latency[1]))));
        }
        if (!throughput.isEmpty())
        {
            final Axis time = Axis.time(Svg.range(throughput, false)[1]);
            final double[] tail = Svg.range(p99, true);
            files.add(save(folder, prefix + "throughput.svg", Svg.chart(title + "deliveries per second",
                "time", "deliveries/s", throughput, time, Axis.rate(Svg.range(throughput, true)[1]))));
            files.add(save(folder, prefix + "latency-over-time.svg", Svg.chart(title + "p99 latency per second",
                "time", "p99 latency (log)", p99, time, Axis.latencyLog(tail[0], tail[1]))));
        }
        return files;
    }

    private static String save(final Path folder, final String name, final String svg) throws IOException
    {
        Files.writeString(folder.resolve(name), svg);
        return name;
    }
}
