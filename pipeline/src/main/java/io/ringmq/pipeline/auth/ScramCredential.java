package io.ringmq.pipeline.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/**
 * A user's SCRAM-SHA-256 credential (RFC 5802 section 3, RFC 7677): the salt, the iteration count, StoredKey
 * and ServerKey, never the password. In a password file it is the ringmq entry
 * {@code user:$scram-sha-256$<iterations>$<base64 salt>$<base64 StoredKey>$<base64 ServerKey>}, beside
 * Mosquitto's {@code $7$} lines. It also verifies a plain CONNECT password: PBKDF2-HMAC-SHA-256 gives the
 * SaltedPassword, from which StoredKey is derived and compared.
 * <p>
 * SASLprep (RFC 4013) is only that of printable ASCII, which it leaves as it is: passwords outside it are refused
 * when a credential is made and never match.
 */
public final class ScramCredential
{
    /** The password-file prefix of a SCRAM-SHA-256 entry. */
    public static final String PREFIX = "$scram-sha-256$";
    /** The iteration count {@code ringmq passwd --scram} uses by default: RFC 7677's minimum. */
    public static final int DEFAULT_ITERATIONS = 4096;
    static final int SALT_LENGTH = 16;
    private static final byte[] CLIENT_KEY = "Client Key".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] SERVER_KEY = "Server Key".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final int iterations;
    private final byte[] salt;
    private final byte[] storedKey;
    private final byte[] serverKey;

    ScramCredential(final int iterations, final byte[] salt, final byte[] storedKey, final byte[] serverKey)
    {
        this.iterations = iterations;
        this.salt = salt;
        this.storedKey = storedKey;
        this.serverKey = serverKey;
    }

    /**
     * Derives a credential with a fresh random salt.
     *
     * @throws IllegalArgumentException when the password is empty or not printable ASCII, or iterations &lt; 1.
     */
    public static ScramCredential create(final String password, final int iterations)
    {
        final byte[] salt = new byte[SALT_LENGTH];
        RANDOM.nextBytes(salt);
        return create(password, salt, iterations);
    }

    /**
     * Derives a credential: SaltedPassword = Hi(password, salt, i), ClientKey = HMAC(SaltedPassword, "Client Key"),
     * StoredKey = H(ClientKey), ServerKey = HMAC(SaltedPassword, "Server Key") (RFC 5802 section 3).
     *
     * @throws IllegalArgumentException when the password is empty or not printable ASCII, or iterations &lt; 1.
     */
    public static ScramCredential create(final String password, final byte[] salt, final int iterations)
    {
        if (password.isEmpty() || !isPrintableAscii(password))
        {
            throw new IllegalArgumentException("a SCRAM password must be non-empty printable ASCII");
        }
        if (iterations < 1 || salt.length == 0)
        {
            throw new IllegalArgumentException("iterations must be positive and the salt non-empty");
        }
        final ScramCrypto crypto = ScramCrypto.current();
        final byte[] saltedPassword = crypto.hi(password.getBytes(StandardCharsets.US_ASCII), salt, iterations);
        return new ScramCredential(iterations, salt.clone(),
            crypto.hash(crypto.hmac(saltedPassword, CLIENT_KEY)), crypto.hmac(saltedPassword, SERVER_KEY));
    }

    /**
     * @param encoded {@code $scram-sha-256$iterations$salt$storedKey$serverKey}, base64.
     * @throws IllegalArgumentException when it is not that form.
     */
    public static ScramCredential parse(final String encoded)
    {
        if (!encoded.startsWith(PREFIX))
        {
            throw new IllegalArgumentException("not a " + PREFIX + " entry");
        }
        final String[] parts = encoded.substring(PREFIX.length()).split("\\$", -1);
        if (parts.length != 4)
        {
            throw new IllegalArgumentException("expected " + PREFIX + "iterations$salt$storedKey$serverKey");
        }
        final int iterations;
        try
        {
            iterations = Integer.parseInt(parts[0]);
        }
        catch (final NumberFormatException ex)
        {
            throw new IllegalArgumentException("iterations must be a number", ex);
        }
        final Base64.Decoder base64 = Base64.getDecoder();
        final byte[] salt = base64.decode(parts[1]);
        final byte[] storedKey = base64.decode(parts[2]);
        final byte[] serverKey = base64.decode(parts[3]);
        if (iterations < 1 || salt.length == 0)
        {
            throw new IllegalArgumentException("iterations must be positive and the salt non-empty");
        }
        if (storedKey.length != ScramCrypto.LENGTH || serverKey.length != ScramCrypto.LENGTH)
        {
            throw new IllegalArgumentException("StoredKey and ServerKey must be 32 bytes (SHA-256)");
        }
        return new ScramCredential(iterations, salt, storedKey, serverKey);
    }

    /**
     * @return the password-file form, {@code $scram-sha-256$iterations$salt$storedKey$serverKey}.
     */
    public String encode()
    {
        final Base64.Encoder base64 = Base64.getEncoder();
        return PREFIX + iterations + '$' + base64.encodeToString(salt) + '$' + base64.encodeToString(storedKey) +
            '$' + base64.encodeToString(serverKey);
    }

    /**
     * Verifies a plain CONNECT password against this credential (a PBKDF2 derivation, deliberately slow).
     *
     * @return true when H(HMAC(Hi(password, salt, i), "Client Key")) is StoredKey (constant-time comparison).
     */
    public boolean matches(final byte[] passwordUtf8)
    {
        if (passwordUtf8.length == 0 || !isPrintableAscii(passwordUtf8))
        {
            return false; // SASLprep leaves only printable ASCII as it is, and create() refuses the rest
        }
        final ScramCrypto crypto = ScramCrypto.current();
        final byte[] saltedPassword = crypto.hi(passwordUtf8, salt, iterations);
        return MessageDigest.isEqual(crypto.hash(crypto.hmac(saltedPassword, CLIENT_KEY)), storedKey);
    }

    public int iterations()
    {
        return iterations;
    }

    /**
     * @return the salt; the caller must not change it.
     */
    byte[] salt()
    {
        return salt;
    }

    /**
     * @return StoredKey; the caller must not change it.
     */
    byte[] storedKey()
    {
        return storedKey;
    }

    /**
     * @return ServerKey; the caller must not change it.
     */
    byte[] serverKey()
    {
        return serverKey;
    }

    /**
     * @return whether every character is printable ASCII (0x20 to 0x7E), which SASLprep leaves as it is.
     */
    public static boolean isPrintableAscii(final CharSequence text)
    {
        for (int i = 0; i < text.length(); i++)
        {
            final char c = text.charAt(i);
            if (c < 0x20 || c > 0x7E)
            {
                return false;
            }
        }
        return true;
    }

    static boolean isPrintableAscii(final byte[] bytes)
    {
        for (final byte b : bytes)
        {
            if (b < 0x20 || b > 0x7E)
            {
                return false;
            }
        }
        return true;
    }
}
