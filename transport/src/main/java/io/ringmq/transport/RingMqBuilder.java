package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import picocli.CommandLine;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.function.Consumer;

/**
 * The settings of an embedded broker, as the {@code ringmq} command line's own options: every typed method here
 * adds the option the command line would take, and {@link #option(String, String)} takes any of them by name, so
 * the defaults, the parsing and the checks are the command line's ({@link Main}, {@link BrokerContext#conclude()})
 * and never repeated here. Options given later win over earlier ones.
 * <p>
 * Defaults differ from the command line's only where a test needs them to: listen on 127.0.0.1 on a free port,
 * keep the counters file in a fresh temporary directory that {@link RingMq#close()} removes, and keep nothing on
 * disk ({@code --persistence memory}; {@code .option("persistence", "rocksdb").option("data-dir", dir)} keeps it),
 * and start without a warm-up ({@code --warmup 0}; {@code .option("warmup", "500")} warms it up as the command line
 * does).
 * Anonymous clients are accepted from loopback only, as the command line does.
 * <pre>{@code
 * try (RingMq broker = RingMq.builder().user("u", "p").option("max-inflight", "64").start())
 * {
 *     MqttClient client = new MqttClient(broker.uri(), "c1");
 * }
 * }</pre>
 * A builder may start any number of brokers; each {@link #start()} parses the options afresh.
 */
public final class RingMqBuilder
{
    /** An embedded broker (a test, an application) starts cold: {@code option("warmup", "500")} asks for one. */
    private static final String[] EMBEDDED_DEFAULTS = {"--bind=127.0.0.1", "--port=0", "--persistence=memory",
        "--warmup=0"};

    private final List<String> args = new ArrayList<>();
    private final List<Consumer<BrokerContext>> customisers = new ArrayList<>();
    private Path configFile;
    private boolean invoker;

    RingMqBuilder()
    {
    }

    /**
     * @param address the address to listen on ({@code --bind}; default 127.0.0.1).
     * @return this.
     */
    public RingMqBuilder bind(final String address)
    {
        return option("bind", address);
    }

    /**
     * @param port the TCP port ({@code --port}); 0, the default, picks a free one: read it from {@link RingMq#port()}.
     * @return this.
     */
    public RingMqBuilder port(final int port)
    {
        return option("port", Integer.toString(port));
    }

    /**
     * @param user     a user name clients may connect with ({@code --user}).
     * @param password its password ({@code --pass}).
     * @return this.
     */
    public RingMqBuilder user(final String user, final String password)
    {
        return option("user", user).option("pass", password);
    }

    /**
     * @param file a {@code user:hash} password file, as {@code ringmq passwd} or {@code mosquitto_passwd} write it
     *             ({@code --password-file}).
     * @return this.
     */
    public RingMqBuilder passwordFile(final Path file)
    {
        return option("password-file", file.toString());
    }

    /**
     * @param policy who may connect without a user name ({@code --anonymous}; default loopback).
     * @return this.
     */
    public RingMqBuilder anonymous(final Authenticator.AnonymousPolicy policy)
    {
        return option("anonymous", constant(policy));
    }

    /**
     * @param threading how agents map onto threads ({@code --threading}; default by core count).
     *                  {@link BrokerContext.Threading#INVOKER} runs no thread at all: the caller steps the broker
     *                  with {@link RingMq#invoke()}.
     * @return this.
     */
    public RingMqBuilder threading(final BrokerContext.Threading threading)
    {
        invoker = threading == BrokerContext.Threading.INVOKER;
        if (!invoker)
        {
            option("threading", constant(threading));
        }
        return this;
    }

    /**
     * @param directory where the counters file that {@code ringmq stat} reads is kept ({@code --counters-dir});
     *                  by default a fresh temporary directory, removed on close.
     * @return this.
     */
    public RingMqBuilder countersDir(final Path directory)
    {
        return option("counters-dir", directory.toString());
    }

    /**
     * @param file a config file as {@code ringmq --config} reads it; options given to this builder win over it.
     * @return this.
     */
    public RingMqBuilder configFile(final Path file)
    {
        configFile = Objects.requireNonNull(file, "file");
        return this;
    }

    /**
     * Sets any option of the command line ({@code ringmq --help} lists them).
     *
     * @param name  the option's name, with or without its leading dashes: {@code "max-inflight"} or
     *              {@code "--max-inflight"}.
     * @param value its value as the command line takes it: {@code "64"}, {@code "10s"}, {@code "true"}.
     * @return this.
     */
    public RingMqBuilder option(final String name, final String value)
    {
        Objects.requireNonNull(value, () -> "value of option " + name);
        final String option = optionName(name);
        if (option.equals("--threading") && value.strip().equalsIgnoreCase("invoker"))
        {
            return threading(BrokerContext.Threading.INVOKER);
        }
        if (option.equals("--threading"))
        {
            invoker = false;
        }
        args.add(option + '=' + value);
        return this;
    }

    /**
     * Sets an option that takes no value, such as {@code "limit-loopback"}.
     *
     * @param name the option's name, with or without its leading dashes.
     * @return this.
     */
    public RingMqBuilder option(final String name)
    {
        args.add(optionName(name));
        return this;
    }

    /**
     * Adds options exactly as they would follow {@code ringmq} on a command line.
     *
     * @param commandLine the words, e.g. {@code "--max-inflight", "64", "--limit-loopback"}.
     * @return this.
     */
    public RingMqBuilder args(final String... commandLine)
    {
        for (final String word : commandLine)
        {
            args.add(Objects.requireNonNull(word, "argument"));
        }
        return this;
    }

