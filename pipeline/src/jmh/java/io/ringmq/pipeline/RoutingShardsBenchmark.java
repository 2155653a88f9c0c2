package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What one QoS 0 PUBLISH (3.1.1, 64-byte payload, one subscriber) costs each routing shard, on one thread, without
 * the ring: the whole routing of it (what one routing stage pays for every PUBLISH), routing shard 0's stamp of a
 * PUBLISH another shard routes (what shard 0 still pays for every PUBLISH with {@code --route-shards N}), and a
 * shard passing over a PUBLISH it does not route. With N shards, shard 0 pays a stamp for every PUBLISH and a
 * routing for 1/N of them; the others a routing for 1/N and a pass for the rest.
 *
 * <pre>
 * mvn -q -Pbenchmarks -pl protocol,pipeline test-compile exec:exec -Djmh.args="RoutingShardsBenchmark -prof gc"
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Thread)
public class RoutingShardsBenchmark
{
    private static final long SUBSCRIBER = 1;
    private static final long PUBLISHER = 2;

    private final BrokerContext context = new BrokerContext().conclude();
    private MessageLog log;
    private RoutingStage oneStage;
    private RoutingStage shard0;
    private RoutingStage shard1;
    private final IngressEvent event = new IngressEvent(256);
    private byte[] publish;
    private AccessControl access;
    private ReleaseStage release;
    private final IngressEvent authEvent = new IngressEvent(256);

    @Setup
    public void setUp()
    {
        log = new MessageLog(context.routeLogBytes());
        oneStage = stage(new RouteShards(1, context), 0);
        final RouteShards two = new RouteShards(2, context);
        shard0 = stage(two, 0);
        shard1 = stage(two, 1);
        publish = publishToShard(two, 1); // a topic shard 1 routes
        for (final RoutingStage stage : new RoutingStage[]{oneStage, shard0, shard1})
        {
            connect(stage, SUBSCRIBER, "sub");
            connect(stage, PUBLISHER, "pub");
            final SubscribeEncoder subscribe = new SubscribeEncoder().reset(PacketType.SUBSCRIBE)
                .version(MqttVersion.V3_1_1).packetId(1);
            subscribe.filters().add("sensors/#", 0);
            offer(stage, SUBSCRIBER, encode(subscribe.encodedLength(), b -> subscribe.encode(b, 0)));
        }
        offer(shard0, PUBLISHER, publish); // stamps routeShard 1 into the slot, as shard 0 would before shard 1

        access = AccessControl.open(new BrokerCounters());
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60);
        encoder.clientId().wrap("pub");
        final byte[] connect = encode(encoder.encodedLength(), b -> encoder.encode(b, 0));
        final io.ringmq.protocol.ConnectFlyweight flyweight = new io.ringmq.protocol.ConnectFlyweight();
        flyweight.wrap(new UnsafeBuffer(connect), 0, connect.length);
        authEvent.packet(0, PUBLISHER, MqttVersion.V3_1_1, true, PacketType.CONNECT, new UnsafeBuffer(connect),
            connect.length, null, -1);
        access.admit(authEvent, flyweight, null);
        authEvent.packet(0, PUBLISHER, MqttVersion.V3_1_1, true, PacketType.PUBLISH, new UnsafeBuffer(publish),
            publish.length, null, -1);
        final com.lmax.disruptor.RingBuffer<IngressEvent> ring = com.lmax.disruptor.RingBuffer.createMultiProducer(
            () -> new IngressEvent(16), 64);
        release = new ReleaseStage(new MessageLog[]{new MessageLog(1 << 16)}, new MessageLog[]{log}, ring,
            new com.lmax.disruptor.Sequence(), new BrokerCounters());
    }

    private RoutingStage stage(final RouteShards shards, final int shard)
    {
        return new RoutingStage(context, new BrokerCounters(), log, null, new SessionWindows(16),
            new SharedRedispatch(), new FailedCommits(), new AtomicReference<>(AccessRules.OPEN),
            ConnectionControl.NONE, shards, shard);
    }

    private byte[] publishToShard(final RouteShards shards, final int shard)
    {
        for (int i = 0; ; i++)
        {
            final byte[] bytes = publishBytes("sensors/building-7/floor-3/room-" + i + "/temperature");
            if (shards.ownerOf(new UnsafeBuffer(bytes), bytes.length) == shard)
            {
                return bytes;
            }
        }
    }

    private static byte[] publishBytes(final String topic)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V3_1_1).qos(0)
            .topic(topic).payload(new byte[64]);
        return encode(encoder.encodedLength(), b -> encoder.encode(b, 0));
    }

    private void connect(final RoutingStage stage, final long connectionId, final String clientId)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60);
        encoder.clientId().wrap(clientId);
        offer(stage, connectionId, encode(encoder.encodedLength(), b -> encoder.encode(b, 0)));
    }

    private void offer(final RoutingStage stage, final long connectionId, final byte[] bytes)
    {
        arm(connectionId, bytes);
        route(stage);
    }

    private void arm(final long connectionId, final byte[] bytes)
    {
        event.packet(0, connectionId, MqttVersion.V3_1_1, true, (bytes[0] & 0xFF) >>> 4, new UnsafeBuffer(bytes),
            bytes.length, null, -1);
        event.authCode = IngressEvent.AUTH_ACCEPTED;
        event.aclVerdict = IngressEvent.ACL_ALLOWED;
    }

    private long route(final RoutingStage stage)
    {
        stage.onEvent(event);
        if (event.routeLogEnd >= 0)
        {
            log.release(event.routeLogEnd); // as the release stage does
        }
        return event.routeLogEnd;
    }

    /** One routing stage routes the PUBLISH to its subscriber. */
    @Benchmark
    public long routeWhole()
    {
        event.routeShard = 0;
        return route(oneStage);
    }

    /** Routing shard 0 stamps a PUBLISH shard 1 routes, and passes it on. */
    @Benchmark
    public long stampForAnotherShard()
    {
        event.routeLogEnd = IngressEvent.NONE; // shard 0 writes nothing for it
        return route(shard0);
    }

    /** Shard 1 routes the PUBLISH shard 0 stamped for it. */
    @Benchmark
    public long routeOnShard1()
    {
        event.routeShard = 1;
        return route(shard1);
    }

    /** The auth stage's ACL check of the PUBLISH (no ACL file: what a broker without one pays). */
    @Benchmark
    public int authPublish()
    {
        access.onPublish(authEvent);
        return authEvent.aclVerdict;
    }

    /** The release stage's end of a slot that holds no log entry (a small PUBLISH routed to nobody). */
    @Benchmark
    public boolean releaseSlot()
    {
        return release.onEvent(authEvent);
    }

    private interface Writer
    {
        int write(UnsafeBuffer buffer);
    }

    private static byte[] encode(final int length, final Writer writer)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[length]);
        writer.write(buffer);
        return buffer.byteArray();
    }
}
