package io.ringmq.pipeline.delivery;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.RouteOutput;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.ConnackEncoder;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.DisconnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.Slice;
import io.ringmq.protocol.SubackEncoder;
import org.agrona.ExpandableArrayBuffer;

/**
 * Encodes what a delivery shard answers besides PUBLISH, in the client's protocol version: CONNACK (with the 5.0
 * properties that say what the broker allows and assigned), AUTH, DISCONNECT, the acknowledgements, SUBACK and
 * UNSUBACK. Each method writes one packet into {@link #buffer()} and returns its length. Owned by one shard;
 * allocation-free once its buffers have grown.
 */
final class ControlPackets
{
    private BrokerContext context;
    private final ExpandableArrayBuffer buffer = new ExpandableArrayBuffer(256);
    private final MqttProperties properties = new MqttProperties();
    private int[] codes = new int[16];

    ControlPackets(final BrokerContext context)
    {
        this.context = context;
    }

    /**
     * @param next the limits a CONNACK announces from now on (a reload; the shard's thread).
     */
    void limits(final BrokerContext next)
    {
        this.context = next;
    }

    ExpandableArrayBuffer buffer()
    {
        return buffer;
    }

    /**
     * A CONNACK refusing a CONNECT: the auth stage's code; with none, Server unavailable (fail closed), or on 5.0
     * Quota exceeded when it was admitted but got no session (--max-sessions).
     */
    int refusal(final IngressEvent event)
    {
        final boolean v5 = event.version == MqttVersion.V5;
        int code = event.authCode > 0 ? event.authCode : v5 ? ReasonCode.SERVER_UNAVAILABLE :
            ReasonCode.V3_SERVER_UNAVAILABLE;
        if (event.authCode == IngressEvent.AUTH_ACCEPTED && v5)
        {
            code = ReasonCode.QUOTA_EXCEEDED;
        }
        return ConnackEncoder.encode(buffer, 0, event.version, false, code, null);
    }

    /**
     * A CONNACK refusing a CONNECT a stage failed on: Server unavailable.
     */
    int serverUnavailable(final int version)
    {
        return ConnackEncoder.encode(buffer, 0, version, false,
            version == MqttVersion.V5 ? ReasonCode.SERVER_UNAVAILABLE : ReasonCode.V3_SERVER_UNAVAILABLE, null);
    }

    /**
     * An accepting CONNACK; on 5.0 with what the broker allows and assigned where it differs from the defaults.
     */
    int connack(final IngressEvent event, final ConnectFlyweight connect, final String assignedClientId)
    {
        final MqttProperties connack = event.version == MqttVersion.V5 ?
            connackProperties(event, connect, assignedClientId) : null;
        buffer.checkLimit(ConnackEncoder.encodedLength(event.version, connack));
        return ConnackEncoder.encode(buffer, 0, event.version, event.sessionPresent, 0, connack);
    }

