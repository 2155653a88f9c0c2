package io.ringmq.protocol;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.mqtt.MqttConnAckMessage;
import io.netty.handler.codec.mqtt.MqttConnectMessage;
import io.netty.handler.codec.mqtt.MqttDecoder;
import io.netty.handler.codec.mqtt.MqttEncoder;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageIdAndPropertiesVariableHeader;
import io.netty.handler.codec.mqtt.MqttMessageIdVariableHeader;
import io.netty.handler.codec.mqtt.MqttPubReplyMessageVariableHeader;
import io.netty.handler.codec.mqtt.MqttPublishMessage;
import io.netty.handler.codec.mqtt.MqttReasonCodeAndPropertiesVariableHeader;
import io.netty.handler.codec.mqtt.MqttSubAckMessage;
import io.netty.handler.codec.mqtt.MqttSubscribeMessage;
import io.netty.handler.codec.mqtt.MqttSubscriptionOption;
import io.netty.handler.codec.mqtt.MqttTopicSubscription;
import io.netty.handler.codec.mqtt.MqttUnsubAckMessage;
import io.netty.handler.codec.mqtt.MqttUnsubscribeMessage;
import io.netty.util.AttributeKey;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Netty's netty-codec-mqtt as an independent oracle, for every packet type both codecs support, in both versions:
 * what ringmq encodes, Netty decodes to the same values; what Netty encodes, ringmq decodes to the same values.
 */
class NettyOracleTest
{
    private static final AttributeKey<io.netty.handler.codec.mqtt.MqttVersion> VERSION =
        AttributeKey.valueOf("NETTY_CODEC_MQTT_VERSION");
    private static final int SAMPLES_PER_TYPE = 150;

    private final PacketDecoder decoder = new PacketDecoder();

    @Test
    void nettyDecodesWhatRingmqEncodes()
    {
        forEverySample((sample, rendered) ->
        {
            final MqttMessage message = nettyDecode(sample.version(), sample.bytes());
            assertThat(renderNetty(message, sample.version())).as(sample::toString).isEqualTo(sample.expected());
        });
    }

    @Test
    void ringmqDecodesWhatNettyEncodes()
    {
        forEverySample((sample, rendered) ->
        {
            final MqttMessage message = nettyDecode(sample.version(), sample.bytes());
            final byte[] nettyBytes = nettyEncode(sample.version(), message);
            final int length = decoder.decode(new UnsafeBuffer(nettyBytes), 0, nettyBytes.length, sample.version(),
                1 << 20);
            assertThat(length).as(() -> HexFormat.of().formatHex(nettyBytes) + " " + DecodeError.describe(length))
                .isEqualTo(nettyBytes.length);
            assertThat(Samples.render(decoder, sample.version())).as(sample::toString).isEqualTo(sample.expected());
        });
    }

    private interface SampleCheck
    {
        void check(Samples.Sample sample, String rendered);
    }

    private static void forEverySample(final SampleCheck check)
    {
        for (final int[] combination : RoundTripProperties.combinations())
        {
            final Random random = new Random(combination[0] * 1000L + combination[1]);
            for (int i = 0; i < SAMPLES_PER_TYPE; i++)
            {
                final Samples.Sample sample = Samples.of(random, combination[0], combination[1]);
                check.check(sample, sample.expected());
            }
        }
    }

    private static MqttMessage nettyDecode(final int version, final byte[] bytes)
    {
        final EmbeddedChannel channel = channel(version);
        channel.writeInbound(Unpooled.wrappedBuffer(bytes));
        final MqttMessage message = channel.readInbound();
        assertThat(message).isNotNull();
        assertThat(message.decoderResult().isSuccess()).as(() -> String.valueOf(message.decoderResult().cause()))
            .isTrue();
        channel.finishAndReleaseAll();
        return message;
    }

