package io.ringmq.pipeline.auth;

import javax.crypto.Mac;
import javax.crypto.ShortBufferException;
import javax.crypto.spec.SecretKeySpec;
import java.security.GeneralSecurityException;
import java.security.InvalidKeyException;
import java.security.MessageDigest;

/**
 * The SCRAM-SHA-256 primitives of RFC 5802 section 2.2 over one HmacSHA256 {@link Mac} and one SHA-256
 * {@link MessageDigest}, reused: one instance per thread ({@link #current()}), since JCA objects are not thread
 * safe and looking them up per message costs more than the hashing.
 */
final class ScramCrypto
{
    /** The length of every SHA-256 output: keys, signatures, proofs. */
    static final int LENGTH = 32;
    private static final String HMAC = "HmacSHA256";
    private static final byte[] INT_1 = {0, 0, 0, 1};
    private static final ThreadLocal<ScramCrypto> PER_THREAD = ThreadLocal.withInitial(ScramCrypto::new);

    private final Mac mac;
    private final MessageDigest sha256;

    private ScramCrypto()
    {
        try
        {
            mac = Mac.getInstance(HMAC);
            sha256 = MessageDigest.getInstance("SHA-256");
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException("HmacSHA256 and SHA-256 are required", ex);
        }
    }

    /**
     * @return this thread's instance.
     */
    static ScramCrypto current()
    {
        return PER_THREAD.get();
    }

    /**
     * @return HMAC(key, data); the key must not be empty.
     */
    byte[] hmac(final byte[] key, final byte[] data)
    {
        init(key);
        return mac.doFinal(data);
    }

    /**
     * @return H(data), SHA-256.
     */
    byte[] hash(final byte[] data)
    {
        return sha256.digest(data);
    }

    /**
     * Hi(str, salt, i) of RFC 5802 section 2.2: PBKDF2 with HMAC-SHA-256 and one 32-byte block.
     *
     * @param password the (SASLprepped) password, not empty.
     */
    byte[] hi(final byte[] password, final byte[] salt, final int iterations)
    {
        init(password);
        mac.update(salt);
        mac.update(INT_1);
        final byte[] u = mac.doFinal();
        final byte[] result = u.clone();
        try
        {
            for (int i = 1; i < iterations; i++)
            {
                mac.update(u);
                mac.doFinal(u, 0); // U(i) over U(i-1), in place: the loop allocates nothing
                for (int b = 0; b < LENGTH; b++)
                {
                    result[b] ^= u[b];
                }
            }
        }
        catch (final ShortBufferException ex)
        {
            throw new IllegalStateException(ex);
        }
        return result;
    }

    private void init(final byte[] key)
    {
        try
        {
            mac.init(new SecretKeySpec(key, HMAC));
        }
        catch (final InvalidKeyException ex)
        {
            throw new IllegalStateException(ex);
        }
    }
}
