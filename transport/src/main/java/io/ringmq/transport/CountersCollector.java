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
 * counter, except the gauges in {@link #isGauge(int)}, exposed without {@code _total}.
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
     * @return whether the counter goes up and down (a level, not a count of events).
     */
    static boolean isGauge(final int counterId)
    {
        return BrokerCounters.INGRESS_RING_OCCUPANCY == counterId;
    }

    /**
     * @return the Prometheus base name of a counter labelled {@code label}: lower case, every run of other
     * characters than letters and digits turned into one underscore, prefixed with {@value #PREFIX}. Counters get
     * {@code _total} appended by the exposition format.
     */
    static String metricName(final String label)
    {
        final StringBuilder name = new StringBuilder(PREFIX);
        boolean separator = false;
        for (int i = 0; i < label.length(); i++)
        {
            final char c = label.charAt(i);
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            {
                if (separator && name.length() > PREFIX.length())
                {
                    name.append('_');
                }
                separator = false;
                name.append(Character.toLowerCase(c));
            }
            else
            {
                separator = true;
            }
        }
        final String result = name.toString();
        if (!PrometheusNaming.isValidLegacyMetricName(result))
        {
            throw new IllegalStateException("counter '" + label + "' gives no valid metric name: " + result);
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
            final String name = metricName(label);
            final long value = reader.getCounterValue(counterId);
            if (isGauge(counterId))
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
