package io.ringmq.pipeline.auth;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A password file of {@code user:hash} lines ({@link PasswordHash} form: Mosquitto's {@code $7$} PBKDF2-SHA512
 * or ringmq's {@code $scram-sha-256$}, mixed freely); blank lines and lines starting with '#' are ignored.
 */
public final class PasswordFile
{
    private final Map<String, PasswordHash> users;

    private PasswordFile(final Map<String, PasswordHash> users)
    {
        this.users = users;
    }

    /**
     * @throws IOException              when the file cannot be read.
     * @throws IllegalArgumentException naming the line that is not {@code user:hash}.
     */
    public static PasswordFile load(final Path path) throws IOException
    {
        final Map<String, PasswordHash> users = new LinkedHashMap<>();
        final List<String> lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        for (int i = 0; i < lines.size(); i++)
        {
            final String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#"))
            {
                continue;
            }
            final int colon = line.indexOf(':');
            if (colon <= 0)
            {
                throw new IllegalArgumentException(path + " line " + (i + 1) + ": expected user:hash");
            }
            try
            {
                users.put(line.substring(0, colon), PasswordHash.parse(line.substring(colon + 1)));
            }
            catch (final IllegalArgumentException ex)
            {
                throw new IllegalArgumentException(path + " line " + (i + 1) + ": " + ex.getMessage(), ex);
            }
        }
        return new PasswordFile(users);
    }

    /**
     * Adds or replaces a user's password in the file, keeping the other lines.
     */
    public static void write(final Path path, final String user, final String password, final int iterations)
        throws IOException
    {
        write(path, user, PasswordHash.create(password, iterations));
    }

    /**
     * Adds or replaces a user's entry in the file, keeping the other lines.
     *
     * @param entry e.g. {@link PasswordHash#createScram}; a SCRAM entry needs a printable ASCII user name.
     */
    public static void write(final Path path, final String user, final PasswordHash entry) throws IOException
    {
        if (user.isEmpty() || user.contains(":"))
        {
            throw new IllegalArgumentException("a user name must be non-empty and hold no ':'");
        }
        if (null != entry.scram() && !ScramCredential.isPrintableAscii(user))
        {
            throw new IllegalArgumentException("a SCRAM user name must be printable ASCII (SASLprep)");
        }
        final StringBuilder out = new StringBuilder();
        if (Files.exists(path))
        {
            for (final String line : Files.readAllLines(path, StandardCharsets.UTF_8))
            {
                if (!line.startsWith(user + ":"))
                {
                    out.append(line).append('\n');
                }
            }
        }
        out.append(user).append(':').append(entry.encode()).append('\n');
        // written beside it, then moved over it: a reload (SIGHUP) never reads a half-written file
        final Path absolute = path.toAbsolutePath();
        final Path temporary = Files.createTempFile(absolute.getParent(), absolute.getFileName() + ".", ".tmp");
        try
        {
            Files.writeString(temporary, out.toString(), StandardCharsets.UTF_8);
            Files.move(temporary, absolute, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        finally
        {
            Files.deleteIfExists(temporary);
        }
    }

    /**
     * @return the user's hash, or null when the user is unknown.
     */
    public PasswordHash hashOf(final String user)
    {
        return users.get(user);
    }

    /**
     * @return the user's SCRAM-SHA-256 credential, or null when the user is unknown or has a {@code $7$} entry.
     */
    public ScramCredential scramOf(final String user)
    {
        final PasswordHash hash = users.get(user);
        return null == hash ? null : hash.scram();
    }

    public int size()
    {
        return users.size();
    }
}
