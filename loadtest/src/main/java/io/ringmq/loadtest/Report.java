package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A run's results: counts, rates, per-message latency percentiles, broker and generator CPU and memory; as a
 * human summary and as one JSON line.
 */
final class Report
{
    /** One connection level of conn mode. */
    record Level(int target, int established, int failed, int alive, Histogram connectTime, Histogram pingTime,
        double brokerPeakRssMb, double dialSeconds)
    {
        double connectsPerSecond()
        {
            return established / Math.max(1e-9, dialSeconds);
        }
    }

    final Settings settings;
    final String label;
    final List<Level> levels = new ArrayList<>();
    final List<double[]> series = new ArrayList<>();
    Histogram latency;
    int connected;
    double publishSeconds;
    long published;
    /** -rate: what the publishers' schedules owed, ⌊rate × duration⌋ each ({@link FixedRateSchedule}); 0 for a flood. */
    long scheduled;
    /** Publishers still connected but still behind their schedule when the grace after the end ran out. */
    long behind;
    /** The scheduled messages those publishers never sent. */
    long unsent;
    /** QoS 0: publishers whose last PINGREQ went unanswered, and their messages, not counted as read. */
    int unprovenPublishers;
    long unproven;
    long acknowledged;
    /** QoS 1/2 messages the broker refused with a 5.0 reason code (PUBACK/PUBREC 0x80 and above). */
    long rejected;
    /** What each publisher sent, in driver order. */
    private final List<Long> sentByPublisher = new ArrayList<>();
    long received;
    long unique;
    long expected;
    long duplicates;
    long reordered;
    long backlogStalls;
    /** -rate: how late the generator queued each message after its due time (its own timing jitter); null if none. */
    Histogram sendLag;
    long resumedSessions;
    /** Clients that never became ready (refused CONNACK or SUBACK, closed before either). */
    long failed;
    long subscribeRefused;
    /** Failed TLS handshakes (those clients are among {@link #failed}), and the first one's reason. */
    long tlsFailures;
    String tlsError;
    /** Ready connections that ended without the generator asking. */
    long connectionsLost;
    /** DISCONNECTs a 5.0 broker sent, by reason code. */
    final long[] brokerDisconnects = new long[256];
    long brokerPid = -1;
    double brokerCpuSeconds = -1;
    double brokerAvgCpu;
    double brokerPeakCpu;
    double brokerPeakRssMb;
    double generatorCpuSeconds;
    double generatorAvgCpu;

    Report(final Settings settings, final String label)
    {
        this.settings = settings;
        this.label = label;
    }

    /**
     * @param group fanin: the share group's counts, which replace the members' own; null in other modes.
     */
    void collect(final Driver[] drivers, final ShareGroupTracker group)
    {
        latency = new Histogram(3);
        sendLag = settings.rate > 0 ? new Histogram(3) : null;
        for (final Driver driver : drivers)
        {
            latency.add(driver.deliveries.latency);
            if (null != sendLag)
            {
                sendLag.add(driver.publishers.sendLag);
            }
            backlogStalls += driver.publishers.backlogStalls;
            failed += driver.failed;
            subscribeRefused += driver.subscribeRefused;
            tlsFailures += driver.tlsFailures;
            if (null == tlsError)
            {
                tlsError = driver.tlsError;
            }
            connectionsLost += driver.connectionsLost;
            behind += driver.publishers.behindCount;
            unsent += driver.publishers.unsentCount;
            for (int code = 0; code < brokerDisconnects.length; code++)
            {
                brokerDisconnects[code] += driver.brokerDisconnects[code];
            }
            for (final Client client : driver.clients)
            {
                if (client.publisher)
                {
                    published += client.sequence;
                    sentByPublisher.add((long)client.sequence);
                    // QoS 0: read by the broker only once the PINGRESP to the PINGREQ that followed them came back
                    final boolean proven = settings.qos > 0 || 0 == client.pingsOutstanding;
                    acknowledged += settings.qos > 0 ? client.acknowledged : proven ? client.sequence : 0;
                    if (!proven)
                    {
                        unprovenPublishers++;
                        unproven += client.sequence;
                    }
                    rejected += client.rejected;
                    continue;
                }
                received += client.received;
                reordered += client.reordered;
                if (null != client.trackers)
                {
                    for (final SequenceTracker tracker : client.trackers)
                    {
                        if (null != tracker)
                        {
                            unique += tracker.unique();
                            duplicates += tracker.duplicates();
                            reordered += tracker.reordered();
                        }
                    }
                }
            }
        }
        if (null != group)
        {
            unique = group.unique();
            duplicates = group.duplicates();
        }
        expected = published * (long)settings.deliveriesPerMessage();
        scheduled = settings.scheduledPerPublisher() * settings.publishers;
        for (final Driver driver : drivers)
        {
            resumedSessions += driver.resumedSessions;
        }
    }

