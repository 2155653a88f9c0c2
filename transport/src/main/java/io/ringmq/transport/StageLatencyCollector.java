package io.ringmq.transport;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.ringmq.pipeline.Pipeline;
import io.ringmq.pipeline.status.LatencySink;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The pipeline's internal latencies on {@code /metrics}: for each PUBLISH, the time from the I/O agent's duty cycle
 * that read it to the end of each stage's work on it, as the histogram {@code ringmq_stage_latency_seconds} with a
 * {@code stage} label ({@code auth}, {@code route}, {@code deliver-N}: queued on the outbound ring, {@code release}:
 * the whole pipeline).
 * <p>
 * Each stage step records into its own HdrHistogram {@link SingleWriterRecorder} (wait-free, allocation-free);
 * a scrape swaps out the interval histogram on the scraping thread and adds it to a running total since start,
 * from which the Prometheus buckets are cut. The sum is HdrHistogram's mean times the count (within its 0.1 %
 * precision), as HdrHistogram keeps no exact sum.
 */
final class StageLatencyCollector implements MultiCollector
{
    static final String NAME = "ringmq_stage_latency_seconds";
    /** Latencies above this are recorded as this: the recorders never resize on a stage thread. */
    static final long HIGHEST_NS = TimeUnit.SECONDS.toNanos(60);
    private static final double[] BOUNDS_SECONDS =
    {
        0.000_001, 0.000_002_5, 0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001,
        0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, Double.POSITIVE_INFINITY
    };

    private final List<StageHistogram> stages = new ArrayList<>();

    /**
     * Gives every stage of {@code pipeline} a sink of this collector's; call before the pipeline runs.
     */
    static StageLatencyCollector attach(final Pipeline pipeline)
    {
        final StageLatencyCollector collector = new StageLatencyCollector();
        pipeline.latencySinks(collector::sink);
        return collector;
    }

    /**
     * @return a new sink for {@code stage}, to be written by one thread only.
     */
    synchronized LatencySink sink(final String stage)
    {
        final StageHistogram histogram = new StageHistogram(stage);
        stages.add(histogram);
        return histogram::record;
    }

    public synchronized MetricSnapshots collect()
    {
        final HistogramSnapshot.Builder snapshot = HistogramSnapshot.builder().name(NAME)
            .help("time from the I/O agent's read of a PUBLISH to the end of each pipeline stage's work on it");
        for (final StageHistogram stage : stages)
        {
            snapshot.dataPoint(stage.snapshot());
        }
        return MetricSnapshots.of(snapshot.build());
    }

    /**
     * One stage's recorder (its thread writes) and running total (the scraping thread reads).
     */
    private static final class StageHistogram
    {
        private final Labels labels;
        private final SingleWriterRecorder recorder = new SingleWriterRecorder(1, HIGHEST_NS, 3);
        private final Histogram total = new Histogram(1, HIGHEST_NS, 3);
        private Histogram interval;

        StageHistogram(final String stage)
        {
            labels = Labels.of("stage", stage);
        }

        void record(final long ns)
        {
            recorder.recordValue(Math.max(1, Math.min(ns, HIGHEST_NS)));
        }

        HistogramSnapshot.HistogramDataPointSnapshot snapshot()
        {
            interval = recorder.getIntervalHistogram(interval);
            total.add(interval);
            final long[] counts = new long[BOUNDS_SECONDS.length];
            long below = 0;
            for (int i = 0; i < BOUNDS_SECONDS.length - 1; i++)
            {
                final long upToBound = total.getCountBetweenValues(0, (long)(BOUNDS_SECONDS[i] * 1e9));
                counts[i] = upToBound - below;
                below = upToBound;
            }
            counts[counts.length - 1] = total.getTotalCount() - below;
            return HistogramSnapshot.HistogramDataPointSnapshot.builder().labels(labels)
                .classicHistogramBuckets(ClassicHistogramBuckets.of(BOUNDS_SECONDS, counts))
                .sum(total.getMean() * total.getTotalCount() / 1e9)
                .build();
        }
    }
}
