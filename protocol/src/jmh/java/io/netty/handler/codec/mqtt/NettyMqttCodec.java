package io.netty.handler.codec.mqtt;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.util.AttributeKey;

import java.util.ArrayList;
import java.util.List;

/**
 * Benchmark access to Netty's MQTT codec without its channel pipeline: the decoder's and the encoder's own work
 * on one buffer, as a broker built on them pays per packet. Lives in Netty's package to reach {@code decode} and
 * {@code doEncode}; benchmark sources only.
 */
public final class NettyMqttCodec
{
    private final MqttDecoder decoder = new MqttDecoder(1 << 20);
    private final ChannelHandlerContext decoderContext;
    private final ChannelHandlerContext encoderContext;
    private final List<Object> out = new ArrayList<>(1);

    public NettyMqttCodec(final MqttVersion version)
    {
        final EmbeddedChannel channel = new EmbeddedChannel(decoder, MqttEncoder.INSTANCE);
        channel.attr(AttributeKey.<MqttVersion>valueOf("NETTY_CODEC_MQTT_VERSION")).set(version);
        decoderContext = channel.pipeline().context(decoder);
        encoderContext = channel.pipeline().context(MqttEncoder.INSTANCE);
    }

    /**
     * Decodes one complete packet from {@code in}.
     */
    public MqttMessage decode(final ByteBuf in) throws Exception
    {
        out.clear();
        decoder.decode(decoderContext, in, out);
        return (MqttMessage)out.get(0);
    }

    /**
     * Encodes a message into a buffer from the channel's allocator; the caller releases it.
     */
    public ByteBuf encode(final MqttMessage message)
    {
        return MqttEncoder.doEncode(encoderContext, message);
    }
}
