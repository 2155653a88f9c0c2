package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;

import java.util.HexFormat;
import java.util.Random;

/**
 * Random, valid packets of every type for property tests. Each {@link Sample} holds the bytes our encoder wrote
 * and a rendering of the values it was given; {@link #render(PacketDecoder, int)} renders a decoded packet the
 * same way, so a round trip is checked field by field.
 */
final class Samples
{
    /** One generated packet: its version, encoded bytes and the rendering of the values that made it. */
    record Sample(int version, byte[] bytes, String expected)
    {
        public String toString()
        {
            return "v" + version + " " + expected + " " + HexFormat.of().formatHex(bytes);
        }
    }

    private static final String ALPHABET = "abcXYZ019 _-.\u00e9\u00df\u6c34\u20ac";

    private Samples()
    {
    }

    static Sample any(final Random random, final int version)
    {
        final int type = version == MqttVersion.V5 ?
            PacketType.CONNECT + random.nextInt(15) : PacketType.CONNECT + random.nextInt(14);
        return of(random, version, type);
    }

    static Sample of(final Random random, final int version, final int type)
    {
        switch (type)
        {
            case PacketType.CONNECT: return connect(random, version);
            case PacketType.CONNACK: return connack(random, version);
            case PacketType.PUBLISH: return publish(random, version);
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP: return ack(random, version, type);
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE: return subscribe(random, version, type);
            case PacketType.SUBACK:
            case PacketType.UNSUBACK: return suback(random, version, type);
            case PacketType.PINGREQ:
            case PacketType.PINGRESP:
            {
                final UnsafeBuffer out = new UnsafeBuffer(new byte[2]);
                PingCodec.encode(out, 0, type);
                return new Sample(version, out.byteArray(), PacketType.name(type));
            }
            default: return disconnectOrAuth(random, version, type);
        }
    }

    static Sample connect(final Random random, final int version)
    {
        final boolean cleanStart = random.nextBoolean();
        final int keepAlive = random.nextInt(65_536);
        final String clientId = utf8(random, 23);
        final MqttProperties properties = properties(random, version, PacketType.CONNECT);
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(version)
            .cleanStart(cleanStart).keepAlive(keepAlive).properties(properties);
        encoder.clientId().wrap(clientId);
        String will = "none";
        if (random.nextBoolean())
        {
            final MqttProperties willProperties = properties(random, version, PropertyId.WILL_CONTEXT);
            final int willQos = random.nextInt(3);
            final boolean willRetain = random.nextBoolean();
            final String willTopic = topicName(random);
            final byte[] willPayload = bytes(random, 20);
            encoder.will(willQos, willRetain, willProperties);
            encoder.willTopic().wrap(willTopic);
            encoder.willPayload().wrap(willPayload);
            will = renderWill(willQos, willRetain, willTopic, willPayload, props(version, willProperties));
        }
        String userName = null;
        byte[] password = null;
        if (random.nextBoolean())
        {
            userName = utf8(random, 12);
            encoder.userName().wrap(userName);
        }
        if (random.nextBoolean() && (null != userName || version == MqttVersion.V5))
        {
            password = bytes(random, 12);
            encoder.password().wrap(password);
        }
        final byte[] bytes = new byte[encoder.encodedLength()];
        encoder.encode(new UnsafeBuffer(bytes), 0);
        return new Sample(version, bytes, renderConnect(version, cleanStart, keepAlive, clientId,
            props(version, properties), will, userName, password));
    }

    static String renderConnect(
        final int version, final boolean cleanStart, final int keepAlive, final String clientId,
        final String properties, final String will, final String userName, final byte[] password)
    {
        return "CONNECT v=" + version + " clean=" + cleanStart + " ka=" + keepAlive + " id=" + clientId + " " +
            properties + " will=" + will + " user=" + userName + " pass=" +
            (null == password ? "null" : HexFormat.of().formatHex(password));
    }

    static String renderWill(
        final int qos, final boolean retain, final String topic, final byte[] payload, final String properties)
    {
        return "[" + qos + " " + retain + " " + topic + " " + HexFormat.of().formatHex(payload) + " " + properties + "]";
    }

