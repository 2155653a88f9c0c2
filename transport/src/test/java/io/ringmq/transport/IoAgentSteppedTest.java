package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent, stepped by the test ({@code doWork()} on the test's thread, no runner), between a real client
 * socket and a ring the test reads and an outbound ring the test writes: what it hands on, and what it answers.
 */
class IoAgentSteppedTest
{
    @Test
    @Timeout(30)
    @DisplayName("stepped: a CONNECT lands in a slot as laid out; CONNACK first [MQTT-3.2.0-1]; a PINGREQ is answered "
        + "by the agent itself; a PUBLISH lands with its bytes")
    void stepsOneAgent() throws Exception
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)).conclude();
        try (SteppedAgent stepped = SteppedAgent.open(context))
        {
            final RingBuffer<IngressEvent> ring = stepped.ring;
            final ManyToOneRingBuffer outbound = stepped.outbound;
            final IoAgent agent = stepped.agent;
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{Wakeable.NONE}, Wakeable.NONE);
            try (RawClient client = new RawClient(stepped.port()))
            {
                client.send(RawClient.connect("c", true, 60));
                stepped.stepUntil(() -> ring.getCursor() == 0);
                final IngressEvent connect = ring.get(0);
                assertThat(connect.kind).isEqualTo(IngressEvent.PACKET);
                assertThat(connect.packetType).isEqualTo(PacketType.CONNECT);
                assertThat(connect.loopback).isTrue();
                assertThat(connect.version).isEqualTo(MqttVersion.V3_1_1);
                assertThat(connect.authCode).as("no verdict yet").isEqualTo(IngressEvent.AUTH_UNDECIDED);

                client.send(RawClient.ping()); // before the CONNACK: held, answered after it
                for (int i = 0; i < 5; i++)
                {
                    agent.doWork();
                }
                assertThat(OutboundFrame.send(outbound, connect.connectionId,
                    new UnsafeBuffer(new byte[]{0x20, 0x02, 0x00, 0x00}), 0, 4)).isTrue(); // the pipeline's CONNACK
                stepped.stepUntil(() -> SteppedAgent.hasBytes(client));
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
                stepped.stepUntil(() -> SteppedAgent.hasBytes(client));
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);

                final byte[] publish = RawClient.publish("t", "hello".getBytes(StandardCharsets.UTF_8), 1, 3);
                client.send(publish);
                stepped.stepUntil(() -> ring.getCursor() == 1);
                final IngressEvent message = ring.get(1);
                assertThat(message.packetType).isEqualTo(PacketType.PUBLISH);
                assertThat(message.connectionId).isEqualTo(connect.connectionId);
                final byte[] seen = new byte[message.packetLength];
                message.packet.getBytes(0, seen);
                assertThat(seen).isEqualTo(publish);
            }
            agent.onClose();
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("stepped: a connection end that a stage's flush leaves waiting for ring room keeps the agent " +
        "unsettled, so the shared thread does not sleep on it, and the next cycle hands it on")
    void endWaitingForRoomIsNotSettled() throws Exception
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)).conclude();
        final com.lmax.disruptor.Sequence consumed = new com.lmax.disruptor.Sequence(-1);
        try (SteppedAgent stepped = SteppedAgent.open(context, consumed))
        {
            final RingBuffer<IngressEvent> ring = stepped.ring;
            final IoAgent agent = stepped.agent;
            agent.wire(new IoAgent[]{agent}, new Wakeable[]{Wakeable.NONE}, Wakeable.NONE);
            try (RawClient client = new RawClient(stepped.port()))
            {
                client.send(RawClient.connect("c", true, 60));
                stepped.stepUntil(() -> ring.getCursor() == 0);
                final long id = ring.get(0).connectionId;
                // the shared mode's delivery stage: CONNACK by a direct call, flushed at its end of batch
                agent.send(id, new UnsafeBuffer(new byte[]{0x20, 0x02, 0x00, 0x00}), 0, 4);
                agent.flushTouched();
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
                consumed.set(0);
                for (int i = 0; i < 5; i++)
                {
                    agent.doWork(); // quiet cycles: nothing waits
                }
                for (int i = 0; i < ring.getBufferSize(); i++)
                {
                    ring.publish(ring.next()); // the cycle's reads filled the ring exactly: nobody paused
                }
                assertThat(agent.settled()).isTrue();
                // the stages' part of the same cycle: delivery closes the connection after its flush, and its
                // end meets the full ring; then the release stage frees every slot (ring <= the batch limit)
                agent.closeAfterFlush(id, false);
                agent.flushTouched();
                consumed.set(ring.getCursor());
                final long cursor = ring.getCursor();
                assertThat(agent.settled() && !agent.hasPendingWork()).as("asleep with an end unpublished")
                    .isFalse();
                agent.doWork();
                assertThat(ring.getCursor()).as("the end handed on").isEqualTo(cursor + 1);
                assertThat(ring.get(cursor + 1).kind).isEqualTo(IngressEvent.CONNECTION_LOST);
            }
            agent.onClose();
        }
    }
}
