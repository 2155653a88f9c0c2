package io.ringmq.transport;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

/**
 * What the launcher's flag tests share: a stand-in jar in a fresh folder (skipped where {@code bin/ringmq} is not
 * found) and its {@code --dry-run} command with {@code --persistence memory}.
 */
abstract class LauncherDryRunTest
{
    @TempDir
    Path directory;
    Path jar;

    @BeforeEach
    void aLauncherAndAJar() throws Exception
    {
        jar = LauncherDryRun.standInJar(directory);
    }

    /**
     * @return the java command the launcher prints for {@code args}, with RINGMQ_JAVA_OPTS {@code javaOpts}; its
     * exit status must be {@code exit}.
     */
    String dryRun(final String javaOpts, final int exit, final String... args) throws Exception
    {
        return LauncherDryRun.inMemory(jar, javaOpts, exit, args);
    }
}
