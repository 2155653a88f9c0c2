package io.ringmq.loadtest;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;
import org.HdrHistogram.Recorder;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * The load generator: {@code java -jar loadtest/target/loadtest.jar -addr HOST:PORT -mode pubsub ...}. It
 * accepts the reference report's flags as written (single dash) and their double-dash forms.
 */
@Command(name = "loadtest", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
    version = "loadtest 0.1.0-SNAPSHOT", subcommands = Matrix.class,
    description = "MQTT load generator with per-message latency (HdrHistogram), on ringmq's own codec.")
public final class LoadTest implements Callable<Integer>
{
    @Option(names = {"-addr", "--addr"}, paramLabel = "HOST:PORT", description = "Broker address (default: ${DEFAULT-VALUE}).")
    String addr = "127.0.0.1:1883";

    @Option(names = {"-user", "--user"}, description = "User name for every connection.")
    String user;

    @Option(names = {"-pass", "--pass"}, description = "Password for every connection.")
    String pass;

    @Option(names = {"-protocol", "--protocol"}, description = "3.1.1 or 5 (default: ${DEFAULT-VALUE}).")
    String protocol = "3.1.1";

    @Option(names = {"-mode", "--mode"}, description = "conn, conn-rate, pub, pubsub, fanin, p2p or persistent "
        + "(default: ${DEFAULT-VALUE}).")
    String mode = "pubsub";

    @Option(names = {"-levels", "--levels"}, split = ",", description = "conn: connection counts to try in turn.")
    int[] levels = {1000};

    @Option(names = {"-conn-rate", "--conn-rate"}, description = "conn-rate: connections opened per second.")
    int connRate = 1000;

    @Option(names = {"-total", "--total"}, description = "conn-rate: connections to open in all.")
    int total = 10_000;

    @Option(names = {"-offline", "--offline"}, description = "persistent: how long subscribers stay away "
        + "(default: half the duration).")
    String offline;

    @Option(names = {"-share-group", "--share-group"}, description = "fanin: the shared subscription group (default: ${DEFAULT-VALUE}).")
    String shareGroup = "g";

    @Option(names = {"-hold", "--hold"}, description = "conn: how long to hold each level (default: ${DEFAULT-VALUE}).")
    String hold = "3s";

    @Option(names = {"-dial-concurrency", "--dial-concurrency"}, description = "Dials in progress at once (default: ${DEFAULT-VALUE}).")
    int dialConcurrency = 200;

    @Option(names = {"-pubs", "--pubs"}, description = "Publishers (default: ${DEFAULT-VALUE}).")
    int pubs = 10;

    @Option(names = {"-subs", "--subs"}, description = "Subscribers, each receiving every publisher (default: ${DEFAULT-VALUE}).")
    int subs = 10;

    @Option(names = {"-qos", "--qos"}, description = "0, 1 or 2 (default: ${DEFAULT-VALUE}).")
    int qos;

    @Option(names = {"-payload", "--payload"}, description = "Payload bytes, at least 16 (default: ${DEFAULT-VALUE}).")
    int payload = 64;

