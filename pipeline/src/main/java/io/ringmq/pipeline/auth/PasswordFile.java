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
    /** Entries under this many iterations load, with one warning line: Mosquitto's mosquitto_passwd writes 101. */
    public static final int WEAK_ITERATIONS = 1_000;
    private static final System.Logger LOG = System.getLogger("io.ringmq.pipeline.auth");
    private static final java.util.concurrent.atomic.AtomicLong GENERATIONS = new java.util.concurrent.atomic.AtomicLong();

    private final Map<String, PasswordHash> users;
    private final long generation = GENERATIONS.incrementAndGet();
    private final PasswordHash decoy;
    private final int weakCount;

    private PasswordFile(final Map<String, PasswordHash> users)
    {
        this.users = users;
        final Map<String, Integer> costs = new java.util.HashMap<>();
        PasswordHash usual = null;
        int usualCount = 0;
        int weak = 0;
        for (final PasswordHash hash : users.values())
        {
            final int count = costs.merge(hash.costKey(), 1, Integer::sum);
            if (count > usualCount)
            {
                usual = hash;
                usualCount = count;
            }
            weak += hash.iterations() < WEAK_ITERATIONS ? 1 : 0;
        }
        this.weakCount = weak;
        // an unknown user is hashed like the file's most common entry: same kind, same iteration count
        this.decoy = null == usual ? PasswordHash.create(java.util.UUID.randomUUID().toString(),
            PasswordHash.DEFAULT_ITERATIONS).decoy() : usual.decoy();
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
        final PasswordFile file = new PasswordFile(users);
        if (file.weakCount > 0)
        {
            LOG.log(System.Logger.Level.WARNING, path + ": " + file.weakCount + " of " + users.size() +
                " entries have fewer than " + WEAK_ITERATIONS + " PBKDF2 iterations (mosquitto_passwd writes 101); " +
                "they load, but a stolen file is cheap to attack: rewrite them with 'ringmq passwd'");
        }
        return file;
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

    /**
     * @return a number no other password file loaded by this process has: what a verdict was reached under.
     */
    public long generation()
    {
        return generation;
    }

    /**
     * @return the entry an unknown user is hashed against: like the file's usual entry, matched by no password.
     */
    public PasswordHash decoy()
    {
        return decoy;
    }

    /**
     * @return entries with fewer than {@link #WEAK_ITERATIONS} iterations.
     */
    public int weakCount()
    {
        return weakCount;
    }

    public int size()
    {
        return users.size();
    }
}
