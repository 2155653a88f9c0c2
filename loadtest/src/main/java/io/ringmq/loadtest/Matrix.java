package io.ringmq.loadtest;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;

/**
 * {@code loadtest matrix FILE}: for every scenario of a bench matrix and every broker named, starts the broker
 * fresh, runs the scenario, stops the broker ({@code --rounds N}: N times, the brokers taking turns, each broker's
 * median run reported), and writes a dated report folder: {@code report.md} with the brokers
 * side by side per scenario (and {@code report.html}, the same with the plots embedded), each run's histograms and
 * summary, and SVG plots. An optional peer that is not installed here (FlashMQ) is skipped, with a note in the
 * report, and the other brokers still run.
 */
@Command(name = "matrix", mixinStandardHelpOptions = true,
    description = "Run a bench matrix (JSON) against several brokers and write a side-by-side report.")
final class Matrix implements Callable<Integer>
{
    @Parameters(paramLabel = "FILE", description = "A matrix file from bench-configs/.")
    Path file;

    @Option(names = "--brokers", split = ",", description = "Brokers to run, overriding the file's list.")
    List<String> brokers;

    @Option(names = "--only", split = ",", description = "Run only these scenarios (by name).")
    List<String> only;

    @Option(names = "--out", description = "Where dated report folders go (default: ${DEFAULT-VALUE}).")
    Path out = Path.of("bench-results");

    @Option(names = {"--quiet", "-quiet"}, description = "No progress lines on standard error.")
    boolean quiet;

    @Option(names = "--rounds", description = "Run every scenario this many times per broker, the brokers taking " +
        "turns within each round (A B A B ...), and report each broker's median run (default: ${DEFAULT-VALUE}).")
    int rounds = 1;

    @Option(names = "--ringmq-jar", description = "The ringmq jar (default: ${DEFAULT-VALUE}).")
    Path ringmqJar = Path.of("transport/target/ringmq.jar");

    @Spec
    CommandSpec spec;

    /** Where an optional peer (FlashMQ: {@code FLASHMQ_BIN}, {@code PATH}) is looked for; a test gives its own. */
    Map<String, String> env = System.getenv();

