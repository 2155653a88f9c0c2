package io.ringmq.transport;

import io.ringmq.pipeline.ObservabilitySettings;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.CountersFileReader;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * {@code ringmq stat}: prints the counters (and with {@code --errors} the distinct error log) of running brokers
 * from their counters files, as Aeron's {@code AeronStat} reads a CnC file, without touching a broker thread.
 * One {@code label: value} line per counter; lines that start with {@code #} say which file and broker they are.
 */
@Command(name = "stat", mixinStandardHelpOptions = true, sortOptions = false,
    description = "Print the counters of running brokers from their counters files, refreshed every --interval.")
final class StatCommand implements Callable<Integer>
{
    private static final String CLEAR_SCREEN = "\u001b[H\u001b[2J";

    @Option(names = "--counters-dir", paramLabel = "DIR",
        description = "Where the brokers keep their counters files (default: as the broker's).")
    Path countersDir;

    @Option(names = "--file", paramLabel = "FILE", description = "Read this counters file only.")
    Path file;

    @Option(names = "--pid", paramLabel = "PID", description = "Read the counters files of this broker process only.")
    Long pid;

    @Option(names = "--interval", paramLabel = "DURATION",
        description = "Time between refreshes, e.g. 1s or 500ms (default: ${DEFAULT-VALUE}).")
    String interval = "1s";

    @Option(names = "--once", description = "Print once and exit.")
    boolean once;

    @Option(names = "--errors", description = "Print the distinct error log: count, first and last time, stack trace.")
    boolean errors;

    @Spec
    CommandSpec spec;

    public Integer call() throws Exception
    {
        final long intervalMs = OptionValues.parseDurationMs(interval);
        if (intervalMs <= 0)
        {
            throw new IllegalArgumentException("--interval must be positive");
        }
        final PrintWriter out = spec.commandLine().getOut();
        final boolean clear = !once && null != System.console();
        while (true)
        {
            final StringBuilder sb = new StringBuilder();
            final boolean found = print(sb);
            out.print(clear ? CLEAR_SCREEN + sb : sb);
            out.flush();
            if (once || (!found && null != file))
            {
                return found ? 0 : 1;
            }
            Thread.sleep(intervalMs);
            if (!clear)
            {
                out.println();
            }
        }
    }

    /**
     * @return whether any counters file was read.
     */
    private boolean print(final StringBuilder sb) throws IOException
    {
        final Path directory = null != countersDir ? countersDir : ObservabilitySettings.defaultCountersDir();
        final List<Path> files = null != file ? List.of(file) : CountersFileReader.find(directory, pid);
        if (files.isEmpty())
        {
            sb.append("# no counters files in ").append(directory)
                .append(null != pid ? " for pid " + pid : "").append(" (is a broker running?)\n");
            return false;
        }
        boolean found = false;
        for (final Path path : files)
        {
            try (CountersFileReader reader = CountersFileReader.open(path))
            {
                print(reader, sb);
                found = true;
            }
            catch (final IOException | IllegalStateException ex)
            {
                // a broker that stopped between the listing and the mapping has deleted its file
                sb.append("# ").append(path).append(": ").append(ex instanceof java.nio.file.NoSuchFileException ?
                    "gone (the broker stopped)" : ex.getMessage()).append('\n');
            }
        }
        return found;
    }

    private void print(final CountersFileReader reader, final StringBuilder sb)
    {
        sb.append("# file: ").append(reader.path()).append('\n');
        sb.append("# pid: ").append(reader.pid())
            .append(reader.isBrokerAlive() ? " (running)" : " (gone: the broker is not running; last values)")
            .append('\n');
        sb.append("# started: ").append(Instant.ofEpochMilli(reader.startTimestampMs())).append('\n');
        reader.counters().forEach((value, counterId, label) ->
            sb.append(label).append(": ").append(value).append('\n'));
        if (errors)
        {
            final StringBuilder errorText = new StringBuilder();
            final int distinct = reader.readErrors((count, firstMs, lastMs, encodedException) ->
                errorText.append("count: ").append(count).append('\n')
                    .append("first: ").append(Instant.ofEpochMilli(firstMs)).append('\n')
                    .append("last: ").append(Instant.ofEpochMilli(lastMs)).append('\n')
                    .append(encodedException).append(encodedException.endsWith("\n") ? "" : "\n"));
            sb.append("# distinct errors: ").append(distinct).append('\n').append(errorText);
        }
    }
}
