package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.pipeline.auth.CredentialWorkers;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.agrona.DirectBuffer;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.SocketChannel;

/**
 * What the reading role of an I/O agent judges on a connection's first packet, on the agent's thread, before the
 * pipeline sees it:
 * <ol>
 *   <li>that it is a CONNECT of at most {@code --max-connect-size}, judged from the fixed header alone
 *       [MQTT-3.1.0-1];</li>
 *   <li>its protocol version and, on 3.1.1, its keep-alive against {@code --max-keepalive}, refused here with a
 *       3.1.1-format CONNACK;</li>
 *   <li>its credentials where the edge decides them: a certificate's name as the user name, a listener's own
 *       anonymous policy, an address backing off, or a password hashed by the {@link CredentialWorkers} while the
 *       CONNECT waits in its buffer;</li>
 * </ol>
 * then hands it on with the verdict and notes what the connection takes from it (version, keep-alive, session
 * expiry, maximum packet size). The {@link PacketFramer} calls it, on the agent's thread; it owns the buffer a
 * CONNECT is rewritten into when a certificate names its user.
 */
final class InboundConnects
{
    private static final System.Logger LOG = System.getLogger("io.ringmq.transport");
    private static final byte[] CONNACK_UNACCEPTABLE_VERSION = {0x20, 0x02, 0x00, 0x01};
    private static final byte[] CONNACK_IDENTIFIER_REJECTED = {0x20, 0x02, 0x00, 0x02};
    /** 5.0 CONNACKs: no session present, the reason, no properties. */
    private static final byte[] CONNACK_QOS_NOT_SUPPORTED = {0x20, 0x03, 0x00, (byte)ReasonCode.QOS_NOT_SUPPORTED, 0x00};
    private static final byte[] CONNACK_CLIENT_ID_NOT_VALID =
        {0x20, 0x03, 0x00, (byte)ReasonCode.CLIENT_IDENTIFIER_NOT_VALID, 0x00};
    private static final byte[] CONNACK_VERSION_NOT_ACCEPTED =
        {0x20, 0x03, 0x00, (byte)ReasonCode.UNSUPPORTED_PROTOCOL_VERSION, 0x00};
    private static final byte[] CONNACK_RETAIN_NOT_SUPPORTED =
        {0x20, 0x03, 0x00, (byte)ReasonCode.RETAIN_NOT_SUPPORTED, 0x00};
    /** The longest certificate name taken as a user name (X.509 allows 64 characters in a CN). */
    private static final int MAX_IDENTITY_LENGTH = 1024;

    /** The limits in force; a reload replaces them on the owning agent's thread ({@link #limits}). */
    private BrokerContext context;
    private final BrokerCounters counters;
    private final IngressProxy ingress;
    private final ConnectionTimers timers;
    private final ConnectionWriter writer;
    private final ConnectionWriter.Closer closer;
    private final ConnectIdentity identities = new ConnectIdentity();
    /** Where CONNECT passwords are verified; null: the auth stage decides them itself (stage tests). */
    private final CredentialWorkers credentials;
    private final int agentIndex;

    /** Puts a will topic under its listener's mount point; this agent's. */
    private final MountPoints mountPoints;

    InboundConnects(final BrokerContext context, final BrokerCounters counters, final IngressProxy ingress,
        final ConnectionTimers timers, final ConnectionWriter writer, final ConnectionWriter.Closer closer,
        final CredentialWorkers credentials, final int agentIndex, final MountPoints mountPoints)
    {
        this.mountPoints = mountPoints;
        this.context = context;
        this.counters = counters;
        this.ingress = ingress;
        this.timers = timers;
        this.writer = writer;
        this.closer = closer;
        this.credentials = credentials;
        this.agentIndex = agentIndex;
    }