    /**
     * Changes the settings directly, for what has no command line option. Runs after every option is applied and
     * before the settings are checked.
     *
     * @param customiser called with the settings of each broker started.
     * @return this.
     */
    public RingMqBuilder context(final Consumer<BrokerContext> customiser)
    {
        customisers.add(Objects.requireNonNull(customiser, "customiser"));
        return this;
    }

    /**
     * Starts a broker on these settings.
     *
     * @return the running broker; close it to stop it.
     * @throws IllegalArgumentException for a bad or unknown option, with a one-line reason naming it.
     * @throws UncheckedIOException     when the port cannot be bound, or the password, config or counters file
     *                                  cannot be read or written.
     */
    public RingMq start()
    {
        final Main options = parse();
        final BrokerContext context = settings(options);
        Path temporary = null;
        try
        {
            if (null == options.observability.countersDir)
            {
                temporary = Files.createTempDirectory("ringmq-counters-");
                context.observability().countersDir(temporary);
            }
            customised(context);
            return new RingMq(Broker.launch(context), context, temporary);
        }
        catch (final IOException ex)
        {
            RingMq.deleteQuietly(temporary);
            throw new UncheckedIOException("cannot start ringmq: " + ex.getMessage(), ex);
        }
        catch (final RuntimeException | Error ex)
        {
            RingMq.deleteQuietly(temporary);
            throw ex;
        }
    }

    /**
     * Parses the options and checks the settings without starting anything.
     *
     * @return the settings a broker would start with (its counters directory the default one, as no temporary
     *         directory is made).
     * @throws IllegalArgumentException for a bad or unknown option.
     */
    public BrokerContext toContext()
    {
        return customised(settings(parse()));
    }

    private Main parse()
    {
        final Main options = new Main();
        final CommandLine commandLine = new CommandLine(options);
        commandLine.setOverwrittenOptionsAllowed(true);
        commandLine.setAllowSubcommandsAsOptionParameters(true);
        final CommandLine.ParseResult result;
        try
        {
            result = commandLine.parseArgs(words(options));
        }
        catch (final CommandLine.ParameterException ex)
        {
            throw new IllegalArgumentException("bad ringmq option: " + ex.getMessage() + suggestions(ex), ex);
        }
        if (result.hasSubcommand() || result.isUsageHelpRequested() || result.isVersionHelpRequested())
        {
            throw new IllegalArgumentException("bad ringmq option: " + String.join(" ", result.originalArgs()) +
                " is not a broker option");
        }
        return options;
    }

    private String[] words(final Main options)
    {
        final List<String> words = new ArrayList<>(List.of(EMBEDDED_DEFAULTS));
        if (null != configFile)
        {
            try
            {
                // the file's options, then --config itself; they follow the embedded defaults and precede ours
                final Main.Options fromFile = Main.withConfigFile(new String[]{"--config", configFile.toString()});
                options.fromFile = fromFile.fromFile(); // its listener sections
                words.addAll(List.of(fromFile.args()));
            }
            catch (final IOException ex)
            {
                throw new UncheckedIOException(ex.getMessage(), ex);
            }
        }
        words.addAll(args);
        return words.toArray(new String[0]);
    }

    private BrokerContext settings(final Main options)
    {
        try
        {
            final BrokerContext context = options.context();
            if (invoker)
            {
                context.threads(t -> t.threading(BrokerContext.Threading.INVOKER));
            }
            return context;
        }
        catch (final IllegalArgumentException ex)
        {
            throw new IllegalArgumentException("bad ringmq option: " + ex.getMessage(), ex);
        }
    }

    /**
     * Applies the customisers, then checks every setting as the command line does.
     */
    private BrokerContext customised(final BrokerContext context)
    {
        customisers.forEach(customiser -> customiser.accept(context));
        try
        {
            context.conclude();
            new CorePinning(context.threads().pin());
            return context;
        }
        catch (final IllegalArgumentException ex)
        {
            throw new IllegalArgumentException("bad ringmq option: " + ex.getMessage(), ex);
        }
    }

    /**
     * @return " (did you mean --x?)" naming the known option closest to an unknown one, or "" when none is close.
     */
    private static String suggestions(final CommandLine.ParameterException ex)
    {
        if (!(ex instanceof CommandLine.UnmatchedArgumentException) ||
            ((CommandLine.UnmatchedArgumentException)ex).getUnmatched().isEmpty())
        {
            return "";
        }
        final String unmatched = ((CommandLine.UnmatchedArgumentException)ex).getUnmatched().get(0);
        final String name = unmatched.contains("=") ? unmatched.substring(0, unmatched.indexOf('=')) : unmatched;
        String closest = null;
        int closestDistance = 4; // more edits than this is a different word
        for (final CommandLine.Model.OptionSpec option : ex.getCommandLine().getCommandSpec().options())
        {
            final int distance = editDistance(name, option.longestName());
            if (distance < closestDistance)
            {
                closest = option.longestName();
                closestDistance = distance;
            }
        }
        return null == closest ? "" : " (did you mean " + closest + "?)";
    }

    private static int editDistance(final String a, final String b)
    {
        int[] previous = new int[b.length() + 1];
        int[] current = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++)
        {
            previous[j] = j;
        }
        for (int i = 1; i <= a.length(); i++)
        {
            current[0] = i;
            for (int j = 1; j <= b.length(); j++)
            {
                final int substitution = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
            }
            final int[] swap = previous;
            previous = current;
            current = swap;
        }
        return previous[b.length()];
    }

    private static String optionName(final String name)
    {
        Objects.requireNonNull(name, "option name");
        final String stripped = name.strip();
        if (stripped.isEmpty() || stripped.equals("-") || stripped.equals("--"))
        {
            throw new IllegalArgumentException("bad ringmq option: empty option name");
        }
        return stripped.startsWith("-") ? stripped : "--" + stripped;
    }

    private static String constant(final Enum<?> constant)
    {
        return constant.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
