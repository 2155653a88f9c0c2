package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.Locale;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * One listening socket and how its connections are spoken to: the port and address, the protocol on the wire
 * (MQTT straight on TCP, or inside WebSocket frames), TLS (PEM files as Mosquitto takes them), the PROXY protocol
 * header a load balancer in front sends, a connection limit of its own, and (Mosquitto's
 * {@code per_listener_settings true}) who may connect through it. Plain data: the transport builds the sockets,
 * the TLS context and the byte layers from it. Filled by the command line ({@code --listener}) or the config file
 * ({@code listener}), validated once by {@link #conclude()}.
 */
public final class ListenerSettings
{
    /** What runs on the socket. */
    public enum Protocol
    {
        /** MQTT bytes straight on the socket (or TLS). */
        MQTT,
        /** MQTT inside RFC 6455 binary frames. */
        WEBSOCKETS
    }

    /** Which PROXY protocol header the socket starts with. */
    public enum ProxyProtocol
    {
        /** None: the socket's own peer is the client. */
        NONE,
        /** The text header (v1). */
        V1,
        /** The binary header (v2). */
        V2,
        /** Either, told apart by its first bytes. */
        ANY
    }

    /** No limit of the listener's own (the broker's {@code --max-connections} still holds). */
    public static final int UNLIMITED = -1;
    /** Every protocol level ringmq speaks: 3 (3.1, served as 3.1.1), 4 (3.1.1) and 5 (5.0). */
    public static final int ALL_VERSIONS = 1 << 3 | 1 << 4 | 1 << 5;

    private int port;
    private String bindAddress;
    private Protocol protocol = Protocol.MQTT;
    private String websocketPath;
    private ProxyProtocol proxyProtocol = ProxyProtocol.NONE;
    private int maxConnections = UNLIMITED;
    private int maxQos = 2;
    /** Bit n set: protocol level n may connect (4: 3.1.1, 5: 5.0). */
    private int acceptedVersions = ALL_VERSIONS;
    private boolean refusesEmptyClientId;
    private String mountPoint;
    private byte[] mountPointBytes;
    private Path certFile;
    private Path keyFile;
    private Path caFile;
    private Path caPath;
    private boolean requireCertificate;
    private boolean useIdentityAsUsername;
    private boolean useSubjectAsUsername;
    private Path crlFile;
    private String tlsVersion;
    private String ciphers;
    private String ciphersTls13;
    private Authenticator.AnonymousPolicy anonymous;
    private Path passwordFile;
    private Path aclFile;

    /**
     * @param port        the port; 0 picks a free one.
     * @param bindAddress the address, or null for every address.
     */
    public ListenerSettings(final int port, final String bindAddress)
    {
        this.port = port;
        this.bindAddress = bindAddress;
    }

    /**
     * Checks the settings against each other (files are read when the listener opens).
     *
     * @return this.
     */
    public ListenerSettings conclude()
    {
        final String name = "listener " + this;
        check(port >= 0 && port <= 65_535, name + ": port must be 0..65535");
        if (null != bindAddress)
        {
            try
            {
                InetAddress.getByName(bindAddress);
            }
            catch (final UnknownHostException ex)
            {
                throw new IllegalArgumentException(name + ": unknown address " + bindAddress);
            }
        }
        check((null == certFile) == (null == keyFile), name + ": certfile and keyfile go together");
        check(!requireCertificate || isTls(), name + ": require_certificate needs certfile and keyfile");
        check(!requireCertificate || null != caFile || null != caPath,
            name + ": require_certificate needs cafile or capath to check client certificates against");
        check(!useIdentityAsUsername || requireCertificate,
            name + ": use_identity_as_username needs require_certificate true");
        check(!useSubjectAsUsername || requireCertificate,
            name + ": use_subject_as_username needs require_certificate true");
        check(null == crlFile || isTls() && (null != caFile || null != caPath),
            name + ": crlfile needs certfile, keyfile and cafile or capath (it revokes client certificates)");
        check(null == tlsVersion || isTls(), name + ": tls_version without certfile and keyfile");
        check(null == tlsVersion || java.util.List.of("tlsv1.3", "tlsv1.2", "tlsv1.1", "tlsv1").contains(tlsVersion),
            name + ": tls_version must be tlsv1.3, tlsv1.2 (or tlsv1.1, tlsv1: served as 1.2), not " + tlsVersion);
        check(maxConnections == UNLIMITED || maxConnections >= 1, name + ": max_connections must be -1 or at least 1");
        check(maxQos >= 0 && maxQos <= 2, name + ": max_qos must be 0, 1 or 2");
        check(acceptedVersions != 0 && (acceptedVersions & ~ALL_VERSIONS) == 0,
            name + ": accept_protocol_versions must name 3 (MQTT 3.1), 4 (MQTT 3.1.1), 5 (MQTT 5.0) or some of them");
        check(null == mountPoint || mountPointBytes.length <= 1024 && mountPoint.endsWith("/") &&
            !mountPoint.startsWith("$") && mountPoint.indexOf('+') < 0 && mountPoint.indexOf('#') < 0 &&
            mountPoint.indexOf('\u0000') < 0,
            name + ": mount_point must be up to 1024 bytes ending in /, not starting with $, without +, # or NUL");
        check(null == websocketPath || protocol == Protocol.WEBSOCKETS, name + ": a path is for websockets");
        return this;
    }

    /**
     * @return whether the other describes the same listener in every setting (a reload keeps such a listener, with
     * its socket and its connections, as it is).
     */
    public boolean sameAs(final ListenerSettings other)
    {
        return sameSocket(other) && maxConnections == other.maxConnections && maxQos == other.maxQos &&
            acceptedVersions == other.acceptedVersions && refusesEmptyClientId == other.refusesEmptyClientId &&
            java.util.Objects.equals(mountPoint, other.mountPoint) &&
            anonymous == other.anonymous && java.util.Objects.equals(passwordFile, other.passwordFile) &&
            java.util.Objects.equals(aclFile, other.aclFile);
    }

    /**
     * @return whether the other listens on the same port and address: a reload keeps such a listener's socket and
     * gives it new layers when its protocol, PROXY protocol or TLS settings differ (binding a second socket to the
     * address would fail while the first holds it).
     */
    public boolean sameAddress(final ListenerSettings other)
    {
        return port == other.port && java.util.Objects.equals(bindAddress, other.bindAddress);
    }

    /**
     * @return whether the other describes the same socket with the same layers (address, protocol, PROXY protocol,
     * TLS): a reload keeps such a listener's socket and only gives it the other's settings for what it admits
     * ({@code max_connections}, {@code max_qos}, {@code accept_protocol_versions}, {@code mount_point},
     * {@code allow_anonymous}), so those change
     * without a rebind, for the connections it accepts from then on.
     */
    public boolean sameSocket(final ListenerSettings other)
    {
        return port == other.port && java.util.Objects.equals(bindAddress, other.bindAddress) &&
            protocol == other.protocol && java.util.Objects.equals(websocketPath, other.websocketPath) &&
            proxyProtocol == other.proxyProtocol &&
            java.util.Objects.equals(certFile, other.certFile) && java.util.Objects.equals(keyFile, other.keyFile) &&
            java.util.Objects.equals(caFile, other.caFile) && java.util.Objects.equals(caPath, other.caPath) &&
            requireCertificate == other.requireCertificate && useIdentityAsUsername == other.useIdentityAsUsername &&
            useSubjectAsUsername == other.useSubjectAsUsername && java.util.Objects.equals(crlFile, other.crlFile) &&
            java.util.Objects.equals(tlsVersion, other.tlsVersion) && java.util.Objects.equals(ciphers, other.ciphers) &&
            java.util.Objects.equals(ciphersTls13, other.ciphersTls13);
    }

    /**
     * @return whether connections speak TLS.
     */
    public boolean isTls()
    {
        return null != certFile;
    }

    /**
     * @return what a log line calls it: {@code mqtt://0.0.0.0:1883}, {@code wss://127.0.0.1:8081} ...
     */
    public String describe(final int boundPort)
    {
        final String scheme = protocol == Protocol.WEBSOCKETS ? (isTls() ? "wss" : "ws") : (isTls() ? "mqtts" : "mqtt");
        return scheme + "://" + (null == bindAddress ? "0.0.0.0" : bindAddress) + ":" + boundPort +
            (proxyProtocol == ProxyProtocol.NONE ? "" : " (PROXY " + proxyProtocol.name().toLowerCase(Locale.ROOT) + ")");
    }

    public String toString()
    {
        return describe(port);
    }

    public int port()
    {
        return port;
    }

    public ListenerSettings port(final int port)
    {
        this.port = port;
        return this;
    }

    /**
     * @return the address, or null for every address.
     */
    public String bindAddress()
    {
        return bindAddress;
    }

    public ListenerSettings bindAddress(final String bindAddress)
    {
        this.bindAddress = bindAddress;
        return this;
    }

    public Protocol protocol()
    {
        return protocol;
    }

    public ListenerSettings protocol(final Protocol protocol)
    {
        this.protocol = protocol;
        return this;
    }

    /**
     * @return the one HTTP path a WebSocket upgrade must ask for, or null for any path (as Mosquitto).
     */
    public String websocketPath()
    {
        return websocketPath;
    }

    public ListenerSettings websocketPath(final String websocketPath)
    {
        this.websocketPath = websocketPath;
        return this;
    }

    public ProxyProtocol proxyProtocol()
    {
        return proxyProtocol;
    }

    public ListenerSettings proxyProtocol(final ProxyProtocol proxyProtocol)
    {
        this.proxyProtocol = proxyProtocol;
        return this;
    }

    /**
     * @return connections this listener holds at once, or {@link #UNLIMITED}.
     */
    public int maxConnections()
    {
        return maxConnections;
    }

    public ListenerSettings maxConnections(final int maxConnections)
    {
        this.maxConnections = maxConnections;
        return this;
    }

    /**
     * @return the highest QoS a client of this listener may use (Mosquitto's listener {@code max_qos}); the broker's
     * {@code --max-qos} caps it.
     */
    public int maxQos()
    {
        return maxQos;
    }

    public ListenerSettings maxQos(final int maxQos)
    {
        this.maxQos = maxQos;
        return this;
    }

    /**
     * @return whether a client of protocol level {@code version} may connect through this listener (Mosquitto 2.1's
     * {@code accept_protocol_versions}).
     */
    public boolean accepts(final int version)
    {
        return version >= 0 && version < 32 && (acceptedVersions & 1 << version) != 0;
    }

    /**
     * @return whether this listener refuses a CONNECT with an empty client id (Mosquitto's
     * {@code allow_zero_length_clientid false} in a listener section under {@code per_listener_settings true}); when
     * not, the broker's {@code --allow-zero-length-clientid} decides.
     */
    public boolean refusesEmptyClientId()
    {
        return refusesEmptyClientId;
    }

    public ListenerSettings refusesEmptyClientId(final boolean refuses)
    {
        this.refusesEmptyClientId = refuses;
        return this;
    }

    /**
     * @param versions bit n set for each protocol level that may connect ({@link #ALL_VERSIONS}: any).
     */
    public ListenerSettings acceptProtocolVersions(final int versions)
    {
        this.acceptedVersions = versions;
        return this;
    }

    /**
     * @return the prefix this listener's clients' topics live under (Mosquitto's {@code mount_point}), or null.
     */
    public String mountPoint()
    {
        return mountPoint;
    }

    /**
     * @return {@link #mountPoint()} in UTF-8, or null.
     */
    public byte[] mountPointBytes()
    {
        return mountPointBytes;
    }

    public ListenerSettings mountPoint(final String mountPoint)
    {
        this.mountPoint = mountPoint;
        this.mountPointBytes = null == mountPoint ? null : mountPoint.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return this;
    }

    public Path certFile()
    {
        return certFile;
    }

    public ListenerSettings certFile(final Path certFile)
    {
        this.certFile = certFile;
        return this;
    }

    public Path keyFile()
    {
        return keyFile;
    }

    public ListenerSettings keyFile(final Path keyFile)
    {
        this.keyFile = keyFile;
        return this;
    }

    public Path caFile()
    {
        return caFile;
    }

    public ListenerSettings caFile(final Path caFile)
    {
        this.caFile = caFile;
        return this;
    }

    public Path caPath()
    {
        return caPath;
    }

    public ListenerSettings caPath(final Path caPath)
    {
        this.caPath = caPath;
        return this;
    }

    /**
     * @return whether a client's user name is its certificate's whole subject, in RFC 2253 form
     * ({@code CN=alice,O=ringmq}), as Mosquitto's {@code use_subject_as_username}; {@code use_identity_as_username}
     * (the CN alone) wins where both are set, as in Mosquitto.
     */
    public boolean useSubjectAsUsername()
    {
        return useSubjectAsUsername;
    }

    public ListenerSettings useSubjectAsUsername(final boolean useSubjectAsUsername)
    {
        this.useSubjectAsUsername = useSubjectAsUsername;
        return this;
    }

    /**
     * @return a PEM file of certificate revocation lists client certificates are checked against (Mosquitto's
     * {@code crlfile}), or null.
     */
    public Path crlFile()
    {
        return crlFile;
    }

    public ListenerSettings crlFile(final Path crlFile)
    {
        this.crlFile = crlFile;
        return this;
    }

    public boolean requireCertificate()
    {
        return requireCertificate;
    }

    public ListenerSettings requireCertificate(final boolean requireCertificate)
    {
        this.requireCertificate = requireCertificate;
        return this;
    }

    public boolean useIdentityAsUsername()
    {
        return useIdentityAsUsername;
    }

    public ListenerSettings useIdentityAsUsername(final boolean useIdentityAsUsername)
    {
        this.useIdentityAsUsername = useIdentityAsUsername;
        return this;
    }

    /**
     * @return the lowest TLS version accepted ({@code tlsv1.2} or {@code tlsv1.3}; Mosquitto's {@code tlsv1.1} and
     * {@code tlsv1} are served as 1.2, with a warning), or null for 1.2.
     */
    public String tlsVersion()
    {
        return tlsVersion;
    }

    public ListenerSettings tlsVersion(final String tlsVersion)
    {
        this.tlsVersion = tlsVersion;
        return this;
    }

    /**
     * @return the TLS 1.3 cipher suites allowed (Mosquitto's {@code ciphers_tls1.3}), names separated by ':', or null
     * for the JDK's defaults.
     */
    public String ciphersTls13()
    {
        return ciphersTls13;
    }

    public ListenerSettings ciphersTls13(final String ciphersTls13)
    {
        this.ciphersTls13 = ciphersTls13;
        return this;
    }

    /**
     * @return the TLS 1.2 cipher suites allowed, OpenSSL or IANA names separated by ':' or ',', or null for the
     * JDK's defaults.
     */
    public String ciphers()
    {
        return ciphers;
    }

    public ListenerSettings ciphers(final String ciphers)
    {
        this.ciphers = ciphers;
        return this;
    }

    /**
     * @return who may connect without a user name through this listener, or null for the broker's setting.
     */
    public Authenticator.AnonymousPolicy anonymous()
    {
        return anonymous;
    }

    public ListenerSettings anonymous(final Authenticator.AnonymousPolicy anonymous)
    {
        this.anonymous = anonymous;
        return this;
    }

    /**
     * @return this listener's password file, or null for the broker's.
     */
    public Path passwordFile()
    {
        return passwordFile;
    }

    public ListenerSettings passwordFile(final Path passwordFile)
    {
        this.passwordFile = passwordFile;
        return this;
    }

    /**
     * @return this listener's ACL file, or null for the broker's.
     */
    public Path aclFile()
    {
        return aclFile;
    }

    public ListenerSettings aclFile(final Path aclFile)
    {
        this.aclFile = aclFile;
        return this;
    }
}
