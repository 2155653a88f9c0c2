package io.ringmq.loadtest;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * The load generator: {@code java -jar loadtest/target/loadtest.jar -addr HOST:PORT -mode pubsub ...}. It
 * accepts the reference report's flags as written (single dash) and their double-dash forms.
 */
@Command(name = "loadtest", mixinStandardHelpOptions = true, sortOptions = false, usageHelpAutoWidth = true,
    version = "loadtest 0.1.0-SNAPSHOT", subcommands = {Matrix.class, CrashLoss.class},
    description = "MQTT load generator with per-message latency (HdrHistogram), on ringmq's own codec.")
public final class LoadTest implements Callable<Integer>
{
    @Option(names = {"-addr", "--addr"}, paramLabel = "HOST:PORT", description = "Broker address (default: ${DEFAULT-VALUE}).")
    String addr = "127.0.0.1:1883";

    @Option(names = {"-sub-addr", "--sub-addr"}, paramLabel = "HOST:PORT", description = "Subscribers connect here "
        + "instead of -addr: another broker, which a bridge feeds from the publishers' (default: -addr).")
    String subAddr;

    @Option(names = {"-user", "--user"}, description = "User name for every connection.")
    String user;

    @Option(names = {"-pass", "--pass"}, description = "Password for every connection (shows in 'ps': prefer "
        + "-pass-file or -pass-env).")
    String pass;

    @picocli.CommandLine.Mixin
    PasswordSources passwords = new PasswordSources();

    @Option(names = {"-tls", "--tls"}, description = "Connect over TLS (implied by the other TLS options); the "
        + "connect times then include the handshake.")
    boolean tls;

    @Option(names = {"-cafile", "--cafile"}, paramLabel = "FILE", description = "TLS: PEM CA certificate(s) to trust "
        + "(default: the JDK's trust store); the broker's certificate must also name the -addr host or address.")
    Path caFile;

    @Option(names = {"-insecure", "--insecure"}, description = "TLS: trust any server certificate and skip the host "
        + "name check (self-signed test brokers).")
    boolean insecure;

    @Option(names = {"-cert", "--cert"}, paramLabel = "FILE", description = "TLS: PEM client certificate (with -key).")
    Path certFile;

    @Option(names = {"-key", "--key"}, paramLabel = "FILE", description = "TLS: the client certificate's PEM private "
        + "key, unencrypted (PKCS#8 or RSA).")
    Path keyFile;

    @Option(names = {"-tls-version", "--tls-version"}, paramLabel = "tlsv1.2|tlsv1.3", description = "TLS: the only "
        + "protocol version to offer (default: both).")
    String tlsVersion;

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

    @Option(names = {"-clean", "--clean"}, arity = "1", paramLabel = "true|false", description = "Clean session "
        + "(3.1.1) / Clean Start (5.0) for every connection; false keeps each session after its connection, so a "
        + "subscriber's QoS 1/2 messages are kept, and persisted by a durable broker (default: true; persistent: false).")
    Boolean clean;

    @Option(names = {"-session-expiry", "--session-expiry"}, paramLabel = "SECONDS", description = "MQTT 5.0 with "
        + "-clean false: the Session Expiry Interval (default: ${DEFAULT-VALUE}).")
    int sessionExpiry = Client.SESSION_EXPIRY_S;

    @Option(names = {"-share-group", "--share-group"}, description = "fanin: the shared subscription group (default: ${DEFAULT-VALUE}).")
    String shareGroup = "g";

    @Option(names = {"-topic-prefix", "--topic-prefix"}, description = "Publisher i publishes on PREFIX/i; subscribers "
        + "take PREFIX/#, PREFIX/i or $share/GROUP/PREFIX/# (default: ${DEFAULT-VALUE}).")
    String topicPrefix = "loadtest";

    @Option(names = {"-hold", "--hold"}, description = "conn: how long to hold each level (default: ${DEFAULT-VALUE}).")
    String hold = "3s";

