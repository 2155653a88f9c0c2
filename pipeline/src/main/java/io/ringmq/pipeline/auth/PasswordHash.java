package io.ringmq.pipeline.auth;

import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * A password-file entry: a salted PBKDF2-HMAC-SHA512 hash in the {@code $7$iterations$salt$hash} form that
 * Mosquitto 2's {@code mosquitto_passwd} writes, so password files move between the two brokers, or ringmq's
 * {@code $scram-sha-256$...} entry ({@link ScramCredential}), which also serves SCRAM-SHA-256 enhanced
 * authentication. Either verifies a plain CONNECT password.
 */
public final class PasswordHash
{
    /**
     * The default work factor of hashes that {@code ringmq passwd} writes: about 1 ms of PBKDF2-HMAC-SHA512 per
     * check, so the reference box's credential workers (cores/4 = 7) check the 5,000 CONNECTs/s of a connect
     * storm with an empty cache; ten times Mosquitto's 101. Measured with {@code ringmq passwd-bench}; README,
     * "Passwords".
     */
    public static final int DEFAULT_ITERATIONS = 1_000;
    private static final String PREFIX = "$7$";
    private static final int SALT_LENGTH = 12;
    private static final int HASH_BITS = 512;
    private static final SecureRandom RANDOM = new SecureRandom();
    /** Test hook: told the thread of every derivation, to show hashing never runs on an I/O or stage thread. */
    private static volatile java.util.function.Consumer<Thread> hashObserver;

    private final int iterations;
    private final byte[] salt;
    private final byte[] hash;
    /** Non-null for a {@code $scram-sha-256$} entry, which then stands in for the three fields above. */
    private final ScramCredential scram;

    private PasswordHash(final int iterations, final byte[] salt, final byte[] hash)
    {
        this.iterations = iterations;
        this.salt = salt;
        this.hash = hash;
        this.scram = null;
    }

    private PasswordHash(final ScramCredential scram)
    {
        this.iterations = 0;
        this.salt = null;
        this.hash = null;
        this.scram = scram;
    }

    /**
     * Derives a SCRAM-SHA-256 entry with a fresh random salt.
     *
     * @throws IllegalArgumentException when the password is empty or not printable ASCII.
     */
    public static PasswordHash createScram(final String password, final int iterations)
    {
        return new PasswordHash(ScramCredential.create(password, iterations));
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
     * @param encoded {@code $7$iterations$base64salt$base64hash}, or a {@link ScramCredential} entry.
     * @throws IllegalArgumentException when it is neither form.
     */
    public static PasswordHash parse(final String encoded)
    {
        if (encoded.startsWith(ScramCredential.PREFIX))
        {
            return new PasswordHash(ScramCredential.parse(encoded));
        }
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
     * A stand-in with the same kind and work factor that no password matches: an unknown user is hashed against
     * it, so it costs what a known user with a wrong password costs and the timing tells nobody who exists.
     */
    PasswordHash decoy()
    {
        if (null != scram)
        {
            final byte[] secret = new byte[16];
            RANDOM.nextBytes(secret);
            return new PasswordHash(ScramCredential.create(Base64.getEncoder().encodeToString(secret),
                scram.iterations()));
        }
        final byte[] decoySalt = new byte[salt.length];
        final byte[] decoyHash = new byte[hash.length];
        RANDOM.nextBytes(decoySalt);
        RANDOM.nextBytes(decoyHash); // no derivation of any password: nothing can match it
        return new PasswordHash(iterations, decoySalt, decoyHash);
    }

    /**
     * @return the PBKDF2 iteration count (of the SCRAM salted password for a SCRAM entry).
     */
    public int iterations()
    {
        return null != scram ? scram.iterations() : iterations;
    }

    /**
     * @return a key grouping entries that cost the same to verify: kind and iteration count.
     */
    String costKey()
    {
        return (null != scram ? "scram:" : "pbkdf2:") + iterations();
    }

    /**
     * Test hook: observes the thread of every password derivation (null: none).
     */
    public static void hashObserver(final java.util.function.Consumer<Thread> observer)
    {
        hashObserver = observer;
    }

    /**
     * @return true when the password hashes to this hash (constant-time comparison).
     */
    public boolean matches(final byte[] passwordUtf8)
    {
        final java.util.function.Consumer<Thread> observer = hashObserver;
        if (null != observer)
        {
            observer.accept(Thread.currentThread());
        }
        if (null != scram)
        {
            return scram.matches(passwordUtf8);
        }
        final byte[] candidate = derive(new String(passwordUtf8, StandardCharsets.UTF_8), salt, iterations);
        return MessageDigest.isEqual(candidate, hash);
    }

    /**
     * @return the SCRAM-SHA-256 credential of a {@code $scram-sha-256$} entry, or null for a {@code $7$} one.
     */
    public ScramCredential scram()
    {
        return scram;
    }

    /**
     * @return whether another entry holds the same secret, as its encoding would say (a reload's test of whether
     * a user's entry changed), without encoding a {@code $7$} entry.
     */
    public boolean sameAs(final PasswordHash other)
    {
        if (null != scram || null != other.scram)
        {
            return null != scram && null != other.scram && scram.encode().equals(other.scram.encode());
        }
        return iterations == other.iterations && java.util.Arrays.equals(salt, other.salt) &&
            java.util.Arrays.equals(hash, other.hash);
    }

    public String encode()
    {
        if (null != scram)
        {
            return scram.encode();
        }
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
