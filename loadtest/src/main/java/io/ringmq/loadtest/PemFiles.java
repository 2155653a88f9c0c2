package io.ringmq.loadtest;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

/**
 * PEM files as Mosquitto and {@code openssl} write them: certificates (one or a chain), and an unencrypted private key
 * in PKCS#8 ({@code BEGIN PRIVATE KEY}, OpenSSL 3's default) or PKCS#1 RSA ({@code BEGIN RSA PRIVATE KEY}). Read once
 * at start, never on a hot path; every failure names the file.
 */
final class PemFiles
{
    private static final String[] KEY_ALGORITHMS = {"RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS"};

    private PemFiles()
    {
    }

    /**
     * @return every certificate in {@code file}, in order (a leaf first, then its chain).
     */
    static X509Certificate[] certificates(final Path file) throws IOException
    {
        final byte[] bytes = Files.readAllBytes(file);
        final List<X509Certificate> certificates = new ArrayList<>();
        try (InputStream in = new ByteArrayInputStream(bytes))
        {
            final CertificateFactory factory = CertificateFactory.getInstance("X.509");
            for (final var certificate : factory.generateCertificates(in))
            {
                certificates.add((X509Certificate)certificate);
            }
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IOException(file + ": not a PEM certificate file (" + ex.getMessage() + ")", ex);
        }
        if (certificates.isEmpty())
        {
            throw new IOException(file + ": no certificate in it (expected -----BEGIN CERTIFICATE-----)");
        }
        return certificates.toArray(new X509Certificate[0]);
    }

    /**
     * @return the private key in {@code file}.
     */
    static PrivateKey privateKey(final Path file) throws IOException
    {
        final String text = Files.readString(file, StandardCharsets.US_ASCII);
        final byte[] pkcs1 = block(text, "RSA PRIVATE KEY");
        final byte[] der = null != pkcs1 ? rsaPkcs1ToPkcs8(pkcs1) : block(text, "PRIVATE KEY");
        if (null == der)
        {
            if (text.contains("ENCRYPTED PRIVATE KEY") || text.contains("Proc-Type: 4,ENCRYPTED"))
            {
                throw new IOException(file + ": the key is encrypted; decrypt it first (openssl pkey -in KEY -out " +
                    "PLAIN)");
            }
            throw new IOException(file + ": no PKCS#8 (BEGIN PRIVATE KEY) or RSA (BEGIN RSA PRIVATE KEY) key in it; " +
                "convert it with: openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY8");
        }
        final PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
        for (final String algorithm : KEY_ALGORITHMS)
        {
            try
            {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            }
            catch (final InvalidKeySpecException | java.security.NoSuchAlgorithmException ignore)
            {
                // try the next algorithm
            }
        }
        throw new IOException(file + ": a private key of an unknown algorithm (RSA, EC and EdDSA are read)");
    }

    /**
     * @return the bytes between {@code -----BEGIN label-----} and its end line, or null when there is no such block.
     */
    static byte[] block(final String text, final String label)
    {
        final String begin = "-----BEGIN " + label + "-----";
        final int start = text.indexOf(begin);
        if (start < 0)
        {
            return null;
        }
        final int end = text.indexOf("-----END " + label + "-----", start);
        if (end < 0)
        {
            return null;
        }
        return Base64.getMimeDecoder().decode(text.substring(start + begin.length(), end));
    }

    /**
     * Wraps a PKCS#1 RSAPrivateKey in a PKCS#8 PrivateKeyInfo (version 0, rsaEncryption, the key as an OCTET STRING).
     */
    static byte[] rsaPkcs1ToPkcs8(final byte[] pkcs1)
    {
        final byte[] algorithm = {0x30, 0x0D, 0x06, 0x09, 0x2A, (byte)0x86, 0x48, (byte)0x86, (byte)0xF7, 0x0D, 0x01,
            0x01, 0x01, 0x05, 0x00};
        final byte[] version = {0x02, 0x01, 0x00};
        final byte[] octets = der(0x04, pkcs1);
        final byte[] body = new byte[version.length + algorithm.length + octets.length];
        System.arraycopy(version, 0, body, 0, version.length);
        System.arraycopy(algorithm, 0, body, version.length, algorithm.length);
        System.arraycopy(octets, 0, body, version.length + algorithm.length, octets.length);
        return der(0x30, body);
    }

    private static byte[] der(final int tag, final byte[] content)
    {
        final int length = content.length;
        final int lengthBytes = length < 0x80 ? 0 : length < 0x100 ? 1 : length < 0x10000 ? 2 : 3;
        final byte[] out = new byte[2 + lengthBytes + length];
        out[0] = (byte)tag;
        if (lengthBytes == 0)
        {
            out[1] = (byte)length;
        }
        else
        {
            out[1] = (byte)(0x80 | lengthBytes);
            for (int i = 0; i < lengthBytes; i++)
            {
                out[2 + i] = (byte)(length >>> (8 * (lengthBytes - 1 - i)));
            }
        }
        System.arraycopy(content, 0, out, 2 + lengthBytes, length);
        return out;
    }
}