    void broker(final double cpuSeconds, final double avgCpu, final double peakCpu, final double peakRssMb,
        final long pid)
    {
        brokerCpuSeconds = cpuSeconds;
        brokerAvgCpu = avgCpu;
        brokerPeakCpu = peakCpu;
        brokerPeakRssMb = peakRssMb;
        brokerPid = pid;
    }

    void generator(final double cpuSeconds, final double avgCpu)
    {
        generatorCpuSeconds = cpuSeconds;
        generatorAvgCpu = avgCpu;
    }

    void interval(final double atSeconds, final double deliveriesPerSecond, final double p99Micros)
    {
        series.add(new double[]{atSeconds, deliveriesPerSecond, p99Micros});
    }

    double messageRate()
    {
        return ("pub".equals(settings.mode) ? acknowledged : unique) / Math.max(1e-9, publishSeconds);
    }

    long lost()
    {
        return Math.max(0, expected - unique);
    }

    long brokerDisconnectCount()
    {
        long count = 0;
        for (final long n : brokerDisconnects)
        {
            count += n;
        }
        return count;
    }

    /**
     * @return what went wrong, one clause each ({@link RunProblems}), or "" when nothing did.
     */
    String problems()
    {
        return RunProblems.of(this);
    }

    /**
     * @return what each publisher sent, in driver order.
     */
    long[] sentByPublisher()
    {
        return sentByPublisher.stream().mapToLong(Long::longValue).toArray();
    }

    /**
     * @return whether a paced run timed how late it sent each message after its due time.
     */
    boolean hasSendLag()
    {
        return null != sendLag && sendLag.getTotalCount() > 0;
    }

    /**
     * @return how late the generator sent a message after its due time at {@code percentile} (needs
     * {@link #hasSendLag}): a latency percentile near it is the generator's, not the broker's.
     */
    double sendLagMicros(final double percentile)
    {
        return sendLag.getValueAtPercentile(percentile) / 1000.0;
    }

    private double percentileMicros(final double percentile)
    {
        return null == latency || latency.getTotalCount() == 0 ? 0 : latency.getValueAtPercentile(percentile) / 1000.0;
    }