    @Option(names = {"-ping-interval", "--ping-interval"}, paramLabel = "DURATION",
        description = "conn: every held connection sends a PINGREQ this often during the hold, the connections "
            + "spread evenly over the interval (a keep-alive's traffic), and the PINGREQ figures are those pings'; "
            + "0: only the check at the end of the hold, all at once (default: ${DEFAULT-VALUE}).")
    String pingInterval = "0";

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

    @Option(names = {"-rate", "--rate"}, description = "Messages/s per publisher: each sends exactly rate x duration "
        + "messages, rounded down (-rate 3 -duration 2.5s: 7), the k-th due k/rate after its start and stamped with "
        + "that time; one that falls behind sends the rest late for up to " + Settings.LATE_GRACE_S + " s after "
        + "the end, and the summary counts what it could not send; 0 floods, paced on the broker's answers (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(names = {"-duration", "--duration"}, description = "How long to publish; with -rate, what sets the "
        + "count (default: ${DEFAULT-VALUE}).")
    String duration = "10s";

    @Option(names = {"-inflight", "--inflight"}, description = "QoS 1/2 messages in flight per publisher; 1 is a synchronous client (default: ${DEFAULT-VALUE}).")
    int inflight = 32;

    @Option(names = {"-threads", "--threads"}, description = "Generator I/O threads: the subscribers' in message "
        + "modes, every connection's in conn modes (default: ${DEFAULT-VALUE}).")
    int threads = 1;

    @Option(names = {"-pub-threads", "--pub-threads"}, description = "Threads the publishers are spread over, beside "
        + "the subscribers' -threads; one reached 4-5 M QoS 0 msg/s of 64 B at most (default: ${DEFAULT-VALUE}).")
    int pubThreads = 1;

    @Option(names = {"-source-ips", "--source-ips"}, description = "Spread connections over 127.0.0.1..N (default: ${DEFAULT-VALUE}).")
    int sourceIps = 1;

    @Option(names = {"-broker-pid", "--broker-pid"}, description = "Broker process to sample; found by the port when omitted.")
    long brokerPid = -1;

    @Option(names = {"-out", "--out"}, description = "Folder for latency.hgrm, latency.hlog, summary.json, summary.md, "
        + "summary.html and SVG plots.")
    Path out;

    @Option(names = {"-quiet", "--quiet"}, description = "No progress line on standard error (runs over 3 s print one "
        + "each second).")
    boolean quiet;

