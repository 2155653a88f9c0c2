package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The I/O agent's side of the ingress ring, stepped by hand over a ring whose only consumer the test moves.
 */
class IngressProxyTest
{
    private final RingBuffer<IngressEvent> ring =
        RingBuffer.createMultiProducer(() -> new IngressEvent(64), 4, new BlockingWaitStrategy());
    private final Sequence consumer = new Sequence(-1);
    private final MessageLog log = new MessageLog(1 << 16);
    private final IngressProxy proxy = new IngressProxy(ring, log, 0);
    private final UnsafeBuffer bytes = new UnsafeBuffer(new byte[1024]);

    IngressProxyTest()
    {
        ring.addGatingSequences(consumer);
    }

    @Test
    @DisplayName("with a full ring, a client's new CONNECT never overtakes the end of its previous connection")
    void anEndIsNeverOvertaken()
    {
        for (int i = 0; i < 4; i++)
        {
            assertThat(proxy.packet(10 + i, MqttVersion.V3_1_1, true, PacketType.PUBLISH, bytes, 8)).isTrue();
        }
        proxy.end(1, IngressEvent.CONNECTION_LOST, MqttVersion.V3_1_1, 0, IngressEvent.NONE); // no room: it waits
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.CONNECT, bytes, 16)).isFalse();

        consumer.set(0); // one slot free: the end takes it, the CONNECT still waits
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.CONNECT, bytes, 16)).isFalse();
        assertThat(ring.get(4).kind).isEqualTo(IngressEvent.CONNECTION_LOST);
        assertThat(ring.get(4).connectionId).isEqualTo(1);

        consumer.set(1);
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.CONNECT, bytes, 16)).isTrue();
        assertThat(ring.get(5).packetType).isEqualTo(PacketType.CONNECT);
        assertThat(ring.get(5).connectionId).isEqualTo(2);
    }

    @Test
    @DisplayName("an end that waited for room keeps its reason code and DISCONNECT session expiry interval")
    void aWaitingEndKeepsItsReasonAndExpiry()
    {
        for (int i = 0; i < 4; i++)
        {
            assertThat(proxy.packet(10 + i, MqttVersion.V5, true, PacketType.PUBLISH, bytes, 8)).isTrue();
        }
        proxy.end(1, IngressEvent.DISCONNECTED, MqttVersion.V5, 0x04, 4_000_000_000L);
        proxy.end(2, IngressEvent.CONNECTION_LOST, MqttVersion.V5, 0x8D, IngressEvent.NONE);
        consumer.set(1);
        assertThat(proxy.retryEnds()).isEqualTo(2);
        assertThat(ring.get(4).kind).isEqualTo(IngressEvent.DISCONNECTED);
        assertThat(ring.get(4).reasonCode).isEqualTo(0x04);
        assertThat(ring.get(4).sessionExpiryInterval).isEqualTo(4_000_000_000L);
        assertThat(ring.get(5).connectionId).isEqualTo(2);
        assertThat(ring.get(5).reasonCode).isEqualTo(0x8D);
        assertThat(ring.get(5).sessionExpiryInterval).isEqualTo(IngressEvent.NONE);
    }

    @Test
    @DisplayName("a packet larger than a slot goes to the message log; with no slot, its log entry is given back")
    void largePacketsGoToTheLogAndAreRolledBack()
    {
        for (int i = 0; i < 4; i++)
        {
            assertThat(proxy.packet(10 + i, MqttVersion.V3_1_1, true, PacketType.PUBLISH, bytes, 8)).isTrue();
        }
        final long before = log.tail();
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.PUBLISH, bytes, 1000)).isFalse();
        assertThat(log.tail()).as("rolled back").isEqualTo(before);

        consumer.set(0);
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.PUBLISH, bytes, 1000)).isTrue();
        assertThat(ring.get(4).logEnd).isEqualTo(before + 1000);
        assertThat(ring.get(4).packet.capacity()).isEqualTo(1000);
        assertThat(log.used()).isEqualTo(1000);
    }
}
