package io.ringmq.pipeline.auth;

import io.ringmq.protocol.ReasonCode;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;

/**
 * One connection's SCRAM-SHA-256 exchange (RFC 5802 sections 3 and 7, RFC 7677): the client-first message, the
 * server-first answer, the client-final proof checked against StoredKey, the server-final signature. Every
 * malformed message fails with 0x87 Not authorized; a wrong proof, and any proof of an unknown user, with 0x86
 * Bad User Name or Password. Never more than three steps (an empty CONNECT step, client-first, client-final) of
 * at most {@link #MAX_DATA_LENGTH} bytes each.
 */
final class ScramSha256Exchange extends AuthExchange
{
    /** The most bytes one client SCRAM message may hold. */
    static final int MAX_DATA_LENGTH = 2048;
    private static final int MAX_STEPS = 3;
    private static final int MALFORMED = ReasonCode.NOT_AUTHORIZED;

    private final ScramSha256 method;
    private String gs2Header;
    private String clientFirstBare;
    private String serverFirst;
    private String nonce;
    private String userName;
    private ScramCredential credential;
    private boolean known;

    ScramSha256Exchange(final ScramSha256 method)
    {
        super(MAX_STEPS, MAX_DATA_LENGTH);
        this.method = method;
    }

    protected int onStep(final int step, final byte[] data)
    {
        if (!ScramCredential.isPrintableAscii(data))
        {
            return fail(MALFORMED); // SASLprep of ASCII only; no control characters anywhere
        }
        final String message = new String(data, StandardCharsets.US_ASCII);
        if (null == serverFirst)
        {
            if (message.isEmpty())
            {
                // a CONNECT without Authentication Data: ask for the client-first in an AUTH, once
                return step == 1 ? proceed(new byte[0]) : fail(MALFORMED);
            }
            return clientFirst(message);
        }
        return clientFinal(message);
    }