    void print(final PrintStream out)
    {
        out.printf(Locale.ROOT, "loadtest %s%s against %s:%d%n", settings.mode,
            label.isEmpty() ? "" : " [" + label + "]", settings.host, settings.port);
        if (settings.connectionsOnly())
        {
            for (final Level level : levels)
            {
                out.printf(Locale.ROOT,
                    "  %,d connections: %,d established (%,.0f/s), %,d failed, %,d alive after hold; connect p50 " +
                    "%.1f ms, p99 %.1f ms, max %.1f ms; PINGREQ p50 %.1f ms, p99 %.1f ms%s%n",
                    level.target(), level.established(), level.connectsPerSecond(), level.failed(), level.alive(),
                    level.connectTime().getValueAtPercentile(50) / 1e6, level.connectTime().getValueAtPercentile(99) / 1e6,
                    level.connectTime().getMaxValue() / 1e6, level.pingTime().getValueAtPercentile(50) / 1e6,
                    level.pingTime().getValueAtPercentile(99) / 1e6,
                    level.brokerPeakRssMb() >= 0 ? String.format(Locale.ROOT, "; broker peak RSS %.0f MB",
                        level.brokerPeakRssMb()) : "");
            }
            return;
        }
        out.printf(Locale.ROOT, "  %d publishers, %d subscribers, QoS %d, %d-byte payload, %s, %.1f s%n",
            settings.publishers, settings.subscribers, settings.qos, settings.payload,
            settings.rate > 0 ? settings.rate + " msg/s each" : "unlimited", publishSeconds);
        if ("pub".equals(settings.mode))
        {
            out.printf(Locale.ROOT, "  published %,d%s (read by the broker: %,d) = %,.0f msg/s%n", published,
                ofScheduled(), acknowledged, messageRate());
        }
        else
        {
            out.printf(Locale.ROOT, "  published %,d%s; delivered %,d of %,d expected = %,.0f deliveries/s; " +
                "lost %,d, duplicates %,d, reordered %,d%n", published, ofScheduled(), unique, expected, messageRate(),
                lost(), duplicates, reordered);
            if (settings.persistent())
            {
                out.printf(Locale.ROOT, "  %,d of %,d subscribers came back to their session (session present)%n",
                    resumedSessions, settings.subscribers);
            }
            out.printf(Locale.ROOT, "  latency µs: p50 %.0f, p90 %.0f, p99 %.0f, p99.9 %.0f, max %.0f, mean %.0f%n",
                percentileMicros(50), percentileMicros(90), percentileMicros(99), percentileMicros(99.9),
                null == latency ? 0 : latency.getMaxValue() / 1000.0, null == latency ? 0 : latency.getMean() / 1000.0);
        }
        if (!problems().isEmpty())
        {
            out.printf(Locale.ROOT, "  problems: %s%n", problems());
        }
        if (brokerCpuSeconds >= 0)
        {
            out.printf(Locale.ROOT, "  broker pid %d: CPU %.2f s (avg %.0f%%, peak %.0f%%), peak RSS %.0f MB%n",
                brokerPid, brokerCpuSeconds, brokerAvgCpu, brokerPeakCpu, brokerPeakRssMb);
        }
        out.printf(Locale.ROOT, "  generator: CPU %.2f s (avg %.0f%%)%s%s%n", generatorCpuSeconds, generatorAvgCpu,
            hasSendLag() ? String.format(Locale.ROOT, "; sent after due µs: p50 %.0f, p99 %.0f, max %.0f",
            sendLagMicros(50), sendLagMicros(99), sendLag.getMaxValue() / 1000.0) : "",
            backlogStalls > 0 ? String.format(Locale.ROOT, "; %,d sends held back (backlog or window)", backlogStalls) : "");
    }

    private String ofScheduled()
    {
        return scheduled > 0 ? String.format(Locale.ROOT, " of %,d scheduled", scheduled) : "";
    }

