package io.ringmq.transport;

import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.security.auth.x500.X500Principal;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.List;

/**
 * A TLS listener's context, built once per listener by {@link TlsContextFactory}: the {@link SSLContext} with the
 * listener's key and trust material, and how every server engine it makes is set up (protocols, cipher suites,
 * client certificates required, requested or not asked for). Thread-safe: any agent may make engines from it.
 */
final class TlsContext
{
    /** No client certificate is asked for (no {@code cafile} or {@code capath}). */
    static final int CLIENT_AUTH_NONE = 0;
    /** A client certificate is asked for and checked when presented, but optional. */
    static final int CLIENT_AUTH_WANTED = 1;
    /** A client certificate the CAs verify is required ({@code require_certificate true}). */
    static final int CLIENT_AUTH_NEEDED = 2;

    /** The client certificate is not the user name. */
    static final int IDENTITY_NONE = 0;
    /** Its subject's CN is ({@code use_identity_as_username}). */
    static final int IDENTITY_CN = 1;
    /** Its whole subject, RFC 2253, is ({@code use_subject_as_username}). */
    static final int IDENTITY_SUBJECT = 2;

    private final SSLContext sslContext;
    private final String[] protocols;
    private final String[] cipherSuites;
    private final int clientAuth;
    private final int identity;

    /**
     * @param identity what of the client certificate is the user name: {@link #IDENTITY_NONE}, {@link #IDENTITY_CN}
     *                 or {@link #IDENTITY_SUBJECT}.
     */
    TlsContext(final SSLContext sslContext, final String[] protocols, final String[] cipherSuites,
        final int clientAuth, final int identity)
    {
        this.sslContext = sslContext;
        this.protocols = protocols;
        this.cipherSuites = cipherSuites;
        this.clientAuth = clientAuth;
        this.identity = identity;
    }

    /**
     * @return a server-mode engine for one accepted connection, set up as the listener says.
     */
    SSLEngine newEngine()
    {
        final SSLEngine engine = sslContext.createSSLEngine();
        engine.setUseClientMode(false);
        engine.setEnabledProtocols(protocols);
        if (null != cipherSuites)
        {
            engine.setEnabledCipherSuites(cipherSuites);
        }
        if (CLIENT_AUTH_NEEDED == clientAuth)
        {
            engine.setNeedClientAuth(true);
        }
        else if (CLIENT_AUTH_WANTED == clientAuth)
        {
            engine.setWantClientAuth(true);
        }
        return engine;
    }

    SSLContext sslContext()
    {
        return sslContext;
    }

    /**
     * @return the protocols enabled, e.g. {@code TLSv1.3, TLSv1.2}.
     */
    String[] protocols()
    {
        return protocols.clone();
    }

    /**
     * @return one of {@link #CLIENT_AUTH_NONE}, {@link #CLIENT_AUTH_WANTED}, {@link #CLIENT_AUTH_NEEDED}.
     */
    int clientAuth()
    {
        return clientAuth;
    }

    /**
     * @return whether the client certificate ({@link SocketLayer#peerIdentity()}: its CN, or its whole subject) is the
     * user name.
     */
    boolean useIdentityAsUsername()
    {
        return identity != IDENTITY_NONE;
    }

    /**
     * @return the user name a verified client certificate gives, as this listener takes it; null without one.
     */
    String identityOf(final SSLSession session)
    {
        return identity == IDENTITY_SUBJECT ? subject(session) : commonName(session);
    }

    /**
     * @return the peer certificate's subject as Mosquitto's {@code use_subject_as_username} gives it, or null without
     * a verified certificate.
     */
    static String subject(final SSLSession session)
    {
        try
        {
            final Certificate[] certificates = session.getPeerCertificates();
            if (0 == certificates.length || !(certificates[0] instanceof X509Certificate))
            {
                return null;
            }
            final String subject = openSslName(((X509Certificate)certificates[0]).getSubjectX500Principal());
            return subject.isEmpty() ? null : subject;
        }
        catch (final SSLPeerUnverifiedException ex)
        {
            return null;
        }
    }