    private MqttProperties connackProperties(final IngressEvent event, final ConnectFlyweight connect,
        final String assignedClientId)
    {
        final MqttProperties requested = connect.properties();
        final MqttProperties connack = properties.clear();
        final long asked = requested.longValue(PropertyId.SESSION_EXPIRY_INTERVAL, 0);
        final long applied = context.limits().sessionExpiryFor(asked);
        if (applied != asked)
        {
            connack.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, (int)applied); // (5.0 section 3.2.2.3.2)
        }
        if (null != assignedClientId)
        {
            connack.set(PropertyId.ASSIGNED_CLIENT_IDENTIFIER, assignedClientId); // [MQTT-3.2.2-16]
        }
        final int keepAlive = context.limits().keepAliveFor(connect.keepAlive());
        if (keepAlive != connect.keepAlive())
        {
            connack.setInt(PropertyId.SERVER_KEEP_ALIVE, keepAlive); // [MQTT-3.2.2-21]
        }
        if (context.limits().receiveMaximum() < 65_535)
        {
            connack.setInt(PropertyId.RECEIVE_MAXIMUM, context.limits().receiveMaximum());
        }
        if (context.limits().topicAliasMaximum() > 0)
        {
            connack.setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, context.limits().topicAliasMaximum());
        }
        connack.setInt(PropertyId.MAXIMUM_PACKET_SIZE, context.limits().maxPacketSize());
        final int maxQos = Math.min(context.limits().maxQos(), event.maxQos); // its listener's max_qos too
        if (maxQos < 2)
        {
            connack.setInt(PropertyId.MAXIMUM_QOS, maxQos); // [MQTT-3.2.2-9]
        }
        if (!context.limits().retainAvailable())
        {
            connack.setInt(PropertyId.RETAIN_AVAILABLE, 0);
        }
        return withAuthentication(connack, event, requested);
    }

    /**
     * An AUTH with the method the client named (in {@code requested}) and the server's data of the exchange's
     * last step [MQTT-4.12.0-5].
     */
    int auth(final IngressEvent event, final int reasonCode, final MqttProperties requested)
    {
        final MqttProperties auth = withAuthentication(properties.clear(), event, requested);
        buffer.checkLimit(DisconnectEncoder.encodedLength(PacketType.AUTH, MqttVersion.V5, reasonCode, auth));
        return DisconnectEncoder.encode(buffer, 0, PacketType.AUTH, MqttVersion.V5, reasonCode, auth);
    }

    private static MqttProperties withAuthentication(final MqttProperties properties, final IngressEvent event,
        final MqttProperties requested)
    {
        if (requested.has(PropertyId.AUTHENTICATION_METHOD))
        {
            final Slice method = requested.slice(PropertyId.AUTHENTICATION_METHOD);
            properties.set(PropertyId.AUTHENTICATION_METHOD, method.buffer(), method.offset(), method.length());
            if (event.authDataLength > 0)
            {
                properties.set(PropertyId.AUTHENTICATION_DATA, event.authData(), 0, event.authDataLength);
            }
        }
        return properties;
    }

    /**
     * A 5.0 DISCONNECT with a reason before the broker closes the connection [MQTT-4.13.2-1]; a reason a
     * DISCONNECT cannot carry (0x86 is a CONNACK's) is said as Not authorized.
     *
     * @return its length, or 0 for 3.1.1 (nothing to send).
     */
    int disconnect(final int version, final int reasonCode)
    {
        if (version != MqttVersion.V5)
        {
            return 0;
        }
        final int code = ReasonCode.isAllowed(PacketType.DISCONNECT, MqttVersion.V5, reasonCode) ? reasonCode :
            ReasonCode.NOT_AUTHORIZED;
        return DisconnectEncoder.encode(buffer, 0, PacketType.DISCONNECT, version, code, null);
    }

    /**
     * PUBACK, PUBREC, PUBREL or PUBCOMP; on 5.0 with a reason code (omitted when 0x00).
     */
    int ack(final int packetType, final int packetId, final int version, final int reasonCode)
    {
        return AckEncoder.encode(buffer, 0, packetType, packetId, version, reasonCode, null);
    }

    /**
     * SUBACK with the routing output's codes, or UNSUBACK (with them on 5.0 [MQTT-3.11.3-1], none on 3.1.1).
     */
    int suback(final IngressEvent event, final RouteOutput route, final int packetType)
    {
        final int count = packetType == PacketType.SUBACK || event.version == MqttVersion.V5 ?
            event.grantedCount : 0;
        if (codes.length < count)
        {
            codes = new int[count];
        }
        for (int i = 0; i < count; i++)
        {
            codes[i] = route.granted(i);
        }
        buffer.checkLimit(SubackEncoder.encodedLength(packetType, event.version, null, count));
        final int length = SubackEncoder.encode(buffer, 0, packetType, event.version, event.packetId, null, codes,
            count);
        if (codes.length > 1024)
        {
            codes = new int[16]; // a SUBSCRIBE with very many filters does not keep its array
        }
        return length;
    }
}