    /**
     * client-first-message = gs2-header client-first-message-bare;
     * gs2-header = gs2-cbind-flag "," [ authzid ] ",";
     * client-first-message-bare = [reserved-mext ","] username "," nonce ["," extensions].
     */
    private int clientFirst(final String message)
    {
        final char flag = message.charAt(0);
        if (flag != 'n' && flag != 'y')
        {
            return fail(MALFORMED); // "p=": channel binding, which this server does not offer (RFC 5802 section 6)
        }
        if (message.length() < 2 || message.charAt(1) != ',')
        {
            return fail(MALFORMED);
        }
        final int headerEnd = message.indexOf(',', 2);
        if (headerEnd < 0)
        {
            return fail(MALFORMED);
        }
        final String authzid = message.substring(2, headerEnd);
        if (!authzid.isEmpty() && !authzid.startsWith("a="))
        {
            return fail(MALFORMED);
        }
        gs2Header = message.substring(0, headerEnd + 1);
        clientFirstBare = message.substring(headerEnd + 1);
        final String[] attributes = clientFirstBare.split(",", -1);
        if (attributes.length < 2 || !attributes[0].startsWith("n=") || !attributes[1].startsWith("r=") ||
            !wellFormedExtensions(attributes, 2))
        {
            return fail(MALFORMED); // also "m=", a mandatory extension this server does not know
        }
        userName = saslName(attributes[0].substring(2));
        final String clientNonce = attributes[1].substring(2);
        if (null == userName || clientNonce.isEmpty() || clientNonce.indexOf(' ') >= 0)
        {
            return fail(MALFORMED);
        }
        if (!authzid.isEmpty() && !userName.equals(saslName(authzid.substring(2))))
        {
            return fail(ReasonCode.NOT_AUTHORIZED); // acting as another identity is not offered
        }
        final String serverNonce = method.nextServerNonce();
        if (null == serverNonce)
        {
            return fail(ReasonCode.UNSPECIFIED_ERROR);
        }
        final ScramCredential fake = method.fakeCredential(userName); // derived for every user: the same work
        final ScramCredential real = method.credentialOf(userName);
        known = null != real;
        credential = known ? real : fake;
        nonce = clientNonce + serverNonce;
        serverFirst = "r=" + nonce + ",s=" + Base64.getEncoder().encodeToString(credential.salt()) + ",i=" +
            credential.iterations();
        return proceed(serverFirst.getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * client-final-message = client-final-message-without-proof "," proof;
     * client-final-message-without-proof = channel-binding "," nonce ["," extensions].
     */
    private int clientFinal(final String message)
    {
        final int proofAt = message.lastIndexOf(",p=");
        if (proofAt < 0)
        {
            return fail(MALFORMED);
        }
        final String withoutProof = message.substring(0, proofAt);
        final String[] attributes = withoutProof.split(",", -1);
        if (attributes.length < 2 || !attributes[0].startsWith("c=") || !attributes[1].startsWith("r=") ||
            !wellFormedExtensions(attributes, 2))
        {
            return fail(MALFORMED);
        }
        final byte[] channelBinding = base64(attributes[0].substring(2));
        if (null == channelBinding || !gs2Header.equals(new String(channelBinding, StandardCharsets.US_ASCII)))
        {
            return fail(MALFORMED); // c= must repeat the gs2 header: "biws" for "n,,"
        }
        if (!nonce.equals(attributes[1].substring(2)))
        {
            return fail(MALFORMED);
        }
        final byte[] proof = base64(message.substring(proofAt + 3));
        if (null == proof || proof.length != ScramCrypto.LENGTH)
        {
            return fail(MALFORMED);
        }
        final ScramCrypto crypto = ScramCrypto.current();
        final byte[] authMessage =
            (clientFirstBare + ',' + serverFirst + ',' + withoutProof).getBytes(StandardCharsets.US_ASCII);
        final byte[] clientKey = crypto.hmac(credential.storedKey(), authMessage); // ClientSignature, then
        for (int i = 0; i < clientKey.length; i++)
        {
            clientKey[i] ^= proof[i]; // ClientKey = ClientProof XOR ClientSignature
        }
        final boolean proven = MessageDigest.isEqual(crypto.hash(clientKey), credential.storedKey());
        final byte[] serverSignature = crypto.hmac(credential.serverKey(), authMessage); // also when failing: same work
        if (!proven || !known)
        {
            return fail(ReasonCode.BAD_USER_NAME_OR_PASSWORD);
        }
        return succeed(userName, ("v=" + Base64.getEncoder().encodeToString(serverSignature))
            .getBytes(StandardCharsets.US_ASCII));
    }

    /**
     * @return the user name with "=2C" and "=3D" decoded, or null when it is empty or holds another '=' escape.
     */
    static String saslName(final String escaped)
    {
        if (escaped.isEmpty())
        {
            return null;
        }
        final StringBuilder name = new StringBuilder(escaped.length());
        for (int i = 0; i < escaped.length(); i++)
        {
            final char c = escaped.charAt(i);
            if (c != '=')
            {
                name.append(c);
            }
            else if (escaped.startsWith("2C", i + 1))
            {
                name.append(',');
                i += 2;
            }
            else if (escaped.startsWith("3D", i + 1))
            {
                name.append('=');
                i += 2;
            }
            else
            {
                return null;
            }
        }
        return name.toString();
    }

    /**
     * @return whether attributes from {@code from} on are each a letter, '=' and a value (RFC 5802 attr-val).
     */
    private static boolean wellFormedExtensions(final String[] attributes, final int from)
    {
        for (int i = from; i < attributes.length; i++)
        {
            final String attribute = attributes[i];
            if (attribute.length() < 2 || attribute.charAt(1) != '=' || !isLetter(attribute.charAt(0)))
            {
                return false;
            }
        }
        return true;
    }

    private static boolean isLetter(final char c)
    {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }

    private static byte[] base64(final String text)
    {
        try
        {
            return Base64.getDecoder().decode(text);
        }
        catch (final IllegalArgumentException ex)
        {
            return null;
        }
    }
}