    @Option(names = {"-warmup", "--warmup"}, paramLabel = "DURATION", description = "First run the same scenario "
        + "for this long in this process, unreported, so the generator's JIT (TLS's ciphers too) and the broker are "
        + "warm when the measured run starts; conn modes run their levels once more.")
    String warmup;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = {"-label", "--label"}, description = "A name for this run in the report (e.g. the broker).")
    String label = "";

    public Integer call() throws Exception
    {
        if (null != warmup)
        {
            warmUp();
        }
        final Report report = execute();
        report.print(System.out);
        System.out.println(report.json());
        return 0;
    }

    /**
     * {@code -warmup}: the same command line with {@code -duration} set to the warm-up's, quiet, writing nothing.
     */
    private void warmUp() throws Exception
    {
        parseDurationNs(warmup, "-warmup");
        final List<String> args = new java.util.ArrayList<>(spec.commandLine().getParseResult().originalArgs());
        for (int i = 0; i < args.size(); i++)
        {
            if (args.get(i).matches("--?(out|warmup)") && i + 1 < args.size())
            {
                args.remove(i + 1);
                args.remove(i--);
            }
            else if (args.get(i).matches("--?(out|warmup)=.*"))
            {
                args.remove(i--);
            }
        }
        args.addAll(List.of("-duration", warmup, "-quiet"));
        final LoadTest warm = new LoadTest();
        new CommandLine(warm).setOverwrittenOptionsAllowed(true).parseArgs(args.toArray(new String[0]));
        warm.execute();
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
        final ScenarioRunner runner = new ScenarioRunner(settings, out, label);
        final Report report;
        if (settings.connectionsOnly())
        {
            report = new Report(settings, label);
            for (final int level : "conn-rate".equals(settings.mode) ? new int[]{total} : settings.levels)
            {
                report.levels.add(runner.runConnections(level, pid));
            }
        }
        else
        {
            report = runner.runMessages(pid);
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
            final Map<String, Report> reports = Map.of(label.isEmpty() ? "broker" : label, report);
            final String markdown = summaryMarkdown(report, reports, Plots.write(out, "", reports));
            Files.writeString(out.resolve("summary.md"), markdown, StandardCharsets.UTF_8);
            HtmlReport.write(out, "summary.html", "loadtest " + settings.mode + (label.isEmpty() ? "" : " " + label),
                markdown);
        }
        return report;
    }

    /**
     * @return one run's summary in Markdown: the command, the table the matrix report would show, the printed
     * summary, and the plots.
     */
    private String summaryMarkdown(final Report report, final Map<String, Report> reports, final List<String> plots)
    {
        final ByteArrayOutputStream text = new ByteArrayOutputStream();
        report.print(new PrintStream(text, true, StandardCharsets.UTF_8));
        final StringBuilder md = new StringBuilder();
        md.append("# loadtest ").append(report.settings.mode).append(label.isEmpty() ? "" : " " + label).append("\n\n");
        md.append(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss", Locale.ROOT)))
            .append(" against ").append(addr).append(null == subAddr ? "" : ", subscribers on " + subAddr)
            .append("\n\n");
        md.append(Matrix.table(reports)).append('\n');
        md.append("```\n").append(text.toString(StandardCharsets.UTF_8)).append("```\n\n");
        for (final String plot : plots)
        {
            md.append("![").append(plot).append("](").append(plot).append(")\n");
        }
        return md.toString();
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
        settings.subHost = settings.host;
        settings.subPort = settings.port;
        if (null != subAddr)
        {
            final int subColon = subAddr.lastIndexOf(':');
            if (subColon <= 0)
            {
                throw new IllegalArgumentException("-sub-addr must be HOST:PORT");
            }
            settings.subHost = subAddr.substring(0, subColon);
            settings.subPort = parseInt(subAddr.substring(subColon + 1), "-sub-addr port");
        }
        settings.user = user;
        settings.pass = passwords.password(pass);
        if (tls || null != caFile || null != certFile || null != keyFile || insecure || null != tlsVersion)
        {
            try
            {
                settings.tls = TlsClientContext.of(caFile, certFile, keyFile, insecure, tlsVersion);
            }
            catch (final IOException ex)
            {
                throw new IllegalArgumentException(ex.getMessage(), ex);
            }
        }
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
        if (topicPrefix.isEmpty() || topicPrefix.contains("+") || topicPrefix.contains("#") ||
            topicPrefix.startsWith("$"))
        {
            throw new IllegalArgumentException("-topic-prefix must be a topic name without wildcards or a leading $");
        }
        settings.topicPrefix = topicPrefix;
        settings.progress = !quiet;
        if ("conn-rate".equals(settings.mode))
        {
            settings.connRate = positive(connRate, "-conn-rate");
            positive(total, "-total");
        }
        settings.levels = levels;
        settings.holdNs = parseDurationNs(hold, "-hold");
        settings.pingIntervalNs = "0".equals(pingInterval) ? 0 : parseDurationNs(pingInterval, "-ping-interval");
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
        if (settings.persistent() && Boolean.TRUE.equals(clean))
        {
            throw new IllegalArgumentException("-clean true contradicts -mode persistent (its sessions outlive their "
                + "connections)");
        }
        settings.cleanSession = settings.persistent() ? false : null == clean || clean;
        if (sessionExpiry < 0)
        {
            throw new IllegalArgumentException("-session-expiry must be >= 0 seconds");
        }
        settings.sessionExpiryS = sessionExpiry;
        settings.inflight = positive(inflight, "-inflight");
        settings.threads = positive(threads, "-threads");
        settings.pubThreads = positive(pubThreads, "-pub-threads");
        settings.sourceAddresses = positive(sourceIps, "-source-ips");
        for (final int level : levels)
        {
            positive(level, "-levels");
        }
        return settings;
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