    @SuppressWarnings("unchecked")
    public Integer call() throws Exception
    {
        if (rounds < 1 || rounds > 100)
        {
            throw new CommandLine.ParameterException(null != spec ? spec.commandLine() : new CommandLine(this),
                "--rounds must be 1 to 100, not " + rounds);
        }
        final Map<String, Object> matrix = (Map<String, Object>)Json.parse(Files.readString(file));
        final String name = (String)matrix.getOrDefault("name", file.getFileName().toString());
        final List<String> brokerNames = null != brokers ? brokers : (List<String>)(List<?>)matrix.get("brokers");
        final Map<String, String> commands = (Map<String, String>)(Map<?, ?>)matrix.getOrDefault("commands",
            Map.of());
        final List<String> ringmqArgs = split((String)matrix.getOrDefault("ringmqArgs", ""));
        final String flashmqConfig = (String)matrix.getOrDefault("flashmqConfig", "");
        final String warmup = (String)matrix.getOrDefault("warmup", "");
        final Path folder = out.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd_HHmm")) +
            "-" + name);
        Files.createDirectories(folder);
        final StringBuilder md = new StringBuilder();
        md.append("# ").append(name).append("\n\n");
        md.append(String.format(Locale.ROOT, "%s; %d cores; Java %s; generator and brokers on the same machine " +
            "(loopback). Command: `java -jar loadtest/target/loadtest.jar matrix %s%s`%n%n",
            LocalDateTime.now().format(DateTimeFormatter.ISO_LOCAL_DATE_TIME), Runtime.getRuntime().availableProcessors(),
            System.getProperty("java.version"), file, rounds > 1 ? " --rounds " + rounds : ""));
        for (final Object entry : (List<Object>)matrix.get("scenarios"))
        {
            final Map<String, Object> scenario = (Map<String, Object>)entry;
            final String scenarioName = (String)scenario.get("name");
            if (null != only && !only.contains(scenarioName))
            {
                continue;
            }
            final List<String> args = split((String)scenario.get("args"));
            // a scenario's own "commands" (Mosquitto with persistence for persistent sessions) win over the file's
            final Map<String, String> scenarioCommands = new LinkedHashMap<>(commands);
            scenarioCommands.putAll((Map<String, String>)(Map<?, ?>)scenario.getOrDefault("commands", Map.of()));
            md.append("## ").append(scenarioName).append("\n\n");
            if (scenario.containsKey("title"))
            {
                md.append(scenario.get("title")).append("\n\n");
            }
            final boolean warms = !warmup.isBlank() && !args.contains("conn") && !args.contains("conn-rate");
            md.append("`").append(String.join(" ", args)).append("`").append(!warms ? "" :
                " (after a " + warmup + " warm-up run of the same scenario on the same broker process)").append("\n\n");
            // state on disk for the brokers the runner configures itself (FlashMQ), when the scenario asks
            final boolean persistence = Boolean.TRUE.equals(scenario.get("persistence"));
            final Map<String, List<Report>> runs = new LinkedHashMap<>();
            final List<String> failures = new ArrayList<>();
            final List<String> skipped = new ArrayList<>();
            final List<String> present = new ArrayList<>();
            for (final String broker : brokerNames)
            {
                final Optional<String> missing = BrokerProcess.unavailable(broker, scenarioCommands, env);
                if (missing.isPresent())
                {
                    // an optional peer that is not installed: the other brokers still run
                    skipped.add(broker + " (" + missing.get() + ")");
                    System.out.println("== " + scenarioName + " on " + broker + ": skipped, " + missing.get());
                }
                else
                {
                    present.add(broker);
                }
            }
            for (final String broker : present)
            {
                runs.put(broker, new ArrayList<>()); // the brokers' order, whichever succeeds first
            }
            for (int round = 1; round <= rounds; round++)
            {
                for (final String broker : present)
                {
                    final String run = rounds > 1 ? broker + " (round " + round + ")" : broker;
                    final Path runFolder = rounds > 1 ?
                        folder.resolve(scenarioName).resolve(broker).resolve("round-" + round) :
                        folder.resolve(scenarioName).resolve(broker);
                    System.out.println("== " + scenarioName + " on " + run);
                    try
                    {
                        runs.get(broker).add(runOnce(broker, args, warms, runFolder, scenarioCommands, ringmqArgs,
                            persistence, flashmqConfig, warmup));
                    }
                    catch (final Exception ex)
                    {
                        runs.get(broker).add(null); // a failed round keeps its place in the rounds line
                        failures.add(run + ": " + ex.getMessage());
                        System.out.println("   failed: " + ex.getMessage());
                    }
                }
            }
            final Map<String, Report> reports = medians(runs);
            md.append(table(reports));
            if (rounds > 1)
            {
                md.append(roundsLine(runs));
            }
            for (final Map.Entry<String, List<Report>> broker : runs.entrySet())
            {
                for (int i = 0; i < broker.getValue().size(); i++)
                {
                    final Report run = broker.getValue().get(i);
                    final String problems = null == run ? "" : run.problems();
                    if (!problems.isEmpty())
                    {
                        md.append("\n- ").append(broker.getKey()).append(rounds > 1 ? " (round " + (i + 1) + ")" : "")
                            .append(": ").append(problems).append('\n');
                    }
                }
            }
            for (final String failure : failures)
            {
                md.append("\n- failed: ").append(failure).append('\n');
            }
            for (final String skip : skipped)
            {
                md.append("\n- skipped: ").append(skip).append('\n');
            }
            for (final String plot : Plots.write(folder, scenarioName + "-", reports))
            {
                md.append("\n![").append(plot).append("](").append(plot).append(")");
            }
            md.append('\n');
            md.append('\n');
            Files.writeString(folder.resolve("report.md"), md.toString(), StandardCharsets.UTF_8);
            HtmlReport.write(folder, "report.html", name, md.toString());
        }
        System.out.println("report: " + folder.resolve("report.md") + " and report.html");
        return 0;
    }

    /**
     * One run of a scenario on a fresh broker: started, warmed up where the scenario allows, measured, stopped.
     */
    private Report runOnce(final String broker, final List<String> args, final boolean warms, final Path runFolder,
        final Map<String, String> commands, final List<String> ringmqArgs, final boolean persistence,
        final String flashmqConfig, final String warmup) throws Exception
    {
        try (BrokerProcess process = BrokerProcess.start(broker, runFolder, ringmqJar, commands, ringmqArgs,
            persistence, flashmqConfig, env))
        {
            if (warms)
            {
                // a JVM broker compiles its hot paths in its first seconds: measure the steady state
                final List<String> warm = withoutOption(args, "-offline"); // half the warm-up, by default
                warm.addAll(List.of("-addr", "127.0.0.1:" + process.port, "-duration", warmup,
                    "-label", broker + " warm-up"));
                if (quiet)
                {
                    warm.add("-quiet");
                }
                final LoadTest warmRun = new LoadTest();
                new CommandLine(warmRun).setOverwrittenOptionsAllowed(true).parseArgs(warm.toArray(new String[0]));
                warmRun.execute();
            }
            final List<String> runArgs = new ArrayList<>(args);
            runArgs.addAll(List.of("-addr", "127.0.0.1:" + process.port, "-broker-pid",
                Long.toString(process.pid()), "-out", runFolder.toString(), "-label", broker));
            if (quiet)
            {
                runArgs.add("-quiet");
            }
            final LoadTest loadTest = new LoadTest();
            new CommandLine(loadTest).parseArgs(runArgs.toArray(new String[0]));
            final Report report = loadTest.execute();
            report.print(System.out);
            return report;
        }
    }

    /**
     * The figure a run is ranked by among its rounds, the one its row is read by: for a paced run (a rate per
     * publisher) the p99 latency in µs, for a connections scenario the connects per second of its last level, else
     * messages (or deliveries) per second.
     */
    static double headline(final Report report)
    {
        if (report.settings.connectionsOnly())
        {
            return report.levels.isEmpty() ? 0 : report.levels.get(report.levels.size() - 1).connectsPerSecond();
        }
        if (paced(report))
        {
            return report.latency.getValueAtPercentile(99) / 1000.0;
        }
        return report.messageRate();
    }

    private static boolean paced(final Report report)
    {
        return report.settings.rate > 0 && null != report.latency && report.latency.getTotalCount() > 0;
    }

    /**
     * @return for each broker with a run that did not fail (null: a failed round), the run with the median
     * {@link #headline} of those (of an even count, the lower of the middle two: no figure is made up), in the
     * brokers' order.
     */
    static Map<String, Report> medians(final Map<String, List<Report>> runs)
    {
        final Map<String, Report> medians = new LinkedHashMap<>();
        for (final Map.Entry<String, List<Report>> entry : runs.entrySet())
        {
            final List<Report> sorted = new ArrayList<>();
            for (final Report run : entry.getValue())
            {
                if (null != run)
                {
                    sorted.add(run);
                }
            }
            if (!sorted.isEmpty())
            {
                sorted.sort(Comparator.comparingDouble(Matrix::headline));
                medians.put(entry.getKey(), sorted.get((sorted.size() - 1) / 2));
            }
        }
        return medians;
    }

    /**
     * @return a line under the table with every round's headline figure per broker, in run order ("failed" for a
     * round that failed), and of how many rounds each median is.
     */
    static String roundsLine(final Map<String, List<Report>> runs)
    {
        Report any = null;
        for (final List<Report> list : runs.values())
        {
            for (final Report run : list)
            {
                any = null == any ? run : any;
            }
        }
        final String unit = null == any ? "figures" : any.settings.connectionsOnly() ? "connects/s of the last level" :
            paced(any) ? "p99 µs" : "msg/s";
        final StringBuilder md = new StringBuilder("\nEach broker's median run of its rounds is in the table; ")
            .append(unit).append(" per round, in run order:");
        String separator = " ";
        for (final Map.Entry<String, List<Report>> entry : runs.entrySet())
        {
            md.append(separator).append(entry.getKey());
            int measured = 0;
            for (int i = 0; i < entry.getValue().size(); i++)
            {
                final Report run = entry.getValue().get(i);
                measured += null == run ? 0 : 1;
                md.append(i == 0 ? " " : " / ").append(null == run ? "failed" :
                    String.format(Locale.ROOT, "%,.0f", headline(run)));
            }
            if (measured < entry.getValue().size())
            {
                md.append(" (median of ").append(measured).append(" of ").append(entry.getValue().size()).append(')');
            }
            separator = "; ";
        }
        return md.append(".\n").toString();
    }

    static String table(final Map<String, Report> reports)
    {
        final StringBuilder md = new StringBuilder();
        if (reports.isEmpty())
        {
            return md.toString();
        }
        if (reports.values().iterator().next().settings.connectionsOnly())
        {
            md.append("| broker | connections | established | connects/s | failed | alive | connect p50 ms | " +
                "connect p99 ms | PINGREQ p99 ms | broker peak RSS MB |\n");
            md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for (final Map.Entry<String, Report> entry : reports.entrySet())
            {
                for (final Report.Level level : entry.getValue().levels)
                {
                    md.append(String.format(Locale.ROOT, "| %s | %,d | %,d | %,.0f | %,d | %,d | %.1f | %.1f | %.1f | %.0f |%n",
                        entry.getKey(), level.target(), level.established(), level.connectsPerSecond(), level.failed(),
                        level.alive(),
                        level.connectTime().getValueAtPercentile(50) / 1e6,
                        level.connectTime().getValueAtPercentile(99) / 1e6,
                        level.pingTime().getValueAtPercentile(99) / 1e6, level.brokerPeakRssMb()));
                }
            }
            return md.toString();
        }
        md.append("| broker | msg/s | ratio | lost | dup | reord | p50 µs | p99 µs | p99.9 µs | max µs | " +
            "broker CPU s | broker peak RSS MB | generator CPU s | generator send lag p99 µs |\n");
        md.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        final double baseline = reports.containsKey("mosquitto") ? reports.get("mosquitto").messageRate() : 0;
        for (final Map.Entry<String, Report> entry : reports.entrySet())
        {
            final Report r = entry.getValue();
            final boolean pub = "pub".equals(r.settings.mode);
            md.append(String.format(Locale.ROOT,
                "| %s | %,.0f | %s | %,d | %,d | %,d | %s | %s | %s | %s | %.2f | %.0f | %.2f | %s |%n",
                entry.getKey(), r.messageRate(), baseline > 0 ? String.format(Locale.ROOT, "%.2f×",
                    r.messageRate() / baseline) : "–", pub ? 0 : r.lost(), r.duplicates, r.reordered,
                latency(r, 50, pub), latency(r, 99, pub), latency(r, 99.9, pub),
                pub || null == r.latency ? "–" : String.format(Locale.ROOT, "%,.0f", r.latency.getMaxValue() / 1000.0),
                r.brokerCpuSeconds, r.brokerPeakRssMb, r.generatorCpuSeconds,
                // paced rows: how late the generator itself sent at p99, beside the broker's p99
                r.hasSendLag() ? String.format(Locale.ROOT, "%,.0f", r.sendLagMicros(99)) : "–"));
        }
        return md.toString();
    }

    private static String latency(final Report report, final double percentile, final boolean pub)
    {
        if (pub || null == report.latency || report.latency.getTotalCount() == 0)
        {
            return "–";
        }
        return String.format(Locale.ROOT, "%,.0f", report.latency.getValueAtPercentile(percentile) / 1000.0);
    }

    /**
     * @return {@code args} less {@code option} and its value, in either spelling ({@code -x v}, {@code --x v},
     * {@code -x=v}).
     */
    static List<String> withoutOption(final List<String> args, final String option)
    {
        final List<String> kept = new ArrayList<>();
        for (int i = 0; i < args.size(); i++)
        {
            final String arg = args.get(i);
            if (arg.equals(option) || arg.equals("-" + option))
            {
                i++; // its value too
            }
            else if (!arg.startsWith(option + "=") && !arg.startsWith("-" + option + "="))
            {
                kept.add(arg);
            }
        }
        return kept;
    }

    private static List<String> split(final String args)
    {
        return args.isBlank() ? new ArrayList<>() : new ArrayList<>(Arrays.asList(args.trim().split("\\s+")));
    }
}