    private static byte[] nettyEncode(final int version, final MqttMessage message)
    {
        final EmbeddedChannel channel = channel(version);
        channel.writeOutbound(message);
        final ByteBuf out = channel.readOutbound();
        final byte[] bytes = ByteBufUtil.getBytes(out);
        out.release();
        channel.finishAndReleaseAll();
        return bytes;
    }

    private static EmbeddedChannel channel(final int version)
    {
        final EmbeddedChannel channel = new EmbeddedChannel(new MqttDecoder(1 << 20), MqttEncoder.INSTANCE);
        channel.attr(VERSION).set(version == MqttVersion.V5 ?
            io.netty.handler.codec.mqtt.MqttVersion.MQTT_5 : io.netty.handler.codec.mqtt.MqttVersion.MQTT_3_1_1);
        return channel;
    }

    /**
     * Renders a Netty message in the format of {@link Samples#render(PacketDecoder, int)}.
     */
    private static String renderNetty(final MqttMessage message, final int version)
    {
        final int type = message.fixedHeader().messageType().value();
        final String name = PacketType.name(type);
        switch (type)
        {
            case PacketType.CONNECT:
            {
                final MqttConnectMessage c = (MqttConnectMessage)message;
                final String will = c.variableHeader().isWillFlag() ? Samples.renderWill(c.variableHeader().willQos(),
                    c.variableHeader().isWillRetain(), c.payload().willTopic(), c.payload().willMessageInBytes(),
                    props(version, c.payload().willProperties())) : "none";
                return Samples.renderConnect(c.variableHeader().version(), c.variableHeader().isCleanSession(),
                    c.variableHeader().keepAliveTimeSeconds(), c.payload().clientIdentifier(),
                    props(version, c.variableHeader().properties()), will,
                    c.variableHeader().hasUserName() ? c.payload().userName() : null,
                    c.variableHeader().hasPassword() ? c.payload().passwordInBytes() : null);
            }
            case PacketType.CONNACK:
            {
                final MqttConnAckMessage c = (MqttConnAckMessage)message;
                return "CONNACK sp=" + c.variableHeader().isSessionPresent() + " rc=" +
                    (c.variableHeader().connectReturnCode().byteValue() & 0xFF) + " " +
                    props(version, c.variableHeader().properties());
            }
            case PacketType.PUBLISH:
            {
                final MqttPublishMessage p = (MqttPublishMessage)message;
                final byte[] payload = ByteBufUtil.getBytes(p.payload());
                p.release();
                return Samples.renderPublish(p.fixedHeader().isDup(), p.fixedHeader().qosLevel().value(),
                    p.fixedHeader().isRetain(), Math.max(0, p.variableHeader().packetId()),
                    p.variableHeader().topicName(), payload, props(version, p.variableHeader().properties()));
            }
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
            {
                final Object header = message.variableHeader();
                final int packetId = ((MqttMessageIdVariableHeader)header).messageId();
                if (header instanceof MqttPubReplyMessageVariableHeader)
                {
                    final MqttPubReplyMessageVariableHeader reply = (MqttPubReplyMessageVariableHeader)header;
                    return name + " id=" + packetId + " rc=" + (reply.reasonCode() & 0xFF) + " " +
                        props(version, reply.properties());
                }
                return name + " id=" + packetId + " rc=0 {}";
            }
            case PacketType.SUBSCRIBE:
            {
                final MqttSubscribeMessage s = (MqttSubscribeMessage)message;
                final StringBuilder sb = new StringBuilder(name).append(" id=")
                    .append(s.idAndPropertiesVariableHeader().messageId()).append(' ')
                    .append(props(version, s.idAndPropertiesVariableHeader().properties()));
                for (final MqttTopicSubscription t : s.payload().topicSubscriptions())
                {
                    final MqttSubscriptionOption o = t.option();
                    final int options = version == MqttVersion.V5 ? SubscriptionOptions.of(o.qos().value(),
                        o.isNoLocal(), o.isRetainAsPublished(), o.retainHandling().value()) : o.qos().value();
                    sb.append(" [").append(t.topicFilter()).append(' ').append(options).append(']');
                }
                return sb.toString();
            }
            case PacketType.UNSUBSCRIBE:
            {
                final MqttUnsubscribeMessage u = (MqttUnsubscribeMessage)message;
                final StringBuilder sb = new StringBuilder(name).append(" id=")
                    .append(u.idAndPropertiesVariableHeader().messageId()).append(' ')
                    .append(props(version, u.idAndPropertiesVariableHeader().properties()));
                for (final String topic : u.payload().topics())
                {
                    sb.append(" [").append(topic).append(" 0]");
                }
                return sb.toString();
            }
            case PacketType.SUBACK:
            {
                final MqttSubAckMessage s = (MqttSubAckMessage)message;
                final StringBuilder sb = new StringBuilder(name).append(" id=")
                    .append(s.idAndPropertiesVariableHeader().messageId()).append(' ')
                    .append(props(version, s.idAndPropertiesVariableHeader().properties())).append(" codes=");
                s.payload().reasonCodes().forEach(code -> sb.append(code & 0xFF).append(','));
                return sb.toString();
            }
            case PacketType.UNSUBACK:
            {
                final MqttUnsubAckMessage u = (MqttUnsubAckMessage)message;
                final MqttMessageIdAndPropertiesVariableHeader header = u.idAndPropertiesVariableHeader();
                final StringBuilder sb = new StringBuilder(name).append(" id=").append(header.messageId()).append(' ')
                    .append(props(version, header.properties())).append(" codes=");
                if (version == MqttVersion.V5 && null != u.payload())
                {
                    u.payload().unsubscribeReasonCodes().forEach(code -> sb.append(code & 0xFF).append(','));
                }
                return sb.toString();
            }
            case PacketType.PINGREQ:
            case PacketType.PINGRESP:
                return name;
            default:
            {
                final Object header = message.variableHeader();
                if (header instanceof MqttReasonCodeAndPropertiesVariableHeader)
                {
                    final MqttReasonCodeAndPropertiesVariableHeader r = (MqttReasonCodeAndPropertiesVariableHeader)header;
                    return name + " rc=" + (r.reasonCode() & 0xFF) + " " + props(version, r.properties());
                }
                return name + " rc=0 " + (version == MqttVersion.V5 ? "{}" : "{}");
            }
        }
    }

