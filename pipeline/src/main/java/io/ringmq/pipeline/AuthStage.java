package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AuthMethods;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.CredentialRequest;
import io.ringmq.pipeline.auth.ScramSha256;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import org.agrona.collections.Long2ObjectHashMap;

import java.util.concurrent.atomic.AtomicReference;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;

/**
 * The auth stage: decides every CONNECT (protocol level, client identifier rules, credentials). Password hashing
 * is deliberately CPU-heavy, so it runs on the credential workers before the CONNECT reaches the ring, and this
 * stage reads their verdict from the slot. Its verdict is {@link IngressEvent#authCode}; only
 * an explicit {@link IngressEvent#AUTH_ACCEPTED} admits a client, so an error here refuses it. It also judges every
 * PUBLISH and SUBSCRIBE against the ACL ({@link AccessControl}): its verdict is {@link IngressEvent#aclVerdict},
 * and only an explicit grant lets a message or a subscription through.
 */
public final class AuthStage implements Stage
{
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final Authenticator authenticator;
    private final BrokerCounters counters;
    private int maxClientIdLength;
    /** --allow-zero-length-clientid and --clientid-prefixes, as the last reload left them. */
    private boolean allowZeroLengthClientId = true;
    /** The prefix in UTF-8; empty: any id. */
    private byte[] clientIdPrefix = new byte[0];
    /** Whether the ids assigned to CONNECTs without one start with {@link #clientIdPrefix}. */
    private boolean assignedIdsHavePrefix;
    private BrokerContext limits;
    private LiveLimits live;
    private final ConnectionControl control;
    private final AtomicReference<PasswordFile> reloaded = new AtomicReference<>();
    /** Connections admitted with a password-file user: the entry they were admitted under. */
    private final Long2ObjectHashMap<Admitted> admitted = new Long2ObjectHashMap<>();
    private final EnhancedAuthentication enhanced;
    private java.util.Set<String> bridgeClientIds = java.util.Set.of();
    private final AccessControl access;
    /** Whether the CONNECT being decided was accepted by a password-file entry. */
    private boolean acceptedByFile;

    /**
     * @param control where a connection whose credentials no longer hold after a reload is revoked.
     */
    public AuthStage(final Authenticator authenticator, final BrokerCounters counters, final int maxClientIdLength,
        final ConnectionControl control)
    {
        this(authenticator, counters, maxClientIdLength, control, AccessControl.open(counters));
    }

    /**
     * @param access the ACL checks (this stage's thread only).
     */
    AuthStage(final Authenticator authenticator, final BrokerCounters counters, final int maxClientIdLength,
        final ConnectionControl control, final AccessControl access)
    {
        this.access = access;
        this.authenticator = authenticator;
        this.counters = counters;
        this.maxClientIdLength = maxClientIdLength;
        this.control = control;
        this.enhanced = new EnhancedAuthentication(
            new AuthMethods(new ScramSha256(ScramSha256.fromPasswordFile(authenticator::passwordFile))), counters,
            this::admittedByExchange);
    }

    /**
     * The client id rules of {@code context}: its longest id, whether an empty one is let in, the prefix every id
     * must start with; and what the CONNECTs kept for enhanced authentication may hold.
     */
    public void clientIds(final BrokerContext context)
    {
        maxClientIdLength = context.limits().maxClientIdLength();
        allowZeroLengthClientId = context.limits().allowZeroLengthClientId();
        clientIdPrefix = context.limits().clientIdPrefix().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        assignedIdsHavePrefix = context.limits().autoIdPrefix().startsWith(context.limits().clientIdPrefix());
        access.autoIdPrefix(context.limits().autoIdPrefix(), maxClientIdLength);
        enhanced.keptLimit(context.memory().sessionMemoryBytes() / 4);
    }

    /**
     * The client ids of the broker's bridges' own sessions ({@link BridgeSettings#localClientId}): no other
     * connection may take one over, and with it what the bridge was to carry.
     */
    public void bridgeClientIds(final BrokerContext context)
    {
        final java.util.Set<String> ids = new java.util.HashSet<>();
        for (final BridgeSettings bridge : context.bridges())
        {
            ids.add(bridge.localClientId());
        }
        bridgeClientIds = ids;
    }

