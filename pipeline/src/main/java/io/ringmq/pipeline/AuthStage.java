package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AuthExchange;
import io.ringmq.pipeline.auth.AuthMethods;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.ScramSha256;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.AuthFlyweight;
import io.ringmq.protocol.Slice;
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
 * The auth stage: decides every CONNECT (protocol level, client identifier rules, credentials) off the I/O
 * threads, since password hashing is deliberately CPU-heavy. Its verdict is {@link IngressEvent#authCode}; only
 * an explicit {@link IngressEvent#AUTH_ACCEPTED} admits a client, so an error here refuses it.
 */
public final class AuthStage implements Stage
{
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final Authenticator authenticator;
    private final BrokerCounters counters;
    private final int maxClientIdLength;
    private final ConnectionControl control;
    private final AtomicReference<PasswordFile> reloaded = new AtomicReference<>();
    /** Connections admitted with a password-file user: the entry they were admitted under. */
    private final Long2ObjectHashMap<Admitted> admitted = new Long2ObjectHashMap<>();
    /** Enhanced authentications under way: the exchange and the CONNECT it will admit, by connection. */
    private final Long2ObjectHashMap<Pending> pending = new Long2ObjectHashMap<>();
    private final AuthFlyweight auth = new AuthFlyweight();
    private final AuthMethods methods;

    /**
     * @param control where a connection whose credentials no longer hold after a reload is revoked.
     */
    public AuthStage(final Authenticator authenticator, final BrokerCounters counters, final int maxClientIdLength,
        final ConnectionControl control)
    {
        this.authenticator = authenticator;
        this.counters = counters;
        this.maxClientIdLength = maxClientIdLength;
        this.control = control;
        this.methods = new AuthMethods(new ScramSha256(ScramSha256.fromPasswordFile(authenticator::passwordFile)));
    }

    public boolean onEvent(final IngressEvent event)
    {
        if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.CONNECT)
        {
            decide(event);
        }
        else if (event.kind == IngressEvent.PACKET && event.packetType == PacketType.AUTH)
        {
            continueExchange(event);
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
        if (!pending.isEmpty())
        {
            pending.remove(connectionId);
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
     * Takes a reloaded password file: new CONNECTs are checked against it, and a connected client whose user was
     * removed or whose entry changed is revoked (it reconnects with what now holds).
     */
    public int doDutyCycle()
    {
        final PasswordFile file = reloaded.getAndSet(null);
        if (null == file)
        {
            return 0;
        }
        authenticator.passwordFile(file);
        int revoked = 0;
        final Long2ObjectHashMap<Admitted>.EntryIterator entries = admitted.entrySet().iterator();
        while (entries.hasNext())
        {
            entries.next();
            final Admitted client = entries.getValue();
            final PasswordHash now = file.hashOf(client.user);
            if (null == now || !now.encode().equals(client.hash))
            {
                control.revoke(client.agentIndex, entries.getLongKey());
                entries.remove();
                revoked++;
            }
        }
        counters.add(BrokerCounters.CONNECTIONS_REVOKED, revoked);
        return 1 + revoked;
    }

    public boolean hasPendingWork()
    {
        return null != reloaded.get();
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
        if (v5 && connect.properties().has(PropertyId.AUTHENTICATION_METHOD))
        {
            startExchange(event);
            return;
        }
        final String userName = connect.hasUserName() ? connect.userName().asString() : null;
        final byte[] password = connect.hasPassword() ? connect.password().toByteArray() : null;
        final int code = authenticator.authenticate(event.loopback, userName, password);
        if (code != ReasonCode.V3_CONNECTION_ACCEPTED)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
        }
        if (code == ReasonCode.V3_CONNECTION_ACCEPTED && authenticator.acceptedByFile())
        {
            final PasswordHash hash = authenticator.passwordFile().hashOf(userName);
            if (null != hash)
            {
                admitted.put(event.connectionId, new Admitted(event.agentIndex, userName, hash.encode()));
            }
        }
        event.authCode = code == ReasonCode.V3_CONNECTION_ACCEPTED ? IngressEvent.AUTH_ACCEPTED : refusal(v5, code);
    }

    /**
     * A 5.0 CONNECT names an Authentication Method: an exchange of that method begins (an unknown method is refused
     * with 0x8C [MQTT-4.12.0-1]); the CONNECT is kept until the exchange ends.
     */
    private void startExchange(final IngressEvent event)
    {
        final AuthExchange exchange = methods.newExchange(
            connect.properties().slice(PropertyId.AUTHENTICATION_METHOD).asString());
        if (null == exchange)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
            event.authCode = ReasonCode.BAD_AUTHENTICATION_METHOD;
            return;
        }
        final Slice data = connect.properties().has(PropertyId.AUTHENTICATION_DATA) ?
            connect.properties().slice(PropertyId.AUTHENTICATION_DATA) : null;
        final int code = null == data ? exchange.step(null, 0, 0) :
            exchange.step(data.buffer(), data.offset(), data.length());
        final byte[] connectBytes = new byte[event.packetLength];
        event.packet.getBytes(0, connectBytes);
        final Pending started = new Pending(exchange, connectBytes);
        if (code == AuthExchange.CONTINUE)
        {
            pending.put(event.connectionId, started);
        }
        verdict(event, started, code);
    }

    /**
     * A client AUTH during an enhanced authentication: the next step. When the exchange ends, the event becomes
     * the kept CONNECT with the verdict, so routing and delivery admit or refuse it as any CONNECT.
     */
    private void continueExchange(final IngressEvent event)
    {
        final Pending current = pending.get(event.connectionId);
        if (null == current || auth.wrap(event.packet, 0, event.packetLength, event.version) < 0 ||
            auth.reasonCode() != ReasonCode.CONTINUE_AUTHENTICATION)
        {
            // no exchange under way (re-authentication is not offered) or a wrong reason code: the connection ends
            pending.remove(event.connectionId);
            event.authCode = ReasonCode.PROTOCOL_ERROR;
            return;
        }
        final Slice data = auth.properties().has(PropertyId.AUTHENTICATION_DATA) ?
            auth.properties().slice(PropertyId.AUTHENTICATION_DATA) : null;
        final int code = null == data ? current.exchange.step(null, 0, 0) :
            current.exchange.step(data.buffer(), data.offset(), data.length());
        if (code != AuthExchange.CONTINUE)
        {
            pending.remove(event.connectionId);
            // the AUTH is now its CONNECT: the kept bytes outlive the slot's use, the slot only views them
            event.packet.wrap(current.connect);
            event.packetLength = current.connect.length;
            event.packetType = PacketType.CONNECT;
        }
        verdict(event, current, code);
    }

    private void verdict(final IngressEvent event, final Pending exchange, final int code)
    {
        final byte[] serverData = exchange.exchange.serverData();
        if (null != serverData && serverData.length <= IngressEvent.AUTH_DATA_CAPACITY)
        {
            event.authData.putBytes(0, serverData);
            event.authDataLength = serverData.length;
        }
        if (code == AuthExchange.CONTINUE)
        {
            event.authCode = IngressEvent.AUTH_CONTINUE;
            return;
        }
        if (code != AuthExchange.SUCCESS)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
            event.authCode = code;
            return;
        }
        final String userName = exchange.exchange.userName();
        final PasswordHash hash = null == authenticator.passwordFile() ? null :
            authenticator.passwordFile().hashOf(userName);
        if (null != hash)
        {
            admitted.put(event.connectionId, new Admitted(event.agentIndex, userName, hash.encode()));
        }
        event.authCode = IngressEvent.AUTH_ACCEPTED;
    }

    /**
     * An enhanced authentication under way.
     */
    private record Pending(AuthExchange exchange, byte[] connect)
    {
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
     * A connection admitted under a password-file entry.
     */
    private record Admitted(int agentIndex, String user, String hash)
    {
    }

    public String name()
    {
        return "auth";
    }
}
