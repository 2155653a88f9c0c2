package io.ringmq.transport;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509CRL;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Reads PEM files as Mosquitto (OpenSSL) takes them: certificates ({@code BEGIN CERTIFICATE}, one or more), and an
 * unencrypted private key in PKCS#8 ({@code BEGIN PRIVATE KEY}), PKCS#1 RSA ({@code BEGIN RSA PRIVATE KEY}) or
 * SEC1 EC ({@code BEGIN EC PRIVATE KEY}); the last two are wrapped in a PKCS#8 {@code PrivateKeyInfo} here, a few
 * bytes of DER, since the JDK reads only PKCS#8. Every problem is an {@link IllegalArgumentException} whose
 * message names the file and what is wrong with it. Runs once per listener, at start or reload: never on a hot
 * path.
 */
final class PemFiles
{
    private static final String BEGIN = "-----BEGIN ";
    private static final String END = "-----END ";
    private static final String DASHES = "-----";
    private static final Pattern WHITESPACE = Pattern.compile("\\s+");
    /** rsaEncryption, 1.2.840.113549.1.1.1, as DER. */
    private static final byte[] OID_RSA = { 0x06, 0x09, 0x2A, (byte)0x86, 0x48, (byte)0x86, (byte)0xF7, 0x0D, 0x01,
        0x01, 0x01 };
    /** id-ecPublicKey, 1.2.840.10045.2.1, as DER. */
    private static final byte[] OID_EC = { 0x06, 0x07, 0x2A, (byte)0x86, 0x48, (byte)0xCE, 0x3D, 0x02, 0x01 };
    private static final byte[] DER_NULL = { 0x05, 0x00 };
    private static final byte[] VERSION_0 = { 0x02, 0x01, 0x00 };
    private static final String[] KEY_ALGORITHMS = { "RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS", "DSA" };

    /**
     * One {@code -----BEGIN type-----} block: its type, whether its headers say it is encrypted, and its bytes.
     */
    static final class Block
    {
        final String type;
        final boolean encrypted;
        final byte[] der;

        Block(final String type, final boolean encrypted, final byte[] der)
        {
            this.type = type;
            this.encrypted = encrypted;
            this.der = der;
        }
    }

    private PemFiles()
    {
    }

    /**
     * @return every certificate in the file, in file order.
     * @throws IllegalArgumentException when the file cannot be read, holds no certificate or a bad one.
     */
    static List<X509Certificate> certificates(final String directive, final Path file)
    {
        final List<Block> blocks = blocks(directive, file);
        final List<X509Certificate> certificates = new ArrayList<>();
        for (final Block block : blocks)
        {
            if ("CERTIFICATE".equals(block.type) || "X509 CERTIFICATE".equals(block.type) ||
                "TRUSTED CERTIFICATE".equals(block.type))
            {
                certificates.add(certificate(directive, file, block.der));
            }
        }
        if (certificates.isEmpty())
        {
            throw bad(directive, file, "holds no certificate (BEGIN CERTIFICATE)" + found(blocks));
        }
        return certificates;
    }

    /**
     * @return the certificate revocation lists in the file ({@code BEGIN X509 CRL}), at least one.
     * @throws IllegalArgumentException when the file cannot be read, holds none, or one the JDK cannot parse.
     */
    static List<X509CRL> crls(final String directive, final Path file)
    {
        final List<Block> blocks = blocks(directive, file);
        final List<X509CRL> crls = new ArrayList<>();
        for (final Block block : blocks)
        {
            if ("X509 CRL".equals(block.type))
            {
                try
                {
                    crls.add((X509CRL)CertificateFactory.getInstance("X.509")
                        .generateCRL(new ByteArrayInputStream(block.der)));
                }
                catch (final CertificateException | java.security.cert.CRLException ex)
                {
                    throw bad(directive, file, "has a CRL that cannot be parsed (" + ex.getMessage() + ")");
                }
            }
        }
        if (crls.isEmpty())
        {
            throw bad(directive, file, "holds no certificate revocation list (BEGIN X509 CRL)" + found(blocks));
        }
        return crls;
    }