    /**
     * Renders Netty properties in the format of {@link MqttProperties#toString()}.
     */
    private static String props(final int version, final io.netty.handler.codec.mqtt.MqttProperties properties)
    {
        if (version != MqttVersion.V5 || null == properties)
        {
            return "{}";
        }
        final Map<Integer, List<Object>> byId = new TreeMap<>();
        for (final io.netty.handler.codec.mqtt.MqttProperties.MqttProperty<?> property : properties.listAll())
        {
            byId.computeIfAbsent(property.propertyId(), id -> new ArrayList<>()).add(property.value());
        }
        final StringBuilder sb = new StringBuilder("{");
        for (final Map.Entry<Integer, List<Object>> entry : byId.entrySet())
        {
            final int id = entry.getKey();
            if (sb.length() > 1)
            {
                sb.append(", ");
            }
            sb.append("0x").append(Integer.toHexString(id)).append('=');
            final Object value = entry.getValue().get(0);
            switch (PropertyId.typeOf(id))
            {
                case 5: sb.append('"').append(value).append('"'); break;
                case 6: sb.append(java.util.Arrays.toString((byte[])value)); break;
                case 4: sb.append(entry.getValue()); break;
                case 7:
                    for (final Object pairs : entry.getValue())
                    {
                        for (final io.netty.handler.codec.mqtt.MqttProperties.StringPair pair :
                            (List<io.netty.handler.codec.mqtt.MqttProperties.StringPair>)pairs)
                        {
                            sb.append(pair.key).append(':').append(pair.value).append(' ');
                        }
                    }
                    break;
                case 3: sb.append(((Integer)value) & 0xFFFF_FFFFL); break;
                default: sb.append(value);
            }
        }
        return sb.append('}').toString();
    }
}
