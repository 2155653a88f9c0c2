package io.ringmq.transport;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A broker started with SIGHUP ignored ({@code nohup}): the JVM keeps a signal ignored at its start ignored and
 * installs no handler for it, without a word, so {@code kill -HUP} and {@code ringmq reload} did nothing. The broker
 * now says so at start and {@code ringmq reload} refuses to signal it; {@code bin/ringmq} restores SIGHUP's default
 * first ({@code env --default-signal=HUP}), after which the broker reloads under {@code nohup} as without it.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(90)
class ReloadIgnoredSighupTest
{
    @TempDir
    Path directory;

    @BeforeEach
    void nohupAndEnv() throws Exception
    {
        assumeTrue(runs("nohup", "true"), "nohup not found");
        assumeTrue(runs("env", "--default-signal=HUP", "true"), "env has no --default-signal (coreutils < 8.31)");
    }

    @Test
    @DisplayName("under nohup the broker says SIGHUP cannot reload it, and ringmq reload sends nothing")
    void ignoredSighupIsSaidAndNotSignalled() throws Exception
    {
        final Path file = directory.resolve("passwd");
        ReloadTest.user(file, "alice", "a-pw");
        final ForkedBroker.Launch launch = ForkedBroker.launch(directory, List.of("nohup"),
            "--password-file", file.toString(), "--anonymous", "none");
        assertThat(launch.broker()).as(launch.output()).isNotNull();
        try (ForkedBroker forked = launch.broker())
        {
            assertThat(launch.output()).contains("SIGHUP was ignored when this process started");
            final String said = MainTest.run(1, "reload", "--pid", Long.toString(forked.pid()), "--counters-dir",
                directory.resolve("counters").toString());
            assertThat(said).contains("does not take reloads").contains("nohup");
            // still there and still serving: nothing was sent that could have ended it
            Paho.connect(forked.port(), "alice", ReloadTest.credentials("alice", "a-pw")).close();
        }
    }

    @Test
    @DisplayName("under nohup, SIGHUP's default restored first (as bin/ringmq does), ringmq reload lets a new user in")
    void restoredSighupReloads() throws Exception
    {
        final Path file = directory.resolve("passwd");
        ReloadTest.user(file, "alice", "a-pw");
        final ForkedBroker.Launch launch = ForkedBroker.launch(directory,
            List.of("nohup", "env", "--default-signal=HUP"), "--password-file", file.toString(), "--anonymous", "none");
        assertThat(launch.broker()).as(launch.output()).isNotNull();
        try (ForkedBroker forked = launch.broker())
        {
            assertThat(launch.output()).doesNotContain("SIGHUP was ignored");
            ReloadTest.user(file, "dave", "d-pw");
            assertThat(Main.run("reload", "--pid", Long.toString(forked.pid()), "--counters-dir",
                directory.resolve("counters").toString())).isZero();
            ReloadTest.awaitLogin(forked.port(), "dave", "d-pw").close();
        }
    }

    @Test
    @DisplayName("bin/ringmq restores SIGHUP's default before the JVM only where it was ignored, and only for the broker")
    void launcherRestoresSighupOnlyWhereIgnored() throws Exception
    {
        LauncherDryRun.assumeLauncher();
        final Path jar = Files.writeString(directory.resolve("ringmq.jar"), "not run: --dry-run");
        // SIGHUP at its default for the plain run, whatever this test runs under
        final String plain = dryRun(jar, List.of("env", "--default-signal=HUP"), "--persistence", "memory");
        final String nohup = dryRun(jar, List.of("nohup"), "--persistence", "memory");
        assertThat(plain).doesNotContain("--default-signal").contains("-jar");
        assertThat(nohup).startsWith("env --default-signal=HUP ").contains("-jar");
        assertThat(dryRun(jar, List.of("nohup"), "stat")).doesNotContain("--default-signal").contains("-jar");
    }

    private static String dryRun(final Path jar, final List<String> prefix, final String... args) throws Exception
    {
        return LauncherDryRun.run(prefix, Map.of("RINGMQ_JAR", jar.toString()), 0, args);
    }

    private static boolean runs(final String... command)
    {
        try
        {
            final Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            process.getInputStream().readAllBytes();
            return process.waitFor(10, TimeUnit.SECONDS) && process.exitValue() == 0;
        }
        catch (final Exception ex)
        {
            return false;
        }
    }
}