    public boolean onEvent(final IngressEvent event)
    {
        if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.CONNECT)
        {
            decide(event);
        }
        else if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.PUBLISH)
        {
            access.onPublish(event);
        }
        else if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.SUBSCRIBE)
        {
            access.onSubscribe(event);
        }
        else if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.AUTH)
        {
            enhanced.onAuth(event);
            if (event.authCode == IngressEvent.AUTH_ACCEPTED && event.packetType == PacketType.CONNECT)
            {
                admitByExchange(event);
            }
        }
        else if (event.kind != IngressEvent.PACKET)
        {
            forget(event.connectionId);
        }
        return true;
    }

    public void onFailed(final IngressEvent event)
    {
        if (event.kind != IngressEvent.PACKET)
        {
            forget(event.connectionId);
        }
    }

    private void forget(final long connectionId)
    {
        if (!admitted.isEmpty())
        {
            admitted.remove(connectionId);
        }
        enhanced.forget(connectionId);
        access.forget(connectionId);
    }

    /**
     * The exchange that ended a CONNECT's enhanced authentication admitted it: its rules are for the user the
     * exchange proved.
     */
    private void admitByExchange(final IngressEvent event)
    {
        final String user = enhanced.userOf(event.connectionId);
        if (connect.wrap(event.packet, 0, event.packetLength) < 0 || access.refusesExchange(connect, user) ||
            claimsBridge(user))
        {
            // fail closed: a corrupt slot, a User Name the exchange did not prove, or no user to be the client id
            event.authCode = ReasonCode.NOT_AUTHORIZED;
            counters.increment(BrokerCounters.AUTH_FAILURES);
            return;
        }
        access.admit(event, connect, user);
    }

    /**
     * Hands a reloaded ACL file to this stage (any thread); it takes it at its next duty cycle.
     */
    public void reload(final io.ringmq.pipeline.auth.AclFile aclFile)
    {
        access.reload(aclFile);
    }

    /**
     * A connection admitted by enhanced authentication: kept for the reload's revocation when its user is in the
     * password file.
     */
    private void admittedByExchange(final IngressEvent event, final String userName)
    {
        final PasswordHash hash = null == authenticator.passwordFile() ? null :
            authenticator.passwordFile().hashOf(userName);
        if (null != hash)
        {
            admitted.put(event.connectionId, new Admitted(event.agentIndex, userName, hash));
        }
    }

    /**
     * Hands a new password file to this stage (any thread); it takes it on its own thread at its next duty cycle.
     */
    public void reload(final PasswordFile passwordFile)
    {
        reloaded.set(passwordFile);
    }

    /**
     * Follows the limits a reload changes (before the stage runs): the client id length and who may connect
     * anonymously, taken at the next duty cycle for the CONNECTs decided from then on.
     */
    public void follow(final LiveLimits live)
    {
        this.live = live;
        this.limits = live.follow();
    }

    /**
     * Takes reloaded limits, then a reloaded password file: new CONNECTs are checked against it, and a connected
     * client whose user was removed or whose entry changed is revoked (it reconnects with what now holds).
     */
    public int doDutyCycle()
    {
        if (null != live)
        {
            final BrokerContext next = live.changed(limits);
            if (null != next)
            {
                limits = next;
                clientIds(next);
                // connected anonymous clients stay, as Mosquitto's reload keeps them; new CONNECTs see the new policy
                authenticator.anonymous(next.auth().anonymous());
                live.took(next);
            }
        }
        final int acl = access.doDutyCycle();
        // a plain read each cycle; the atomic swap (a locked instruction) only when a reload left a file
        final PasswordFile file = null == reloaded.get() ? null : reloaded.getAndSet(null);
        if (null == file)
        {
            return acl;
        }
        authenticator.passwordFile(file);
        int revoked = 0;
        final Long2ObjectHashMap<Admitted>.EntryIterator entries = admitted.entrySet().iterator();
        while (entries.hasNext())
        {
            entries.next();
            final Admitted client = entries.getValue();
            final PasswordHash now = file.hashOf(client.user);
            if (null == now || !now.sameAs(client.hash))
            {
                counters.increment(BrokerCounters.CONNECTIONS_REVOKED); // before its client can see it
                control.revoke(client.agentIndex, entries.getLongKey());
                entries.remove();
                revoked++;
            }
            else
            {
                client.hash = now; // the old file's entry is not kept alive by its connections
            }
        }
        return acl + 1 + revoked;
    }

    public boolean hasPendingWork()
    {
        return null != reloaded.get() || access.hasPendingWork() || (null != live && live.current() != limits);
    }

    private void decide(final IngressEvent event)
    {
        // fail closed: the slot arrives AUTH_UNDECIDED, and anything that returns or throws before the last line
        // leaves a refusal
        if (connect.wrap(event.packet, 0, event.packetLength) < 0)
        {
            event.authCode = ReasonCode.V3_SERVER_UNAVAILABLE; // the I/O agent validated it: a corrupt slot
            return;
        }
        final boolean v5 = connect.protocolLevel() == MqttVersion.V5;
        if (connect.clientId().length() == 0 && !connect.isCleanStart() && !v5)
        {
            event.authCode = ReasonCode.V3_IDENTIFIER_REJECTED; // [MQTT-3.1.3-8]; 5.0 assigns one [MQTT-3.1.3-6]
            return;
        }
        if (connect.clientId().length() > maxClientIdLength)
        {
            event.authCode = refusal(v5, ReasonCode.V3_IDENTIFIER_REJECTED); // [MQTT-3.1.3-9] a limit, counted
            counters.increment(BrokerCounters.CLIENT_ID_TOO_LONG);
            return;
        }
        if (connect.clientId().length() == 0 && !allowZeroLengthClientId)
        {
            event.authCode = refusal(v5, ReasonCode.V3_IDENTIFIER_REJECTED); // [MQTT-3.1.3-9]: the server's choice
            counters.increment(BrokerCounters.CLIENT_ID_REFUSED);
            return;
        }
        if (event.bridge)
        {
            // one of the broker's own bridges (only its loopback listener sets this): no password, no client id
            // rule and every topic, as Mosquitto's bridges, under a name no client can be admitted as
            access.admit(event, connect, AccessRules.BRIDGE_USER);
            event.authCode = IngressEvent.AUTH_ACCEPTED;
            return;
        }
        if (clientIdPrefix.length > 0 && !(connect.clientId().length() == 0 ? assignedIdsHavePrefix :
            startsWith(connect.clientId(), clientIdPrefix)))
        {
            // an empty id is judged by the id it is to be assigned, as in Mosquitto
            event.authCode = refusal(v5, ReasonCode.V3_NOT_AUTHORIZED); // as Mosquitto's clientid_prefixes
            counters.increment(BrokerCounters.CLIENT_ID_REFUSED);
            return;
        }
        if (access.refuses(connect))
        {
            event.authCode = refusal(v5, ReasonCode.V3_NOT_AUTHORIZED); // --use-username-as-clientid, no user name
            counters.increment(BrokerCounters.AUTH_FAILURES);
            return;
        }
        if (v5 && EnhancedAuthentication.asks(connect))
        {
            if (event.credentialVerdict != CredentialRequest.NO_VERDICT &&
                Authenticator.verdictCode(event.credentialVerdict) != ReasonCode.V3_CONNECTION_ACCEPTED)
            {
                event.authCode = refusal(true, Authenticator.verdictCode(event.credentialVerdict)); // backing off
                counters.increment(BrokerCounters.AUTH_FAILURES);
                return;
            }
            enhanced.start(event, connect);
            if (event.authCode == IngressEvent.AUTH_ACCEPTED)
            {
                admitByExchange(event); // a method done in one step
            }
            return;
        }
        final String userName = connect.hasUserName() ? connect.userName().asString() : null;
        // the bridges' user name, or a bridge's session: a client that claims one is refused
        final int code = claimsBridge(userName) ? ReasonCode.V3_NOT_AUTHORIZED : credentials(event, userName);
        if (code != ReasonCode.V3_CONNECTION_ACCEPTED)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
        }
        if (code == ReasonCode.V3_CONNECTION_ACCEPTED && acceptedByFile)
        {
            final PasswordHash hash = authenticator.passwordFile().hashOf(userName);
            if (null != hash)
            {
                admitted.put(event.connectionId, new Admitted(event.agentIndex, userName, hash));
            }
        }
        if (code == ReasonCode.V3_CONNECTION_ACCEPTED)
        {
            access.admit(event, connect, userName);
        }
        event.authCode = code == ReasonCode.V3_CONNECTION_ACCEPTED ? IngressEvent.AUTH_ACCEPTED : refusal(v5, code);
    }

    /**
     * @param userName the user a CONNECT (not a bridge's) would be admitted as.
     * @return whether it would be a bridge: the bridges' user name, or (as its own client id, or as the user name
     * {@code --use-username-as-clientid} makes the client id) a bridge's session.
     */
    private boolean claimsBridge(final String userName)
    {
        if (AccessRules.BRIDGE_USER.equals(userName))
        {
            return true;
        }
        if (bridgeClientIds.isEmpty())
        {
            return false;
        }
        return bridgeClientIds.contains(ClientIds.of(connect, userName, access.usesUserNameAsClientId()));
    }

    /**
     * The credentials of a CONNECT: a user name and password were verified by a credential worker before the I/O
     * agent published the slot (never hashed here, on a stage thread); the verdict admits only when it was reached
     * under the password file this stage holds now. Anonymous clients and missing passwords are decided here
     * (cheap), and so is everything when no worker verifies (stage tests).
     *
     * @return the 3.1.1 return code; {@link #acceptedByFile} says whether a password-file entry accepted it.
     */
    private int credentials(final IngressEvent event, final String userName)
    {
        final long verdict = event.credentialVerdict;
        acceptedByFile = false;
        if (verdict != CredentialRequest.NO_VERDICT)
        {
            final int code = Authenticator.verdictCode(verdict);
            final long generation = Authenticator.verdictGeneration(verdict);
            if (code == ReasonCode.V3_CONNECTION_ACCEPTED && generation != 0 && generation != authenticator.generation())
            {
                counters.increment(BrokerCounters.AUTH_STALE_VERDICTS); // reloaded while it hashed: ask again
                return ReasonCode.V3_SERVER_UNAVAILABLE;
            }
            acceptedByFile = code == ReasonCode.V3_CONNECTION_ACCEPTED && generation != 0;
            return code;
        }
        if (connect.hasUserName() && connect.hasPassword() && authenticator.offloaded())
        {
            return ReasonCode.V3_SERVER_UNAVAILABLE; // fail closed: a password with no worker's verdict
        }
        final int code = authenticator.authenticate(event.loopback, userName,
            connect.hasPassword() ? connect.password().toByteArray() : null);
        acceptedByFile = authenticator.acceptedByFile();
        return code;
    }

    /**
     * @return whether the client id starts with the prefix, byte for byte in UTF-8.
     */
    private static boolean startsWith(final io.ringmq.protocol.Slice clientId, final byte[] bytes)
    {
        if (clientId.length() < bytes.length)
        {
            return false;
        }
        for (int i = 0; i < bytes.length; i++)
        {
            if (clientId.buffer().getByte(clientId.offset() + i) != bytes[i])
            {
                return false;
            }
        }
        return true;
    }

    /**
     * @return a refusing CONNACK code in the client's protocol: the 3.1.1 return code, or its 5.0 reason code.
     */
    static int refusal(final boolean v5, final int v3Code)
    {
        if (!v5)
        {
            return v3Code;
        }
        switch (v3Code)
        {
            case ReasonCode.V3_IDENTIFIER_REJECTED: return ReasonCode.CLIENT_IDENTIFIER_NOT_VALID;
            case ReasonCode.V3_BAD_USER_NAME_OR_PASSWORD: return ReasonCode.BAD_USER_NAME_OR_PASSWORD;
            case ReasonCode.V3_NOT_AUTHORIZED: return ReasonCode.NOT_AUTHORIZED;
            case ReasonCode.V3_UNACCEPTABLE_PROTOCOL_VERSION: return ReasonCode.UNSUPPORTED_PROTOCOL_VERSION;
            default: return ReasonCode.SERVER_UNAVAILABLE;
        }
    }

    /**
     * A connection admitted under a password-file entry: the file's entry itself, shared by the user's connections
     * (not an encoding of it per connection).
     */
    private static final class Admitted
    {
        final int agentIndex;
        final String user;
        PasswordHash hash;

        Admitted(final int agentIndex, final String user, final PasswordHash hash)
        {
            this.agentIndex = agentIndex;
            this.user = user;
            this.hash = hash;
        }
    }

    public String name()
    {
        return "auth";
    }
}
