package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/**
 * The {@code ringmq} command line: runs a broker, or ({@code ringmq passwd}) writes password file entries.
 * <p>
 * The broker's options sit in picocli mixins by area ({@link NetworkOptions}, {@link AuthenticationOptions},
 * {@link CredentialCheckOptions}, {@link ThreadingOptions}, {@link LimitOptions}, {@link MemoryOptions},
 * {@link ObservabilityOptions}, {@link PersistenceOptions}), each of which copies its own into the
 * {@link BrokerContext} ({@link #context()}) that checks them all once ({@link BrokerContext#conclude()}). A config
 * file ({@code -c}) feeds the same options ({@link #withConfigFile}). An option's {@code order} is its place in the
 * help, across the groups: a new option takes a free number between its neighbours'.
 */
@Command(name = "ringmq", versionProvider = Main.Version.class,
    sortOptions = false, usageHelpAutoWidth = true,
    description = "An MQTT 3.1.1 broker on LMAX Disruptor rings. With no options: port 1883, anonymous clients "
        + "from loopback only.",
    subcommands = {PasswdCommand.class, HashBenchCommand.class, StatCommand.class, ReloadCommand.class})
public final class Main implements Callable<Integer>
{
    @Option(names = {"-c", "--config"}, paramLabel = "FILE",
        description = "Read options from FILE: ringmq's, one per line ('max-connections 5000', 'port=1883', "
            + "'--port 1883'), and Mosquitto's mosquitto.conf directives (listener, allow_anonymous, password_file, "
            + "acl_file, certfile, include_dir ...); '#' starts a comment. Options on the command line win.",
        order = 10)
    Path config;

    /** What the config file said beyond options: its listeners (set before {@link #context()}). */
    ConfigFile.Parsed fromFile;
    /** The command line as given, read again (with its config file) by a reload. */
    String[] originalArgs;

    /** The defaults the options start from and show: {@link BrokerContext}'s own, kept in one place. */
    static final BrokerContext DEFAULTS = new BrokerContext();

    // picocli's standard help options, declared here (not by mixinStandardHelpOptions, whose options have no order
    // and so would be sorted first) to keep them last in the help
    @Option(names = {"-h", "--help"}, usageHelp = true, description = "Show this help message and exit.",
        order = 1000)
    boolean helpRequested;

    @Option(names = {"-V", "--version"}, versionHelp = true, description = "Print version information and exit.",
        order = 1010)
    boolean versionRequested;

    // the options by area (their order attributes keep the help as it was when they were all in this class)
    @Mixin
    NetworkOptions network = new NetworkOptions();
    @Mixin
    AuthenticationOptions authentication = new AuthenticationOptions();
    @Mixin
    CredentialCheckOptions credentialChecks = new CredentialCheckOptions();
    @Mixin
    ThreadingOptions threading = new ThreadingOptions();
    @Mixin
    LimitOptions limits = new LimitOptions();
    @Mixin
    MemoryOptions memory = new MemoryOptions();
    @Mixin
    ObservabilityOptions observability = new ObservabilityOptions();
    @Mixin
    PersistenceOptions persistence = new PersistenceOptions();

