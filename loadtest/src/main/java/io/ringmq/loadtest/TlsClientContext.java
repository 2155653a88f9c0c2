package io.ringmq.loadtest;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.Locale;

/**
 * The generator's TLS settings, checked once at start: a client {@link SSLContext} that trusts the PEM CA file (or,
 * with {@code -insecure}, any server), presents a client certificate when one is given, and limits the protocol
 * version. Every connection gets its own client-mode {@link SSLEngine} from {@link #newEngine(String, int)}; the
 * server's name or address is verified against its certificate unless {@code -insecure}.
 */
final class TlsClientContext
{
    private static final char[] NO_PASSWORD = new char[0];

    private final SSLContext context;
    private final String[] protocols;
    private final boolean verifyHost;

    private TlsClientContext(final SSLContext context, final String[] protocols, final boolean verifyHost)
    {
        this.context = context;
        this.protocols = protocols;
        this.verifyHost = verifyHost;
    }

    /**
     * @param caFile    PEM CA certificates to trust; null with {@code insecure}, or for the JDK's default trust store.
     * @param certFile  PEM client certificate (and chain), or null.
     * @param keyFile   its PEM private key; given exactly when {@code certFile} is.
     * @param insecure  trust any server certificate and skip the host name check (for self-signed test brokers).
     * @param version   {@code tlsv1.2} or {@code tlsv1.3} (Mosquitto's spelling; {@code TLSv1.3} too), or null for
     *                  both.
     */
    static TlsClientContext of(final Path caFile, final Path certFile, final Path keyFile, final boolean insecure,
        final String version) throws IOException
    {
        if ((null == certFile) != (null == keyFile))
        {
            throw new IllegalArgumentException("-cert and -key go together");
        }
        if (insecure && null != caFile)
        {
            throw new IllegalArgumentException("-insecure trusts any server: it contradicts -cafile");
        }
        final String[] protocols = protocols(version);
        try
        {
            final KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            if (null != certFile)
            {
                keys.setKeyEntry("client", PemFiles.privateKey(keyFile), NO_PASSWORD, PemFiles.certificates(certFile));
            }
            final KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keyManagers.init(keys, NO_PASSWORD);
            final TrustManager[] trust;
            if (insecure)
            {
                trust = new TrustManager[]{new TrustAll()};
            }
            else
            {
                final TrustManagerFactory trustManagers =
                    TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                if (null == caFile)
                {
                    trustManagers.init((KeyStore)null); // the JDK's own CAs
                }
                else
                {
                    final KeyStore cas = KeyStore.getInstance("PKCS12");
                    cas.load(null, null);
                    int i = 0;
                    for (final X509Certificate ca : PemFiles.certificates(caFile))
                    {
                        cas.setCertificateEntry("ca" + i++, ca);
                    }
                    trustManagers.init(cas);
                }
                trust = trustManagers.getTrustManagers();
            }
            final SSLContext context = SSLContext.getInstance("TLS");
            context.init(keyManagers.getKeyManagers(), trust, null);
            return new TlsClientContext(context, protocols, !insecure);
        }
        catch (final GeneralSecurityException ex)
        {
            throw new IOException("TLS setup failed: " + ex.getMessage(), ex);
        }
    }

    static String[] protocols(final String version)
    {
        if (null == version)
        {
            return new String[]{"TLSv1.3", "TLSv1.2"};
        }
        switch (version.toLowerCase(Locale.ROOT))
        {
            case "tlsv1.2", "1.2": return new String[]{"TLSv1.2"};
            case "tlsv1.3", "1.3": return new String[]{"TLSv1.3"};
            default: throw new IllegalArgumentException("-tls-version must be tlsv1.2 or tlsv1.3");
        }
    }

    /**
     * @return a client-mode engine for one connection to {@code host}, its handshake begun (its first flight is
     * ready to wrap).
     */
    SSLEngine newEngine(final String host, final int port) throws IOException
    {
        final SSLEngine engine = context.createSSLEngine(host, port);
        engine.setUseClientMode(true);
        final SSLParameters parameters = engine.getSSLParameters();
        parameters.setProtocols(protocols);
        if (verifyHost)
        {
            parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host or address
        }
        engine.setSSLParameters(parameters);
        engine.beginHandshake();
        return engine;
    }

    /**
     * {@code -insecure}: accepts any server certificate: a self-signed test broker with no CA file at hand.
     */
    private static final class TrustAll implements X509TrustManager
    {
        public void checkClientTrusted(final X509Certificate[] chain, final String authType)
        {
        }

        public void checkServerTrusted(final X509Certificate[] chain, final String authType)
        {
        }

        public X509Certificate[] getAcceptedIssuers()
        {
            return new X509Certificate[0];
        }
    }

    /**
     * @return a handshake failure in a line: the JDK's message, with its innermost cause when that says more (the
     * certificate path that could not be built).
     */
    static String describe(final javax.net.ssl.SSLException ex)
    {
        Throwable root = ex;
        while (null != root.getCause() && root.getCause() != root)
        {
            root = root.getCause();
        }
        final String message = String.valueOf(ex.getMessage());
        return root == ex || null == root.getMessage() || message.contains(root.getMessage()) ? message :
            message + " (" + root.getMessage() + ")";
    }
}
