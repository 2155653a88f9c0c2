package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One {@link Driver}'s publishers and what they send. With {@code -rate} each keeps its {@link FixedRateSchedule},
 * open loop: a message is stamped with the time it was due, not the time it went, so time spent queueing counts in
 * its latency (no coordinated omission). Without a rate they flood, paced only by the broker's answers.
 *
 * <p>A paced publisher sends exactly what its schedule owes, whenever the run's end is noticed. One that fell behind
 * (its window full, its socket backed up) sends the rest late, still stamped with their due times, for up to
 * {@link Settings#lateGraceNs} after the end; what is still unsent then is counted ({@link #unsentCount}), not sent.
 * Each publisher's last PINGREQ follows its last message.
 *
 * <p>Per message the work is O(log publishers), not O(publishers): paced publishers wait in a {@link DueQueue} by
 * their next due time, so a pass takes exactly the messages due, and {@link #waitNs} tells the driver how long it may
 * sleep before the next one.
 *
 * <p>Owned by its driver's thread; the histogram and counts are read by others once it has stopped, and
 * {@link #done} while it drains. Allocates nothing per message.
 */
final class Publishers
{
    private static final int FLOOD_BATCH = 64;
    /**
     * -rate 0, QoS 0, no subscribers: the PUBLISH bytes a publisher keeps unanswered by a PINGRESP, in batches of
     * {@link #FLOOD_BATCH}, and never fewer than two batches. With two batches of 64-byte messages (11 KiB) the
     * broker read about 100 messages per read system call and answered each read with a PINGRESP write, and the
     * rate measured the PINGREQ round trip as much as the broker: 48 KiB, measured between 4 and 32 batches, lets
     * 64-byte rows read several hundred per read (docs/perf/2026-12-02-flood-window.md).
     */
    static final int FLOOD_WINDOW_BYTES = 48 * 1024;
    private static final int MIN_FLOOD_BATCHES = 2;
    private static final int BACKLOG_LIMIT = 16 * 1024 * 1024;

    /** -rate: how late each message was queued after the time it was due (and is stamped with). */
    final Histogram sendLag = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    /** Messages queued so far; the driver hands it to other threads once per duty cycle. */
    long published;
    volatile long backlogStalls;
    /** Set once every publisher has stopped publishing and queued its last PINGREQ (DRAINING). */
    volatile boolean done;
    /** Publishers still connected that the grace cut off before they sent everything their schedule owed. */
    volatile int behindCount;
    /** The scheduled messages those publishers never sent. */
    volatile long unsentCount;
    private final Settings settings;
    private final FlushList flushList;
    private final List<Client> publishers = new ArrayList<>();
    /** -rate: the publishers that owe a message (by index in {@link #publishers}), by when the next is due. */
    private final DueQueue due = new DueQueue(16);
    /** Publishers taken out of {@link #due} for this pass only (backlog or window full), put back after it. */
    private int[] stalled = new int[16];
    /** DRAINING: when a publisher still behind its schedule stops trying. */
    private long graceEndNs;

    Publishers(final Settings settings, final FlushList flushList)
    {
        this.settings = settings;
        this.flushList = flushList;
    }

    void add(final Client publisher)
    {
        publisher.publisherIndex = publishers.size();
        publishers.add(publisher);
    }

    boolean isEmpty()
    {
        return publishers.isEmpty();
    }

    /**
     * RUNNING: starts every paced publisher's schedule, spread across one interval from {@code runStartNs} by its
     * id among all the run's publishers, so publishers on several drivers ({@code -pub-threads}) interleave too.
     */
    void start(final long runStartNs)
    {
        final long intervalNs = settings.rate > 0 ? FixedRateSchedule.offsetNs(1, settings.rate) : 0;
        due.clear();
        for (int i = 0; i < publishers.size(); i++)
        {
            final Client publisher = publishers.get(i);
            publisher.dueListed = false;
            if (null != publisher.schedule)
            {
                // spread the publishers' starts across one interval so they do not all fire at once
                publisher.schedule.start(runStartNs + intervalNs * publisher.id / Math.max(1, settings.publishers));
                listDue(publisher);
            }
        }
    }

    /**
     * DRAINING: from {@code now}, a publisher behind its schedule has {@link Settings#lateGraceNs} to catch up.
     */
    void drain(final long now)
    {
        graceEndNs = now + settings.lateGraceNs;
        finish(now);
    }

    /**
     * @return messages queued (with -rate 0 and QoS 0: batches).
     */
    int publish(final long now)
    {
        return settings.rate > 0 ? publishPaced(now) : publishFlood();
    }

    /**
     * -rate: sends every message due by {@code now}, taking publishers from the front of {@link #due}; never past
     * what a schedule owes, however late the end is noticed.
     */
    private int publishPaced(final long now)
    {
        int work = 0;
        int stalledCount = 0;
        while (!due.isEmpty() && due.peekDueNs() - now <= 0)
        {
            final int index = due.peekSlot();
            final Client publisher = publishers.get(index);
            final FixedRateSchedule schedule = publisher.schedule;
            if (publisher.state != Client.State.READY || publisher.finished || schedule.isComplete())
            {
                due.poll();
                publisher.dueListed = false; // a publisher that becomes ready later is listed again (onConnack)
                continue;
            }
            if (publisher.pendingOut() > BACKLOG_LIMIT || (settings.qos > 0 && publisher.inflight >= publisher.window))
            {
                backlogStalls++;
                due.poll(); // stays due: its stamp keeps the intended time, so the delay is measured
                if (stalledCount == stalled.length)
                {
                    stalled = Arrays.copyOf(stalled, stalledCount * 2);
                }
                stalled[stalledCount++] = index;
                continue;
            }
            final long dueNs = schedule.nextDueNs();
            publisher.queuePublish(settings.qos, StampClock.stampOf(dueNs));
            sendLag.recordValue(Math.min(now - dueNs, sendLag.getHighestTrackableValue()));
            schedule.advance();
            flushList.add(publisher);
            published++;
            work++;
            if (schedule.isComplete())
            {
                due.poll();
                publisher.dueListed = false;
            }
            else
            {
                due.rescheduleFirst(schedule.nextDueNs());
            }
        }
        for (int i = 0; i < stalledCount; i++)
        {
            final int index = stalled[i];
            due.add(index, publishers.get(index).schedule.nextDueNs()); // tried again next cycle
        }
        return work;
    }

    /**
     * Puts a paced publisher that owes messages in {@link #due}, once.
     */
    void listDue(final Client publisher)
    {
        if (!publisher.dueListed && null != publisher.schedule && !publisher.schedule.isComplete())
        {
            due.add(publisher.publisherIndex, publisher.schedule.nextDueNs());
            publisher.dueListed = true;
        }
    }

    /**
     * -rate: how long from {@code now} until the first publisher in {@link #due} is due (zero or less: overdue; it
     * may have finished or gone, and the next pass drops it); {@link Long#MAX_VALUE} when none waits.
     */
    long waitNs(final long now)
    {
        return due.isEmpty() ? Long.MAX_VALUE : due.peekDueNs() - now;
    }

    /**
     * -rate 0: QoS 0 publishers send a batch and a PINGREQ while fewer batches than {@link #floodBatches} are
     * unanswered; QoS 1/2 ones fill their window.
     */
    private int publishFlood()
    {
        int work = 0;
        for (final Client publisher : publishers)
        {
            if (publisher.state != Client.State.READY || publisher.finished)
            {
                continue;
            }
            if (settings.qos == 0)
            {
                if (publisher.pingsOutstanding < floodBatches(publisher))
                {
                    for (int i = 0; i < FLOOD_BATCH; i++)
                    {
                        publisher.queuePublish(0, StampClock.nowNs());
                    }
                    published += FLOOD_BATCH;
                    publisher.queuePing();
                    flushList.add(publisher);
                    work++;
                }
            }
            else
            {
                while (publisher.inflight < publisher.window)
                {
                    publisher.queuePublish(settings.qos, StampClock.nowNs());
                    flushList.add(publisher);
                    published++;
                    work++;
                }
            }
        }
        return work;
    }

    /**
     * @return how many batches of {@link #FLOOD_BATCH} a flooding QoS 0 publisher may have unanswered: with no
     * subscribers (pub), as many as fit {@link #FLOOD_WINDOW_BYTES}, at least two; with subscribers (pubsub, fanin,
     * p2p, persistent), two, so the PINGRESPs pace the publishers to what the broker delivers rather than build its
     * queues.
     */
    private int floodBatches(final Client publisher)
    {
        if (0 == publisher.floodBatches)
        {
            publisher.floodBatches = settings.subscribers > 0 ? MIN_FLOOD_BATCHES :
                floodBatches(publisher.qos0PublishLength());
        }
        return publisher.floodBatches;
    }

    static int floodBatches(final int publishLength)
    {
        return (int)Math.max(MIN_FLOOD_BATCHES, FLOOD_WINDOW_BYTES / ((long)FLOOD_BATCH * publishLength));
    }

    /**
     * DRAINING: a publisher stops once it has sent all its schedule owes (at once when it floods), or when the grace
     * runs out with messages still unsent (counted), or when its connection is gone; a ready one then queues its last
     * PINGREQ, whose PINGRESP proves the broker read everything sent before it.
     */
    void finish(final long now)
    {
        boolean done = true;
        for (final Client publisher : publishers)
        {
            if (publisher.finished)
            {
                continue;
            }
            final FixedRateSchedule schedule = publisher.schedule;
            if (publisher.state != Client.State.READY)
            {
                publisher.finished = true; // counted as failed or lost
            }
            else if (null == schedule || schedule.isComplete() || now - graceEndNs >= 0)
            {
                if (null != schedule && !schedule.isComplete())
                {
                    behindCount++;
                    unsentCount += schedule.remaining();
                }
                publisher.queuePing();
                flushList.add(publisher);
                publisher.finished = true;
            }
            else
            {
                done = false; // behind: publish() sends what is due, late
            }
        }
        this.done = done;
    }
}