    /**
     * @return the private key in the file.
     * @throws IllegalArgumentException when the file cannot be read, holds no private key, an encrypted one, or one
     * the JDK cannot read.
     */
    static PrivateKey privateKey(final String directive, final Path file)
    {
        final List<Block> blocks = blocks(directive, file);
        for (final Block block : blocks)
        {
            switch (block.type)
            {
                case "PRIVATE KEY":
                    return decodeKey(directive, file, block.der, block.type);
                case "RSA PRIVATE KEY":
                    checkNotEncrypted(directive, file, block);
                    return decodeKey(directive, file, pkcs8(algorithmId(OID_RSA, DER_NULL), block.der), block.type);
                case "EC PRIVATE KEY":
                    checkNotEncrypted(directive, file, block);
                    return decodeKey(directive, file, pkcs8(algorithmId(OID_EC, curveOf(directive, file, block.der)),
                        block.der), block.type);
                case "ENCRYPTED PRIVATE KEY":
                    checkNotEncrypted(directive, file, new Block(block.type, true, block.der));
                    break;
                default:
                    break;
            }
        }
        throw bad(directive, file, "holds no private key (BEGIN PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)" +
            found(blocks));
    }

    /**
     * @return the blocks of a PEM file, in file order.
     */
    static List<Block> blocks(final String directive, final Path file)
    {
        final String text;
        try
        {
            text = new String(Files.readAllBytes(file), StandardCharsets.US_ASCII);
        }
        catch (final IOException ex)
        {
            throw bad(directive, file, "cannot be read (" + ex.getClass().getSimpleName() + ": " + ex.getMessage() +
                ")");
        }
        final List<Block> blocks = new ArrayList<>();
        int from = 0;
        int begin;
        while ((begin = text.indexOf(BEGIN, from)) >= 0)
        {
            final int typeEnd = text.indexOf(DASHES, begin + BEGIN.length());
            if (typeEnd < 0)
            {
                throw bad(directive, file, "has a broken BEGIN line");
            }
            final String type = text.substring(begin + BEGIN.length(), typeEnd);
            final String endLine = END + type + DASHES;
            final int end = text.indexOf(endLine, typeEnd);
            if (end < 0)
            {
                throw bad(directive, file, "has no '" + endLine + "' line (truncated?)");
            }
            String body = text.substring(typeEnd + DASHES.length(), end);
            boolean encrypted = false;
            final int headersEnd = body.indexOf("\n\n") >= 0 ? body.indexOf("\n\n") : body.indexOf("\r\n\r\n");
            if (body.contains("Proc-Type:") && headersEnd >= 0)
            {
                encrypted = body.substring(0, headersEnd).contains("ENCRYPTED");
                body = body.substring(headersEnd);
            }
            final byte[] der;
            try
            {
                der = Base64.getDecoder().decode(WHITESPACE.matcher(body).replaceAll(""));
            }
            catch (final IllegalArgumentException ex)
            {
                throw bad(directive, file, "has a " + type + " block that is not base64 (" + ex.getMessage() + ")");
            }
            if (0 == der.length && !encrypted)
            {
                throw bad(directive, file, "has an empty " + type + " block");
            }
            blocks.add(new Block(type, encrypted, der));
            from = end + endLine.length();
        }
        if (blocks.isEmpty())
        {
            throw bad(directive, file, "is not a PEM file (no '-----BEGIN' line)");
        }
        return blocks;
    }

    static IllegalArgumentException bad(final String directive, final Path file, final String what)
    {
        return new IllegalArgumentException(directive + " " + file + ": " + what);
    }

    private static X509Certificate certificate(final String directive, final Path file, final byte[] der)
    {
        try
        {
            return (X509Certificate)CertificateFactory.getInstance("X.509")
                .generateCertificate(new ByteArrayInputStream(der));
        }
        catch (final CertificateException ex)
        {
            throw bad(directive, file, "has a certificate that cannot be parsed (" + ex.getMessage() + ")");
        }
    }

    private static void checkNotEncrypted(final String directive, final Path file, final Block block)
    {
        if (block.encrypted)
        {
            throw bad(directive, file, "holds an encrypted private key (" + block.type + "); ringmq needs it " +
                "unencrypted, readable only by the broker's user: openssl pkey -in " + file + " -out plain-key.pem");
        }
    }

