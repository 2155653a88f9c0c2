package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AddressKeys;
import io.ringmq.pipeline.auth.AuthExchange;
import io.ringmq.pipeline.auth.AuthMethods;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AuthFlyweight;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;

/**
 * The auth stage's MQTT 5.0 enhanced authentication (section 4.12): a CONNECT naming an Authentication Method
 * starts an exchange of that method, each client AUTH 0x18 steps it, and its end admits or refuses the CONNECT;
 * a connected client may re-authenticate (AUTH 0x19) with the same method and the same user [MQTT-4.12.1-1].
 * <p>
 * Its verdicts are the slot's: {@link IngressEvent#AUTH_CONTINUE} (the shard sends AUTH 0x18 with
 * {@link IngressEvent#authData()}), {@link IngressEvent#AUTH_ACCEPTED} or a refusing reason code. The AUTH that ends
 * the exchange of a CONNECT becomes that CONNECT (the slot then views the CONNECT kept here), so routing and delivery
 * see one CONNECT with one verdict; an AUTH of a re-authentication stays an AUTH (the shard answers AUTH 0x00, or
 * DISCONNECT with the refusal [MQTT-4.12.1-2]). Owned by the auth stage's thread.
 */
final class EnhancedAuthentication
{
    /** A connection admitted by an exchange: its user, for the reload's revocation. */
    interface Admission
    {
        void admitted(IngressEvent event, String userName);
    }

    private final AuthMethods methods;
    private final BrokerCounters counters;
    private final Admission admission;
    private final AuthFlyweight auth = new AuthFlyweight();
    /** Exchanges under way, by connection. */
    private final Long2ObjectHashMap<Pending> pending = new Long2ObjectHashMap<>();
    /** The bytes of the CONNECTs kept for the exchanges under way, each with {@link #KEPT_ALLOWANCE}. */
    private long keptBytes;
    /** The most {@link #keptBytes} may reach: a quarter of {@code --max-session-memory} ({@link #keptLimit}). */
    private long keptLimit = Long.MAX_VALUE;
    /** Of {@link #keptBytes}, what the exchanges of each limited address hold ({@link IngressEvent#addressKey}). */
    private final Long2LongHashMap keptByAddress = new Long2LongHashMap(0);
    /** Connections admitted by an exchange: method and user, for a re-authentication. */
    private final Long2ObjectHashMap<Admitted> admitted = new Long2ObjectHashMap<>();

    /** What an exchange under way holds besides its CONNECT's bytes: its entry, its exchange's state. */
    static final int KEPT_ALLOWANCE = 256;

    EnhancedAuthentication(final AuthMethods methods, final BrokerCounters counters, final Admission admission)
    {
        this.methods = methods;
        this.counters = counters;
        this.admission = admission;
    }

    /**
     * The most the CONNECTs kept for exchanges under way may hold together: clients no one has authenticated yet,
     * each able to send a CONNECT of {@code --max-connect-size} and keep it here for the connect timeout, would
     * otherwise fill the heap. Past it a CONNECT asking for enhanced authentication is refused with 0x97 (counted
     * as refused by {@code --max-session-memory}, a quarter of which it is). The exchanges of one limited address
     * hold at most a sixteenth of it ({@link AddressKeys#SHARES}), so the sockets of one host that never answer cannot
     * hold it all and lock every other client out of enhanced authentication until the connect timeout.
     */
    void keptLimit(final long bytes)
    {
        keptLimit = bytes;
    }

    /**
     * @return whether a CONNECT asks for enhanced authentication.
     */
    static boolean asks(final ConnectFlyweight connect)
    {
        return connect.properties().has(PropertyId.AUTHENTICATION_METHOD);
    }

    /**
     * A CONNECT names an Authentication Method: an exchange of it begins (an unknown method is refused with 0x8C
     * [MQTT-4.12.0-1]); the CONNECT is kept until the exchange ends.
     */
    void start(final IngressEvent event, final ConnectFlyweight connect)
    {
        final String method = connect.properties().slice(PropertyId.AUTHENTICATION_METHOD).asString();
        final AuthExchange exchange = methods.newExchange(method);
        if (null == exchange)
        {
            counters.increment(BrokerCounters.AUTH_FAILURES);
            event.authCode = ReasonCode.BAD_AUTHENTICATION_METHOD;
            return;
        }
        final long bytes = event.packetLength + KEPT_ALLOWANCE;
        if (keptBytes + bytes > keptLimit || (event.addressKey != AddressKeys.NONE &&
            keptByAddress.get(event.addressKey) + bytes > keptLimit / AddressKeys.SHARES))
        {
            counters.increment(BrokerCounters.SESSION_MEMORY_REFUSED);
            event.authCode = ReasonCode.QUOTA_EXCEEDED;
            return;
        }
        final byte[] connectBytes = new byte[event.packetLength];
        event.packet.getBytes(0, connectBytes);
        step(event, new Pending(exchange, method, connectBytes, event.maxQos, event.mountPoint, null,
            event.addressKey), connect.properties());
    }