    public Integer call() throws Exception
    {
        final BrokerContext context;
        try
        {
            Logging.configure(observability.logLevel, observability.logFormat);
            context = context().conclude();
            new CorePinning(context.threads().pin());
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 2;
        }
        final SignalReloads running = new SignalReloads(originalArgs);
        final boolean reloads = running.onSighup(); // before the broker starts: a signal is handled
        final Broker broker;
        try
        {
            broker = Broker.launch(context);
            running.started(broker);
            broker.counters().set(BrokerCounters.RELOAD_READY, reloads ? 1 : 0); // ringmq reload may signal it
        }
        catch (final IOException | IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 1;
        }
        catch (final OutOfMemoryError ex)
        {
            System.err.println("ringmq: " + outOfMemoryAtStart(ex));
            return 1;
        }
        broker.onFatalError(error ->
        {
            System.err.println("ringmq: fatal error, exiting: " + error);
            System.exit(70); // EX_SOFTWARE: the shutdown hook closes the broker; a supervisor restarts it
        });
        final CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() ->
        {
            watchStop(stopped);
            broker.close(); // connections closed, stages stopped, the store synced, recorded clean, closed
            // java.util.logging may already be shut down by its own hook: print to the console directly
            System.out.println("ringmq stopped; counters:");
            System.out.print(broker.counters().describe(false));
            System.out.flush();
            stopped.countDown();
        }, "ringmq-shutdown"));
        if (null != broker.recovered())
        {
            System.out.println(broker.recovered());
        }
        System.out.println("ringmq " + Version.VERSION + " listening on " + String.join(", ", broker.listenerNames()));
        stopped.await();
        return 0;
    }

    /**
     * Bounds a clean stop (SIGTERM): a close that has not finished within {@link #STOP_BOUND_MS} halts the process,
     * rather than leave a supervisor waiting. What was acknowledged is in RocksDB's write-ahead log by then in every
     * durability mode (written before the acknowledgement left), so the next start recovers it.
     */
    private static void watchStop(final CountDownLatch stopped)
    {
        final Thread watchdog = new Thread(() ->
        {
            try
            {
                if (!stopped.await(STOP_BOUND_MS, java.util.concurrent.TimeUnit.MILLISECONDS))
                {
                    System.err.println("ringmq: the stop did not finish within " + STOP_BOUND_MS + " ms; halting");
                    Runtime.getRuntime().halt(1);
                }
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
            }
        }, "ringmq-stop-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /** How long a clean stop may take before the process halts. */
    static final long STOP_BOUND_MS = 30_000;

    /**
     * @return a context with every option copied in, not yet concluded. The groups copy theirs in the order the
     * options were read before they were grouped, so of two bad options the same one is reported.
     */
    BrokerContext context()
    {
        final BrokerContext context = new BrokerContext();
        limits.applyTo(context); // --connect-timeout, then --persistent-client-expiration
        memory.applyTo(context);
        observability.applyTo(context); // --sys-interval
        authentication.applyTo(context); // --anonymous, then the password of --user
        persistence.applyTo(context); // --persistence, --durability, --fsync-interval
        network.applyTo(context, fromFile); // the listeners
        credentialChecks.applyTo(context.auth().credentialSettings()); // the --auth-* durations
        threading.applyTo(context); // --threading, then --idle-strategy
        return context;
    }

    /**
     * Reads the command line and its config file again, as at start: what a reload applies.
     */
    static BrokerContext rereadContext(final String[] args) throws IOException
    {
        return reread(args).context().conclude();
    }

    /**
     * Reads the command line and its config file again into a fresh {@code Main} (its log level is not in the
     * context).
     */
    static Main reread(final String[] args) throws IOException
    {
        final Options options = withConfigFile(args);
        final Main main = new Main();
        final CommandLine commandLine = new CommandLine(main);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.setAllowSubcommandsAsOptionParameters(true);
        try
        {
            commandLine.parseArgs(options.args());
        }
        catch (final CommandLine.ParameterException ex)
        {
            throw new IllegalArgumentException(ex.getMessage(), ex);
        }
        main.fromFile = options.fromFile();
        return main;
    }

    /**
     * A command line with its config file read: the file's options first, so the command line wins.
     */
    record Options(String[] args, ConfigFile.Parsed fromFile)
    {
    }

    /**
     * Reads the config file {@code -c} names, if any.
     */
    static Options withConfigFile(final String[] args) throws IOException
    {
        Path file = null;
        for (int i = 0; i < args.length; i++)
        {
            if ((args[i].equals("-c") || args[i].equals("--config")) && i + 1 < args.length)
            {
                file = Path.of(args[i + 1]);
            }
            else if (args[i].startsWith("--config="))
            {
                file = Path.of(args[i].substring("--config=".length()));
            }
        }
        if (null == file)
        {
            return new Options(args, null);
        }
        final CommandLine.Model.CommandSpec spec = new CommandLine(new Main()).getCommandSpec();
        final ConfigFile.Parsed parsed = ConfigFile.read(file, name -> null != spec.findOption("--" + name));
        final List<String> merged = new ArrayList<>(parsed.args);
        merged.addAll(List.of(args));
        return new Options(merged.toArray(new String[0]), parsed);
    }

    public static void main(final String[] args)
    {
        System.exit(run(args));
    }

    /**
     * @return what to tell the user when the broker runs out of memory while it starts: the heap (the store's sessions
     * and messages are recovered into it), or the direct memory the rings and message logs are mapped from.
     */
    static String outOfMemoryAtStart(final OutOfMemoryError error)
    {
        final String why = String.valueOf(error.getMessage());
        if (why.contains("Java heap space") || why.contains("GC overhead"))
        {
            return "not enough heap to start (" + why + "): the persistent sessions and messages recovered from " +
                "--data-dir, and the limits' structures, live on the heap: raise -Xmx (bin/ringmq: --memory-limit)";
        }
        return "not enough memory for the rings and message logs (" + why + "): lower --max-packet-size, " +
            "--io-threads or --message-log-bytes, or raise -XX:MaxDirectMemorySize";
    }

    /**
     * Runs the command line; returns the exit code (0 ok, 1 failed to start, 2 bad options).
     */
    public static int run(final String... args)
    {
        quietNettyEvents();
        final Main main = new Main();
        final CommandLine commandLine = new CommandLine(main);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.setAllowSubcommandsAsOptionParameters(true); // --password-file passwd: a file, not the subcommand
        commandLine.setExecutionExceptionHandler((ex, cmd, parseResult) ->
        {
            cmd.getErr().println("ringmq: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        try
        {
            final Options options = withConfigFile(args);
            main.fromFile = options.fromFile();
            main.originalArgs = args.clone();
            if (null != options.fromFile())
            {
                options.fromFile().warnings.forEach(warning -> System.err.println("ringmq: warning: " + warning));
            }
            return commandLine.execute(options.args());
        }
        catch (final IOException | IllegalArgumentException ex)
        {
            System.err.println("ringmq: " + ex.getMessage());
            return 2;
        }
    }

    /**
     * Turns off netty's JFR allocation events unless {@code -Dio.netty.jfr.enabled} says otherwise: their first
     * chunk allocation registers them with JFR, which loads and initialises JFR's metadata (about 80 classes, 0.25 to
     * 0.4 s on a loaded 2-core machine) on an I/O thread, in front of the first connection, recording or not.
     * JFR's own events (CPU, allocation, locks) are not affected; docs/perf/README.md says how to profile.
     */
    static void quietNettyEvents()
    {
        if (null == System.getProperty("io.netty.jfr.enabled"))
        {
            System.setProperty("io.netty.jfr.enabled", "false");
        }
    }

    /**
     * The version, from the jar manifest when there is one.
     */
    static final class Version implements CommandLine.IVersionProvider
    {
        static final String VERSION = null != Main.class.getPackage().getImplementationVersion() ?
            Main.class.getPackage().getImplementationVersion() : "0.1.0-SNAPSHOT";

        public String[] getVersion()
        {
            return new String[]{"ringmq " + VERSION, "Java " + System.getProperty("java.version")};
        }
    }
}
