package io.ringmq.loadtest;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A broker started fresh for one run of a matrix, on a free loopback port, and stopped with SIGTERM after it:
 * ringmq from its jar, Mosquitto from the Debian package (with {@code set_tcp_nodelay true}, its fastest
 * setting), Moquette from Maven Central (resolved with Maven, telemetry off), FlashMQ when it is installed
 * ({@code FLASHMQ_BIN}, else {@code flashmq} on the PATH; bench-configs/build-flashmq.sh builds it), or any broker
 * given as a command line with {@code {port}} in it.
 */
final class BrokerProcess implements AutoCloseable
{
    static final String MOQUETTE_VERSION = "0.17";
    static final String FLASHMQ = "flashmq";
    /** A broker whose port was taken between choosing and binding it is started again on another, this often. */
    private static final int START_ATTEMPTS = 3;
    /** FlashMQ's QoS queue per client, as Mosquitto's {@code max_queued_messages} below. */
    static final int FLASHMQ_QUEUED_MESSAGES = 1000;

    final String name;
    final int port;
    final Process process;

    private BrokerProcess(final String name, final int port, final Process process)
    {
        this.name = name;
        this.port = port;
        this.process = process;
    }

    /**
     * @param persistence FlashMQ keeps its state in a {@code storage_dir} of the run's folder (the other brokers
     * ignore it: give them a command in "commands" for that)
     * @param flashmqConfig lines appended to FlashMQ's generated configuration (a later line wins)
     * @param env where FlashMQ is looked for ({@code FLASHMQ_BIN}, {@code PATH})
     */
    static BrokerProcess start(final String name, final Path folder, final Path ringmqJar,
        final Map<String, String> commands, final List<String> ringmqArgs, final boolean persistence,
        final String flashmqConfig, final Map<String, String> env) throws IOException, InterruptedException
    {
        // the free port is found, then handed to the broker: between the two another process (or the broker's own
        // warm-up, whose client sockets take ephemeral ports before it binds) may take it; start again elsewhere
        for (int attempt = 1; ; attempt++)
        {
            try
            {
                return startOnce(name, folder, ringmqJar, commands, ringmqArgs, persistence, flashmqConfig, env);
            }
            catch (final IOException ex)
            {
                final Path log = folder.resolve(name + ".log");
                final boolean taken = Files.isReadable(log) &&
                    Files.readString(log).toLowerCase(java.util.Locale.ROOT).contains("address already in use");
                if (!taken || attempt >= START_ATTEMPTS)
                {
                    throw ex;
                }
            }
        }
    }

    private static BrokerProcess startOnce(final String name, final Path folder, final Path ringmqJar,
        final Map<String, String> commands, final List<String> ringmqArgs, final boolean persistence,
        final String flashmqConfig, final Map<String, String> env) throws IOException, InterruptedException
    {
        final int port = freePort();
        Files.createDirectories(folder);
        final List<String> command = new ArrayList<>();
        if (commands.containsKey(name))
        {
            command.addAll(expand(commands.get(name), port, folder));
        }
        else if ("ringmq".equals(name))
        {
            if (!Files.isReadable(ringmqJar))
            {
                throw new IOException("ringmq jar not found at " + ringmqJar + " (build it: mvn -B package -DskipTests)");
            }
            command.addAll(List.of(ProcessHandle.current().info().command().orElse("java"), "-jar",
                ringmqJar.toString(), "--bind", "127.0.0.1", "--port", Integer.toString(port),
                "--data-dir", folder.resolve("ringmq-data").toString())); // a store of its own per run
            command.addAll(ringmqArgs);
        }
        else if ("mosquitto".equals(name))
        {
            final Path config = folder.resolve("mosquitto.conf");
            Files.writeString(config, "listener " + port + " 127.0.0.1\nallow_anonymous true\n" +
                "set_tcp_nodelay true\nmax_queued_messages 1000\n");
            command.addAll(List.of("mosquitto", "-c", config.toString()));
        }
        else if (FLASHMQ.equals(name))
        {
            final Path binary = findFlashMq(env).orElseThrow(() -> new IOException(flashMqNotFound(env)));
            Path storage = null;
            if (persistence)
            {
                storage = Files.createDirectories(folder.resolve("flashmq-data")).toAbsolutePath();
            }
            final Path config = folder.resolve("flashmq.conf");
            Files.writeString(config, flashMqConfig(port, Runtime.getRuntime().availableProcessors(), storage,
                FLASHMQ_QUEUED_MESSAGES, openFilesLimit(), flashmqConfig));
            command.addAll(List.of(binary.toString(), "--config-file", config.toAbsolutePath().toString()));
        }
        else if ("moquette".equals(name))
        {
            final Path config = folder.resolve("config");
            Files.createDirectories(config);
            // telemetry off: it would call out to the internet; persistence off, as for the other brokers
            Files.writeString(config.resolve("moquette.conf"), "port " + port + "\nhost 127.0.0.1\n" +
                "allow_anonymous true\npersistence_enabled false\ntelemetry_enabled false\n" +
                "allow_zero_byte_client_id true\n");
            command.addAll(List.of(ProcessHandle.current().info().command().orElse("java"),
                "-Dmoquette.path=" + folder.toAbsolutePath(), "-cp", moquetteClasspath(folder.getParent()),
                "io.moquette.broker.Server"));
        }
        else
        {
            throw new IOException("unknown broker '" + name + "': give its command in the matrix's \"commands\"");
        }
        final Process process = new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(folder.resolve(name + ".log").toFile()).start();
        final BrokerProcess broker = new BrokerProcess(name, port, process);
        broker.awaitListening();
        return broker;
    }

