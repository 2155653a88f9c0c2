import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Allocation summary of a JFR recording of a broker under load, for bench-configs/jfr-fanout.sh:
 * {@code java JfrAllocations.java RECORDING.jfr DELIVERIES PUBLISHED [TOP] [PACKAGE]}.
 *
 * <p>Groups jdk.ObjectAllocationSample events by the topmost stack frame inside PACKAGE (default io.ringmq), so
 * a JDK or library allocation is charged to the broker code that caused it; the sum of the samples' weights
 * estimates every byte allocated. jdk.ThreadAllocationStatistics (at the recording's start and end) gives the
 * exact bytes each thread allocated. Both are divided by the deliveries the load generator counted.
 */
public final class JfrAllocations
{
    private static final class Site
    {
        long weight;
        long samples;
        final Map<String, Long> classes = new HashMap<>();
        final Map<String, Long> frames = new HashMap<>();
        final Map<String, Long> threads = new HashMap<>();
    }

    public static void main(final String[] args) throws Exception
    {
        final List<String> positional = new ArrayList<>();
        int top = 15;
        String pkgName = "io.ringmq";
        boolean keepFirst = false;
        for (int i = 0; i < args.length; i++)
        {
            switch (args[i])
            {
                case "--top" -> top = Integer.parseInt(args[++i]);
                case "--package" -> pkgName = args[++i];
                case "--keep-first" -> keepFirst = true;
                default -> positional.add(args[i]);
            }
        }
        if (positional.size() != 3)
        {
            System.err.println("usage: java JfrAllocations.java RECORDING.jfr DELIVERIES PUBLISHED [--top N] " +
                "[--package P] [--keep-first]");
            System.exit(2);
        }
        final Path file = Path.of(positional.get(0));
        final long deliveries = Long.parseLong(positional.get(1));
        final long published = Long.parseLong(positional.get(2));
        final String pkg = pkgName + ".";

        final Map<String, Site> sites = new HashMap<>();
        final Map<Long, long[]> threadAllocated = new HashMap<>(); // thread id -> {first, last, events, lastNanos}
        final Map<Long, String> threadNames = new HashMap<>();
        long totalWeight = 0;
        long inPackageWeight = 0;
        long samples = 0;
        long gcs = 0;
        long gcPauseNanos = 0;
        Instant first = null;
        Instant last = null;
        final List<RecordedEvent> threadStats = new ArrayList<>();
        final List<RecordedEvent> allocationSamples = new ArrayList<>();
        long measurementWeight = 0;
        long firstWeight = 0;
        long firstSamples = 0;

        try (RecordingFile recording = new RecordingFile(file))
        {
            while (recording.hasMoreEvents())
            {
                final RecordedEvent event = recording.readEvent();
                final Instant start = event.getStartTime();
                first = null == first || start.isBefore(first) ? start : first;
                last = null == last || event.getEndTime().isAfter(last) ? event.getEndTime() : last;
                switch (event.getEventType().getName())
                {
                    case "jdk.ObjectAllocationSample" -> allocationSamples.add(event);
                    case "jdk.ThreadAllocationStatistics" -> threadStats.add(event);
                    case "jdk.GarbageCollection" ->
                    {
                        gcs++;
                        gcPauseNanos += event.getDuration("sumOfPauses").toNanos();
                    }
                    default -> { }
                }
            }
        }
        if (null == first)
        {
            System.out.println("the recording holds no event");
            System.exit(1);
        }
        final double seconds = Duration.between(first, last).toNanos() / 1e9;

        // a sample's weight is what its thread allocated since that thread's previous sample: the first sample of
        // each thread in a recording started late also carries what the thread allocated before the recording
        allocationSamples.sort((a, b) -> a.getStartTime().compareTo(b.getStartTime()));
        final java.util.Set<Long> sampledThreads = new java.util.HashSet<>();
        for (final RecordedEvent event : allocationSamples)
        {
            final long weight = event.getLong("weight");
            final RecordedThread thread = event.getThread();
            final String threadName = null == thread ? "?" : thread.getJavaName();
            if (measurementThread(threadName))
            {
                measurementWeight += weight;
                continue;
            }
            final boolean firstOfThread = sampledThreads.add(null == thread ? -1L : thread.getId());
            if (firstOfThread && !keepFirst)
            {
                firstWeight += weight;
                firstSamples++;
                continue;
            }
            samples++;
            totalWeight += weight;
            final RecordedStackTrace stack = event.getStackTrace();
            String topFrame = "(no stack)";
            String site = null;
            if (null != stack && !stack.getFrames().isEmpty())
            {
                topFrame = frame(stack.getFrames().get(0));
                for (final RecordedFrame frame : stack.getFrames())
                {
                    if (frame.isJavaFrame() && frame.getMethod().getType().getName().startsWith(pkg))
                    {
                        site = frame(frame);
                        break;
                    }
                }
            }
            if (null != site)
            {
                inPackageWeight += weight;
            }
            else
            {
                site = "(outside " + pkgName + ") " + topFrame;
            }
            final Site s = sites.computeIfAbsent(site, k -> new Site());
            s.weight += weight;
            s.samples++;
            final String type = null == event.getClass("objectClass") ? "?" : event.getClass("objectClass").getName();
            s.classes.merge(type, weight, Long::sum);
            s.frames.merge(topFrame, weight, Long::sum);
            s.threads.merge(threadName, weight, Long::sum);
        }

        // exact bytes per thread: last value minus first; a thread seen once, at the end, started during the recording
        final Instant middle = first.plus(Duration.between(first, last).dividedBy(2));
        for (final RecordedEvent event : threadStats)
        {
            final RecordedThread thread = event.getThread("thread");
            if (null == thread)
            {
                continue;
            }
            final long id = thread.getJavaThreadId();
            threadNames.put(id, thread.getJavaName());
            final long allocated = event.getLong("allocated");
            final long at = event.getStartTime().toEpochMilli();
            final long[] a = threadAllocated.computeIfAbsent(id, k -> new long[]{Long.MAX_VALUE, Long.MIN_VALUE,
                0, 0, Long.MAX_VALUE});
            a[0] = Math.min(a[0], allocated);
            a[1] = Math.max(a[1], allocated);
            a[2]++;
            a[3] = Math.max(a[3], at);
            a[4] = Math.min(a[4], at);
        }
        final List<Map.Entry<String, Long>> threads = new ArrayList<>();
        long exactAll = 0;
        long exactBroker = 0;
        for (final Map.Entry<Long, long[]> entry : threadAllocated.entrySet())
        {
            final long[] a = entry.getValue();
            final long bytes = a[2] > 1 ? a[1] - a[0] : a[4] >= middle.toEpochMilli() ? a[1] : 0;
            final String name = threadNames.get(entry.getKey());
            threads.add(Map.entry(name, bytes));
            exactAll += bytes;
            if (!measurementThread(name))
            {
                exactBroker += bytes;
            }
        }
        threads.sort((a, b) -> Long.compare(b.getValue(), a.getValue()));

        final PrintLine out = new PrintLine();
        out.line("recording %s: %.1f s; %,d GCs (%.1f ms paused)", file.getFileName(), seconds, gcs,
            gcPauseNanos / 1e6);
        out.line("load: %,d messages published, %,d deliveries", published, deliveries);
        out.line("");
        if (!threads.isEmpty())
        {
            out.line("**allocated per delivery: %.2f bytes** (per published message: %.1f bytes): exact, %s by the " +
                "broker's threads (jdk.ThreadAllocationStatistics at the recording's start and end; JFR's own " +
                "threads and the attach listener, %s, left out)", perUnit(exactBroker, deliveries),
                perUnit(exactBroker, published), bytes(exactBroker), bytes(exactAll - exactBroker));
        }
        else
        {
            out.line("no jdk.ThreadAllocationStatistics in the recording: no exact figure");
        }
        out.line("estimated from %,d allocation samples (jdk.ObjectAllocationSample): %s = %.2f bytes per delivery, " +
            "%s of it under %s frames%s", samples, bytes(totalWeight), perUnit(totalWeight, deliveries),
            bytes(inPackageWeight), pkgName, firstSamples > 0 ? String.format(Locale.ROOT,
                "; left out: each thread's first sample (%d, %s: its weight counts from before the recording)",
                firstSamples, bytes(firstWeight)) : "");
        if (measurementWeight > 0)
        {
            out.line("samples on JFR's and the attach listener's threads left out: %s", bytes(measurementWeight));
        }
        out.line("");
        if (!threads.isEmpty())
        {
            out.line("| thread | allocated (exact) | per delivery |");
            out.line("|---|---:|---:|");
            for (int i = 0; i < Math.min(top, threads.size()); i++)
            {
                final Map.Entry<String, Long> t = threads.get(i);
                if (t.getValue() == 0)
                {
                    break;
                }
                out.line("| %s | %s | %.3f B |", t.getKey(), bytes(t.getValue()), perUnit(t.getValue(), deliveries));
            }
            out.line("");
        }
        if (sites.isEmpty())
        {
            out.line("No allocation sample on the broker's threads: JFR samples when a thread refills its TLAB, and " +
                "they allocated too little to refill one (the exact figure above is what they allocated).");
            return;
        }
        final List<Map.Entry<String, Site>> ranked = new ArrayList<>(sites.entrySet());
        ranked.sort((a, b) -> Long.compare(b.getValue().weight, a.getValue().weight));
        out.line("Top allocation sites: the topmost %s frame of each sample (share of the sampled weight):",
            pkg.substring(0, pkg.length() - 1));
        out.line("");
        out.line("| site | weight | share | samples | per delivery | mostly allocates | in | thread |");
        out.line("|---|---:|---:|---:|---:|---|---|---|");
        for (int i = 0; i < Math.min(top, ranked.size()); i++)
        {
            final Site s = ranked.get(i).getValue();
            out.line("| `%s` | %s | %.1f%% | %,d | %.3f B | %s | `%s` | %s |", ranked.get(i).getKey(), bytes(s.weight),
                100.0 * s.weight / Math.max(1, totalWeight), s.samples, perUnit(s.weight, deliveries),
                biggest(s.classes), biggest(s.frames), biggest(s.threads));
        }
        if (ranked.size() > top)
        {
            long rest = 0;
            for (int i = top; i < ranked.size(); i++)
            {
                rest += ranked.get(i).getValue().weight;
            }
            out.line("| (%d more sites) | %s | %.1f%% | | | | | |", ranked.size() - top, bytes(rest),
                100.0 * rest / Math.max(1, totalWeight));
        }
    }

    private static boolean measurementThread(final String name)
    {
        return null == name || name.startsWith("JFR ") || name.equals("Attach Listener") ||
            name.startsWith("JFR: ");
    }

    private static double perUnit(final long bytes, final long count)
    {
        return count > 0 ? (double)bytes / count : Double.NaN;
    }

    private static String frame(final RecordedFrame frame)
    {
        final String type = frame.getMethod().getType().getName();
        return type.substring(type.lastIndexOf('.') + 1) + "." + frame.getMethod().getName() +
            (frame.getLineNumber() > 0 ? ":" + frame.getLineNumber() : "");
    }

    private static String biggest(final Map<String, Long> weights)
    {
        String best = "";
        long max = -1;
        for (final Map.Entry<String, Long> entry : weights.entrySet())
        {
            if (entry.getValue() > max)
            {
                max = entry.getValue();
                best = entry.getKey();
            }
        }
        return weights.size() > 1 ? best + " (+" + (weights.size() - 1) + ")" : best;
    }

    private static String bytes(final double bytes)
    {
        if (bytes >= 1 << 30)
        {
            return String.format(Locale.ROOT, "%.2f GiB", bytes / (1 << 30));
        }
        if (bytes >= 1 << 20)
        {
            return String.format(Locale.ROOT, "%.1f MiB", bytes / (1 << 20));
        }
        if (bytes >= 1 << 10)
        {
            return String.format(Locale.ROOT, "%.1f KiB", bytes / (1 << 10));
        }
        return String.format(Locale.ROOT, "%.0f B", bytes);
    }

    private static final class PrintLine
    {
        void line(final String format, final Object... args)
        {
            System.out.println(String.format(Locale.ROOT, format, args));
        }
    }
}