    @Option(names = {"-rate", "--rate"}, description = "Messages/s per publisher; 0 floods, paced on the broker's answers (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = {"-duration", "--duration"}, description = "How long to publish (default: ${DEFAULT-VALUE}).")
    String duration = "10s";

    @Option(names = {"-inflight", "--inflight"}, description = "QoS 1/2 messages in flight per publisher; 1 is a synchronous client (default: ${DEFAULT-VALUE}).")
    int inflight = 32;

    @Option(names = {"-threads", "--threads"}, description = "Generator I/O threads (default: ${DEFAULT-VALUE}).")
    int threads = 1;

    @Option(names = {"-source-ips", "--source-ips"}, description = "Spread connections over 127.0.0.1..N (default: ${DEFAULT-VALUE}).")
    int sourceIps = 1;

    @Option(names = {"-broker-pid", "--broker-pid"}, description = "Broker process to sample; found by the port when omitted.")
    long brokerPid = -1;

    @Option(names = {"-out", "--out"}, description = "Folder for latency.hgrm, latency.hlog and summary.json.")
    Path out;

    @Option(names = {"-label", "--label"}, description = "A name for this run in the report (e.g. the broker).")
    String label = "";

    public Integer call() throws Exception
    {
        final Report report = execute();
        report.print(System.out);
        System.out.println(report.json());
        return 0;
    }

    /**
     * Runs the scenario the options describe and writes its files when {@code -out} is set.
     */
    Report execute() throws Exception
    {
        final Settings settings = settings();
        if (null != out)
        {
            Files.createDirectories(out);
        }
        final long pid = brokerPid > 0 ? brokerPid : ProcSampler.findListener(settings.port);
        final Report report;
        if (settings.connectionsOnly())
        {
            report = new Report(settings, label);
            for (final int level : "conn-rate".equals(settings.mode) ? new int[]{total} : settings.levels)
            {
                report.levels.add(runConnections(settings, level, pid));
            }
        }
        else
        {
            report = runMessages(settings, pid);
        }
        if (null != out)
        {
            Files.writeString(out.resolve("summary.json"), report.json() + "\n");
            if (null != report.latency)
            {
                try (PrintStream hgrm = new PrintStream(out.resolve("latency.hgrm").toFile()))
                {
                    report.latency.outputPercentileDistribution(hgrm, 1000.0); // microseconds
                }
            }
            Plots.write(out, "", java.util.Map.of(label.isEmpty() ? "broker" : label, report));
        }
        return report;
    }

    Settings settings()
    {
        final Settings settings = new Settings();
        final int colon = addr.lastIndexOf(':');
        if (colon <= 0)
        {
            throw new IllegalArgumentException("-addr must be HOST:PORT");
        }
        settings.host = addr.substring(0, colon);
        settings.port = parseInt(addr.substring(colon + 1), "-addr port");
        settings.user = user;
        settings.pass = pass;
        settings.version = switch (protocol)
        {
            case "3.1.1", "4" -> 4;
            case "5", "5.0" -> 5;
            default -> throw new IllegalArgumentException("-protocol must be 3.1.1 or 5");
        };
        settings.mode = mode.toLowerCase(Locale.ROOT);
        if (!List.of("conn", "conn-rate", "pub", "pubsub", "fanin", "p2p", "persistent").contains(settings.mode))
        {
            throw new IllegalArgumentException("-mode must be conn, conn-rate, pub, pubsub, fanin, p2p or persistent");
        }
        settings.shareGroup = shareGroup;
        if ("conn-rate".equals(settings.mode))
        {
            settings.connRate = positive(connRate, "-conn-rate");
            positive(total, "-total");
        }
        settings.levels = levels;
        settings.holdNs = parseDurationNs(hold, "-hold");
        settings.dialConcurrency = positive(dialConcurrency, "-dial-concurrency");
        settings.publishers = settings.connectionsOnly() ? 0 : positive(pubs, "-pubs");
        switch (settings.mode)
        {
            case "pubsub":
            case "fanin": settings.subscribers = positive(subs, "-subs"); break;
            case "p2p":
            case "persistent": settings.subscribers = settings.publishers; break; // pairs
            default: settings.subscribers = 0;
        }
        if (qos < 0 || qos > 2)
        {
            throw new IllegalArgumentException("-qos must be 0, 1 or 2");
        }
        settings.qos = qos;
        if (payload < Client.STAMP_LENGTH)
        {
            throw new IllegalArgumentException("-payload must be at least " + Client.STAMP_LENGTH +
                " (the per-message stamp)");
        }
        settings.payload = payload;
        if (rate < 0)
        {
            throw new IllegalArgumentException("-rate must be >= 0");
        }
        settings.rate = rate;
        settings.durationNs = parseDurationNs(duration, "-duration");
        settings.offlineNs = null != offline ? parseDurationNs(offline, "-offline") : settings.durationNs / 2;
        if (settings.persistent() && qos == 0)
        {
            settings.qos = 1; // only QoS 1 and 2 are kept for an offline session
        }
        settings.inflight = positive(inflight, "-inflight");
        settings.threads = positive(threads, "-threads");
        settings.sourceAddresses = positive(sourceIps, "-source-ips");
        for (final int level : levels)
        {
            positive(level, "-levels");
        }
        return settings;
    }

    private Report runMessages(final Settings settings, final long pid) throws Exception
    {
        final Recorder intervals = new Recorder(3);
        // subscribers on -threads drivers that wake on every delivery; publishers on one more that keeps time
        final Driver[] drivers = drivers(settings, intervals, settings.subscribers > 0 ? settings.threads + 1 : 1);
        final int subscriberDrivers = drivers.length - 1;
        for (int i = 0; i < settings.subscribers; i++)
        {
            drivers[i % subscriberDrivers].add(new Client(i, false, SocketChannel.open(), settings));
        }
        for (int i = 0; i < settings.publishers; i++)
        {
            drivers[drivers.length - 1].add(new Client(i, true, SocketChannel.open(), settings));
        }
        final Thread[] threads = start(drivers);
        final int total = settings.subscribers + settings.publishers;
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
                lastIntervalNs = writeInterval(intervals, log, lastIntervalNs, startNs, report);
            }
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.DRAINING, startNs);
            }
            report.publishSeconds = (System.nanoTime() - startNs) / 1e9;
            drain(drivers, settings);
            writeInterval(intervals, log, lastIntervalNs, startNs, report);
            for (final Driver driver : drivers)
            {
                driver.phase(Driver.STOPPED, startNs);
            }
            for (final Thread thread : threads)
            {
                thread.join(10_000);
            }
            report.collect(drivers);
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
                Thread.sleep(200); // let the broker see the DISCONNECTs before anything is published
                return;
            }
            Thread.sleep(5);
        }
    }

    private long writeInterval(final Recorder intervals, final HistogramLogWriter log, final long lastNs,
        final long startNs, final Report report)
    {
        final long now = System.nanoTime();
        final Histogram interval = intervals.getIntervalHistogram();
        interval.setStartTimeStamp(TimeUnit.NANOSECONDS.toMillis(lastNs - startNs));
        interval.setEndTimeStamp(TimeUnit.NANOSECONDS.toMillis(now - startNs));
        report.interval((now - startNs) / 1e9, interval.getTotalCount() / Math.max(1e-9, (now - lastNs) / 1e9),
            interval.getTotalCount() > 0 ? interval.getValueAtPercentile(99) / 1000.0 : 0);
        if (null != log)
        {
            log.outputIntervalHistogram((lastNs - startNs) / 1e9, (now - lastNs) / 1e9, interval, 1000.0);
        }
        return now;
    }

    /**
     * Waits until every publisher's final PINGREQ (or QoS 1/2 window) is answered, then until deliveries stop.
     */
    private static void drain(final Driver[] drivers, final Settings settings) throws InterruptedException
    {
        final long deadline = System.nanoTime() + settings.drainNs + TimeUnit.SECONDS.toNanos(10);
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

    private Report.Level runConnections(final Settings settings, final int level, final long pid) throws Exception
    {
        final Driver[] drivers = drivers(settings, new Recorder(3), settings.threads);
        for (int i = 0; i < level; i++)
        {
            drivers[i % drivers.length].add(new Client(i, false, SocketChannel.open(), settings));
        }
        try (ProcSampler broker = pid > 0 ? new ProcSampler(pid) : null)
        {
            final Thread[] threads = start(drivers);
            awaitReady(drivers, level);
            final int established = countReady(drivers);
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
            for (final Thread thread : threads)
            {
                thread.join(10_000);
            }
            final Histogram connect = new Histogram(3);
            int failed = 0;
            for (final Driver driver : drivers)
            {
                connect.add(driver.connectTime);
                failed += driver.failed;
            }
            double dialSeconds = 0;
            for (final Driver driver : drivers)
            {
                dialSeconds = Math.max(dialSeconds, driver.dialSeconds());
            }
            return new Report.Level(level, established, level - established, alive, connect,
                null != broker && broker.isAvailable() ? broker.peakRssMb() : -1, dialSeconds);
        }
    }

    private static Driver[] drivers(final Settings settings, final Recorder intervals, final int count)
        throws IOException
    {
        final Driver[] drivers = new Driver[count];
        for (int i = 0; i < drivers.length; i++)
        {
            drivers[i] = new Driver(settings, intervals);
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

    static long parseDurationNs(final String text, final String option)
    {
        final String value = text.strip().toLowerCase(Locale.ROOT);
        try
        {
            if (value.endsWith("ms"))
            {
                return TimeUnit.MILLISECONDS.toNanos(Long.parseLong(value.substring(0, value.length() - 2)));
            }
            if (value.endsWith("s"))
            {
                return (long)(Double.parseDouble(value.substring(0, value.length() - 1)) * 1e9);
            }
            if (value.endsWith("m"))
            {
                return TimeUnit.MINUTES.toNanos(Long.parseLong(value.substring(0, value.length() - 1)));
            }
        }
        catch (final NumberFormatException ignore)
        {
            // reported below
        }
        throw new IllegalArgumentException(option + ": cannot read duration '" + text + "' (e.g. 10s, 500ms, 2m)");
    }

    private static int parseInt(final String text, final String option)
    {
        try
        {
            return Integer.parseInt(text);
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException(option + ": not a number: '" + text + "'");
        }
    }

    private static int positive(final int value, final String option)
    {
        if (value < 1)
        {
            throw new IllegalArgumentException(option + " must be at least 1");
        }
        return value;
    }

    public static void main(final String[] args)
    {
        System.exit(run(args));
    }

    static int run(final String... args)
    {
        final CommandLine commandLine = new CommandLine(new LoadTest());
        commandLine.setExecutionExceptionHandler((ex, cmd, parseResult) ->
        {
            cmd.getErr().println("loadtest: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        return commandLine.execute(args);
    }
}