    static Sample connack(final Random random, final int version)
    {
        final MqttProperties properties = properties(random, version, PacketType.CONNACK);
        final boolean sessionPresent = random.nextBoolean();
        final int code = version == MqttVersion.V5 ?
            pick(random, 0x00, 0x80, 0x84, 0x86, 0x87, 0x9C) : random.nextInt(6);
        final byte[] bytes = new byte[ConnackEncoder.encodedLength(version, properties)];
        ConnackEncoder.encode(new UnsafeBuffer(bytes), 0, version, sessionPresent, code, properties);
        return new Sample(version, bytes, "CONNACK sp=" + sessionPresent + " rc=" + code + " " + props(version, properties));
    }

    static Sample publish(final Random random, final int version)
    {
        final int qos = random.nextInt(3);
        final boolean dup = qos > 0 && random.nextBoolean();
        final boolean retain = random.nextBoolean();
        final int packetId = qos > 0 ? 1 + random.nextInt(65_535) : 0;
        final String topic = topicName(random);
        final byte[] payload = bytes(random, random.nextInt(10) == 0 ? 300 : 40);
        final MqttProperties properties = properties(random, version, PacketType.PUBLISH);
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos).dup(dup).retain(retain)
            .packetId(packetId).topic(topic).payload(payload).properties(properties);
        final byte[] bytes = new byte[encoder.encodedLength()];
        encoder.encode(new UnsafeBuffer(bytes), 0);
        return new Sample(version, bytes, renderPublish(dup, qos, retain, packetId, topic, payload,
            props(version, properties)));
    }

    static Sample ack(final Random random, final int version, final int type)
    {
        final int packetId = 1 + random.nextInt(65_535);
        int code = 0;
        MqttProperties properties = null;
        if (version == MqttVersion.V5)
        {
            code = type == PacketType.PUBREL || type == PacketType.PUBCOMP ?
                pick(random, 0x00, 0x92) : pick(random, 0x00, 0x10, 0x80, 0x87, 0x91, 0x99);
            properties = properties(random, version, type);
        }
        final byte[] bytes = new byte[AckEncoder.encodedLength(version, code, properties)];
        AckEncoder.encode(new UnsafeBuffer(bytes), 0, type, packetId, version, code, properties);
        return new Sample(version, bytes, PacketType.name(type) + " id=" + packetId + " rc=" + code + " " +
            props(version, properties));
    }

    static Sample subscribe(final Random random, final int version, final int type)
    {
        final int packetId = 1 + random.nextInt(65_535);
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(type).version(version).packetId(packetId);
        final MqttProperties properties = properties(random, version, type);
        encoder.properties(properties);
        final StringBuilder expected = new StringBuilder(PacketType.name(type)).append(" id=")
            .append(packetId).append(' ').append(props(version, properties));
        final int count = 1 + random.nextInt(4);
        for (int i = 0; i < count; i++)
        {
            final String filter = topicFilter(random, version);
            int options = 0;
            if (type == PacketType.SUBSCRIBE)
            {
                final boolean noLocal = !filter.startsWith(Topics.SHARE_PREFIX) && random.nextBoolean();
                options = version == MqttVersion.V5 ?
                    SubscriptionOptions.of(random.nextInt(3), noLocal, random.nextBoolean(), random.nextInt(3)) :
                    random.nextInt(3);
            }
            encoder.filters().add(filter, options);
            expected.append(" [").append(filter).append(' ').append(options).append(']');
        }
        final byte[] bytes = new byte[encoder.encodedLength()];
        encoder.encode(new UnsafeBuffer(bytes), 0);
        return new Sample(version, bytes, expected.toString());
    }

    static Sample suback(final Random random, final int version, final int type)
    {
        final int packetId = 1 + random.nextInt(65_535);
        final MqttProperties properties = properties(random, version, type);
        final int count = 1 + random.nextInt(5);
        final int[] codes = new int[count];
        final StringBuilder expected = new StringBuilder(PacketType.name(type)).append(" id=").append(packetId)
            .append(' ').append(props(version, properties)).append(" codes=");
        final boolean hasCodes = type == PacketType.SUBACK || version == MqttVersion.V5;
        for (int i = 0; i < count; i++)
        {
            if (type == PacketType.SUBACK)
            {
                codes[i] = version == MqttVersion.V5 ? pick(random, 0, 1, 2, 0x80, 0x87, 0x8F, 0x9E, 0xA2) :
                    pick(random, 0, 1, 2, 0x80);
            }
            else
            {
                codes[i] = pick(random, 0x00, 0x11, 0x80, 0x87, 0x8F);
            }
            if (hasCodes)
            {
                expected.append(codes[i]).append(',');
            }
        }
        final byte[] bytes = new byte[SubackEncoder.encodedLength(type, version, properties, count)];
        SubackEncoder.encode(new UnsafeBuffer(bytes), 0, type, version, packetId, properties, codes, count);
        return new Sample(version, bytes, expected.toString());
    }

    static Sample disconnectOrAuth(final Random random, final int version, final int type)
    {
        int code = 0;
        MqttProperties properties = null;
        if (version == MqttVersion.V5)
        {
            code = type == PacketType.AUTH ? pick(random, 0x00, 0x18, 0x19) : pick(random, 0x00, 0x04, 0x81, 0x8E, 0x9C);
            properties = properties(random, version, type);
        }
        final byte[] bytes = new byte[DisconnectEncoder.encodedLength(type, version, code, properties)];
        DisconnectEncoder.encode(new UnsafeBuffer(bytes), 0, type, version, code, properties);
        return new Sample(version, bytes, PacketType.name(type) + " rc=" + code + " " + props(version, properties));
    }

    /**
     * @return the decoded packet rendered as its sample's {@link Sample#expected()} would be.
     */
    static String render(final PacketDecoder decoder, final int version)
    {
        final int type = decoder.packetType();
        switch (type)
        {
            case PacketType.CONNECT:
            {
                final ConnectFlyweight c = decoder.connect();
                final String will = c.hasWill() ? renderWill(c.willQos(), c.isWillRetain(), c.willTopic().asString(),
                    c.willPayload().toByteArray(), props(version, c.willProperties())) : "none";
                return renderConnect(c.protocolLevel(), c.isCleanStart(), c.keepAlive(), c.clientId().asString(),
                    props(version, c.properties()), will, c.hasUserName() ? c.userName().asString() : null,
                    c.hasPassword() ? c.password().toByteArray() : null);
            }
            case PacketType.CONNACK:
            {
                final ConnackFlyweight c = decoder.connack();
                return "CONNACK sp=" + c.isSessionPresent() + " rc=" + c.reasonCode() + " " +
                    props(version, c.properties());
            }
            case PacketType.PUBLISH:
            {
                final PublishFlyweight p = decoder.publish();
                return renderPublish(p.isDup(), p.qos(), p.isRetain(), p.packetId(), p.topic().asString(),
                    p.payload().toByteArray(), props(version, p.properties()));
            }
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
            {
                final AckFlyweight a = decoder.ack();
                return PacketType.name(type) + " id=" + a.packetId() + " rc=" + a.reasonCode() + " " +
                    props(version, a.properties());
            }
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
            {
                final SubscribeFlyweight s = decoder.subscribe();
                final StringBuilder sb = new StringBuilder(PacketType.name(type)).append(" id=").append(s.packetId())
                    .append(' ').append(props(version, s.properties()));
                for (int i = 0; i < s.filters().count(); i++)
                {
                    sb.append(" [").append(s.filters().filter(i).asString()).append(' ')
                        .append(s.filters().options(i)).append(']');
                }
                return sb.toString();
            }
            case PacketType.SUBACK:
            case PacketType.UNSUBACK:
            {
                final SubackFlyweight s = decoder.suback();
                final StringBuilder sb = new StringBuilder(PacketType.name(type)).append(" id=").append(s.packetId())
                    .append(' ').append(props(version, s.properties())).append(" codes=");
                for (int i = 0; i < s.reasonCodeCount(); i++)
                {
                    sb.append(s.reasonCode(i)).append(',');
                }
                return sb.toString();
            }
            case PacketType.PINGREQ:
            case PacketType.PINGRESP: return PacketType.name(type);
            case PacketType.DISCONNECT:
                return "DISCONNECT rc=" + decoder.disconnect().reasonCode() + " " +
                    props(version, decoder.disconnect().properties());
            default:
                return "AUTH rc=" + decoder.auth().reasonCode() + " " + props(version, decoder.auth().properties());
        }
    }

    static String renderPublish(
        final boolean dup, final int qos, final boolean retain, final int packetId, final String topic,
        final byte[] payload, final String properties)
    {
        return "PUBLISH dup=" + dup + " qos=" + qos + " retain=" + retain + " id=" + packetId + " topic=" + topic +
            " payload=" + HexFormat.of().formatHex(payload) + " " + properties;
    }

    static String props(final int version, final MqttProperties properties)
    {
        return version != MqttVersion.V5 || null == properties ? "{}" : properties.toString();
    }

    static MqttProperties properties(final Random random, final int version, final int context)
    {
        final MqttProperties properties = new MqttProperties();
        if (version != MqttVersion.V5 || random.nextInt(4) == 0)
        {
            return properties;
        }
        for (int id = 1; id <= 0x2A; id++)
        {
            if (!PropertyId.isAllowed(context, id) || random.nextInt(3) != 0)
            {
                continue;
            }
            switch (PropertyId.typeOf(id))
            {
                case 1: properties.setInt(id, random.nextInt(2)); break;
                case 2: properties.setInt(id, 1 + random.nextInt(65_535)); break;
                case 3: properties.setInt(id, random.nextBoolean() ? 1 + random.nextInt(1000) : -1); break;
                case 4:
                    final int count = context == PacketType.PUBLISH ? 1 + random.nextInt(3) : 1;
                    for (int i = 0; i < count; i++)
                    {
                        properties.setInt(id, 1 + random.nextInt(random.nextBoolean() ? 127 : 268_435_455));
                    }
                    break;
                case 5:
                    properties.set(id, id == PropertyId.RESPONSE_TOPIC ? topicName(random) : utf8(random, 16));
                    break;
                case 6:
                    if (id == PropertyId.AUTHENTICATION_DATA && !properties.has(PropertyId.AUTHENTICATION_METHOD))
                    {
                        properties.set(PropertyId.AUTHENTICATION_METHOD, "SCRAM-SHA-256");
                    }
                    properties.set(id, bytes(random, 16));
                    break;
                default:
                    final int pairs = 1 + random.nextInt(3);
                    for (int i = 0; i < pairs; i++)
                    {
                        properties.addUserProperty(utf8(random, 8), utf8(random, 8));
                    }
            }
        }
        return properties;
    }

    static String utf8(final Random random, final int maxLength)
    {
        final int length = random.nextInt(maxLength + 1);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < length; i++)
        {
            if (random.nextInt(20) == 0)
            {
                sb.appendCodePoint(0x1F600 + random.nextInt(40));
            }
            else
            {
                sb.append(ALPHABET.charAt(random.nextInt(ALPHABET.length())));
            }
        }
        return sb.toString();
    }

    static String topicName(final Random random)
    {
        final int levels = 1 + random.nextInt(4);
        final StringBuilder sb = new StringBuilder();
        for (int i = 0; i < levels; i++)
        {
            if (i > 0)
            {
                sb.append('/');
            }
            sb.append(utf8(random, 6).replace('/', 'x'));
        }
        return sb.length() == 0 ? "t" : sb.toString();
    }

    static String topicFilter(final Random random, final int version)
    {
        final int levels = 1 + random.nextInt(4);
        final StringBuilder sb = new StringBuilder();
        if (version == MqttVersion.V5 && random.nextInt(5) == 0)
        {
            sb.append("$share/g").append(random.nextInt(9)).append('/');
        }
        for (int i = 0; i < levels; i++)
        {
            if (i > 0)
            {
                sb.append('/');
            }
            final int kind = random.nextInt(6);
            if (kind == 0)
            {
                sb.append('+');
            }
            else if (kind == 1 && i == levels - 1)
            {
                sb.append('#');
            }
            else
            {
                sb.append(utf8(random, 5).replace('/', 'x'));
            }
        }
        final String filter = sb.toString();
        return filter.isEmpty() || filter.endsWith("/") ? filter + "f" : filter;
    }

    static byte[] bytes(final Random random, final int maxLength)
    {
        final byte[] bytes = new byte[random.nextInt(maxLength + 1)];
        random.nextBytes(bytes);
        return bytes;
    }

    static int pick(final Random random, final int... values)
    {
        return values[random.nextInt(values.length)];
    }
}
