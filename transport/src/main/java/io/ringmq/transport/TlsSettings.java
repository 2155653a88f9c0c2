package io.ringmq.transport;

import java.nio.file.Path;

/**
 * A listener's TLS settings as Mosquitto names them ({@code certfile}, {@code keyfile}, {@code cafile},
 * {@code capath}, {@code require_certificate}, {@code use_identity_as_username}, {@code tls_version},
 * {@code ciphers}): a plain value, filled directive by directive through its fluent setters and turned into an
 * {@code SSLContext} once per listener by {@link TlsContextFactory}, which judges it.
 */
final class TlsSettings
{
    /** {@code tls_version tlsv1.3}: TLS 1.3 only. */
    static final String TLS_V1_3 = "tlsv1.3";
    /** {@code tls_version tlsv1.2}: TLS 1.2 and 1.3, the default. */
    static final String TLS_V1_2 = "tlsv1.2";

    private Path certFile;
    private Path keyFile;
    private Path caFile;
    private Path caPath;
    private boolean requireCertificate;
    private boolean useIdentityAsUsername;
    private String tlsVersion;
    private String ciphers;

    /**
     * @param certFile {@code certfile}: the server's certificate chain in PEM, its own certificate first.
     * @return this.
     */
    TlsSettings certFile(final Path certFile)
    {
        this.certFile = certFile;
        return this;
    }

    /**
     * @param keyFile {@code keyfile}: the server's private key in PEM (PKCS#8, PKCS#1 RSA or SEC1 EC), unencrypted.
     * @return this.
     */
    TlsSettings keyFile(final Path keyFile)
    {
        this.keyFile = keyFile;
        return this;
    }

    /**
     * @param caFile {@code cafile}: one or more CA certificates in PEM that client certificates are checked against.
     * @return this.
     */
    TlsSettings caFile(final Path caFile)
    {
        this.caFile = caFile;
        return this;
    }

    /**
     * @param caPath {@code capath}: a directory of PEM CA certificates.
     * @return this.
     */
    TlsSettings caPath(final Path caPath)
    {
        this.caPath = caPath;
        return this;
    }

    /**
     * @param requireCertificate {@code require_certificate}: true, a client must present a certificate the CAs
     * verify; false, one is asked for (when a CA is configured) but optional.
     * @return this.
     */
    TlsSettings requireCertificate(final boolean requireCertificate)
    {
        this.requireCertificate = requireCertificate;
        return this;
    }

    /**
     * @param useIdentityAsUsername {@code use_identity_as_username}: the client certificate's CN is the user name.
     * @return this.
     */
    TlsSettings useIdentityAsUsername(final boolean useIdentityAsUsername)
    {
        this.useIdentityAsUsername = useIdentityAsUsername;
        return this;
    }

    /**
     * @param tlsVersion {@code tls_version}: the minimum version, {@link #TLS_V1_3} or {@link #TLS_V1_2}; null for
     * the default (1.2 and 1.3).
     * @return this.
     */
    TlsSettings tlsVersion(final String tlsVersion)
    {
        this.tlsVersion = tlsVersion;
        return this;
    }

    /**
     * @param ciphers {@code ciphers}: the cipher suites allowed, by their IANA names (as the JDK knows them),
     * separated by colons, commas or spaces; null for the JDK's defaults.
     * @return this.
     */
    TlsSettings ciphers(final String ciphers)
    {
        this.ciphers = ciphers;
        return this;
    }

    Path certFile()
    {
        return certFile;
    }

    Path keyFile()
    {
        return keyFile;
    }

    Path caFile()
    {
        return caFile;
    }

    Path caPath()
    {
        return caPath;
    }

    boolean requireCertificate()
    {
        return requireCertificate;
    }

    boolean useIdentityAsUsername()
    {
        return useIdentityAsUsername;
    }

    String tlsVersion()
    {
        return tlsVersion;
    }

    String ciphers()
    {
        return ciphers;
    }

    public String toString()
    {
        return "certfile=" + certFile + " keyfile=" + keyFile + " cafile=" + caFile + " capath=" + caPath +
            " require_certificate=" + requireCertificate + " use_identity_as_username=" + useIdentityAsUsername +
            " tls_version=" + (null == tlsVersion ? TLS_V1_2 : tlsVersion) +
            (null == ciphers ? "" : " ciphers=" + ciphers);
    }
}
