package io.ringmq.pipeline.auth;

import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * The client side of SCRAM-SHA-256 (RFC 5802 section 3), for tests and tools that connect with MQTT 5.0 enhanced
 * authentication; written apart from the server's code: its
 * SaltedPassword comes from the JDK's PBKDF2WithHmacSHA256, not from {@link ScramCrypto}, so the two check each
 * other.
 */
public final class ScramClient
{
    private final String user;
    private final String password;
    private final String clientNonce;
    private final String gs2Header;
    private String clientFirstBare;
    private byte[] expectedServerSignature;

    public ScramClient(final String user, final String password, final String clientNonce)
    {
        this(user, password, clientNonce, "n,,");
    }

    public ScramClient(final String user, final String password, final String clientNonce, final String gs2Header)
    {
        this.user = user;
        this.password = password;
        this.clientNonce = clientNonce;
        this.gs2Header = gs2Header;
    }

    /**
     * @return the client-first message, the user name escaped ("," as "=2C", "=" as "=3D").
     */
    public byte[] first()
    {
        clientFirstBare = "n=" + user.replace("=", "=3D").replace(",", "=2C") + ",r=" + clientNonce;
        return ascii(gs2Header + clientFirstBare);
    }

    /**
     * @return the client-final message answering the server-first one.
     */
    public byte[] last(final byte[] serverFirstBytes)
    {
        final String serverFirst = new String(serverFirstBytes, StandardCharsets.US_ASCII);
        final String[] attributes = serverFirst.split(",");
        final String nonce = attributes[0].substring(2);
        final byte[] salt = Base64.getDecoder().decode(attributes[1].substring(2));
        final int iterations = Integer.parseInt(attributes[2].substring(2));
        final byte[] saltedPassword = pbkdf2(password, salt, iterations);
        final byte[] clientKey = hmac(saltedPassword, ascii("Client Key"));
        final byte[] storedKey = sha256(clientKey);
        final String withoutProof = "c=" + Base64.getEncoder().encodeToString(ascii(gs2Header)) + ",r=" + nonce;
        final byte[] authMessage = ascii(clientFirstBare + ',' + serverFirst + ',' + withoutProof);
        final byte[] clientSignature = hmac(storedKey, authMessage);
        final byte[] proof = new byte[clientKey.length];
        for (int i = 0; i < proof.length; i++)
        {
            proof[i] = (byte)(clientKey[i] ^ clientSignature[i]);
        }
        expectedServerSignature = hmac(hmac(saltedPassword, ascii("Server Key")), authMessage);
        return ascii(withoutProof + ",p=" + Base64.getEncoder().encodeToString(proof));
    }

    /**
     * @return whether the server-final message proves the server knows the user's ServerKey.
     */
    public boolean verifies(final byte[] serverFinal)
    {
        return null != serverFinal && MessageDigest.isEqual(serverFinal,
            ascii("v=" + Base64.getEncoder().encodeToString(expectedServerSignature)));
    }

    /**
     * Runs client-first and client-final through the exchange.
     *
     * @return the exchange's answer to the client-final message.
     */
    public static int run(final ScramClient client, final AuthExchange exchange)
    {
        if (exchange.step(client.first()) != AuthExchange.CONTINUE)
        {
            throw new AssertionError("client-first refused: " + exchange.outcome());
        }
        return exchange.step(client.last(exchange.serverData()));
    }

    static byte[] ascii(final String text)
    {
        return text.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] pbkdf2(final String password, final byte[] salt, final int iterations)
    {
        try
        {
            return SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256")
                .generateSecret(new PBEKeySpec(password.toCharArray(), salt, iterations, 256)).getEncoded();
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private static byte[] hmac(final byte[] key, final byte[] data)
    {
        try
        {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    private static byte[] sha256(final byte[] data)
    {
        try
        {
            return MessageDigest.getInstance("SHA-256").digest(data);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IllegalStateException(ex);
        }
    }
}
