package io.ringmq.loadtest;

import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Where the connections' password may come from besides {@code -pass}, so it does not show in {@code ps}: a
 * file's first line or an environment variable (a picocli mixin of {@link LoadTest} and {@link CrashLoss}).
 */
final class PasswordSources
{
    @Option(names = {"-pass-file", "--pass-file"}, paramLabel = "FILE",
        description = "Read the password from the first line of FILE.")
    Path passFile;

    @Option(names = {"-pass-env", "--pass-env"}, paramLabel = "VAR",
        description = "Read the password from the environment variable VAR.")
    String passEnv;

    /**
     * @return the password from {@code -pass}, {@code -pass-file} or {@code -pass-env} (at most one), or null.
     */
    String password(final String pass)
    {
        if ((null != pass ? 1 : 0) + (null != passFile ? 1 : 0) + (null != passEnv ? 1 : 0) > 1)
        {
            throw new IllegalArgumentException("-pass, -pass-file and -pass-env exclude each other");
        }
        if (null != passFile)
        {
            try
            {
                final List<String> lines = Files.readAllLines(passFile, StandardCharsets.UTF_8);
                if (lines.isEmpty())
                {
                    throw new IllegalArgumentException("-pass-file " + passFile + " is empty");
                }
                return lines.get(0);
            }
            catch (final IOException ex)
            {
                throw new IllegalArgumentException("-pass-file: cannot read " + passFile + ": " + ex.getMessage());
            }
        }
        if (null != passEnv)
        {
            final String value = System.getenv(passEnv);
            if (null == value)
            {
                throw new IllegalArgumentException("-pass-env: " + passEnv + " is not set");
            }
            return value;
        }
        return pass;
    }
}