    /**
     * A distinguished name as OpenSSL's {@code XN_FLAG_RFC2253} prints it, which is what Mosquitto names a user by
     * (so that a migrated ACL file's {@code user} lines match): RFC 2253 order and escapes, OpenSSL's short names
     * ({@code emailAddress}, {@code serialNumber}, {@code street} ...), every byte of a value's UTF-8 above 0x7F and
     * every control character as {@code \XX}, an attribute it has no name for as its OID and {@code #}DER in
     * upper-case hex: {@code emailAddress=carol@example.com,CN=J\C3\B6rg,O=ringmq}.
     */
    static String openSslName(final X500Principal name)
    {
        final String jdk = name.getName(X500Principal.RFC2253, OPENSSL_NAMES);
        final StringBuilder out = new StringBuilder(jdk.length() + 16);
        boolean hex = false; // within a #DER value, which the JDK writes in lower case
        for (int i = 0; i < jdk.length(); i++)
        {
            final char c = jdk.charAt(i);
            if (c == '#' && i > 0 && jdk.charAt(i - 1) == '=')
            {
                hex = true;
            }
            else if (c == ',' || c == '+')
            {
                hex = false;
            }
            if (c < 0x20 || c == 0x7F)
            {
                escape(out, c);
            }
            else if (c > 0x7F)
            {
                final int end = Character.isHighSurrogate(c) && i + 1 < jdk.length() ? i + 2 : i + 1;
                for (final byte b : jdk.substring(i, end).getBytes(java.nio.charset.StandardCharsets.UTF_8))
                {
                    escape(out, b & 0xFF);
                }
                i = end - 1;
            }
            else
            {
                out.append(hex ? Character.toUpperCase(c) : c);
            }
        }
        return out.toString();
    }

    private static void escape(final StringBuilder out, final int b)
    {
        out.append('\\').append(Character.toUpperCase(Character.forDigit(b >> 4, 16)))
            .append(Character.toUpperCase(Character.forDigit(b & 0xF, 16)));
    }

    /** The short names OpenSSL prints where the JDK's RFC 2253 form has an OID, or another keyword. */
    private static final java.util.Map<String, String> OPENSSL_NAMES = java.util.Map.ofEntries(
        java.util.Map.entry("1.2.840.113549.1.9.1", "emailAddress"), java.util.Map.entry("2.5.4.5", "serialNumber"),
        java.util.Map.entry("2.5.4.12", "title"), java.util.Map.entry("2.5.4.42", "GN"),
        java.util.Map.entry("2.5.4.4", "SN"), java.util.Map.entry("2.5.4.43", "initials"),
        java.util.Map.entry("2.5.4.44", "generationQualifier"), java.util.Map.entry("2.5.4.46", "dnQualifier"),
        java.util.Map.entry("2.5.4.65", "pseudonym"), java.util.Map.entry("2.5.4.9", "street"),
        java.util.Map.entry("2.5.4.17", "postalCode"), java.util.Map.entry("2.5.4.15", "businessCategory"),
        java.util.Map.entry("2.5.4.13", "description"), java.util.Map.entry("2.5.4.97", "organizationIdentifier"));

    /**
     * @return the first CN of the peer certificate's subject (as Mosquitto takes it), or null without a verified
     * certificate.
     */
    static String commonName(final SSLSession session)
    {
        try
        {
            final Certificate[] certificates = session.getPeerCertificates();
            if (0 == certificates.length || !(certificates[0] instanceof X509Certificate))
            {
                return null;
            }
            final X500Principal subject = ((X509Certificate)certificates[0]).getSubjectX500Principal();
            final List<Rdn> rdns = new LdapName(subject.getName(X500Principal.RFC2253)).getRdns();
            for (final Rdn rdn : rdns)
            {
                if ("CN".equalsIgnoreCase(rdn.getType()))
                {
                    final Object value = rdn.getValue(); // a String, or the raw bytes of an unusual encoding
                    return value instanceof String && ((String)value).indexOf('\u0000') < 0 ? (String)value : null;
                }
            }
            return null;
        }
        catch (final SSLPeerUnverifiedException | InvalidNameException ex)
        {
            return null;
        }
    }
}
