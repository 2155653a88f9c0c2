package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * Decides CONNECT credentials. Anonymous clients (no user name) are let in according to the
 * {@link AnonymousPolicy}; by default only from loopback, whatever address the broker listens on. A user name must
 * match the {@code --user}/{@code --pass} pair or a line of the password file.
 * <p>
 * Verifying a password ({@link #verify}) is deliberately slow and runs on the {@link CredentialWorkers}, never on
 * an I/O or stage thread; it is thread-safe. It costs the same whether the user exists or not: an unknown user is
 * hashed against the file's {@link PasswordFile#decoy()}, and the {@code --user}/{@code --pass} pair is compared
 * as keyed MACs, in constant time. A verified password-file credential is remembered in a
 * {@link CredentialCache} (keyed HMAC, never the password), so a reconnect costs one HMAC. The verdict names the
 * password file it was reached under ({@link PasswordFile#generation()}), so the auth stage admits only on a
 * verdict of the file it holds.
 */
public final class Authenticator
{
    /** Who may connect without a user name. */
    public enum AnonymousPolicy
    {
        /** Nobody. */
        NONE,
        /** Clients connecting from a loopback address. */
        LOOPBACK,
        /** Everybody. */
        ALL
    }

    /** A verdict flag: a PBKDF2 derivation was run for it. */
    public static final long HASHED = 0x80;
    /** A verdict flag: it came from the cache of verified credentials (one HMAC). */
    public static final long CACHED = 0x40;
    private static final long CODE_MASK = 0x3F;

    /** The auth stage's thread only (as {@link #authenticate}); a reload changes it there. */
    private AnonymousPolicy anonymous;
    private final CredentialCache cache;
    private final byte[] userMac;
    private final byte[] passwordMac;
    private volatile PasswordFile passwordFile;
    private volatile boolean offloaded;
    private boolean acceptedByFile;

    /**
     * @param user         the single configured user, or null.
     * @param password     that user's password, or null.
     * @param passwordFile users with PBKDF2 hashes, or null.
     */
    public Authenticator(
        final AnonymousPolicy anonymous, final String user, final String password, final PasswordFile passwordFile)
    {
        this(anonymous, user, password, passwordFile, CredentialSettings.DEFAULT_CACHE_SIZE);
    }

    /**
     * @param cacheSize verified credentials remembered at most (0: none).
     */
    public Authenticator(final AnonymousPolicy anonymous, final String user, final String password,
        final PasswordFile passwordFile, final int cacheSize)
    {
        this.anonymous = anonymous;
        this.cache = new CredentialCache(cacheSize);
        // kept only as MACs under the process key: compared in constant time, whatever the lengths
        this.userMac = null == user ? null : cache.mac(utf8(user), new byte[0]);
        this.passwordMac = null == password ? null : cache.mac(utf8(password), new byte[0]);
        this.passwordFile = passwordFile;
    }

    private static byte[] utf8(final String text)
    {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * @param anonymous who may connect without a user name from now on (a reload; the auth stage's thread).
     */
    public void anonymous(final AnonymousPolicy anonymous)
    {
        this.anonymous = anonymous;
    }

    /**
     * Replaces the password file (a reload); the remembered verifications go with the old one.
     */
    public void passwordFile(final PasswordFile passwordFile)
    {
        this.passwordFile = passwordFile;
        cache.clear();
    }

    /**
     * @return the current password file, or null.
     */
    public PasswordFile passwordFile()
    {
        return passwordFile;
    }

    /**
     * @return the generation of the current password file, 0 without one.
     */
    public long generation()
    {
        final PasswordFile file = passwordFile;
        return null == file ? 0 : file.generation();
    }

    /**
     * Marks that {@link CredentialWorkers} verify passwords for this authenticator: from then on the auth stage
     * refuses a user name and password that come without their verdict (fail closed) instead of hashing itself.
     */
    void offloaded(final boolean offloaded)
    {
        this.offloaded = offloaded;
    }

    /**
     * @return whether passwords are verified on the credential workers only.
     */
    public boolean offloaded()
    {
        return offloaded;
    }

    /**
     * @return verified credentials remembered now.
     */
    public int cachedCount()
    {
        return cache.size();
    }

    /**
     * @return whether the last {@link #authenticate} accepted the client by a password-file entry (not by the
     * command line's user, nor anonymously): what a reload of the file may revoke.
     */
    public boolean acceptedByFile()
    {
        return acceptedByFile;
    }

    /**
     * Decides a CONNECT on the caller's thread: anonymous clients and missing passwords (cheap), or everything when
     * no worker verifies passwords (stage tests in {@code invoker} mode). Single-threaded.
     *
     * @param loopback     whether the client connected from a loopback address.
     * @param userName     the CONNECT user name, or null when absent.
     * @param passwordUtf8 the CONNECT password, or null when absent.
     * @return an MQTT 3.1.1 CONNACK return code: 0 accepted, 4 bad user name or password, 5 not authorized.
     */
    public int authenticate(final boolean loopback, final String userName, final byte[] passwordUtf8)
    {
        acceptedByFile = false;
        if (null == userName)
        {
            final boolean allowed = anonymous == AnonymousPolicy.ALL ||
                (anonymous == AnonymousPolicy.LOOPBACK && loopback);
            return allowed ? ReasonCode.V3_CONNECTION_ACCEPTED : ReasonCode.V3_NOT_AUTHORIZED;
        }
        if (null == passwordUtf8)
        {
            return ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD;
        }
        final long verdict = verify(userName, passwordUtf8);
        acceptedByFile = verdictGeneration(verdict) != 0;
        return verdictCode(verdict);
    }

    /**
     * Verifies a user name and password; thread-safe, CPU-heavy (PBKDF2 unless cached): the credential workers'.
     *
     * @return a verdict: {@link #verdictCode} is the 3.1.1 return code (0 or 4), {@link #verdictGeneration} the
     * password file that accepted it (0 when not accepted by the file), with the {@link #HASHED} or
     * {@link #CACHED} flag.
     */
    public long verify(final String userName, final byte[] passwordUtf8)
    {
        final PasswordFile file = passwordFile; // read once: the verdict is for this file
        if (null != userMac)
        {
            final boolean userMatches = MessageDigest.isEqual(userMac, cache.mac(utf8(userName), new byte[0]));
            final boolean passwordMatches = MessageDigest.isEqual(passwordMac, cache.mac(passwordUtf8, new byte[0]));
            if (userMatches & passwordMatches) // both compared whatever the first says
            {
                return ReasonCode.V3_CONNECTION_ACCEPTED;
            }
        }
        if (null == file)
        {
            return ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD;
        }
        final PasswordHash hash = file.hashOf(userName);
        if (cache.contains(file.generation(), userName, passwordUtf8) && null != hash) // the HMAC either way
        {
            return acceptedBy(file) | CACHED;
        }
        // an unknown user costs what a wrong password costs: hashed against a decoy like the file's usual entry
        final boolean matches = (null == hash ? file.decoy() : hash).matches(passwordUtf8);
        if (matches && null != hash)
        {
            cache.put(file.generation(), userName, passwordUtf8);
            return acceptedBy(file) | HASHED;
        }
        return ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD | HASHED;
    }

    private static long acceptedBy(final PasswordFile file)
    {
        return (file.generation() << 8) | ReasonCode.V3_CONNECTION_ACCEPTED;
    }

    /**
     * @return a verdict of {@link #verify} with only a code (a refusal decided without verifying).
     */
    public static long verdictOf(final int v3Code)
    {
        return v3Code & CODE_MASK;
    }

    /**
     * @return the MQTT 3.1.1 CONNACK return code of a verdict.
     */
    public static int verdictCode(final long verdict)
    {
        return (int)(verdict & CODE_MASK);
    }

    /**
     * @return the generation of the password file that accepted a verdict, 0 when no file accepted it.
     */
    public static long verdictGeneration(final long verdict)
    {
        return verdict >>> 8;
    }
}
