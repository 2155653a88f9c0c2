package io.ringmq.pipeline.auth;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.function.Supplier;

/**
 * The SCRAM-SHA-256 enhanced-authentication method (RFC 7677 over RFC 5802), without channel binding, as the
 * MQTT 5.0 Authentication Method {@code SCRAM-SHA-256}:
 * <pre>
 *   CONNECT data: n,,n=user,r=cnonce                     client-first ("y,," also; "p=" is refused)
 *   AUTH 0x18:    r=cnonce+snonce,s=salt,i=iterations    server-first
 *   AUTH 0x18:    c=biws,r=cnonce+snonce,p=proof         client-final
 *   CONNACK 0x00: v=ServerSignature                      server-final; or CONNACK 0x86
 * </pre>
 * A CONNECT without data gets an empty AUTH 0x18 first and the client-first in its next AUTH.
 * <p>
 * An unknown user, or one whose entry is not SCRAM, runs the same exchange against a salt and keys derived from
 * a secret and the user name (the same for the same name, so probing twice shows nothing) and fails at the end
 * with 0x86, as a wrong password does: neither the messages nor the work done tell which users exist.
 */
public final class ScramSha256 implements AuthMethod
{
    /** The Authentication Method name. */
    public static final String NAME = "SCRAM-SHA-256";
    private static final int SERVER_NONCE_LENGTH = 18; // 24 base64 characters, no padding
    private static final byte[] FAKE_SALT = "salt".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] FAKE_STORED_KEY = "stored-key".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] FAKE_SERVER_KEY = "server-key".getBytes(StandardCharsets.US_ASCII);
    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * Where an exchange finds a user's SCRAM credential.
     */
    @FunctionalInterface
    public interface Credentials
    {
        /**
         * @return the user's credential, or null when the user is unknown or has none.
         */
        ScramCredential credentialOf(String userName);
    }

    private final Credentials credentials;
    private final byte[] fakeSecret;
    private final int fakeIterations;
    private final Supplier<String> serverNonces;

    /**
     * A method with a random secret for unknown users' fake credentials, {@link ScramCredential#DEFAULT_ITERATIONS}
     * for theirs, and random server nonces.
     */
    public ScramSha256(final Credentials credentials)
    {
        this(credentials, randomBytes(32), ScramCredential.DEFAULT_ITERATIONS, ScramSha256::randomNonce);
    }

    /**
     * @param fakeSecret     keys the fake salt and keys of unknown users; keep it across restarts (or per broker) so
     *                       that an unknown user's salt does not change when a real one's does not.
     * @param fakeIterations the iteration count shown for unknown users: the one most real entries use.
     * @param serverNonces   the server's nonce part of each exchange: printable ASCII without ',' (tests pin it).
     */
    public ScramSha256(final Credentials credentials, final byte[] fakeSecret, final int fakeIterations,
        final Supplier<String> serverNonces)
    {
        if (fakeSecret.length == 0 || fakeIterations < 1)
        {
            throw new IllegalArgumentException("the fake secret must be non-empty and the iterations positive");
        }
        this.credentials = credentials;
        this.fakeSecret = fakeSecret.clone();
        this.fakeIterations = fakeIterations;
        this.serverNonces = serverNonces;
    }

    /**
     * @return credentials from whatever password file is current when a client connects (it may be reloaded).
     */
    public static Credentials fromPasswordFile(final Supplier<PasswordFile> passwordFile)
    {
        return (userName) ->
        {
            final PasswordFile file = passwordFile.get();
            return null == file ? null : file.scramOf(userName);
        };
    }

    public String name()
    {
        return NAME;
    }

    public AuthExchange newExchange()
    {
        return new ScramSha256Exchange(this);
    }

    /**
     * @return the user's credential, or null when the user is unknown or has no SCRAM entry.
     */
    ScramCredential credentialOf(final String userName)
    {
        return credentials.credentialOf(userName);
    }

    /**
     * @return a credential that no password matches, with a salt and keys derived from the secret and the name:
     * the same for the same name, unrelated between names.
     */
    ScramCredential fakeCredential(final String userName)
    {
        final ScramCrypto crypto = ScramCrypto.current();
        final byte[] name = userName.getBytes(StandardCharsets.UTF_8);
        return new ScramCredential(fakeIterations,
            Arrays.copyOf(crypto.hmac(fakeSecret, labelled(FAKE_SALT, name)), ScramCredential.SALT_LENGTH),
            crypto.hmac(fakeSecret, labelled(FAKE_STORED_KEY, name)),
            crypto.hmac(fakeSecret, labelled(FAKE_SERVER_KEY, name)));
    }

    /**
     * @return a server nonce, or null when the supplier gave an unusable one.
     */
    String nextServerNonce()
    {
        final String nonce = serverNonces.get();
        if (null == nonce || nonce.isEmpty())
        {
            return null;
        }
        for (int i = 0; i < nonce.length(); i++)
        {
            final char c = nonce.charAt(i);
            if (c < 0x21 || c > 0x7E || c == ',') // printable = %x21-2B / %x2D-7E, RFC 5802 section 7
            {
                return null;
            }
        }
        return nonce;
    }

    private static byte[] labelled(final byte[] label, final byte[] name)
    {
        final byte[] out = Arrays.copyOf(label, label.length + 1 + name.length);
        System.arraycopy(name, 0, out, label.length + 1, name.length); // label, 0x00, name: no two inputs collide
        return out;
    }

    private static String randomNonce()
    {
        return Base64.getEncoder().encodeToString(randomBytes(SERVER_NONCE_LENGTH));
    }

    private static byte[] randomBytes(final int length)
    {
        final byte[] bytes = new byte[length];
        RANDOM.nextBytes(bytes);
        return bytes;
    }
}
