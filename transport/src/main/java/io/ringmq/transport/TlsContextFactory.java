package io.ringmq.transport;

import io.ringmq.pipeline.ListenerSettings;
import javax.net.ssl.CertPathTrustManagerParameters;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.ManagerFactoryParameters;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertPathBuilder;
import java.security.cert.CertStore;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.CollectionCertStoreParameters;
import java.security.cert.PKIXBuilderParameters;
import java.security.cert.PKIXRevocationChecker;
import java.security.cert.X509CRL;
import java.security.cert.X509CertSelector;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Builds a listener's {@link TlsContext} once, from a listener's TLS settings ({@link ListenerSettings}) and the PEM files they name, the way
 * Mosquitto reads them: {@code certfile} a chain (the server's certificate first), {@code keyfile} its private key
 * (checked against that certificate), {@code cafile} and {@code capath} the CAs client certificates are checked
 * against; {@code require_certificate true} makes a client certificate required, false with a CA makes it
 * requested but optional. Every bad setting or file is an {@link IllegalArgumentException} naming the directive,
 * the file and what is wrong (the CLI makes it exit 2); what loads but deserves a word (an expired certificate, a
 * TLS version the JDK no longer offers) goes to {@code warnings}.
 */
final class TlsContextFactory
{
    private static final char[] NO_PASSWORD = new char[0];
    private static final byte[] PROBE =
        "ringmq: does this key match its certificate?".getBytes(StandardCharsets.US_ASCII);

    private TlsContextFactory()
    {
    }

    /**
     * @param settings the listener's settings.
     * @param warnings told, one line each, about what loads but is worth saying.
     * @return the listener's context, to make one engine per accepted connection from.
     * @throws IllegalArgumentException naming the directive and file, for every setting or file that cannot be used.
     */
    static TlsContext create(final ListenerSettings settings, final Consumer<String> warnings)
    {
        if (null == settings.certFile() || null == settings.keyFile())
        {
            throw new IllegalArgumentException("TLS needs both certfile and keyfile (certfile=" + settings.certFile() +
                ", keyfile=" + settings.keyFile() + ")");
        }
        final List<X509Certificate> chain = PemFiles.certificates("certfile", settings.certFile());
        final PrivateKey key = PemFiles.privateKey("keyfile", settings.keyFile());
        checkKeyMatches(settings, chain.get(0), key);
        for (final X509Certificate certificate : chain)
        {
            checkValidity("certfile", settings.certFile(), certificate, warnings);
        }

        final List<X509Certificate> cas = new ArrayList<>();
        if (null != settings.caFile())
        {
            cas.addAll(PemFiles.certificates("cafile", settings.caFile()));
        }
        if (null != settings.caPath())
        {
            cas.addAll(caPath(settings.caPath(), warnings));
        }
        for (final X509Certificate ca : cas)
        {
            checkValidity(null != settings.caFile() ? "cafile" : "capath",
                null != settings.caFile() ? settings.caFile() : settings.caPath(), ca, warnings);
        }
        if (settings.requireCertificate() && cas.isEmpty())
        {
            throw new IllegalArgumentException("require_certificate true needs a cafile or capath to check client " +
                "certificates against");
        }
        if (settings.useIdentityAsUsername() && settings.useSubjectAsUsername())
        {
            warnings.accept("use_identity_as_username and use_subject_as_username: the CN is the user name, as in " +
                "Mosquitto");
        }
        final List<X509CRL> crls = null == settings.crlFile() ? List.of() : PemFiles.crls("crlfile",
            settings.crlFile());
        final int clientAuth = settings.requireCertificate() ? TlsContext.CLIENT_AUTH_NEEDED :
            cas.isEmpty() ? TlsContext.CLIENT_AUTH_NONE : TlsContext.CLIENT_AUTH_WANTED;

        final SSLContext sslContext = sslContext(settings, chain, key, cas, crls);
        final String[] protocols = protocols(settings.tlsVersion(), warnings);
        final String[] cipherSuites = CipherSuites.of(settings.ciphers(), settings.ciphersTls13(),
            sslContext.getSupportedSSLParameters().getCipherSuites(),
            sslContext.getDefaultSSLParameters().getCipherSuites(), warnings);
        return new TlsContext(sslContext, protocols, cipherSuites, clientAuth, settings.useIdentityAsUsername() ?
            TlsContext.IDENTITY_CN : settings.useSubjectAsUsername() ? TlsContext.IDENTITY_SUBJECT :
            TlsContext.IDENTITY_NONE);
    }

    private static SSLContext sslContext(final ListenerSettings settings, final List<X509Certificate> chain,
        final PrivateKey key, final List<X509Certificate> cas, final List<X509CRL> crls)
    {
        try
        {
            final KeyManagerFactory keyManagers = keyManagers(key, chain);
            TrustManagerFactory trustManagers = null;
            if (!cas.isEmpty())
            {
                final KeyStore trusted = trustStore(cas);
                trustManagers = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                if (crls.isEmpty())
                {
                    trustManagers.init(trusted);
                }
                else
                {
                    trustManagers.init(revocationChecked(trusted, crls));
                }
            }
            final SSLContext context = SSLContext.getInstance("TLS");
            context.init(keyManagers.getKeyManagers(), null == trustManagers ? null : trustManagers.getTrustManagers(),
                null);
            return context;
        }
        catch (final GeneralSecurityException | IOException ex)
        {
            throw new IllegalArgumentException("certfile " + settings.certFile() + ", keyfile " + settings.keyFile() +
                ": the JDK will not use them (" + ex.getMessage() + ")", ex);
        }
    }

    /**
     * @return the key managers of one certificate chain and its private key (a listener's, or a bridge's own).
     */
    static KeyManagerFactory keyManagers(final PrivateKey key, final List<X509Certificate> chain)
        throws GeneralSecurityException, IOException
    {
        final KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        keys.setKeyEntry("own", key, NO_PASSWORD, chain.toArray(new X509Certificate[0]));
        final KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keyManagers.init(keys, NO_PASSWORD);
        return keyManagers;
    }

    /**
     * @return a key store holding these CA certificates, to check a peer's against.
     */
    static KeyStore trustStore(final List<X509Certificate> cas) throws GeneralSecurityException, IOException
    {
        final KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        for (int i = 0; i < cas.size(); i++)
        {
            trusted.setCertificateEntry("ca-" + i, cas.get(i));
        }
        return trusted;
    }

    /**
     * Client certificates checked against the CRLs, as OpenSSL's CRL check in Mosquitto: the client's own
     * certificate, by its issuer's CRL from the file (none for that issuer, or one past its next update, fails the
     * handshake), never by the network (no OCSP, no distribution points).
     */
    private static ManagerFactoryParameters revocationChecked(final KeyStore trusted, final List<X509CRL> crls)
        throws GeneralSecurityException
    {
        final PKIXBuilderParameters parameters = new PKIXBuilderParameters(trusted, new X509CertSelector());
        parameters.addCertStore(CertStore.getInstance("Collection", new CollectionCertStoreParameters(crls)));
        final PKIXRevocationChecker checker =
            (PKIXRevocationChecker)CertPathBuilder.getInstance("PKIX").getRevocationChecker();
        checker.setOptions(EnumSet.of(PKIXRevocationChecker.Option.PREFER_CRLS,
            PKIXRevocationChecker.Option.NO_FALLBACK, PKIXRevocationChecker.Option.ONLY_END_ENTITY));
        parameters.addCertPathChecker(checker);
        parameters.setRevocationEnabled(true);
        return new CertPathTrustManagerParameters(parameters);
    }

    /**
     * The key must be the certificate's: a signature made with it must verify with the certificate's public key.
     */
    private static void checkKeyMatches(final ListenerSettings settings, final X509Certificate certificate,
        final PrivateKey key)
    {
        final String algorithm = key.getAlgorithm();
        final String certificateAlgorithm = certificate.getPublicKey().getAlgorithm();
        boolean matches = algorithm.equals(certificateAlgorithm);
        final String signatureAlgorithm = signatureAlgorithm(algorithm);
        if (matches && null != signatureAlgorithm)
        {
            try
            {
                final Signature signer = Signature.getInstance(signatureAlgorithm);
                signer.initSign(key);
                signer.update(PROBE);
                final byte[] signature = signer.sign();
                final Signature verifier = Signature.getInstance(signatureAlgorithm);
                verifier.initVerify(certificate.getPublicKey());
                verifier.update(PROBE);
                matches = verifier.verify(signature);
            }
            catch (final GeneralSecurityException ex)
            {
                matches = false;
            }
        }
        if (!matches)
        {
            throw new IllegalArgumentException("keyfile " + settings.keyFile() + ": the private key (" + algorithm +
                ") does not match the first certificate of certfile " + settings.certFile() + " (" +
                certificate.getSubjectX500Principal().getName() + ", " + certificateAlgorithm + " key)");
        }
    }

    private static String signatureAlgorithm(final String keyAlgorithm)
    {
        switch (keyAlgorithm)
        {
            case "RSA":
                return "SHA256withRSA";
            case "EC":
                return "SHA256withECDSA";
            case "EdDSA":
            case "Ed25519":
            case "Ed448":
                return "EdDSA";
            case "DSA":
                return "SHA256withDSA";
            default:
                return null; // RSASSA-PSS and others: the algorithm check above is all
        }
    }

    private static void checkValidity(final String directive, final Path file, final X509Certificate certificate,
        final Consumer<String> warnings)
    {
        try
        {
            certificate.checkValidity();
        }
        catch (final CertificateExpiredException ex)
        {
            warnings.accept(directive + " " + file + ": the certificate " +
                certificate.getSubjectX500Principal().getName() + " expired on " +
                certificate.getNotAfter().toInstant() + "; clients will refuse it");
        }
        catch (final CertificateNotYetValidException ex)
        {
            warnings.accept(directive + " " + file + ": the certificate " +
                certificate.getSubjectX500Principal().getName() + " is not valid before " +
                certificate.getNotBefore().toInstant() + "; clients will refuse it until then");
        }
    }

    /**
     * @return every certificate in the PEM files of a directory (OpenSSL's hashed names, or any others).
     */
    static List<X509Certificate> caPath(final Path directory, final Consumer<String> warnings)
    {
        if (!Files.isDirectory(directory))
        {
            throw new IllegalArgumentException("capath " + directory + ": is not a directory");
        }
        final List<Path> files;
        try (Stream<Path> listing = Files.list(directory))
        {
            files = listing.filter(Files::isRegularFile).sorted().collect(java.util.stream.Collectors.toList());
        }
        catch (final IOException ex)
        {
            throw new IllegalArgumentException("capath " + directory + ": cannot be listed (" + ex.getMessage() + ")",
                ex);
        }
        final List<X509Certificate> certificates = new ArrayList<>();
        for (final Path file : files)
        {
            try
            {
                certificates.addAll(PemFiles.certificates("capath", file));
            }
            catch (final IllegalArgumentException ex)
            {
                warnings.accept(ex.getMessage() + "; skipped");
            }
        }
        if (certificates.isEmpty())
        {
            throw new IllegalArgumentException("capath " + directory + ": holds no PEM certificate");
        }
        return certificates;
    }

    /**
     * Mosquitto's {@code tls_version} is the minimum version; the JDK no longer offers 1.1 and older.
     */
    static String[] protocols(final String tlsVersion, final Consumer<String> warnings)
    {
        if (null == tlsVersion || "tlsv1.2".equals(tlsVersion))
        {
            return new String[]{ "TLSv1.3", "TLSv1.2" };
        }
        if ("tlsv1.3".equals(tlsVersion))
        {
            return new String[]{ "TLSv1.3" };
        }
        if ("tlsv1.1".equals(tlsVersion) || "tlsv1".equals(tlsVersion))
        {
            warnings.accept("tls_version " + tlsVersion + ": TLS 1.1 and older are disabled in the JDK; TLS 1.2 and " +
                "1.3 are offered");
            return new String[]{ "TLSv1.3", "TLSv1.2" };
        }
        throw new IllegalArgumentException("tls_version " + tlsVersion + ": not one of tlsv1.3, tlsv1.2");
    }
}
