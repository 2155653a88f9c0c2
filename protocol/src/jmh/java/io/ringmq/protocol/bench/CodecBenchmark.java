package io.ringmq.protocol.bench;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.mqtt.MqttConnectMessage;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageBuilders;
import io.netty.handler.codec.mqtt.MqttPublishMessage;
import io.netty.handler.codec.mqtt.MqttQoS;
import io.netty.handler.codec.mqtt.NettyMqttCodec;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.Slice;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * ringmq's codec against Netty's netty-codec-mqtt on the same packets, MQTT 3.1.1: a QoS 0 PUBLISH with a 64-byte
 * payload (the hot path: decode, encode, and decode-then-encode as a broker forwards) and a CONNECT with user
 * name and password. Run with {@code -prof gc} to see bytes allocated per operation.
 *
 * <pre>
 * mvn -q -Pbenchmarks -pl protocol test-compile exec:exec -Djmh.args="CodecBenchmark -prof gc"
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class CodecBenchmark
{
    private static final String TOPIC = "sensors/building-7/floor-3/room-12/temperature";

    private final UnsafeBuffer publishBytes = new UnsafeBuffer(new byte[256]);
    private final UnsafeBuffer connectBytes = new UnsafeBuffer(new byte[256]);
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[256]);
    private final UnsafeBuffer topic = new UnsafeBuffer(TOPIC.getBytes(StandardCharsets.UTF_8));
    private final UnsafeBuffer payload = new UnsafeBuffer(new byte[64]);
    private final PublishFlyweight publish = new PublishFlyweight();
    private final PacketDecoder packetDecoder = new PacketDecoder();
    private final PublishEncoder publishEncoder = new PublishEncoder();
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final ConnectEncoder connectEncoder = new ConnectEncoder();
    private int publishLength;
    private int connectLength;

    private final NettyMqttCodec netty = new NettyMqttCodec(io.netty.handler.codec.mqtt.MqttVersion.MQTT_3_1_1);
    private ByteBuf nettyPublishBytes;
    private ByteBuf nettyConnectBytes;
    private MqttPublishMessage nettyPublish;
    private MqttConnectMessage nettyConnect;

    @Setup(Level.Trial)
    public void setUp()
    {
        publishLength = publishEncoder.reset().version(MqttVersion.V3_1_1).qos(0)
            .topic(topic, 0, topic.capacity()).payload(payload, 0, payload.capacity()).encode(publishBytes, 0);
        connectEncoder.reset().version(MqttVersion.V3_1_1).keepAlive(60).cleanStart(true);
        connectEncoder.clientId().wrap("loadtest-client-000042");
        connectEncoder.userName().wrap("device-user");
        connectEncoder.password().wrap("correct horse battery staple");
        connectLength = connectEncoder.encode(connectBytes, 0);

        nettyPublishBytes = Unpooled.directBuffer(publishLength);
        nettyPublishBytes.writeBytes(publishBytes.byteArray(), 0, publishLength);
        nettyConnectBytes = Unpooled.directBuffer(connectLength);
        nettyConnectBytes.writeBytes(connectBytes.byteArray(), 0, connectLength);
        nettyPublish = MqttMessageBuilders.publish().topicName(TOPIC).qos(MqttQoS.AT_MOST_ONCE).retained(false)
            .payload(Unpooled.directBuffer(64).writeZero(64)).build();
        nettyConnect = MqttMessageBuilders.connect().protocolVersion(io.netty.handler.codec.mqtt.MqttVersion.MQTT_3_1_1)
            .clientId("loadtest-client-000042").username("device-user")
            .password("correct horse battery staple".getBytes(StandardCharsets.UTF_8))
            .keepAlive(60).cleanSession(true).build();
    }

    @Benchmark
    public int ringmqPublishDecode()
    {
        return publish.wrap(publishBytes, 0, publishLength, MqttVersion.V3_1_1) + publish.payload().length();
    }

    /**
     * As the broker's I/O agent decodes: framed, then the flyweight of the framed type.
     */
    @Benchmark
    public int ringmqPublishFrameDecode()
    {
        return packetDecoder.decode(publishBytes, 0, publishLength, MqttVersion.V3_1_1, 1 << 20) +
            packetDecoder.publish().payload().length();
    }

    @Benchmark
    public int ringmqPublishEncode()
    {
        return publishEncoder.reset().version(MqttVersion.V3_1_1).qos(0)
            .topic(topic, 0, topic.capacity()).payload(payload, 0, payload.capacity()).encode(out, 0);
    }

    @Benchmark
    public int ringmqPublishDecodeEncode()
    {
        publish.wrap(publishBytes, 0, publishLength, MqttVersion.V3_1_1);
        final Slice t = publish.topic();
        final Slice p = publish.payload();
        return publishEncoder.reset().version(MqttVersion.V3_1_1).qos(publish.qos()).retain(publish.isRetain())
            .topic(t.buffer(), t.offset(), t.length()).payload(p.buffer(), p.offset(), p.length()).encode(out, 0);
    }

    @Benchmark
    public int nettyPublishDecode() throws Exception
    {
        nettyPublishBytes.readerIndex(0);
        final MqttPublishMessage message = (MqttPublishMessage)netty.decode(nettyPublishBytes);
        final int length = message.payload().readableBytes();
        message.release();
        return length;
    }

    @Benchmark
    public int nettyPublishEncode()
    {
        final ByteBuf encoded = netty.encode(nettyPublish);
        final int length = encoded.readableBytes();
        encoded.release();
        return length;
    }

    @Benchmark
    public int nettyPublishDecodeEncode() throws Exception
    {
        nettyPublishBytes.readerIndex(0);
        final MqttMessage message = netty.decode(nettyPublishBytes);
        final ByteBuf encoded = netty.encode(message);
        final int length = encoded.readableBytes();
        encoded.release();
        ((MqttPublishMessage)message).release();
        return length;
    }

    @Benchmark
    public int ringmqConnectDecode()
    {
        return connect.wrap(connectBytes, 0, connectLength) + connect.password().length();
    }

    @Benchmark
    public int ringmqConnectEncode()
    {
        return connectEncoder.encode(out, 0);
    }

    @Benchmark
    public int nettyConnectDecode() throws Exception
    {
        nettyConnectBytes.readerIndex(0);
        final MqttConnectMessage message = (MqttConnectMessage)netty.decode(nettyConnectBytes);
        return message.payload().passwordInBytes().length;
    }

    @Benchmark
    public int nettyConnectEncode()
    {
        final ByteBuf encoded = netty.encode(nettyConnect);
        final int length = encoded.readableBytes();
        encoded.release();
        return length;
    }
}
