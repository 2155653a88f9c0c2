package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.Map;

/**
 * Decides CONNECT credentials. Anonymous clients (no user name) are let in according to the
 * {@link AnonymousPolicy}; by default only from loopback, whatever address the broker listens on. A user name must
 * match the {@code --user}/{@code --pass} pair or a line of the password file. PBKDF2 is deliberately slow, so a
 * user's last verified password is remembered as a SHA-256 digest and a reconnect with the same password costs one
 * hash. Runs on the auth stage, never on an I/O thread; single-threaded.
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

    private final AnonymousPolicy anonymous;
    private final String user;
    private final byte[] password;
    private PasswordFile passwordFile;
    private boolean acceptedByFile;
    private final Map<String, byte[]> verified = new HashMap<>();
    private final MessageDigest sha256;

    /**
     * @param user         the single configured user, or null.
     * @param password     that user's password, or null.
     * @param passwordFile users with PBKDF2 hashes, or null.
     */
    public Authenticator(
        final AnonymousPolicy anonymous, final String user, final String password, final PasswordFile passwordFile)
    {
        this.anonymous = anonymous;
        this.user = user;
        this.password = null == password ? null : password.getBytes(StandardCharsets.UTF_8);
        this.passwordFile = passwordFile;
        try
        {
            sha256 = MessageDigest.getInstance("SHA-256");
        }
        catch (final NoSuchAlgorithmException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * Replaces the password file (a reload); the remembered verifications go with the old one.
     */
    public void passwordFile(final PasswordFile passwordFile)
    {
        this.passwordFile = passwordFile;
        verified.clear();
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
     * @return the current password file, or null.
     */
    public PasswordFile passwordFile()
    {
        return passwordFile;
    }

    /**
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
        if (null != user && user.equals(userName) && MessageDigest.isEqual(password, passwordUtf8))
        {
            return ReasonCode.V3_CONNECTION_ACCEPTED;
        }
        final PasswordHash hash = null == passwordFile ? null : passwordFile.hashOf(userName);
        if (null == hash)
        {
            return ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD;
        }
        final byte[] digest = sha256.digest(passwordUtf8);
        final byte[] remembered = verified.get(userName);
        if (null != remembered && MessageDigest.isEqual(remembered, digest))
        {
            acceptedByFile = true;
            return ReasonCode.V3_CONNECTION_ACCEPTED;
        }
        if (hash.matches(passwordUtf8))
        {
            verified.put(userName, digest);
            acceptedByFile = true;
            return ReasonCode.V3_CONNECTION_ACCEPTED;
        }
        return ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD;
    }
}
