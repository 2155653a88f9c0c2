package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.SingleWriterRecorder;

import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * Accounts for what one {@link Driver}'s subscribers receive. Each delivery's latency runs from the time its message
 * was due to be sent, which the publisher stamped in the payload ({@link StampClock}), so a late send counts (no
 * coordinated omission); it goes into the driver's {@link #latency} and its interval recorder. Each delivery is
 * then checked for loss, duplicates and order: per subscriber and publisher ({@link SequenceTracker}), or in fanin
 * once for the whole share group ({@link ShareGroupTracker}), with each member's own order still checked.
 *
 * <p>Owned by its driver's thread; {@link #latency} is read once that thread has stopped. It allocates a subscriber's
 * trackers on its first delivery (and one per publisher on the first delivery from it); after that only as a
 * tracker's window of sequence numbers grows ({@link SequenceTracker}'s bit set), not per delivery.
 */
final class DeliveryRecorder
{
    /** The longest latency recorded: a longer one is recorded as this. */
    static final long HIGHEST_LATENCY_NS = TimeUnit.SECONDS.toNanos(60);
    final Histogram latency = new Histogram(HIGHEST_LATENCY_NS, 3);
    /**
     * This driver's latencies since the run's thread last took them ({@link #takeInterval}). One recorder per driver:
     * a recorder shared by every driver thread made each delivery two atomic increments on cache lines they all
     * wrote, which cost the generator more than the rest of a delivery's work on many cores.
     */
    private final SingleWriterRecorder intervals = new SingleWriterRecorder(3);
    /** Unique deliveries so far; the driver hands it to other threads once per duty cycle. */
    long unique;
    private final Settings settings;
    /** fanin: the share group's messages, counted once across its members; null in other modes. */
    private final ShareGroupTracker group;

    DeliveryRecorder(final Settings settings, final ShareGroupTracker group)
    {
        this.settings = settings;
        this.group = group;
    }

    /**
     * Adds the latencies recorded since the last call to {@code into}; called by the run's thread alone, while the
     * driver's thread records.
     */
    void takeInterval(final Histogram into)
    {
        into.add(intervals.getIntervalHistogram());
    }

    /**
     * One delivery to {@code client}, as its driver took it from the socket ({@link Client.Handler#onMessage}).
     */
    void onMessage(final Client client, final int publisherId, final int sequence, final long stampNs)
    {
        final long latencyNs = Math.max(0, StampClock.nowNs() - stampNs);
        final long value = Math.min(latency.getHighestTrackableValue(), latencyNs);
        latency.recordValue(value);
        intervals.recordValue(value);
        if (null != group)
        {
            onGroupMessage(client, publisherId, sequence);
            return;
        }
        if (null == client.trackers)
        {
            client.trackers = new SequenceTracker[settings.publishers];
        }
        if (publisherId >= 0 && publisherId < client.trackers.length)
        {
            if (null == client.trackers[publisherId])
            {
                client.trackers[publisherId] = new SequenceTracker();
            }
            if (client.trackers[publisherId].record(sequence))
            {
                unique++;
            }
        }
    }

    /**
     * fanin: counted once for the whole group; each member's own order is still checked, since the broker keeps
     * a publisher's order towards any one session [MQTT-4.6.0-6].
     */
    private void onGroupMessage(final Client client, final int publisherId, final int sequence)
    {
        if (publisherId < 0 || publisherId >= settings.publishers || !group.record(publisherId, sequence))
        {
            return;
        }
        unique++;
        if (null == client.highest)
        {
            client.highest = new int[settings.publishers];
            Arrays.fill(client.highest, -1);
        }
        if (sequence < client.highest[publisherId])
        {
            client.reordered++;
        }
        else
        {
            client.highest[publisherId] = sequence;
        }
    }
}
