package io.ringmq.transport;

import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.PrometheusNaming;
import io.ringmq.pipeline.status.BrokerCounters;
import org.agrona.concurrent.status.CountersReader;

import java.util.ArrayList;
import java.util.List;

/**
 * Exposes every broker counter to Prometheus. At scrape time, on the scraping thread, it walks the
 * {@link CountersReader} and reads each value (a volatile read of its cache line), so no stage or I/O thread is
 * ever touched or waited for.
 * <p>
 * A counter's name comes from its label: {@code "connections refused (max-connections)"} becomes
 * {@code ringmq_connections_refused_max_connections_total}. Every counter is monotonic and exposed as a Prometheus
 * counter, except the gauges ({@link BrokerCounters#isGauge(int)}), exposed without {@code _total}.
 */
final class CountersCollector implements MultiCollector
{
    /** The prefix of every broker metric. */
    static final String PREFIX = "ringmq_";

    private final BrokerCounters counters;

    CountersCollector(final BrokerCounters counters)
    {
        this.counters = counters;
    }

    /**
     * @return the Prometheus base name of a counter: its key ({@link BrokerCounters#key(int)}, the same as its
     * $SYS topic's last level) prefixed with {@value #PREFIX}. Counters get {@code _total} appended by the
     * exposition format; gauges ({@link BrokerCounters#isGauge(int)}) do not.
     */
    static String metricName(final int counterId)
    {
        final String result = PREFIX + BrokerCounters.key(counterId);
        if (!PrometheusNaming.isValidLegacyMetricName(result))
        {
            throw new IllegalStateException("counter '" + BrokerCounters.label(counterId) +
                "' gives no valid metric name: " + result);
        }
        return result;
    }

    public MetricSnapshots collect()
    {
        final List<MetricSnapshot> snapshots = new ArrayList<>();
        final CountersReader reader = counters.reader();
        reader.forEach((counterId, typeId, keyBuffer, label) ->
        {
            if (BrokerCounters.BROKER_COUNTER_TYPE_ID != typeId)
            {
                return;
            }
            final String name = metricName(counterId);
            final long value = reader.getCounterValue(counterId);
            if (BrokerCounters.isGauge(counterId))
            {
                snapshots.add(GaugeSnapshot.builder().name(name).help(label)
                    .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).build()).build());
            }
            else
            {
                snapshots.add(CounterSnapshot.builder().name(name).help(label)
                    .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(value).build()).build());
            }
        });
        return new MetricSnapshots(snapshots); // throws on a duplicate name: two labels that read the same
    }
}
