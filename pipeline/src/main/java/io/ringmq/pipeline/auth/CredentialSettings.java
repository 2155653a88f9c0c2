package io.ringmq.pipeline.auth;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * The settings of password checking at CONNECT: the credential workers, the per-address back-off after failed
 * attempts and the keyed cache of verified credentials. Defaults in one place; validated once by
 * {@link #conclude()}.
 */
public final class CredentialSettings
{
    /** Workers by default: a quarter of the cores, at least one (PBKDF2 is CPU-bound; see README "Passwords"). */
    public static final int DEFAULT_THREADS = Math.max(1, Runtime.getRuntime().availableProcessors() / 4);
    public static final int DEFAULT_QUEUE_LENGTH = 1_024;
    public static final int DEFAULT_MAX_FAILURES = 5;
    public static final long DEFAULT_FAILURE_WINDOW_MS = 60_000;
    public static final long DEFAULT_BACKOFF_MS = 1_000;
    public static final long DEFAULT_BACKOFF_MAX_MS = 300_000;
    public static final int DEFAULT_TRACKED_ADDRESSES = 65_536;
    public static final int DEFAULT_CACHE_SIZE = 100_000;

    private int threads = DEFAULT_THREADS;
    private int queueLength = DEFAULT_QUEUE_LENGTH;
    private int maxFailures = DEFAULT_MAX_FAILURES;
    private long failureWindowMs = DEFAULT_FAILURE_WINDOW_MS;
    private long backoffMs = DEFAULT_BACKOFF_MS;
    private long backoffMaxMs = DEFAULT_BACKOFF_MAX_MS;
    private int trackedAddresses = DEFAULT_TRACKED_ADDRESSES;
    private int cacheSize = DEFAULT_CACHE_SIZE;
    private boolean exemptLoopback;

    /**
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    public CredentialSettings conclude()
    {
        check(threads >= 0, "--auth-threads must be 0 (inline, tests only) or more");
        check(queueLength >= 1, "--auth-queue must be positive");
        check(maxFailures >= 0, "--auth-max-failures must be 0 (no limit) or more");
        check(failureWindowMs >= 1, "--auth-failure-window must be positive");
        check(backoffMs >= 1 && backoffMaxMs >= backoffMs, "--auth-backoff must be positive and <= --auth-backoff-max");
        check(trackedAddresses >= 1, "--auth-tracked-addresses must be positive");
        check(cacheSize >= 0, "--auth-cache-size must be 0 (no cache) or more");
        return this;
    }

    /**
     * @return credential worker threads; 0 hashes inline on the caller (the {@code invoker} mode of tests).
     */
    public int threads()
    {
        return threads;
    }

    public CredentialSettings threads(final int threads)
    {
        this.threads = threads;
        return this;
    }

    /**
     * @return CONNECTs waiting for a worker at most; one more is refused with server unavailable (counted).
     */
    public int queueLength()
    {
        return queueLength;
    }

    public CredentialSettings queueLength(final int queueLength)
    {
        this.queueLength = queueLength;
        return this;
    }

    /**
     * @return failed attempts from one address within {@link #failureWindowMs()} that start a back-off; 0: none.
     */
    public int maxFailures()
    {
        return maxFailures;
    }

    public CredentialSettings maxFailures(final int maxFailures)
    {
        this.maxFailures = maxFailures;
        return this;
    }

    public long failureWindowMs()
    {
        return failureWindowMs;
    }

    public CredentialSettings failureWindowMs(final long failureWindowMs)
    {
        this.failureWindowMs = failureWindowMs;
        return this;
    }

    /**
     * @return the first back-off; each next one from the same address doubles, up to {@link #backoffMaxMs()}.
     */
    public long backoffMs()
    {
        return backoffMs;
    }

    public CredentialSettings backoff(final long backoffMs, final long backoffMaxMs)
    {
        this.backoffMs = backoffMs;
        this.backoffMaxMs = backoffMaxMs;
        return this;
    }

    public long backoffMaxMs()
    {
        return backoffMaxMs;
    }

    /**
     * @return addresses whose failures are remembered at most (the least recently seen is forgotten first).
     */
    public int trackedAddresses()
    {
        return trackedAddresses;
    }

    public CredentialSettings trackedAddresses(final int trackedAddresses)
    {
        this.trackedAddresses = trackedAddresses;
        return this;
    }

    /**
     * @return verified credentials remembered at most (keyed HMAC, one per user); 0: none.
     */
    public int cacheSize()
    {
        return cacheSize;
    }

    public CredentialSettings cacheSize(final int cacheSize)
    {
        this.cacheSize = cacheSize;
        return this;
    }

    /**
     * @return whether loopback clients are exempt from the back-off. By default they are not: a password guessed
     * from this host is still a password guessed, and behind a same-host proxy the PROXY protocol gives the real
     * address to limit.
     */
    public boolean exemptLoopback()
    {
        return exemptLoopback;
    }

    public CredentialSettings exemptLoopback(final boolean exemptLoopback)
    {
        this.exemptLoopback = exemptLoopback;
        return this;
    }

    public String toString()
    {
        return "auth-threads=" + threads + " auth-queue=" + queueLength + " auth-max-failures=" + maxFailures +
            " auth-failure-window=" + failureWindowMs + "ms auth-backoff=" + backoffMs + ".." + backoffMaxMs +
            "ms auth-tracked-addresses=" + trackedAddresses + " auth-cache-size=" + cacheSize +
            (exemptLoopback ? " auth-exempt-loopback" : "");
    }
}