    private static PrivateKey decodeKey(final String directive, final Path file, final byte[] pkcs8,
        final String type)
    {
        final PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(pkcs8);
        for (final String algorithm : KEY_ALGORITHMS)
        {
            try
            {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            }
            catch (final GeneralSecurityException | RuntimeException ex)
            {
                // not this algorithm: try the next
            }
        }
        throw bad(directive, file, "holds a " + type + " the JDK cannot read (not an RSA, EC, EdDSA or DSA key, " +
            "or damaged)");
    }

    /**
     * @return the named curve (its OID, as DER) from a SEC1 {@code ECPrivateKey}'s {@code [0] parameters}.
     */
    private static byte[] curveOf(final String directive, final Path file, final byte[] sec1)
    {
        // ECPrivateKey ::= SEQUENCE { version INTEGER (1), privateKey OCTET STRING,
        //   parameters [0] ECParameters OPTIONAL, publicKey [1] BIT STRING OPTIONAL }
        try
        {
            final int[] position = { 0 };
            expectTag(sec1, position, 0x30);
            readLength(sec1, position);
            skipElement(sec1, position); // version
            skipElement(sec1, position); // privateKey
            expectTag(sec1, position, 0xA0);
            readLength(sec1, position);
            final int oidStart = position[0];
            expectTag(sec1, position, 0x06);
            final int oidLength = readLength(sec1, position);
            final int oidEnd = position[0] + oidLength;
            if (oidEnd > sec1.length)
            {
                throw new IllegalStateException("truncated");
            }
            final byte[] oid = new byte[oidEnd - oidStart];
            System.arraycopy(sec1, oidStart, oid, 0, oid.length);
            return oid;
        }
        catch (final RuntimeException ex)
        {
            throw bad(directive, file, "holds an EC PRIVATE KEY without a named curve, or a damaged one: " +
                "openssl pkcs8 -topk8 -nocrypt -in " + file + " makes a PKCS#8 key");
        }
    }

    private static void expectTag(final byte[] der, final int[] position, final int tag)
    {
        if ((der[position[0]++] & 0xFF) != tag)
        {
            throw new IllegalStateException("unexpected tag");
        }
    }

    private static int readLength(final byte[] der, final int[] position)
    {
        final int first = der[position[0]++] & 0xFF;
        if (first < 0x80)
        {
            return first;
        }
        final int count = first & 0x7F;
        if (count > 3)
        {
            throw new IllegalStateException("length too long");
        }
        int length = 0;
        for (int i = 0; i < count; i++)
        {
            length = (length << 8) | (der[position[0]++] & 0xFF);
        }
        return length;
    }

    private static void skipElement(final byte[] der, final int[] position)
    {
        position[0]++;
        final int length = readLength(der, position);
        position[0] += length;
    }

    private static byte[] algorithmId(final byte[] oid, final byte[] parameters)
    {
        return der(0x30, oid, parameters);
    }

    /**
     * PrivateKeyInfo ::= SEQUENCE { version INTEGER (0), privateKeyAlgorithm AlgorithmIdentifier,
     * privateKey OCTET STRING }.
     */
    private static byte[] pkcs8(final byte[] algorithmId, final byte[] key)
    {
        return der(0x30, VERSION_0, algorithmId, der(0x04, key));
    }

    private static byte[] der(final int tag, final byte[]... parts)
    {
        int length = 0;
        for (final byte[] part : parts)
        {
            length += part.length;
        }
        final ByteArrayOutputStream out = new ByteArrayOutputStream(length + 6);
        out.write(tag);
        if (length < 0x80)
        {
            out.write(length);
        }
        else if (length < 0x100)
        {
            out.write(0x81);
            out.write(length);
        }
        else if (length < 0x10000)
        {
            out.write(0x82);
            out.write(length >> 8);
            out.write(length);
        }
        else
        {
            out.write(0x83);
            out.write(length >> 16);
            out.write(length >> 8);
            out.write(length);
        }
        for (final byte[] part : parts)
        {
            out.write(part, 0, part.length);
        }
        return out.toByteArray();
    }

    private static String found(final List<Block> blocks)
    {
        final StringBuilder types = new StringBuilder();
        for (final Block block : blocks)
        {
            types.append(types.length() == 0 ? "; it holds " : ", ").append(block.type);
        }
        return types.toString();
    }
}
