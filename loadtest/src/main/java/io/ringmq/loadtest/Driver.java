package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * One generator thread: a selector and the clients it owns. It dials with bounded concurrency, keeps each
 * publisher's {@link FixedRateSchedule} (open loop: a message is stamped with the time it was due, so time spent
 * queueing counts), floods with pacing on the broker's answers when no rate is set, and records every delivery's
 * latency.
 *
 * <p>A paced publisher sends exactly what its schedule owes, whenever the run's end is noticed. One that fell behind
 * (its window full, its socket backed up) sends the rest late, still stamped with their due times, for up to
 * {@link Settings#lateGraceNs} after the end; what is still unsent then is counted ({@link #unsentCount}), not sent.
 * Each publisher's last PINGREQ follows its last message.
 *
 * <p>Per message the work is O(log publishers), not O(publishers): paced publishers wait in a {@link DueQueue} by
 * their next due time, so a wake takes exactly the messages due and sleeps until the next one
 * ({@link DeadlineSleeper}); only clients with bytes queued are flushed (the flush list); keys are handled by the
 * selector's consumer forms, which allocate no selected-key set or iterator.
 */
final class Driver implements Runnable, Client.Handler
{
    static final int DIALING = 0;
    static final int RUNNING = 1;
    static final int DRAINING = 2;
    static final int STOPPED = 3;
    private static final int FLOOD_BATCH = 64;
    private static final int BACKLOG_LIMIT = 16 * 1024 * 1024;
    /** The longest a paced publisher driver sleeps in select while RUNNING (a phase change wakes it anyway). */
    private static final long MAX_PACED_SELECT_MS = 10;
    /**
     * How often a driver of paced publishers only polls its sockets while it wakes for due messages: they read only
     * acknowledgements and PINGRESPs, and a window of 32 QoS 1 messages refills every poll at up to 128,000 msg/s.
     */
    private static final long PACED_POLL_INTERVAL_NS = 250_000;

    final List<Client> clients = new ArrayList<>();
    /** PINGREQ to PINGRESP: the connection mode's check of held connections. */
    final Histogram pingTime = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    /** -rate: how late each message was queued after the time it was due (and is stamped with). */
    final Histogram sendLag = new Histogram(TimeUnit.SECONDS.toNanos(60), 3);
    private final Settings settings;
    private final Selector selector;
    private final List<Client> publishers = new ArrayList<>();
    /** -rate: the publishers that owe a message (by index in {@link #publishers}), by when the next is due. */
    private final DueQueue due = new DueQueue(16);
    /** Publishers taken out of {@link #due} for this pass only (backlog or window full), put back after it. */
    private int[] stalled = new int[16];
    /** Clients with bytes queued, each once; flushed once per duty cycle. */
    private final FlushList flushList = new FlushList(this);
    final Dialer dialer;
    final DeliveryRecorder deliveries;
    private final Consumer<SelectionKey> keyHandler = this::onKey;
    private final DeadlineSleeper sleeper = new DeadlineSleeper();
    /** Whether any client of this driver subscribes (then every cycle polls: deliveries are timed on arrival). */
    private boolean hasSubscribers;
    private long lastPollNs;
    private volatile int phase = DIALING;
    /** conn with -ping-interval: the next connection to ping, and in which round. */
    private int pingCursor;
    private long pingRound;
    private volatile boolean subscribersWanted = true;
    private boolean subscribersOnline = true;
    volatile long resumedSessions;
    private volatile long runStartNs;
    volatile int ready;
    volatile int failed;
    volatile long refused;
    volatile long backlogStalls;
    /** Subscriptions the broker refused (SUBACK 0x80 and above); each such subscriber counts as failed too. */
    volatile long subscribeRefused;
    /** Connections that were ready and then ended without the generator asking (EOF, reset, DISCONNECT). */
    volatile long connectionsLost;
    /** TLS handshakes that failed (an unknown CA, a name mismatch, no common version); those clients count as failed. */
    volatile long tlsFailures;
    /** The first failed handshake's reason, as the JDK gave it; null when none failed. */
    volatile String tlsError;
    /** DISCONNECTs a 5.0 broker sent, by reason code. */
    final long[] brokerDisconnects = new long[256];
    /** Messages queued by this driver's publishers so far, for the progress line; written once per duty cycle. */
    volatile long publishedCount;
    /** Unique deliveries to this driver's subscribers so far, for the progress line; written once per duty cycle. */
    volatile long uniqueCount;
    private long published;
    /** DRAINING: when a publisher still behind its schedule stops trying. */
    private long graceEndNs;
    /** Set once every publisher has stopped publishing and queued its last PINGREQ (DRAINING). */
    volatile boolean publishingDone;
    /** Publishers still connected that the grace cut off before they sent everything their schedule owed. */
    volatile int behindCount;
    /** The scheduled messages those publishers never sent. */
    volatile long unsentCount;

    Driver(final Settings settings, final Recorder intervals, final ShareGroupTracker group) throws IOException
    {
        this.settings = settings;
        this.selector = Selector.open();
        this.dialer = new Dialer(settings, selector, this, flushList);
        this.deliveries = new DeliveryRecorder(settings, intervals, group);
    }

    void add(final Client client)
    {
        clients.add(client);
        dialer.add(client);
        if (client.publisher)
        {
            client.publisherIndex = publishers.size();
            publishers.add(client);
        }
        else
        {
            hasSubscribers = true;
        }
    }

    /**
     * persistent mode: takes every subscriber away (DISCONNECT) or brings it back on a new connection.
     */
    void subscribersOnline(final boolean online)
    {
        subscribersWanted = online;
        selector.wakeup();
    }

    private void moveSubscribers(final boolean online) throws IOException
    {
        for (int i = 0; i < clients.size(); i++)
        {
            final Client client = clients.get(i);
            if (client.publisher)
            {
                continue;
            }
            if (!online && client.state == Client.State.READY)
            {
                client.queueDisconnect();
                flushList.flush(client);
                ready--;
                close(client);
            }
            else if (online && client.state == Client.State.CLOSED)
            {
                final Client next = client.reconnect(settings);
                clients.set(i, next);
                dialer.add(next);
            }
        }
    }

    void phase(final int phase, final long startNs)
    {
        this.runStartNs = startNs;
        this.phase = phase;
        selector.wakeup();
    }

    public void run()
    {
        try
        {
            loop();
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
        finally
        {
            for (final Client client : clients)
            {
                try
                {
                    client.channel.close();
                }
                catch (final IOException ignore)
                {
                    // closing anyway
                }
            }
            try
            {
                selector.close();
            }
            catch (final IOException ignore)
            {
                // closing anyway
            }
        }
    }

    private void loop() throws IOException
    {
        int lastPhase = DIALING;
        boolean polled = false;
        while (phase != STOPPED)
        {
            final long now = System.nanoTime();
            final int current = phase;
            if (current != lastPhase)
            {
                onPhaseChange(current, now);
                lastPhase = current;
            }
            if (subscribersWanted != subscribersOnline)
            {
                subscribersOnline = subscribersWanted;
                moveSubscribers(subscribersOnline);
            }
            int work = dialer.dial(now);
            if (current == RUNNING || (current == DRAINING && !publishingDone))
            {
                work += publish(now);
            }
            if (current == DRAINING && !publishingDone)
            {
                finishPublishers(now); // after publish: the last PINGREQ follows the last message
            }
            if (current == RUNNING && settings.connectionsOnly() && settings.pingIntervalNs > 0)
            {
                work += pingHeld(now);
            }
            // no second poll when the idle select that ended the last cycle handled its keys already
            if (!polled && (hasSubscribers || settings.rate == 0 || now - lastPollNs >= PACED_POLL_INTERVAL_NS))
            {
                lastPollNs = now;
                work += selector.selectNow(keyHandler);
            }
            flushList.flushListed();
            if (published != publishedCount)
            {
                publishedCount = published; // counters leave the thread once per duty cycle, not per message
            }
            if (deliveries.unique != uniqueCount)
            {
                uniqueCount = deliveries.unique;
            }
            polled = work == 0 && idle(now) > 0;
        }
    }

    /**
     * conn with -ping-interval: connection {@code i} of {@code n} pings at {@code start + i * interval / n}, then
     * every interval; a connection whose last PINGREQ is not answered yet skips its turn.
     *
     * @return PINGREQs queued.
     */
    private int pingHeld(final long now)
    {
        final int count = clients.size();
        final long intervalNs = settings.pingIntervalNs;
        int queued = 0;
        while (count > 0 && now - (runStartNs + pingRound * intervalNs + intervalNs * pingCursor / count) >= 0)
        {
            final Client client = clients.get(pingCursor);
            if (client.state == Client.State.READY && 0 == client.pingsOutstanding)
            {
                client.queuePing();
                flushList.add(client);
                queued++;
            }
            if (++pingCursor == count)
            {
                pingCursor = 0;
                pingRound++;
            }
        }
        return queued;
    }

    private void onPhaseChange(final int current, final long now)
    {
        if (current == RUNNING)
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
                    publisher.schedule.start(runStartNs + intervalNs * i / publishers.size());
                    listDue(publisher);
                }
            }
        }
        else if (current == DRAINING)
        {
            graceEndNs = now + settings.lateGraceNs;
            if (settings.connectionsOnly())
            {
                for (final Client client : clients)
                {
                    if (client.state == Client.State.READY)
                    {
                        client.queuePing(); // a PINGRESP proves the broker read everything sent before it
                        flushList.add(client);
                    }
                }
            }
            finishPublishers(now);
        }
    }

    /**
     * DRAINING: a publisher stops once it has sent all its schedule owes (at once when it floods), or when the grace
     * runs out with messages still unsent (counted), or when its connection is gone; a ready one then queues its last
     * PINGREQ, whose PINGRESP proves the broker read everything sent before it.
     */
    private void finishPublishers(final long now)
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
        publishingDone = done;
    }

    /**
     * A driver of subscribers sleeps in {@code select} so a delivery is timed the moment it arrives; a driver of
     * paced publishers sleeps until the next message is due (its own acknowledgements can wait that long): in
     * {@code select} when that is a millisecond or more away, else parked ({@link DeadlineSleeper}).
     *
     * @return the keys a select handled.
     */
    private int idle(final long now)
    {
        final boolean publishing = phase == RUNNING || (phase == DRAINING && !publishingDone);
        try
        {
            if (publishers.isEmpty() || !publishing || settings.rate == 0)
            {
                final boolean timed = !publishers.isEmpty() || settings.pingIntervalNs > 0;
                return selector.select(keyHandler, phase == RUNNING && timed ? 1 : 100);
            }
            // the first in the queue may have finished or gone: then the next pass drops it, without sleeping
            final long waitNs = due.isEmpty() ? Long.MAX_VALUE : due.peekDueNs() - now;
            if (waitNs >= 1_000_000)
            {
                // nothing due soon (or no publisher left): sleep on the sockets, waking before the next is due
                return selector.select(keyHandler, phase == RUNNING ?
                    Math.min(MAX_PACED_SELECT_MS, waitNs / 1_000_000) : 1);
            }
            if (waitNs > 0)
            {
                sleeper.sleepUntil(due.peekDueNs());
            }
            else
            {
                // overdue yet no work this cycle: every publisher due is stalled (its window full, or its socket's
                // backlog), so wait on the sockets, where its acknowledgement wakes it, instead of spinning a core
                return selector.select(keyHandler, 1);
            }
        }
        catch (final IOException ignore)
        {
            // the next selectNow reports it
        }
        return 0;
    }

    /**
     * One ready key, from {@code selectNow} or {@code select} in their consumer forms.
     */
    private void onKey(final SelectionKey key)
    {
        final Client client = (Client)key.attachment();
        try
        {
            if (!key.isValid())
            {
                return;
            }
            if (key.isConnectable())
            {
                if (client.channel.finishConnect())
                {
                    key.interestOps(SelectionKey.OP_READ);
                    dialer.onTcpConnected(client);
                }
                return;
            }
            if (key.isReadable())
            {
                if (!client.read(this))
                {
                    dropped(client);
                }
                else if (client.pendingOut() > 0)
                {
                    flushList.add(client); // acknowledgements, a SUBSCRIBE after CONNACK, TLS handshake steps
                }
            }
        }
        catch (final IOException ex)
        {
            if (client.state == Client.State.CONNECTING || client.state == Client.State.DIALING)
            {
                refused++;
            }
            broken(client, ex);
        }
    }

    /**
     * A socket that failed to read or write: a TLS failure is counted, and the connection ended.
     */
    void broken(final Client client, final IOException ex)
    {
        onTlsFailure(ex);
        dropped(client);
    }

    private void onTlsFailure(final IOException ex)
    {
        if (ex instanceof javax.net.ssl.SSLException)
        {
            tlsFailures++;
            if (null == tlsError)
            {
                tlsError = TlsClientContext.describe((javax.net.ssl.SSLException)ex);
            }
        }
    }

    private int publish(final long now)
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
    private void listDue(final Client publisher)
    {
        if (!publisher.dueListed && null != publisher.schedule && !publisher.schedule.isComplete())
        {
            due.add(publisher.publisherIndex, publisher.schedule.nextDueNs());
            publisher.dueListed = true;
        }
    }

    /**
     * -rate 0: QoS 0 publishers send a batch while fewer than two PINGREQs are unanswered; QoS 1/2 ones fill their
     * window.
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
                if (publisher.pingsOutstanding < 2)
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

    public void onPingResponse(final Client client, final long roundTripNs)
    {
        if (settings.pingIntervalNs > 0 && phase != RUNNING)
        {
            return; // with -ping-interval the figures are the hold's pings, not the final check's burst
        }
        pingTime.recordValue(Math.min(roundTripNs, pingTime.getHighestTrackableValue()));
    }

    public void onConnack(final Client client, final int code)
    {
        if (!dialer.onConnack(client, code))
        {
            refused++;
            fail(client);
            return;
        }
        client.state = Client.State.CONNECTED;
        if (client.resuming && client.sessionPresent)
        {
            resumedSessions++;
        }
        if (!client.publisher && settings.subscribers > 0 && !settings.connectionsOnly() && !client.resuming)
        {
            client.queueSubscribe(settings.filterFor(client.id), settings.qos);
        }
        else
        {
            client.state = Client.State.READY;
            ready++;
            if (client.publisher && phase != DIALING)
            {
                listDue(client); // ready after the run began: what it owes is due already, and goes late
            }
        }
    }

    public void onSuback(final Client client, final int code)
    {
        if (code >= 0x80) // e.g. 0x9E: shared subscriptions not supported, 0x8F: filter invalid, 3.1.1's 0x80
        {
            subscribeRefused++;
            fail(client);
            return;
        }
        client.state = Client.State.READY;
        ready++;
    }

    public void onDisconnect(final Client client, final int reasonCode)
    {
        brokerDisconnects[reasonCode & 0xFF]++;
    }

    public void onMessage(final Client client, final int publisherId, final int sequence, final long stampNs)
    {
        deliveries.onMessage(client, publisherId, sequence, stampNs);
    }

    /**
     * A connection the broker ended, or that broke, without the generator asking: a client never ready counts as
     * failed, one that was ready as lost.
     */
    private void dropped(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        if (client.state == Client.State.READY)
        {
            connectionsLost++;
            close(client);
        }
        else
        {
            fail(client);
        }
    }

    void fail(final Client client)
    {
        failed++;
        close(client);
    }

    private void close(final Client client)
    {
        if (client.state == Client.State.CLOSED)
        {
            return;
        }
        dialer.onClose(client);
        client.state = Client.State.CLOSED;
        try
        {
            client.channel.close();
        }
        catch (final IOException ignore)
        {
            // closing anyway
        }
    }

}