    /**
     * @return a broker's command line from its matrix entry, split on whitespace: {@code {port}} is the port it gets,
     * {@code {dir}} this run's own folder (for a store or counters no other run sees).
     */
    static List<String> expand(final String commandLine, final int port, final Path folder)
    {
        final List<String> command = new ArrayList<>();
        for (final String part : commandLine.split("\\s+"))
        {
            command.add(part.replace("{port}", Integer.toString(port))
                .replace("{dir}", folder.toAbsolutePath().toString()));
        }
        return command;
    }

    /**
     * @return why a broker the runner would start itself cannot be started here (FlashMQ not installed), or empty;
     * a broker given in {@code commands} is always tried
     */
    static Optional<String> unavailable(final String name, final Map<String, String> commands,
        final Map<String, String> env)
    {
        if (FLASHMQ.equals(name) && !commands.containsKey(name) && findFlashMq(env).isEmpty())
        {
            return Optional.of(flashMqNotFound(env));
        }
        return Optional.empty();
    }

    /**
     * @return FlashMQ's binary: {@code FLASHMQ_BIN} when set (and then only it), else the first {@code flashmq} on
     * the {@code PATH}; empty when there is no such executable file
     */
    static Optional<Path> findFlashMq(final Map<String, String> env)
    {
        final String bin = env.getOrDefault("FLASHMQ_BIN", "");
        if (!bin.isBlank())
        {
            return executable(Path.of(bin)) ? Optional.of(Path.of(bin)) : Optional.empty();
        }
        for (final String dir : env.getOrDefault("PATH", "").split(File.pathSeparator))
        {
            if (!dir.isEmpty() && executable(Path.of(dir, FLASHMQ)))
            {
                return Optional.of(Path.of(dir, FLASHMQ));
            }
        }
        return Optional.empty();
    }

    static String flashMqNotFound(final Map<String, String> env)
    {
        final String bin = env.getOrDefault("FLASHMQ_BIN", "");
        return !bin.isBlank() ? "FLASHMQ_BIN=" + bin + " is not an executable file" :
            "flashmq not found: set FLASHMQ_BIN or put flashmq on the PATH (bench-configs/build-flashmq.sh builds it)";
    }

    /**
     * @return this process's hard limit on open files (what a child may raise its own to), from
     * {@code /proc/self/limits}; 0 when unknown or unlimited
     */
    static long openFilesLimit()
    {
        try
        {
            return openFilesLimit(Files.readAllLines(Path.of("/proc/self/limits")));
        }
        catch (final IOException | RuntimeException notLinux)
        {
            return 0; // leave FlashMQ's default
        }
    }

    /**
     * @param limits the lines of a {@code /proc/PID/limits}
     */
    static long openFilesLimit(final List<String> limits)
    {
        for (final String line : limits)
        {
            if (line.startsWith("Max open files"))
            {
                // soft limit, hard limit, unit
                final String[] fields = line.substring("Max open files".length()).trim().split("\\s+");
                return fields.length > 1 && fields[1].matches("\\d{1,18}") ? Long.parseLong(fields[1]) : 0;
            }
        }
        return 0;
    }

