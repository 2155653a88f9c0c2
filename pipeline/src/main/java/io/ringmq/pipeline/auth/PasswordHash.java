package io.ringmq.pipeline.auth;

import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * Salted PBKDF2-HMAC-SHA512 password hashes in the {@code $7$iterations$salt$hash} form that Mosquitto 2's
 * {@code mosquitto_passwd} writes, so password files move between the two brokers.
 */
public final class PasswordHash
{
    /** The default work factor of hashes that {@code ringmq passwd} writes. */
    public static final int DEFAULT_ITERATIONS = 10_000;
    private static final String PREFIX = "$7$";
    private static final int SALT_LENGTH = 12;
    private static final int HASH_BITS = 512;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final int iterations;
    private final byte[] salt;
    private final byte[] hash;

    private PasswordHash(final int iterations, final byte[] salt, final byte[] hash)
    {
        this.iterations = iterations;
        this.salt = salt;
        this.hash = hash;
    }

    /**
     * Hashes a password with a fresh random salt.
     */
    public static PasswordHash create(final String password, final int iterations)
    {
        final byte[] salt = new byte[SALT_LENGTH];
        RANDOM.nextBytes(salt);
        return new PasswordHash(iterations, salt, derive(password, salt, iterations));
    }

    /**
     * @param encoded {@code $7$iterations$base64salt$base64hash}.
     * @throws IllegalArgumentException when it is not that form.
     */
    public static PasswordHash parse(final String encoded)
    {
        if (!encoded.startsWith(PREFIX))
        {
            throw new IllegalArgumentException("not a $7$ PBKDF2-SHA512 hash");
        }
        final String[] parts = encoded.substring(PREFIX.length()).split("\\$");
        if (parts.length != 3)
        {
            throw new IllegalArgumentException("expected $7$iterations$salt$hash");
        }
        final int iterations = Integer.parseInt(parts[0]);
        if (iterations < 1)
        {
            throw new IllegalArgumentException("iterations must be positive");
        }
        return new PasswordHash(iterations, Base64.getDecoder().decode(parts[1]), Base64.getDecoder().decode(parts[2]));
    }

    /**
     * @return true when the password hashes to this hash (constant-time comparison).
     */
    public boolean matches(final byte[] passwordUtf8)
    {
        final byte[] candidate = derive(new String(passwordUtf8, StandardCharsets.UTF_8), salt, iterations);
        return MessageDigest.isEqual(candidate, hash);
    }

    public String encode()
    {
        return PREFIX + iterations + '$' + Base64.getEncoder().encodeToString(salt) + '$' +
            Base64.getEncoder().encodeToString(hash);
    }

    private static byte[] derive(final String password, final byte[] salt, final int iterations)
    {
        final PBEKeySpec spec = new PBEKeySpec(password.toCharArray(), salt, iterations, HASH_BITS);
        try
        {
            return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA512").generateSecret(spec).getEncoded();
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("PBKDF2WithHmacSHA512 is not available", ex);
        }
        finally
        {
            spec.clearPassword();
        }
    }
}
