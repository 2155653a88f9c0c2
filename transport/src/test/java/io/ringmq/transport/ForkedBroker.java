package io.ringmq.transport;

import io.ringmq.pipeline.status.CountersFileReader;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A ringmq broker in a process of its own, started as {@code java -Xmx256m ... io.ringmq.transport.Main} on the
 * test classpath with the JVM options the runnable jar's manifest gives, so that its memory is its own to measure:
 * resident set ({@code VmRSS}) and its peak ({@code VmHWM}) from {@code /proc/<pid>/status}, and its counters and
 * distinct error log read from its counters file, as {@code ringmq stat --pid} reads them.
 * <p>
 * For crash tests it can be killed with SIGKILL ({@link #kill()}) and started again with the same options on the same
 * directories ({@link #restart()}), and its output searched for a line ({@link #awaitLine(String, long)}); a start
 * that is expected to fail is {@link #launch(Path, String...)}, which returns the exit status and output instead.
 */
final class ForkedBroker implements AutoCloseable
{
    /** The heap the broker is given; every memory budget in the tests is stated against it. */
    static final String MAX_HEAP = "-Xmx256m";

    private final Process process;
    private final Path directory;
    private final String[] options;
    private final Path countersDir;
    private final StringBuffer output;
    private final int port;
    private CountersFileReader counters;

    private ForkedBroker(
        final Process process,
        final Path directory,
        final String[] options,
        final Path countersDir,
        final StringBuffer output,
        final int port)
    {
        this.process = process;
        this.directory = directory;
        this.options = options;
        this.countersDir = countersDir;
        this.output = output;
        this.port = port;
    }

    /**
     * How a launch ended: a broker that is listening, or a process that exited before it listened.
     *
     * @param broker    the listening broker, or null when the process exited (or did not listen in time).
     * @param exitValue the exit status when it exited, else -1.
     * @param output    what it printed (stdout and stderr) until it listened or exited.
     */
    record Launch(ForkedBroker broker, int exitValue, String output)
    {
    }

    /**
     * Starts a broker on a free loopback port and waits until it says it is listening.
     *
     * @param directory where its counters file goes (a test's temporary directory).
     * @param options   ringmq options besides --bind, --port and --counters-dir.
     */
    static ForkedBroker start(final Path directory, final String... options) throws IOException, InterruptedException
    {
        final Launch launch = launch(directory, options);
        if (null == launch.broker())
        {
            throw new IllegalStateException("the forked broker did not start (exit " + launch.exitValue() +
                "); its output:\n" + launch.output());
        }
        return launch.broker();
    }

    /**
     * Starts a broker and waits until it listens or exits, whichever comes first (30 seconds at most, then it is
     * killed): for a start that is expected to be refused.
     *
     * @param directory where its counters file goes (a test's temporary directory).
     * @param options   ringmq options besides --bind, --port and --counters-dir.
     */
    static Launch launch(final Path directory, final String... options) throws IOException, InterruptedException
    {
        return launch(directory, List.of(), options);
    }

    /**
     * Starts a broker under a command that runs it ({@code nohup}, {@code env ...}) and waits until it listens or
     * exits, as {@link #launch(Path, String...)}.
     *
     * @param prefix the command and its arguments before the JVM's.
     */
    static Launch launch(final Path directory, final List<String> prefix, final String... options)
        throws IOException, InterruptedException
    {
        final Path countersDir = Files.createDirectories(directory.resolve("counters"));
        final List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(
            ProcessHandle.current().info().command().orElse("java"), MAX_HEAP, "-ea",
            // what transport/target/ringmq.jar's manifest gives the same code (Add-Exports, Add-Opens)
            "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
            "-cp", System.getProperty("java.class.path"), Main.class.getName(),
            "--bind", "127.0.0.1", "--port", "0", "--counters-dir", countersDir.toString(),
            "--data-dir", directory.resolve("data").toString(), "--warmup", "0")); // no warm-up: a quicker start
        command.addAll(List.of(options));
        final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        final StringBuffer output = new StringBuffer();
        final Thread reader = new Thread(() ->
        {
            try (BufferedReader in = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)))
            {
                String line;
                while (null != (line = in.readLine()))
                {
                    output.append(line).append('\n');
                    lines.add(line);
                }
            }
            catch (final IOException closed)
            {
                // the process is gone: nothing more to read
            }
        }, "forked-broker-output");
        reader.setDaemon(true);
        reader.start();

        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String listening = null;
        while (null == listening && (process.isAlive() || !lines.isEmpty()) && System.nanoTime() < deadline)
        {
            final String line = lines.poll(100, TimeUnit.MILLISECONDS);
            if (null != line && line.startsWith("ringmq ") && line.contains("listening on"))
            {
                listening = line;
            }
        }
        if (null == listening)
        {
            if (process.isAlive())
            {
                process.destroyForcibly();
            }
            process.waitFor(10, TimeUnit.SECONDS);
            reader.join(2_000); // the rest of its output
            return new Launch(null, process.isAlive() ? -1 : process.exitValue(), output.toString());
        }
        return new Launch(new ForkedBroker(process, directory, options, countersDir, output,
            firstPort(listening)), -1, output.toString());
    }

    /**
     * @return the port of the first listener the "listening on" line names: the main one ({@code --port}), before
     * any {@code --listener}.
     */
    static int firstPort(final String listening)
    {
        final String listeners = listening.substring(listening.indexOf("listening on ") + "listening on ".length());
        final int comma = listeners.indexOf(',');
        final String first = (comma < 0 ? listeners : listeners.substring(0, comma)).strip();
        return Integer.parseInt(first.substring(first.lastIndexOf(':') + 1));
    }

    /**
     * Starts a new broker process with the same options on the same directories (its data directory among them),
     * once this one has exited.
     *
     * @return the new broker, listening (on a new port).
     */
    ForkedBroker restart() throws IOException, InterruptedException
    {
        if (process.isAlive())
        {
            throw new IllegalStateException("broker pid " + pid() + " is still running; kill() or close() it first");
        }
        return start(directory, options);
    }

    /**
     * Kills the broker with SIGKILL (a crash: no shutdown hook, no flush) and waits until it has exited.
     */
    void kill() throws InterruptedException
    {
        closeCounters();
        process.destroyForcibly(); // SIGKILL on Linux
        if (!process.waitFor(10, TimeUnit.SECONDS))
        {
            throw new IllegalStateException("broker pid " + pid() + " still running 10 s after SIGKILL");
        }
    }

    /**
     * @return everything the broker has printed so far (stdout and stderr).
     */
    String output()
    {
        return output.toString();
    }

    /**
     * Waits until the broker has printed a line containing {@code fragment}.
     *
     * @param timeoutMs 0 to look only at what it has printed so far.
     * @return the first such line, or empty when none came in time (or the process exited without printing it).
     */
    Optional<String> awaitLine(final String fragment, final long timeoutMs) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true)
        {
            final String printed = output.toString();
            final int at = printed.indexOf(fragment);
            if (at >= 0)
            {
                final int end = printed.indexOf('\n', at);
                return Optional.of(printed.substring(printed.lastIndexOf('\n', at) + 1,
                    end < 0 ? printed.length() : end));
            }
            if (System.nanoTime() >= deadline || !process.isAlive())
            {
                return Optional.empty();
            }
            Thread.sleep(10); // polling the condition
        }
    }

    int port()
    {
        return port;
    }

    long pid()
    {
        return process.pid();
    }

    boolean isAlive()
    {
        return process.isAlive();
    }

    /**
     * @return the resident set now, in bytes.
     */
    long rssBytes() throws IOException
    {
        return status("VmRSS:");
    }

    /**
     * @return the largest resident set the process has had so far (the kernel's high-water mark), in bytes: a peak
     * between two samples is not missed.
     */
    long peakRssBytes() throws IOException
    {
        return status("VmHWM:");
    }

    private long status(final String field) throws IOException
    {
        for (final String line : Files.readAllLines(Path.of("/proc", Long.toString(pid()), "status")))
        {
            if (line.startsWith(field))
            {
                final String kilobytes = line.substring(field.length()).strip();
                return Long.parseLong(kilobytes.substring(0, kilobytes.indexOf(' '))) * 1024;
            }
        }
        throw new IOException(field + " not in /proc/" + pid() + "/status");
    }

    /**
     * @return a counter's value, read from the broker's counters file as {@code ringmq stat} reads it.
     */
    long counter(final int id) throws IOException
    {
        return reader().counters().getCounterValue(id);
    }

    private CountersFileReader reader() throws IOException
    {
        if (null == counters)
        {
            final List<Path> files = CountersFileReader.find(countersDir, pid());
            if (files.size() != 1)
            {
                throw new IOException("expected one counters file for pid " + pid() + " in " + countersDir + ": " +
                    files);
            }
            counters = CountersFileReader.open(files.get(0));
        }
        return counters;
    }

    /**
     * @return what to look at when an assertion fails: the broker's output, every non-zero counter and its
     * distinct error log.
     */
    String diagnostics()
    {
        final StringBuilder sb = new StringBuilder("forked broker pid ").append(pid())
            .append(process.isAlive() ? " (running)" : " (exited " + process.exitValue() + ")").append('\n');
        try
        {
            final CountersFileReader reader = reader();
            reader.counters().forEach((value, id, label) ->
            {
                if (0 != value)
                {
                    sb.append("  ").append(label).append(": ").append(value).append('\n');
                }
            });
            reader.readErrors((count, firstMs, lastMs, encodedException) -> sb.append("error x").append(count)
                .append(" first ").append(Instant.ofEpochMilli(firstMs)).append('\n').append(encodedException));
        }
        catch (final IOException | RuntimeException ex)
        {
            sb.append("  (no counters: ").append(ex).append(")\n");
        }
        return sb.append("output:\n").append(output).toString();
    }

    /**
     * Stops the broker with SIGTERM (as an operator would), forcibly if it does not go within 20 seconds.
     */
    public void close() throws InterruptedException
    {
        closeCounters();
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS))
        {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    private void closeCounters()
    {
        if (null != counters)
        {
            counters.close();
            counters = null;
        }
    }
}
