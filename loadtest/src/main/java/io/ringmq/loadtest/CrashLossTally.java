package io.ringmq.loadtest;

import org.agrona.collections.LongHashSet;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;

/**
 * The crash-loss drain's accounting: what each persistent subscriber received, against the messages the broker
 * acknowledged to the publisher. An acknowledged message is owed to every subscriber; one that misses any of them
 * is lost. Messages delivered but never acknowledged (sent just before a kill) are allowed and counted apart.
 */
final class CrashLossTally
{
    /**
     * The drain's figures.
     *
     * @param acknowledged messages the publisher saw acknowledged, over every round.
     * @param delivered acknowledged messages that reached every subscriber.
     * @param lost {@code acknowledged - delivered}: acknowledged messages that missed at least one subscriber.
     * @param lostDeliveries acknowledged (message, subscriber) pairs missing, of {@code acknowledged * subscribers}.
     * @param duplicates deliveries of a message its subscriber already had.
     * @param unacknowledgedDelivered distinct (message, subscriber) pairs delivered that were never acknowledged.
     * @param received every delivery, duplicates included.
     * @param sessionsResumed subscribers whose CONNACK said their session was present.
     * @param rounds per round that acknowledged anything, in order: {round, acknowledged, lost}.
     */
    record Result(long acknowledged, long delivered, long lost, long lostDeliveries, long duplicates,
        long unacknowledgedDelivered, long received, int subscribers, int sessionsResumed, List<long[]> rounds)
    {
        /**
         * @return "round 1: 3 of 10 lost, round 2: none of 5 lost", which shows when the losses happened.
         */
        String byRound()
        {
            final StringBuilder sb = new StringBuilder();
            for (final long[] round : rounds)
            {
                sb.append(sb.length() > 0 ? ", " : "").append("round ").append(round[0]).append(": ")
                    .append(round[2] == 0 ? "none" : Long.toString(round[2])).append(" of ").append(round[1])
                    .append(" lost");
            }
            return sb.toString();
        }

        double lostPercent()
        {
            return acknowledged > 0 ? 100.0 * lost / acknowledged : 0;
        }

        String summary(final String label)
        {
            return String.format(Locale.ROOT, "crash-loss%s: acknowledged %d, delivered %d, lost %d (%.2f %%), " +
                "duplicates %d; %d of %d sessions resumed; %d lost deliveries of %d, %d unacknowledged delivered",
                label.isEmpty() ? "" : " " + label, acknowledged, delivered, lost, lostPercent(), duplicates,
                sessionsResumed, subscribers, lostDeliveries, acknowledged * subscribers, unacknowledgedDelivered);
        }

        String json(final String label)
        {
            return String.format(Locale.ROOT, "{\"mode\":\"crash-loss\",\"label\":\"%s\",\"acknowledged\":%d," +
                "\"delivered\":%d,\"lost\":%d,\"lost_percent\":%.4f,\"duplicates\":%d,\"lost_deliveries\":%d," +
                "\"unacknowledged_delivered\":%d,\"received\":%d,\"subscribers\":%d,\"sessions_resumed\":%d}",
                label.replace("\\", "\\\\").replace("\"", "\\\""), acknowledged, delivered, lost, lostPercent(),
                duplicates, lostDeliveries, unacknowledgedDelivered, received, subscribers, sessionsResumed);
        }

        /**
         * @return one tab-separated line: label, then the record's figures in the order of {@link #TSV_HEADER}.
         */
        String tsv(final String label)
        {
            return String.join("\t", label, Long.toString(acknowledged), Long.toString(delivered),
                Long.toString(lost), Long.toString(duplicates), Long.toString(lostDeliveries),
                Long.toString(unacknowledgedDelivered), Long.toString(received), Integer.toString(subscribers),
                Integer.toString(sessionsResumed));
        }
    }

    static final String TSV_HEADER = "label\tacknowledged\tdelivered\tlost\tduplicates\tlost_deliveries\t" +
        "unacknowledged_delivered\treceived\tsubscribers\tsessions_resumed";

    private final LongHashSet acknowledged;
    private final LongHashSet[] received;
    private final boolean[] sessionPresent;
    private long duplicates;
    private long deliveries;

    CrashLossTally(final LongHashSet acknowledged, final int subscriberCount)
    {
        this.acknowledged = acknowledged;
        this.received = new LongHashSet[subscriberCount];
        this.sessionPresent = new boolean[subscriberCount];
        for (int i = 0; i < subscriberCount; i++)
        {
            received[i] = new LongHashSet();
        }
    }

    void sessionPresent(final int subscriber, final boolean present)
    {
        sessionPresent[subscriber] = present;
    }

    /**
     * One delivery to {@code subscriber} of message {@code sequence} of {@code round}.
     */
    void delivered(final int subscriber, final int round, final int sequence)
    {
        deliveries++;
        if (!received[subscriber].add(AckLog.key(round, sequence)))
        {
            duplicates++;
        }
    }

    long deliveries()
    {
        return deliveries;
    }

    Result result()
    {
        long lost = 0;
        long lostDeliveries = 0;
        final TreeMap<Integer, long[]> rounds = new TreeMap<>();
        final LongHashSet.LongIterator messages = acknowledged.iterator();
        while (messages.hasNext())
        {
            final long key = messages.nextValue();
            int missing = 0;
            for (final LongHashSet got : received)
            {
                missing += got.contains(key) ? 0 : 1;
            }
            lost += missing > 0 ? 1 : 0;
            lostDeliveries += missing;
            final long[] round = rounds.computeIfAbsent(AckLog.roundOf(key), r -> new long[]{r, 0, 0});
            round[1]++;
            round[2] += missing > 0 ? 1 : 0;
        }
        long unacknowledged = 0;
        for (final LongHashSet got : received)
        {
            final LongHashSet.LongIterator it = got.iterator();
            while (it.hasNext())
            {
                unacknowledged += acknowledged.contains(it.nextValue()) ? 0 : 1;
            }
        }
        int resumed = 0;
        for (final boolean present : sessionPresent)
        {
            resumed += present ? 1 : 0;
        }
        return new Result(acknowledged.size(), acknowledged.size() - lost, lost, lostDeliveries, duplicates,
            unacknowledged, deliveries, received.length, resumed, new ArrayList<>(rounds.values()));
    }
}
