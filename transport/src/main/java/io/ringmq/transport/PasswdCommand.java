package io.ringmq.transport;

import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramCredential;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.BufferedReader;
import java.io.Console;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/**
 * {@code ringmq passwd [--scram] FILE USER}: adds or replaces a user in a password file.
 */
@Command(name = "passwd", mixinStandardHelpOptions = true,
    description = "Add or replace a user in a password file (salted PBKDF2-SHA512, mosquitto_passwd format; "
        + "with --scram, a SCRAM-SHA-256 entry).")
final class PasswdCommand implements Callable<Integer>
{
    @Parameters(index = "0", paramLabel = "FILE", description = "The password file (created if missing).")
    Path file;

    @Parameters(index = "1", paramLabel = "USER", description = "The user name.")
    String user;

    @Option(names = "--password", description = "The password; without it, it is asked for (or read from "
        + "standard input when there is no console).")
    String password;

    @Option(names = "--iterations", description = "PBKDF2 iterations (default: "
        + PasswordHash.DEFAULT_ITERATIONS + ", or " + ScramCredential.DEFAULT_ITERATIONS + " with --scram).")
    Integer iterations;

    @Option(names = "--scram", description = "Write a $scram-sha-256$ entry, for MQTT 5.0 enhanced authentication "
        + "with the SCRAM-SHA-256 method as well as plain passwords (printable ASCII user and password).")
    boolean scram;

    public Integer call() throws IOException
    {
        String secret = password;
        if (null == secret)
        {
            final Console console = System.console();
            if (null != console)
            {
                final char[] typed = console.readPassword("Password for %s: ", user);
                secret = null == typed ? null : new String(typed);
            }
            else
            {
                secret = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            }
        }
        if (null == secret || secret.isEmpty())
        {
            System.err.println("ringmq passwd: no password given");
            return 2;
        }
        try
        {
            final PasswordHash entry = scram ?
                PasswordHash.createScram(secret, iterationsOr(ScramCredential.DEFAULT_ITERATIONS)) :
                PasswordHash.create(secret, iterationsOr(PasswordHash.DEFAULT_ITERATIONS));
            PasswordFile.write(file, user, entry);
        }
        catch (final IllegalArgumentException ex)
        {
            System.err.println("ringmq passwd: " + ex.getMessage());
            return 2;
        }
        System.out.println("ringmq passwd: wrote " + user + " to " + file);
        return 0;
    }

    private int iterationsOr(final int defaultIterations)
    {
        return null == iterations ? defaultIterations : iterations;
    }
}
