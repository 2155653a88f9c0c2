package io.ringmq.loadtest;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * The live progress line of a message run, once a second on standard error: elapsed and planned time, messages
 * published and deliveries per second over the last second, p99 latency of the last second (the interval histogram
 * that also goes to {@code latency.hlog}), and loss so far. Overwritten in place ({@code \r}) when standard error is
 * a terminal, one line per second otherwise (a log file, a CI console).
 *
 * <p>Loss so far is what was published up to the previous line, times the deliveries each message owes, less the
 * unique deliveries now: a message gets a second to arrive before it counts. In persistent mode that includes what
 * the broker holds for offline subscribers until they come back.
 */
final class Progress
{
    /** Runs this short (or shorter) get no progress line: their summary comes as soon. */
    static final long MIN_DURATION_NS = 3_000_000_000L;

    private final PrintStream err;
    private final boolean terminal;
    private final String prefix;
    private final String planned;
    private final int deliveriesPerMessage;
    private final boolean subscribers;
    private long lastElapsedNs;
    private long lastPublished;
    private int lastLength;

    Progress(final PrintStream err, final boolean terminal, final Settings settings, final String label)
    {
        this.err = err;
        this.terminal = terminal;
        this.prefix = label.isEmpty() ? "" : "[" + label + "] ";
        this.planned = Units.seconds(Math.round(settings.durationNs / 1e8) / 10.0);
        this.deliveriesPerMessage = settings.deliveriesPerMessage();
        this.subscribers = settings.subscribers > 0;
    }

    /**
     * @return a progress line for this run on {@code System.err}, or null when it is off ({@code -quiet}) or the run
     * is too short to need one.
     */
    static Progress of(final Settings settings, final String label)
    {
        if (!settings.progress || settings.durationNs <= MIN_DURATION_NS)
        {
            return null;
        }
        return new Progress(System.err, stderrIsTerminal(), settings, label);
    }

    /**
     * Prints the line for one interval.
     *
     * @param elapsedNs      since the run started.
     * @param published      messages published so far.
     * @param unique         unique deliveries so far.
     * @param intervalCount  deliveries in the interval.
     * @param intervalP99Ns  the interval's p99 latency (ignored when {@code intervalCount} is 0).
     */
    void update(final long elapsedNs, final long published, final long unique, final long intervalCount,
        final long intervalP99Ns)
    {
        final double seconds = Math.max(1e-9, (elapsedNs - lastElapsedNs) / 1e9);
        final StringBuilder line = new StringBuilder(prefix);
        line.append(String.format(Locale.ROOT, "%.0f s / %s: published %,.0f msg/s", elapsedNs / 1e9, planned,
            (published - lastPublished) / seconds));
        if (subscribers)
        {
            final long lost = Math.max(0, lastPublished * deliveriesPerMessage - unique);
            line.append(String.format(Locale.ROOT, ", delivered %,.0f/s, p99 %s, lost %,d", intervalCount / seconds,
                intervalCount > 0 ? Units.latency(intervalP99Ns / 1000.0) : "–", lost));
        }
        lastElapsedNs = elapsedNs;
        lastPublished = published;
        if (terminal)
        {
            final int length = line.length();
            while (line.length() < lastLength)
            {
                line.append(' '); // wipe what a longer previous line left
            }
            lastLength = length;
            err.print("\r" + line);
        }
        else
        {
            err.println(line);
        }
        err.flush();
    }

    /**
     * Ends an overwritten line, so what follows starts on its own.
     */
    void finish()
    {
        if (terminal && lastLength > 0)
        {
            err.println();
            err.flush();
        }
    }

    /**
     * @return whether this process's standard error is a terminal: on Linux by where file descriptor 2 points,
     * elsewhere by whether there is a console at all.
     */
    static boolean stderrIsTerminal()
    {
        try
        {
            final String target = Files.readSymbolicLink(Path.of("/proc/self/fd/2")).toString();
            return target.startsWith("/dev/pts/") || target.startsWith("/dev/tty");
        }
        catch (final IOException | UnsupportedOperationException | SecurityException ex)
        {
            return null != System.console();
        }
    }
}