    /**
     * Takes reloaded limits (the owning agent's thread): the keep-alive cap for every CONNECT from now on.
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
    }

    /**
     * Before CONNECT the first packet must be a CONNECT of at most {@code --max-connect-size}, judged from the
     * fixed header alone, so an unauthenticated socket never makes the broker buffer much.
     *
     * @param packetType the first packet's type, from its fixed header.
     * @param length     what the decoder made of it: its length, or a negative {@code DecodeError}.
     * @return true when the connection was closed for it.
     */
    boolean refuseFirstPacket(final Connection connection, final int packetType, final int length)
    {
        final boolean notConnect = packetType != PacketType.CONNECT;
        if (!notConnect && length != DecodeError.PACKET_TOO_LARGE)
        {
            return false;
        }
        counters.increment(BrokerCounters.PRE_CONNECT_REFUSED);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + (notConnect ?
            "first packet is not CONNECT [MQTT-3.1.0-1]" : "CONNECT over --max-connect-size"));
        closer.close(connection, IngressEvent.CONNECTION_LOST);
        return true;
    }

    /**
     * The first packet, a CONNECT: handed to the pipeline, which answers it, unless the edge refuses it itself.
     * Once handed on, {@link Connection#connectSeen} is set.
     *
     * @param packet the CONNECT's bytes from offset 0, as decoded into {@code connect}.
     * @return false when it could not be handed on now.
     */
    boolean onConnect(final Connection connection, final ConnectFlyweight connect, final DirectBuffer packet,
        final int length)
    {
        final int version = connect.protocolLevel();
        final int keepAlive = connect.keepAlive();
        // the listener's settings as they are now, read once (a reload may give it others)
        final ListenerSettings listener = null == connection.listener ? null : connection.listener.settings;
        final Authenticator.AnonymousPolicy listenerAnonymous = null == listener ? null : listener.anonymous();
        connection.maxQos = null == listener ? context.limits().maxQos() :
            Math.min(context.limits().maxQos(), listener.maxQos());
        connection.mountPoint = null == listener ? null : listener.mountPointBytes();
        final byte[] bridgeSecret = null == connection.listener ? null : connection.listener.bridgeSecret;
        if (null != bridgeSecret && !Listener.isBridge(bridgeSecret, connect))
        {
            // on the bridges' own listener only a bridge connects: anything else is closed without an answer
            counters.increment(BrokerCounters.AUTH_FAILURES);
            LOG.log(System.Logger.Level.WARNING, () -> connection + " closed: a CONNECT on the bridges' listener " +
                "without their password");
            closer.close(connection, IngressEvent.CONNECTION_LOST);
            return true;
        }
        final int level = connect.isV31() ? MqttVersion.V3_1 : version; // 3.1 goes on as 3.1.1
        if (null != listener && !listener.accepts(level))
        {
            // Mosquitto 2.1's accept_protocol_versions: 0x01 (3.1, 3.1.1), 0x84 (5.0) [MQTT-3.1.2-2]
            refuseConnect(connection, version == MqttVersion.V5 ? CONNACK_VERSION_NOT_ACCEPTED :
                CONNACK_UNACCEPTABLE_VERSION, "protocol level " + level + " not accepted on this listener");
            return true;
        }
        if (connect.isV31() && connect.clientId().length() == 0)
        {
            // MQTT 3.1 has no assigned client identifiers: one of 1 to 23 characters (longer ones are taken, as
            // Mosquitto takes them), refused with return code 2 when empty, as Mosquitto refuses it
            counters.increment(BrokerCounters.CLIENT_ID_REFUSED);
            refuseConnect(connection, CONNACK_IDENTIFIER_REJECTED, "an MQTT 3.1 CONNECT without a client id");
            return true;
        }
        if (null != listener && listener.refusesEmptyClientId() && connect.clientId().length() == 0)
        {
            // per_listener_settings: this listener's allow_zero_length_clientid false [MQTT-3.1.3-8] (5.0: 0x85)
            counters.increment(BrokerCounters.CLIENT_ID_REFUSED);
            refuseConnect(connection, version == MqttVersion.V5 ? CONNACK_CLIENT_ID_NOT_VALID :
                CONNACK_IDENTIFIER_REJECTED, "empty client id refused on this listener");
            return true;
        }
        if (version != MqttVersion.V5 && context.limits().maxKeepAliveSeconds() < 65_535 &&
            (keepAlive == 0 || keepAlive > context.limits().maxKeepAliveSeconds()))
        {
            // 3.1.1 cannot announce a server keep-alive: refused as Mosquitto refuses it (identifier rejected)
            refuseConnect(connection, CONNACK_IDENTIFIER_REJECTED, "keep-alive " + keepAlive + " over --max-keepalive");
            return true;
        }
        if (connect.hasWill() && (connect.willQos() > connection.maxQos ||
            (connect.isWillRetain() && !context.limits().retainAvailable())))
        {
            refuseWill(connection, version, connect.willQos() > connection.maxQos);
            return true;
        }
        DirectBuffer handed = packet;
        int handedLength = length;
        if (connection.identityAsUsername)
        {
            // the certificate is the credential: its CN is the user name, no password is asked or checked
            final String identity = connection.layer.peerIdentity();
            if (null == identity || identity.length() > MAX_IDENTITY_LENGTH || CredentialRequest.asksMethod(connect))
            {
                // no name to be, or an enhanced authentication that would prove another user than the certificate
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD);
            }
            else
            {
                handedLength = identities.rewrite(packet, 0, length, connect, identity);
                handed = identities.buffer();
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_CONNECTION_ACCEPTED);
            }
        }
        else if (!connect.hasUserName() && null != listenerAnonymous && !CredentialRequest.asksMethod(connect))
        {
            // per_listener_settings: this listener's allow_anonymous, decided here as a verdict the auth stage takes
            final Authenticator.AnonymousPolicy anonymous = listenerAnonymous;
            final boolean allowed = anonymous == Authenticator.AnonymousPolicy.ALL ||
                (anonymous == Authenticator.AnonymousPolicy.LOOPBACK && connection.loopback);
            connection.credentialVerdict = Authenticator.verdictOf(allowed ? ReasonCode.V3_CONNECTION_ACCEPTED :
                ReasonCode.V3_NOT_AUTHORIZED);
        }
        else if (null != credentials && CredentialRequest.asksMethod(connect))
        {
            connection.exchange = true; // a refusal counts toward the address's back-off (ConnectionWriter)
            if (credentials.isBackingOff(remoteAddress(connection), connection.loopback))
            {
                connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_NOT_AUTHORIZED);
            }
        }
        else if (null != credentials && connection.credentialVerdict == CredentialRequest.NO_VERDICT &&
            CredentialRequest.needsWorker(connect))
        {
            askVerdict(connection, connect);
            if (connection.hashing)
            {
                return false;
            }
        }
        if (null != connection.mountPoint)
        {
            final int mounted = mountPoints.connect(connection.mountPoint, handed, handedLength,
                Math.min(context.maxConnectSize(), context.limits().maxPacketSize()));
            if (mounted == MountPoints.TOO_LONG)
            {
                // the logs take a CONNECT up to those sizes, and no larger
                counters.increment(BrokerCounters.PROTOCOL_ERRORS);
                LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: its CONNECT with the listener's " +
                    "mount_point in its will topic is over --max-connect-size or the maximum packet size");
                closer.close(connection, IngressEvent.CONNECTION_LOST);
                return true;
            }
            if (mounted > 0)
            {
                handed = mountPoints.packet(); // its will topic under the listener's mount point
                handedLength = mounted;
            }
        }
        if (!ingress.connect(connection.id, version, connection.loopback, handed, handedLength,
            connection.credentialVerdict, connection.maxQos, connection.mountPoint, null != bridgeSecret,
            limitedAddressKey(connection)))
        {
            return false;
        }
        connection.connectSeen = true;
        connection.version = version;
        connection.v31 = connect.isV31();
        // on 5.0 the CONNACK announces the same as Server Keep Alive when it differs [MQTT-3.2.2-21]
        connection.keepAliveSeconds = context.limits().keepAliveFor(keepAlive);
        connection.sessionExpiryInterval = connect.properties().longValue(PropertyId.SESSION_EXPIRY_INTERVAL, 0);
        connection.maxPacketSize = (int)Math.min(Integer.MAX_VALUE,
            connect.properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, Integer.MAX_VALUE));
        timers.onConnected(connection);
        return true;
    }

    /**
     * Hands a CONNECT's user name and a copy of its password to the credential workers; the CONNECT stays in the
     * inbound buffer and the connection unread until the verdict comes back ({@link ConnectionReader#onVerdict}). A
     * full queue is a refusal at once: the CONNECT goes on with a server-unavailable verdict.
     */
    private void askVerdict(final Connection connection, final ConnectFlyweight connect)
    {
        if (connection.hashing)
        {
            return;
        }
        final CredentialRequest request = new CredentialRequest(agentIndex, connection.id,
            connect.userName().asString(), connect.password().toByteArray(), remoteAddress(connection),
            connection.loopback);
        connection.hashing = true; // before submit: an inline verdict (invoker mode) arrives through the queue
        connection.updateInterest();
        if (!credentials.submit(request))
        {
            request.wipe();
            connection.hashing = false;
            connection.updateInterest();
            connection.credentialVerdict = Authenticator.verdictOf(ReasonCode.V3_SERVER_UNAVAILABLE);
        }
    }

    /**
     * @return what the client's address counts as for the shares one address may hold of what clients no one has
     * admitted yet hold (the CONNECTs kept for enhanced authentications, {@link IngressEvent#addressKey}; partial
     * packets, {@link InboundBuffers}): exempt ({@link AddressKeys#NONE}) where {@code --max-connections-per-address}
     * exempts it, loopback without {@code --limit-loopback}, and behind a PROXY listener until its header was read.
     */
    static long limitedAddressKey(final Connection connection)
    {
        // the address it counts under for --max-connections-per-address: the PROXY header's once read, else the
        // socket's; null when that limit exempts it
        return limitedAddressKey(connection.limitedAddress);
    }

    /**
     * @return the key of a limited address, {@link AddressKeys#NONE} for null (exempt, or not known yet).
     */
    static long limitedAddressKey(final InetAddress limitedAddress)
    {
        return null == limitedAddress ? AddressKeys.NONE : AddressKeys.of(limitedAddress);
    }

    /**
     * @return the client's address for the back-off: the PROXY protocol's when a proxy named it, else the socket's.
     */
    static InetAddress remoteAddress(final Connection connection)
    {
        final InetSocketAddress proxied = connection.layer.proxiedAddress();
        if (null != proxied)
        {
            return proxied.getAddress();
        }
        try
        {
            final SocketAddress remote = ((SocketChannel)connection.key.channel()).getRemoteAddress();
            return remote instanceof InetSocketAddress ? ((InetSocketAddress)remote).getAddress() : null;
        }
        catch (final IOException ex)
        {
            return null;
        }
    }

    /**
     * A CONNECT of a protocol version the broker does not speak [MQTT-3.1.2-2]: answered in the 3.1.1 format, which
     * 3.1 clients also read, then closed.
     */
    void refuseVersion(final Connection connection, final String why)
    {
        refuseConnect(connection, CONNACK_UNACCEPTABLE_VERSION, why);
    }

    /**
     * A will the broker cannot keep: above {@code --max-qos} [MQTT-3.2.2-12], or retained under
     * {@code --retain-available false} [MQTT-3.2.2-13]. A 5.0 client is refused with 0x9B or 0x9A; 3.1.1 has no such
     * return code, so its connection is closed unanswered, as Mosquitto closes it.
     */
    private void refuseWill(final Connection connection, final int version, final boolean qos)
    {
        final String why = qos ? "will QoS over --max-qos" : "retained will with --retain-available false";
        if (version == MqttVersion.V5)
        {
            refuseConnect(connection, qos ? CONNACK_QOS_NOT_SUPPORTED : CONNACK_RETAIN_NOT_SUPPORTED, why);
            return;
        }
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " closed: " + why);
        closer.close(connection, IngressEvent.CONNECTION_LOST);
    }

    /**
     * Answers a CONNECT with a refusing CONNACK and closes once it is written; the pipeline never sees the
     * connection.
     */
    private void refuseConnect(final Connection connection, final byte[] connack, final String why)
    {
        writer.sendConstant(connection, connack);
        connection.connack = Connection.CONNACK_REFUSED;
        connection.updateInterest();
        writer.closeAfterFlush(connection);
        counters.increment(BrokerCounters.PROTOCOL_ERRORS);
        LOG.log(System.Logger.Level.DEBUG, () -> connection + " refused: " + why);
    }
}
