package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;

import java.util.Arrays;
import java.util.Locale;

/**
 * What went wrong in a run, for the {@code problems:} line of its summary and the lines under the matrix report's
 * tables: clients never ready or lost, messages not sent, not known to be read or refused, DISCONNECTs from the
 * broker, flooding publishers the broker barely read, and messages held about as long as the run.
 */
final class RunProblems
{
    private RunProblems()
    {
    }

    /**
     * @return one clause per problem of {@code report} ("2 connections lost during the run; 1 DISCONNECTs from the
     * broker (0x8B x1)"), or "" when nothing went wrong.
     */
    static String of(final Report report)
    {
        final Settings settings = report.settings;
        final StringBuilder sb = new StringBuilder();
        final int clients = settings.publishers + settings.subscribers;
        if (report.published < report.scheduled) // clients never ready or lost are their own clauses below
        {
            clause(sb, String.format(Locale.ROOT, "published %,d of %,d scheduled%s", report.published,
                report.scheduled, report.behind == 0 ? "" : String.format(Locale.ROOT, " (%,d %s still %,d messages "
                + "behind %s after the end: the broker's window or the socket held them back)", report.behind,
                plural(report.behind, "publisher"), report.unsent, Units.seconds(settings.lateGraceNs / 1e9))));
        }
        if (report.unprovenPublishers > 0)
        {
            clause(sb, String.format(Locale.ROOT, "%,d messages of %,d %s not known to be read (the PINGREQ after "
                + "them went unanswered)", report.unproven, report.unprovenPublishers,
                plural(report.unprovenPublishers, "publisher")));
        }
        if (report.failed > 0)
        {
            clause(sb, String.format(Locale.ROOT, "%,d of %,d clients never ready%s", report.failed, clients,
                report.subscribeRefused > 0 ? String.format(Locale.ROOT, " (%,d subscriptions refused)",
                report.subscribeRefused) : report.tlsFailures > 0 ? String.format(Locale.ROOT,
                " (%,d TLS handshakes failed: %s)", report.tlsFailures, report.tlsError) : ""));
        }
        if (report.connectionsLost > 0)
        {
            clause(sb, String.format(Locale.ROOT, "%,d connections lost during the run", report.connectionsLost));
        }
        final long disconnects = report.brokerDisconnectCount();
        if (disconnects > 0)
        {
            final StringBuilder codes = new StringBuilder();
            for (int code = 0; code < report.brokerDisconnects.length; code++)
            {
                if (report.brokerDisconnects[code] > 0)
                {
                    codes.append(codes.length() > 0 ? ", " : "")
                        .append(String.format(Locale.ROOT, "0x%02X x%,d", code, report.brokerDisconnects[code]));
                }
            }
            clause(sb, String.format(Locale.ROOT, "%,d DISCONNECTs from the broker (%s)", disconnects, codes));
        }
        if (report.rejected > 0)
        {
            clause(sb, String.format(Locale.ROOT, "%,d messages refused by the broker (reason code 0x80 or more)",
                report.rejected));
        }
        if (settings.rate == 0)
        {
            final long[] sent = report.sentByPublisher();
            final int starvedCount = starved(sent);
            if (starvedCount > 0)
            {
                clause(sb, String.format(Locale.ROOT, "%,d of %,d publishers sent under a tenth of the median "
                    + "publisher's %,d messages (a connection the broker stopped reading?)", starvedCount,
                    sent.length, median(sent)));
            }
        }
        held(sb, report);
        return sb.toString();
    }

    /**
     * The clause for messages that took about as long as the run: a few of them are messages held back until the load
     * stopped (a broker once left two of ten publishers paused for every fan-out run, and it showed only as a p99.9
     * and max of 10 s); more than a hundredth of all is a broker that fell behind the offered load.
     */
    private static void held(final StringBuilder sb, final Report report)
    {
        final Settings settings = report.settings;
        // persistent: what was queued while the subscribers were away waits that long by design
        final long barNs = heldBarNs(report.publishSeconds, settings.persistent() ? settings.offlineNs : 0);
        final long heldCount = heldCount(report.latency, barNs);
        if (heldCount > 0)
        {
            final boolean fellBehind = heldCount * 100 > report.latency.getTotalCount();
            clause(sb, String.format(Locale.ROOT, "%,d %s took %s or more of a %s run, the longest %s (%s)",
                heldCount, plural(heldCount, "message"), Units.seconds(barNs / 1e9),
                Units.seconds(report.publishSeconds), Units.seconds(report.latency.getMaxValue() / 1e9),
                fellBehind ? "the broker fell behind the load" : "held until the load stopped?"));
        }
    }

    /**
     * @param publishSeconds how long the run published.
     * @param heldByDesignNs how long the scenario itself keeps messages waiting (persistent: the subscribers' time
     *                       away), added to the bar.
     * @return the latency from which a message counts as held: half the run and at least a second, plus
     * {@code heldByDesignNs}; at most {@link DeliveryRecorder#HIGHEST_LATENCY_NS}, which every longer latency is
     * recorded as.
     */
    static long heldBarNs(final double publishSeconds, final long heldByDesignNs)
    {
        final long barNs = (long)Math.max(1e9, publishSeconds * 0.5e9) + heldByDesignNs;
        return Math.min(DeliveryRecorder.HIGHEST_LATENCY_NS, barNs);
    }

    /**
     * @param latency per-message latency in nanoseconds, or null.
     * @return how many messages took {@code barNs} or longer; 0 for none.
     */
    static long heldCount(final Histogram latency, final long barNs)
    {
        if (null == latency || latency.getTotalCount() == 0 || latency.getMaxValue() < barNs)
        {
            return 0;
        }
        return latency.getCountBetweenValues(barNs, latency.getMaxValue());
    }

    /**
     * Flooding publishers each send as fast as the broker reads them, so they send about alike; one that sent under
     * a tenth of the median was barely read (a broker once left two of ten paused for a whole run).
     *
     * @return how many of {@code sent} are under a tenth of their median; 0 for fewer than two publishers.
     */
    static int starved(final long[] sent)
    {
        if (sent.length < 2)
        {
            return 0;
        }
        final long floor = median(sent) / 10;
        int starvedCount = 0;
        for (final long count : sent)
        {
            starvedCount += count < floor ? 1 : 0;
        }
        return starvedCount;
    }

    private static long median(final long[] values)
    {
        if (values.length == 0)
        {
            return 0;
        }
        final long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    private static String plural(final long count, final String noun)
    {
        return count == 1 ? noun : noun + "s";
    }

    private static void clause(final StringBuilder sb, final String text)
    {
        sb.append(sb.length() > 0 ? "; " : "").append(text);
    }
}
