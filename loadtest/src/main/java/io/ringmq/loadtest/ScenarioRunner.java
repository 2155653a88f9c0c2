package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * Runs one scenario on a set of {@link Driver} threads: connects every client, moves the drivers through their
 * phases (publish for the duration, then drain until every publisher's last message is confirmed and deliveries
 * stop), samples the broker, and gathers the {@link Report}.
 */
final class ScenarioRunner
{
    /** How long the driver threads have to end once told to stop. */
    static final long STOP_TIMEOUT_MS = 10_000;

    private final Settings settings;
    private final Path out;
    private final String label;

    ScenarioRunner(final Settings settings, final Path out, final String label)
    {
        this.settings = settings;
        this.out = out;
        this.label = label;
    }

    Report runMessages(final long pid) throws Exception
    {
        final ShareGroupTracker group = "fanin".equals(settings.mode) ? new ShareGroupTracker(settings.publishers) :
            null;
        final int[] layout = driverLayout(settings);
        final Driver[] drivers = drivers(settings, group, layout[0] + layout[1]);
        for (int i = 0; i < settings.subscribers; i++)
        {
            drivers[driverOf(settings, false, i)].add(new Client(i, false, SocketChannel.open(), settings));
        }
        for (int i = 0; i < settings.publishers; i++)
        {
            drivers[driverOf(settings, true, i)].add(new Client(i, true, SocketChannel.open(), settings));
        }
        final int total = settings.subscribers + settings.publishers;
        for (final Driver driver : drivers)
        {
            driver.dialer.share(driver.clients.size(), total);
        }
        final Thread[] threads = start(drivers);
        awaitReady(drivers, total);
        final Report report = new Report(settings, label);
        report.connected = countReady(drivers);
        final HistogramLogWriter log = null != out ?
            new HistogramLogWriter(out.resolve("latency.hlog").toFile()) : null;
        try (ProcSampler broker = pid > 0 ? new ProcSampler(pid) : null;
             ProcSampler self = new ProcSampler(ProcessHandle.current().pid()))
        {
            if (null != log)
            {
                log.outputLogFormatVersion();
                log.outputStartTime(System.currentTimeMillis());
                log.outputLegend();
            }
            if (settings.persistent())
            {
                takeSubscribersOffline(drivers);
            }
            final long startNs = System.nanoTime();
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.RUNNING, startNs);
            }
            final long endNs = startNs + settings.durationNs;
            final long backNs = startNs + settings.offlineNs;
            boolean back = !settings.persistent();
            long lastIntervalNs = startNs;
            final Progress progress = Progress.of(settings, label);
            while (System.nanoTime() < endNs)
            {
                final long wakeNs = back ? endNs : Math.min(endNs, backNs);
                Thread.sleep(Math.min(1000, Math.max(1, TimeUnit.NANOSECONDS.toMillis(wakeNs - System.nanoTime()))));
                if (!back && System.nanoTime() >= backNs)
                {
                    back = true;
                    for (final Driver driver : drivers)
                    {
                        driver.subscribersOnline(true); // persistent: they come back and must get what was queued
                    }
                }
                lastIntervalNs = writeInterval(log, lastIntervalNs, startNs, report, progress, drivers);
            }
            if (null != progress)
            {
                progress.finish();
            }
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.DRAINING, startNs);
            }
            report.publishSeconds = (System.nanoTime() - startNs) / 1e9;
            drain(drivers, settings);
            writeInterval(log, lastIntervalNs, startNs, report, null, drivers);
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.STOPPED, startNs);
            }
            awaitStopped(threads, STOP_TIMEOUT_MS);
            report.collect(drivers, group);
            if (null != broker && broker.isAvailable())
            {
                report.broker(broker.cpuSeconds(), broker.averageCpuPercent(), broker.peakCpuPercent(),
                    broker.peakRssMb(), pid);
            }
            report.generator(self.cpuSeconds(), self.averageCpuPercent());
        }
        finally
        {
            if (null != log)
            {
                log.close();
            }
        }
        return report;
    }

    private static void takeSubscribersOffline(final Driver[] drivers) throws InterruptedException
    {
        for (final Driver driver : drivers)
        {
            driver.subscribersOnline(false);
        }
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline)
        {
            boolean offline = true;
            for (final Driver driver : drivers)
            {
                for (final Client client : driver.clients)
                {
                    offline &= client.publisher || client.state == Client.State.CLOSED;
                }
            }
            if (offline)
            {
                return; // a message the broker still sends to a closing connection stays in flight and is resent
            }
            Thread.sleep(5);
        }
    }

    private long writeInterval(final HistogramLogWriter log, final long lastNs, final long startNs,
        final Report report, final Progress progress, final Driver[] drivers)
    {
        final long now = System.nanoTime();
        final Histogram interval = new Histogram(3); // the drivers' intervals, added up
        for (final Driver driver : drivers)
        {
            driver.deliveries.takeInterval(interval);
        }
        interval.setStartTimeStamp(TimeUnit.NANOSECONDS.toMillis(lastNs - startNs));
        interval.setEndTimeStamp(TimeUnit.NANOSECONDS.toMillis(now - startNs));
        report.interval((now - startNs) / 1e9, interval.getTotalCount() / Math.max(1e-9, (now - lastNs) / 1e9),
            interval.getTotalCount() > 0 ? interval.getValueAtPercentile(99) / 1000.0 : 0);
        if (null != log)
        {
            log.outputIntervalHistogram((lastNs - startNs) / 1e9, (now - lastNs) / 1e9, interval, 1000.0);
        }
        if (null != progress)
        {
            long published = 0;
            long unique = 0;
            for (final Driver driver : drivers)
            {
                published += driver.publishedCount;
                unique += driver.uniqueCount;
            }
            progress.update(now - startNs, published, unique, interval.getTotalCount(),
                interval.getTotalCount() > 0 ? interval.getValueAtPercentile(99) : 0);
        }
        return now;
    }

    /**
     * Waits until every publisher has sent what its schedule owes (or the grace ran out) and its final PINGREQ (or
     * QoS 1/2 window) is answered, then until deliveries stop.
     */
    private static void drain(final Driver[] drivers, final Settings settings) throws InterruptedException
    {
        final long deadline = System.nanoTime() + settings.lateGraceNs + settings.drainNs +
            TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline && !publishersSettled(drivers))
        {
            Thread.sleep(5);
        }
        long last = -1;
        long stableSince = System.nanoTime();
        final long settleDeadline = System.nanoTime() + settings.drainNs;
        while (System.nanoTime() < settleDeadline)
        {
            long received = 0;
            for (final Driver driver : drivers)
            {
                for (final Client client : driver.clients)
                {
                    received += client.received;
                }
            }
            if (received != last)
            {
                last = received;
                stableSince = System.nanoTime();
            }
            else if (System.nanoTime() - stableSince > TimeUnit.MILLISECONDS.toNanos(300))
            {
                return;
            }
            Thread.sleep(10);
        }
    }

    private static boolean publishersSettled(final Driver[] drivers)
    {
        for (final Driver driver : drivers)
        {
            if (!driver.publishers.done)
            {
                return false; // a publisher behind its schedule is still sending, within the grace
            }
            for (final Client client : driver.clients)
            {
                if (client.publisher && client.state == Client.State.READY &&
                    (client.pingsOutstanding > 0 || client.inflight > 0))
                {
                    return false;
                }
            }
        }
        return true;
    }

    Report.Level runConnections(final int level, final long pid) throws Exception
    {
        final Driver[] drivers = drivers(settings, null, settings.threads);
        for (int i = 0; i < level; i++)
        {
            drivers[i % drivers.length].add(new Client(i, false, SocketChannel.open(), settings));
        }
        try (ProcSampler broker = pid > 0 ? new ProcSampler(pid) : null)
        {
            final Thread[] threads = start(drivers);
            awaitReady(drivers, level);
            final int established = countReady(drivers);
            if (settings.pingIntervalNs > 0)
            {
                // what dialing built (a client's state, its socket) is old before the hold starts: a young
                // collection that copied it during the hold would stall this process's pings, not the broker's
                System.gc();
                final long holdStartNs = System.nanoTime();
                for (final Driver driver : drivers)
                {
                    driver.phase(Driver.RUNNING, holdStartNs); // held connections ping through the hold
                }
            }
            Thread.sleep(TimeUnit.NANOSECONDS.toMillis(settings.holdNs));
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.DRAINING, System.nanoTime());
            }
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            int alive = 0;
            while (System.nanoTime() < deadline)
            {
                alive = 0;
                for (final Driver driver : drivers)
                {
                    for (final Client client : driver.clients)
                    {
                        alive += client.pingsAnswered > 0 ? 1 : 0;
                    }
                }
                if (alive >= established)
                {
                    break;
                }
                Thread.sleep(20);
            }
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.STOPPED, 0);
            }
            awaitStopped(threads, STOP_TIMEOUT_MS);
            final Histogram connect = new Histogram(3);
            final Histogram ping = new Histogram(3);
            int failed = 0;
            for (final Driver driver : drivers)
            {
                connect.add(driver.dialer.connectTime);
                ping.add(driver.pings.pingTime);
                failed += driver.failed;
            }
            double dialSeconds = 0;
            for (final Driver driver : drivers)
            {
                dialSeconds = Math.max(dialSeconds, driver.dialer.dialSeconds());
            }
            return new Report.Level(level, established, level - established, alive, connect, ping,
                null != broker && broker.isAvailable() ? broker.peakRssMb() : -1, dialSeconds);
        }
    }

    /**
     * @return the message modes' drivers: {subscriber drivers, publisher drivers}. Subscribers go on {@code -threads}
     * drivers that wake on every delivery, publishers on {@code -pub-threads} more that keep time (never more
     * drivers than publishers).
     */
    static int[] driverLayout(final Settings settings)
    {
        return new int[] {settings.subscribers > 0 ? settings.threads : 0,
            Math.max(1, Math.min(settings.pubThreads, settings.publishers))};
    }

    /**
     * @return the driver that runs subscriber or publisher {@code index}: round-robin within its kind's drivers.
     */
    static int driverOf(final Settings settings, final boolean publisher, final int index)
    {
        final int[] layout = driverLayout(settings);
        return publisher ? layout[0] + index % layout[1] : index % layout[0];
    }

    private static Driver[] drivers(final Settings settings, final ShareGroupTracker group, final int count)
        throws IOException
    {
        final Driver[] drivers = new Driver[count];
        for (int i = 0; i < drivers.length; i++)
        {
            drivers[i] = new Driver(settings, group, count);
        }
        return drivers;
    }

    private static Thread[] start(final Driver[] drivers)
    {
        final Thread[] threads = new Thread[drivers.length];
        for (int i = 0; i < drivers.length; i++)
        {
            threads[i] = new Thread(drivers[i], "loadtest-io-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
        return threads;
    }

    /**
     * Waits, {@code timeoutMs} in all, for the driver threads told to stop; the report reads their histograms and
     * counts next, which is only sound once they have ended (HdrHistogram and the counts are single-threaded).
     *
     * @throws IOException when one is still running: a run whose figures cannot be read is failed, not reported.
     */
    static void awaitStopped(final Thread[] threads, final long timeoutMs) throws IOException, InterruptedException
    {
        final long deadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (final Thread thread : threads)
        {
            thread.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNs - System.nanoTime())));
        }
        for (final Thread thread : threads)
        {
            if (thread.isAlive())
            {
                for (final Thread each : threads)
                {
                    each.interrupt(); // a selector wakes on it; the daemon threads end with the process at the latest
                }
                throw new IOException(thread.getName() + " did not stop within " + timeoutMs + " ms of the end of the run: " +
                    "its figures would be read while it still writes them, so the run is failed (the thread may go on " +
                    "taking CPU from later runs of this process)");
            }
        }
    }

    private static void awaitReady(final Driver[] drivers, final int total) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline)
        {
            int done = 0;
            for (final Driver driver : drivers)
            {
                done += driver.ready + driver.failed;
            }
            if (done >= total)
            {
                return;
            }
            Thread.sleep(5);
        }
    }

    private static int countReady(final Driver[] drivers)
    {
        int ready = 0;
        for (final Driver driver : drivers)
        {
            ready += driver.ready;
        }
        return ready;
    }
}
