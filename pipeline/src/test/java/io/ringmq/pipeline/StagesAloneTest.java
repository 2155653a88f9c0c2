package io.ringmq.pipeline;

import io.ringmq.pipeline.delivery.DeliveryShard;
import io.ringmq.pipeline.delivery.ShardHandover;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.collections.IntArrayList;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The routing stage and a delivery shard, each stepped on its own with slots laid out by hand, as Aeron's tests
 * step one agent: what crosses between them is only what the slot and the routing output say.
 */
class StagesAloneTest
{
    private final BrokerContext context = new BrokerContext().conclude();
    private final BrokerCounters counters = new BrokerCounters();

    @Test
    @DisplayName("routing alone: session ids, fan-out targets folded to the highest QoS [MQTT-3.3.5-1], a refused "
        + "CONNECT gets no session, and a clean session's id is announced as discarded")
    void routingAlone()
    {
        final MessageLog log = new MessageLog(1 << 20);
        final RoutingStage routing = new RoutingStage(context, counters, log);
        final RouteOutput output = new RouteOutput();

        final IngressEvent subscriber = admitted(connect("sub", true), 0, 1);
        assertThat(routing.onEvent(subscriber)).isTrue();
        assertThat(subscriber.sessionId).isZero();
        assertThat(subscriber.sessionNew).isTrue();
        assertThat(routing.onEvent(packet(subscribe("t/+", 1), 0, 1))).isTrue();
        assertThat(routing.onEvent(packet(subscribe("t/x", 0), 0, 1))).isTrue();

        final IngressEvent refused = packet(connect("nobody", true), 1, 9); // no AUTH_ACCEPTED: fail closed
        routing.onEvent(refused);
        assertThat(refused.sessionId).isEqualTo(IngressEvent.NONE);

        final IngressEvent publisher = admitted(connect("pub", true), 1, 2);
        routing.onEvent(publisher);
        assertThat(publisher.sessionId).isEqualTo(1);
        final IngressEvent message = packet(publish("t/x", 2, 7, false), 1, 2);
        routing.onEvent(message);
        assertThat(message.routed).isTrue();
        assertThat(message.qos).isEqualTo(2);
        assertThat(message.packetId).isEqualTo(7);
        assertThat(message.targetCount).as("one target for two matching filters").isEqualTo(1);
        output.wrap(log, message);
        assertThat(output.targetSession(0)).isZero();
        assertThat(output.targetQos(0)).as("the higher granted QoS, capped by the PUBLISH").isEqualTo(1);
        assertThat(output.targetShard(0)).as("the shard of the subscriber's I/O agent").isZero();

        final IngressEvent gone = new IngressEvent(256);
        gone.end(IngressEvent.CONNECTION_LOST, 0, 1, MqttVersion.V3_1_1);
        routing.onEvent(gone);
        assertThat(gone.sessionId).isZero();
        assertThat(gone.discardedCount).as("the clean session ends with its connection").isEqualTo(1);
        assertThat(output.wrap(log, gone).discarded(0)).isZero();
        assertThat(routing.sessionCount()).isEqualTo(1);
    }

    @Test
    @DisplayName("a delivery shard alone: CONNACK, a PUBLISH encoded once with its packet id patched, PUBACK to the "
        + "publisher, the window freed by PUBACK [MQTT-4.3.2-1]")
    void deliveryShardAlone()
    {
        final PipelineTest.RecordingOutbound outbound = new PipelineTest.RecordingOutbound();
        final MessageLog routeLog = new MessageLog(1 << 20);
        final DeliveryShard shard = new DeliveryShard(0, new BrokerContext().limits(l -> l.maxInflight(1))
            .conclude(), outbound,
            counters, routeLog, new ShardHandover(1));

        final IngressEvent connect = admitted(connect("sub", true), 0, 1);
        connect.sessionId = 0;
        connect.sessionNew = true;
        assertThat(shard.onEvent(connect)).isTrue();
        assertThat(outbound.takeTypes(1)).containsExactly(PacketType.CONNACK);

        final IngressEvent publisher = admitted(connect("pub", true), 0, 2);
        publisher.sessionId = 1;
        publisher.sessionNew = true;
        shard.onEvent(publisher);
        outbound.takeTypes(2);

        for (int i = 1; i <= 2; i++)
        {
            final IngressEvent message = routedPublish(publish("t", 1, 10 + i, false), 2, 1);
            final RouteOutput.Writer writer = new RouteOutput.Writer();
            writer.addTarget(0, 1, false, 0, 0);
            commit(writer, routeLog, message);
            shard.onEvent(message);
            routeLog.release(message.routeLogEnd);
        }
        assertThat(outbound.takeTypes(2)).containsExactly(PacketType.PUBACK, PacketType.PUBACK);
        final List<byte[]> delivered = outbound.takePackets(1);
        assertThat(delivered).as("a window of one: the second waits").hasSize(1);
        final PacketDecoder decoder = new PacketDecoder();
        decoder.decode(new UnsafeBuffer(delivered.get(0)), 0, delivered.get(0).length, MqttVersion.V3_1_1, 1 << 20);
        assertThat(decoder.publish().packetId()).isEqualTo(1);

        final IngressEvent puback = packet(ack(PacketType.PUBACK, 1), 0, 1);
        puback.sessionId = 0;
        shard.onEvent(puback);
        assertThat(outbound.takeTypes(1)).as("the queued one goes out").containsExactly(PacketType.PUBLISH);
    }

    private static IngressEvent packet(final byte[] bytes, final int agent, final long connectionId)
    {
        final IngressEvent event = new IngressEvent(256);
        event.packet(agent, connectionId, MqttVersion.V3_1_1, true, (bytes[0] & 0xFF) >>> 4, new UnsafeBuffer(bytes),
            bytes.length, null, -1);
        event.aclVerdict = IngressEvent.ACL_ALLOWED; // as the auth stage grants it without an ACL file
        return event;
    }

    /**
     * A CONNECT the auth stage admitted.
     */
    private static IngressEvent admitted(final byte[] connect, final int agent, final long connectionId)
    {
        final IngressEvent event = packet(connect, agent, connectionId);
        event.authCode = IngressEvent.AUTH_ACCEPTED;
        return event;
    }

    /**
     * A PUBLISH as routing leaves it: routed, with its coordinates.
     */
    private static IngressEvent routedPublish(final byte[] bytes, final long connectionId, final int sessionId)
    {
        final IngressEvent event = packet(bytes, 0, connectionId);
        final PublishFlyweight publish = new PublishFlyweight();
        publish.wrap(event.packet, 0, event.packetLength, MqttVersion.V3_1_1);
        event.sessionId = sessionId;
        event.routed = true;
        event.qos = publish.qos();
        event.packetId = publish.packetId();
        event.topicOffset = publish.topic().offset();
        event.topicLength = publish.topic().length();
        event.payloadOffset = publish.payload().offset();
        event.payloadLength = publish.payload().length();
        return event;
    }

    /**
     * Writes a routing output as the routing stage commits it.
     */
    private static void commit(final RouteOutput.Writer writer, final MessageLog log, final IngressEvent event)
    {
        final int length = writer.length(0);
        final long end = log.claim(length);
        writer.write(log.buffer(), log.indexOf(end, length), new IntArrayList(), 0, event);
        event.routeLogEnd = end;
        event.routeLogLength = length;
    }
}