    /**
     * A client AUTH: the next step of the exchange under way, or a re-authentication; anything else is a protocol
     * error (0x82).
     */
    void onAuth(final IngressEvent event)
    {
        if (auth.wrap(event.packet, 0, event.packetLength, event.version) < 0)
        {
            refuse(event, ReasonCode.PROTOCOL_ERROR);
            return;
        }
        final MqttProperties properties = auth.properties();
        final String method = properties.has(PropertyId.AUTHENTICATION_METHOD) ?
            properties.slice(PropertyId.AUTHENTICATION_METHOD).asString() : null;
        final Pending current = pending.get(event.connectionId);
        if (null != current && auth.reasonCode() == ReasonCode.CONTINUE_AUTHENTICATION &&
            current.method.equals(method))
        {
            step(event, current, properties);
            return;
        }
        final Admitted connected = admitted.get(event.connectionId);
        if (null == current && null != connected && auth.reasonCode() == ReasonCode.RE_AUTHENTICATE &&
            connected.method.equals(method))
        {
            // the same method as the CONNECT's [MQTT-4.12.1-1]; the same user, checked at its end
            step(event, new Pending(methods.newExchange(method), method, null, 2, null, connected.user,
                AddressKeys.NONE), properties);
            return;
        }
        if (null != current && null != current.connect)
        {
            asConnect(event, current); // the CONNECT is refused with a CONNACK: nothing comes before it [MQTT-3.2.0-1]
        }
        refuse(event, ReasonCode.PROTOCOL_ERROR);
    }

    /**
     * The AUTH that ends its CONNECT's exchange is that CONNECT from now on: the slot views the kept bytes.
     */
    private static void asConnect(final IngressEvent event, final Pending exchange)
    {
        event.packet.wrap(exchange.connect);
        event.packetLength = exchange.connect.length;
        event.packetType = PacketType.CONNECT;
        event.maxQos = exchange.maxQos; // its listener's, as the I/O agent handed the CONNECT
        event.mountPoint = exchange.mountPoint;
        event.addressKey = exchange.addressKey; // the share its sessions hold of the message memory is its address's
    }

    private void step(final IngressEvent event, final Pending exchange, final MqttProperties properties)
    {
        final Slice data = properties.has(PropertyId.AUTHENTICATION_DATA) ?
            properties.slice(PropertyId.AUTHENTICATION_DATA) : null;
        int code = null == data ? exchange.exchange.step(null, 0, 0) :
            exchange.exchange.step(data.buffer(), data.offset(), data.length());
        if (code == AuthExchange.CONTINUE)
        {
            keep(event.connectionId, exchange);
        }
        else
        {
            let(event.connectionId);
            if (null != exchange.connect)
            {
                asConnect(event, exchange);
            }
            else if (code == AuthExchange.SUCCESS && !exchange.reauthenticating.equals(exchange.exchange.userName()))
            {
                code = ReasonCode.NOT_AUTHORIZED; // a re-authentication may not change who the client is
            }
        }
        final byte[] serverData = exchange.exchange.serverData();
        if (null != serverData && serverData.length <= IngressEvent.AUTH_DATA_CAPACITY)
        {
            event.authData().putBytes(0, serverData);
            event.authDataLength = serverData.length;
        }
        if (code == AuthExchange.CONTINUE)
        {
            event.authCode = IngressEvent.AUTH_CONTINUE;
        }
        else if (code == AuthExchange.SUCCESS)
        {
            admitted.put(event.connectionId, new Admitted(exchange.method, exchange.exchange.userName()));
            admission.admitted(event, exchange.exchange.userName());
            event.authCode = IngressEvent.AUTH_ACCEPTED;
        }
        else
        {
            refuse(event, code);
        }
    }

    private void refuse(final IngressEvent event, final int code)
    {
        counters.increment(BrokerCounters.AUTH_FAILURES);
        let(event.connectionId);
        event.authCode = code;
    }

    /**
     * An exchange goes on: kept under its connection (a step of it replaces itself), its CONNECT's bytes counted.
     */
    private void keep(final long connectionId, final Pending exchange)
    {
        let(connectionId);
        pending.put(connectionId, exchange);
        keptBytes += kept(exchange);
        if (exchange.addressKey != AddressKeys.NONE)
        {
            keptByAddress.put(exchange.addressKey, keptByAddress.get(exchange.addressKey) + kept(exchange));
        }
    }

    /**
     * An exchange ends (or its connection): no longer kept, nor counted.
     */
    private void let(final long connectionId)
    {
        final Pending ended = pending.isEmpty() ? null : pending.remove(connectionId);
        if (null != ended)
        {
            keptBytes -= kept(ended);
            if (ended.addressKey != AddressKeys.NONE)
            {
                final long left = keptByAddress.get(ended.addressKey) - kept(ended);
                if (left > 0)
                {
                    keptByAddress.put(ended.addressKey, left);
                }
                else
                {
                    keptByAddress.remove(ended.addressKey); // the table holds only addresses with exchanges
                }
            }
        }
    }

    private static long kept(final Pending exchange)
    {
        return (null == exchange.connect ? 0 : exchange.connect.length) + KEPT_ALLOWANCE;
    }

    /**
     * @return the user a connection was admitted as by an exchange, or null.
     */
    String userOf(final long connectionId)
    {
        final Admitted connected = admitted.get(connectionId);
        return null == connected ? null : connected.user;
    }

    /**
     * The connection ended: its exchange and admission go.
     */
    void forget(final long connectionId)
    {
        let(connectionId);
        if (!admitted.isEmpty())
        {
            admitted.remove(connectionId);
        }
    }

    /**
     * An exchange under way: of a CONNECT (kept until it ends, with the highest QoS its connection may use, its
     * mount point and what its client's address counts as) or of a re-authentication (the user it must keep).
     */
    private record Pending(AuthExchange exchange, String method, byte[] connect, int maxQos, byte[] mountPoint,
        String reauthenticating, long addressKey)
    {
    }

    private record Admitted(String method, String user)
    {
    }
}
