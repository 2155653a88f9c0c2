package io.ringmq.transport;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Runs {@code bin/ringmq --dry-run} for the launcher's tests: it prints the java command it would run, and starts
 * nothing, so a stand-in jar will do.
 */
final class LauncherDryRun
{
    static final Path LAUNCHER = Path.of("..", "bin", "ringmq").toAbsolutePath().normalize();

    private LauncherDryRun()
    {
    }

    /**
     * Skips the test where the launcher is not next to the module (a build run from elsewhere).
     */
    static void assumeLauncher()
    {
        assumeTrue(Files.isExecutable(LAUNCHER), "bin/ringmq not found from " + Path.of("").toAbsolutePath());
    }

    /**
     * @return a stand-in jar in {@code directory} (a dry run never starts it), once the launcher is found (the test
     * is skipped where it is not).
     */
    static Path standInJar(final Path directory) throws java.io.IOException
    {
        assumeLauncher();
        return Files.writeString(directory.resolve("ringmq.jar"), "not run: --dry-run");
    }

    /**
     * @return the launcher's command for {@code jar} with {@code --persistence memory} (no store to prepare) and
     * {@code args}, with RINGMQ_JAVA_OPTS {@code javaOpts}; its exit status must be {@code exit}.
     */
    static String inMemory(final Path jar, final String javaOpts, final int exit, final String... args)
        throws Exception
    {
        final List<String> launcherArgs = new ArrayList<>(List.of("--persistence", "memory"));
        launcherArgs.addAll(List.of(args));
        return run(List.of(), Map.of("RINGMQ_JAR", jar.toString(), "RINGMQ_JAVA_OPTS", javaOpts), exit,
            launcherArgs.toArray(new String[0]));
    }

    /**
     * @param prefix      what runs the launcher ({@code nohup}, {@code env ...}); none for itself.
     * @param environment variables to set (RINGMQ_JAR at least); RINGMQ_JAVA_OPTS and _JAVA_OPTIONS are cleared
     *                    unless given.
     * @param exit        the exit status expected.
     * @param args        the launcher's arguments after {@code --dry-run}.
     * @return what it printed, standard error included.
     */
    static String run(final List<String> prefix, final Map<String, String> environment, final int exit,
        final String... args) throws Exception
    {
        final List<String> command = new ArrayList<>(prefix);
        command.addAll(List.of(LAUNCHER.toString(), "--dry-run"));
        command.addAll(List.of(args));
        final ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().remove("RINGMQ_JAVA_OPTS");
        builder.environment().remove("_JAVA_OPTIONS");
        builder.environment().putAll(environment);
        final Process process = builder.start();
        final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(output).isEqualTo(exit);
        return output;
    }
}