    String json()
    {
        final StringBuilder sb = new StringBuilder("{");
        field(sb, "mode", settings.mode);
        field(sb, "label", label);
        number(sb, "tls", null == settings.tls ? 0 : 1);
        field(sb, "addr", settings.host + ":" + settings.port);
        if (settings.connectionsOnly())
        {
            sb.append("\"levels\":[");
            for (int i = 0; i < levels.size(); i++)
            {
                final Level level = levels.get(i);
                sb.append(i > 0 ? "," : "").append('{');
                number(sb, "target", level.target());
                number(sb, "established", level.established());
                number(sb, "failed", level.failed());
                number(sb, "alive", level.alive());
                number(sb, "connects_per_s", level.connectsPerSecond());
                number(sb, "connect_p50_ms", level.connectTime().getValueAtPercentile(50) / 1e6);
                number(sb, "connect_p99_ms", level.connectTime().getValueAtPercentile(99) / 1e6);
                number(sb, "connect_max_ms", level.connectTime().getMaxValue() / 1e6);
                number(sb, "ping_p50_ms", level.pingTime().getValueAtPercentile(50) / 1e6);
                number(sb, "ping_p99_ms", level.pingTime().getValueAtPercentile(99) / 1e6);
                number(sb, "broker_peak_rss_mb", level.brokerPeakRssMb());
                trim(sb).append('}');
            }
            sb.append("],");
            return trim(sb).append('}').toString();
        }
        number(sb, "publishers", settings.publishers);
        number(sb, "subscribers", settings.subscribers);
        number(sb, "qos", settings.qos);
        number(sb, "clean_session", settings.cleanSession ? 1 : 0);
        number(sb, "payload", settings.payload);
        number(sb, "rate", settings.rate);
        number(sb, "seconds", publishSeconds);
        number(sb, "published", published);
        number(sb, "scheduled", scheduled);
        number(sb, "unsent", unsent);
        number(sb, "acknowledged", acknowledged);
        number(sb, "rejected", rejected);
        number(sb, "delivered", unique);
        number(sb, "expected", expected);
        number(sb, "lost", lost());
        number(sb, "duplicates", duplicates);
        number(sb, "reordered", reordered);
        number(sb, "resumed_sessions", resumedSessions);
        number(sb, "failed", failed);
        number(sb, "subscribe_refused", subscribeRefused);
        number(sb, "tls_failures", tlsFailures);
        if (null != tlsError)
        {
            field(sb, "tls_error", tlsError);
        }
        number(sb, "connections_lost", connectionsLost);
        number(sb, "broker_disconnects", brokerDisconnectCount());
        number(sb, "rate_per_s", messageRate());
        number(sb, "latency_p50_us", percentileMicros(50));
        number(sb, "latency_p90_us", percentileMicros(90));
        number(sb, "latency_p99_us", percentileMicros(99));
        number(sb, "latency_p999_us", percentileMicros(99.9));
        number(sb, "latency_max_us", null == latency ? 0 : latency.getMaxValue() / 1000.0);
        number(sb, "latency_mean_us", null == latency ? 0 : latency.getMean() / 1000.0);
        number(sb, "broker_cpu_s", brokerCpuSeconds);
        number(sb, "broker_avg_cpu_pct", brokerAvgCpu);
        number(sb, "broker_peak_cpu_pct", brokerPeakCpu);
        number(sb, "broker_peak_rss_mb", brokerPeakRssMb);
        number(sb, "generator_cpu_s", generatorCpuSeconds);
        number(sb, "generator_avg_cpu_pct", generatorAvgCpu);
        if (hasSendLag())
        {
            number(sb, "send_lag_p99_us", sendLagMicros(99));
            number(sb, "send_lag_max_us", sendLag.getMaxValue() / 1000.0);
        }
        return trim(sb).append('}').toString();
    }

    private static void field(final StringBuilder sb, final String name, final String value)
    {
        sb.append('"').append(name).append("\":\"").append(value.replace("\\", "\\\\").replace("\"", "\\\""))
            .append("\",");
    }

    private static void number(final StringBuilder sb, final String name, final double value)
    {
        sb.append('"').append(name).append("\":");
        if (value == Math.rint(value) && Math.abs(value) < 1e15)
        {
            sb.append((long)value);
        }
        else
        {
            sb.append(String.format(Locale.ROOT, "%.3f", value));
        }
        sb.append(',');
    }

    private static StringBuilder trim(final StringBuilder sb)
    {
        if (sb.charAt(sb.length() - 1) == ',')
        {
            sb.setLength(sb.length() - 1);
        }
        return sb;
    }
}
