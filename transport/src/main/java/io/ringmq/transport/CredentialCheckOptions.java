package io.ringmq.transport;

import io.ringmq.pipeline.auth.CredentialSettings;
import picocli.CommandLine.Option;

/**
 * The {@code ringmq --auth-*} options (a picocli mixin of {@link Main}): how CONNECT passwords are checked, by
 * credential workers off the I/O and stage threads, with a back-off after failures and a cache of verified logins.
 * An option not given keeps {@link CredentialSettings}'s default.
 */
final class CredentialCheckOptions
{
    @Option(names = "--auth-threads", paramLabel = "N",
        description = "Threads that verify CONNECT passwords, never an I/O or stage thread (default: cores/4, >= 1).",
        order = 100)
    Integer authThreads;

    @Option(names = "--auth-queue", paramLabel = "N", description = "CONNECTs waiting for a password check at most; "
        + "more are refused with server unavailable (default: " + CredentialSettings.DEFAULT_QUEUE_LENGTH + ").",
        order = 110)
    Integer authQueue;

    @Option(names = "--auth-max-failures", paramLabel = "N", description = "Failed logins from one address within "
        + "--auth-failure-window before it backs off; 0: no limit (default: " + CredentialSettings.DEFAULT_MAX_FAILURES
        + ").", order = 120)
    Integer authMaxFailures;

    @Option(names = "--auth-failure-window", paramLabel = "DURATION",
        description = "Window the failures are counted in (default: 60s).", order = 130)
    String authFailureWindow;

    @Option(names = "--auth-backoff", paramLabel = "DURATION", description = "First back-off of an address: its "
        + "logins are refused without a password check; each next one doubles (default: 1s).", order = 140)
    String authBackoff;

    @Option(names = "--auth-backoff-max", paramLabel = "DURATION", description = "Longest back-off (default: 5m).",
        order = 150)
    String authBackoffMax;

    @Option(names = "--auth-tracked-addresses", paramLabel = "N", description = "Addresses whose failures are "
        + "remembered at most (default: " + CredentialSettings.DEFAULT_TRACKED_ADDRESSES + ").", order = 160)
    Integer authTrackedAddresses;

    @Option(names = "--auth-cache-size", paramLabel = "N", description = "Verified logins remembered (keyed HMAC, "
        + "never the password), so a reconnect skips PBKDF2; 0: none (default: " +
        CredentialSettings.DEFAULT_CACHE_SIZE + ").", order = 170)
    Integer authCacheSize;

    @Option(names = "--auth-exempt-loopback", description = "Never back off loopback addresses.", order = 180)
    boolean authExemptLoopback;

    /**
     * Copies the options given into {@code settings}.
     */
    void applyTo(final CredentialSettings settings)
    {
        if (null != authThreads)
        {
            settings.threads(authThreads);
        }
        if (null != authQueue)
        {
            settings.queueLength(authQueue);
        }
        if (null != authMaxFailures)
        {
            settings.maxFailures(authMaxFailures);
        }
        if (null != authFailureWindow)
        {
            settings.failureWindowMs(OptionValues.parseLongDurationMs(authFailureWindow));
        }
        settings.backoff(null == authBackoff ? settings.backoffMs() : OptionValues.parseLongDurationMs(authBackoff),
            null == authBackoffMax ? settings.backoffMaxMs() : OptionValues.parseLongDurationMs(authBackoffMax));
        if (null != authTrackedAddresses)
        {
            settings.trackedAddresses(authTrackedAddresses);
        }
        if (null != authCacheSize)
        {
            settings.cacheSize(authCacheSize);
        }
        settings.exemptLoopback(authExemptLoopback);
    }
}