    private static boolean executable(final Path file)
    {
        return Files.isRegularFile(file) && Files.isExecutable(file);
    }

    /**
     * FlashMQ's configuration for one run, as Mosquitto's: one listener on 127.0.0.1 with TCP_NODELAY, anonymous
     * clients, {@code queuedMessages} QoS messages queued per client (and no byte limit that would bind first, as
     * Mosquitto has none by default), one thread per core, logging at notice (connects, as Mosquitto's default) to
     * standard output, and no state on disk unless {@code storage} is given.
     *
     * @param storage FlashMQ's {@code storage_dir} (sessions and retained messages saved at exit), or null for none
     * @param openFiles its {@code rlimit_nofile}: the open files limit it inherits (its default, 1,000,000, is
     * refused without the privilege to raise the hard limit, logged as an error); 0 or less: left out
     * @param extra lines appended as they are (a later line wins), may be blank
     */
    static String flashMqConfig(final int port, final int threads, final Path storage, final int queuedMessages,
        final long openFiles, final String extra)
    {
        final StringBuilder config = new StringBuilder();
        config.append("# generated by the loadtest matrix runner for one run\n");
        config.append("listen {\n  protocol mqtt\n  inet_protocol ip4\n  inet4_bind_address 127.0.0.1\n");
        config.append("  port ").append(port).append("\n  tcp_nodelay true\n}\n");
        config.append("allow_anonymous true\n");
        config.append("thread_count ").append(threads).append('\n');
        config.append("max_qos_msg_pending_per_client ").append(queuedMessages).append('\n');
        config.append("max_qos_bytes_pending_per_client 1073741824\n");
        config.append("log_level notice\n");
        if (openFiles > 0)
        {
            config.append("rlimit_nofile ").append(openFiles).append('\n');
        }
        if (null != storage)
        {
            config.append("storage_dir ").append(storage).append('\n');
        }
        if (null != extra && !extra.isBlank())
        {
            config.append(extra.strip()).append('\n');
        }
        return config.toString();
    }

    private void awaitListening() throws IOException, InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline)
        {
            if (!process.isAlive())
            {
                throw new IOException(name + " exited with " + process.exitValue() + " before listening");
            }
            try (Socket socket = new Socket())
            {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            }
            catch (final IOException notYet)
            {
                Thread.sleep(100);
            }
        }
        close();
        throw new IOException(name + " did not listen on " + port + " within 30 s");
    }

    /**
     * Resolves Moquette and its dependencies from Maven Central with the machine's Maven, once per folder.
     */
    private static String moquetteClasspath(final Path work) throws IOException, InterruptedException
    {
        final Path pom = work.resolve("moquette-pom.xml");
        final Path classpath = work.resolve("moquette.classpath");
        if (!Files.exists(classpath))
        {
            Files.writeString(pom, "<project xmlns=\"http://maven.apache.org/POM/4.0.0\"><modelVersion>4.0.0" +
                "</modelVersion><groupId>bench</groupId><artifactId>moquette-runner</artifactId><version>1" +
                "</version><dependencies><dependency><groupId>io.moquette</groupId><artifactId>moquette-broker" +
                "</artifactId><version>" + MOQUETTE_VERSION + "</version></dependency></dependencies></project>");
            final Process mvn = new ProcessBuilder("mvn", "-q", "-B", "-f", pom.toString(),
                "dependency:build-classpath", "-Dmdep.outputFile=" + classpath.toAbsolutePath())
                .redirectErrorStream(true).redirectOutput(work.resolve("moquette-mvn.log").toFile()).start();
            if (!mvn.waitFor(10, TimeUnit.MINUTES) || mvn.exitValue() != 0 || !Files.exists(classpath))
            {
                throw new IOException("could not resolve io.moquette:moquette-broker:" + MOQUETTE_VERSION +
                    " with Maven (see " + work.resolve("moquette-mvn.log") + ")");
            }
        }
        return Files.readString(classpath).strip();
    }

    long pid()
    {
        return process.pid();
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()))
        {
            return socket.getLocalPort();
        }
    }

    public void close()
    {
        process.destroy(); // SIGTERM
        try
        {
            if (!process.waitFor(15, TimeUnit.SECONDS))
            {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
        catch (final InterruptedException ex)
        {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
