package io.ringmq.transport;

import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.MessageLog;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
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

    @Test
    @DisplayName("in a batch, PUBLISHes that follow one another in what was read are copied into the log in one go "
        + "and their slots published only then, in order, before any slot claimed after them")
    void aBatchCopiesARunOnceAndPublishesItFirst()
    {
        final UnsafeBuffer read = new UnsafeBuffer(new byte[1024]);
        final int length = twoPublishesInABatch(read, (byte)'a', 0, (byte)'b');
        for (int i = 0; i < 2; i++)
        {
            handPublish(10 + i, read, i * length, length);
        }
        assertThat(ring.getCursor()).as("claimed, not published").isEqualTo(1);
        assertThat(ring.isAvailable(0)).isFalse();
        assertThat(proxy.packet(12, MqttVersion.V3_1_1, true, PacketType.PINGREQ, bytes, 2)).isTrue(); // inline
        assertThat(ring.isAvailable(0) && ring.isAvailable(1) && ring.isAvailable(2)).isTrue();
        for (int i = 0; i < 2; i++)
        {
            final IngressEvent event = ring.get(i);
            assertThat(event.located).isTrue();
            assertThat(bytesOf(event.packet, 0, length)).isEqualTo(bytesOf(read, i * length, length));
            assertThat((char)event.packet.getByte(event.payloadOffset)).isEqualTo(i == 0 ? 'a' : 'b');
        }
        proxy.endBatch();
        assertThat(proxy.takePublished()).isTrue();
    }

    @Test
    @DisplayName("a batch's PUBLISHes are copied when the batch ends or is flushed, before their bytes may change; a "
        + "packet handed without its layout (a resolved topic alias, from a reused buffer) is copied at once")
    void aBatchIsCopiedBeforeItsBytesChange()
    {
        final UnsafeBuffer read = new UnsafeBuffer(new byte[1024]);
        final int length = encodePublish(read, 0, (byte)'x');
        final byte[] original = bytesOf(read, 0, length);
        proxy.beginBatch();
        handPublish(1, read, 0, length);
        proxy.flush(); // as a connection closed in the batch does before its buffer goes back
        assertThat(ring.isAvailable(0)).isTrue();
        read.setMemory(0, length, (byte)0);
        assertThat(bytesOf(ring.get(0).packet, 0, length)).isEqualTo(original);

        final UnsafeBuffer reused = new UnsafeBuffer(original.clone());
        assertThat(proxy.packet(2, MqttVersion.V3_1_1, true, PacketType.PUBLISH, reused, length)).isTrue();
        assertThat(ring.isAvailable(1)).as("published at once").isTrue();
        reused.setMemory(0, length, (byte)0);
        assertThat(bytesOf(ring.get(1).packet, 0, length)).isEqualTo(original);
        assertThat(ring.get(1).located).isFalse();
        proxy.endBatch();
    }

    @Test
    @DisplayName("a run breaks where the next PUBLISH is not right behind it in what was read: each part is copied "
        + "from where it was")
    void aRunBreaksWhereTheBytesDoNotFollow()
    {
        final UnsafeBuffer read = new UnsafeBuffer(new byte[1024]);
        final int length = twoPublishesInABatch(read, (byte)'p', 2, (byte)'q'); // a PINGREQ's two bytes between
        for (int i = 0; i < 2; i++)
        {
            handPublish(1, read, i * (length + 2), length);
        }
        assertThat(ring.isAvailable(0)).as("the first run, copied when the second began").isTrue();
        assertThat(ring.isAvailable(1)).isFalse();
        proxy.endBatch();
        assertThat(ring.isAvailable(1)).isTrue();
        assertThat((char)ring.get(0).packet.getByte(ring.get(0).payloadOffset)).isEqualTo('p');
        assertThat((char)ring.get(1).packet.getByte(ring.get(1).payloadOffset)).isEqualTo('q');
        assertThat(log.used()).isEqualTo(2L * length);
    }

    @Test
    @DisplayName("a run breaks where another producer claimed a slot between two of its PUBLISHes: that slot is "
        + "never published by this one, whose bytes follow all the same")
    void aRunBreaksAtAnotherProducersSlot()
    {
        final UnsafeBuffer read = new UnsafeBuffer(new byte[1024]);
        final int length = twoPublishesInABatch(read, (byte)'m', 0, (byte)'n');
        handPublish(1, read, 0, length);
        final long other = ring.next(); // another I/O agent, or the routing stage's tick, on a multi-producer ring
        handPublish(1, read, length, length);
        proxy.endBatch();
        assertThat(ring.isAvailable(0)).isTrue();
        assertThat(ring.isAvailable(other)).as("the other producer's slot, still its own to publish").isFalse();
        assertThat(ring.isAvailable(2)).isTrue();
        assertThat((char)ring.get(2).packet.getByte(ring.get(2).payloadOffset)).isEqualTo('n');
        ring.publish(other);
    }

    /**
     * Hands the PUBLISH at {@code offset} in what was read, with its layout, as the I/O agent does: a view of it from
     * its first byte, wrapped by the flyweight.
     */
    private void handPublish(final long connectionId, final UnsafeBuffer read, final int offset, final int length)
    {
        final UnsafeBuffer view = new UnsafeBuffer(read, offset, length);
        final PublishFlyweight publish = new PublishFlyweight();
        assertThat(publish.wrap(view, 0, length, MqttVersion.V3_1_1)).isEqualTo(length);
        assertThat(proxy.publish(connectionId, MqttVersion.V3_1_1, true, view, length, publish)).isTrue();
    }

    /**
     * Two PUBLISHes as one read holds them ({@link #encodePublish}, {@code gap} bytes between them), and a batch
     * begun for them.
     *
     * @return the length of each.
     */
    private int twoPublishesInABatch(final UnsafeBuffer read, final byte first, final int gap, final byte second)
    {
        final int length = encodePublish(read, 0, first);
        encodePublish(read, length + gap, second);
        proxy.beginBatch();
        return length;
    }

    /**
     * A QoS 0 PUBLISH larger than a slot's 64 inline bytes, its 100-byte payload all {@code fill}.
     */
    private static int encodePublish(final UnsafeBuffer buffer, final int offset, final byte fill)
    {
        final byte[] payload = new byte[100];
        java.util.Arrays.fill(payload, fill);
        return new PublishEncoder().reset().version(MqttVersion.V3_1_1).qos(0).topic("t/run").payload(payload)
            .encode(buffer, offset);
    }

    private static byte[] bytesOf(final org.agrona.DirectBuffer buffer, final int offset, final int length)
    {
        final byte[] copy = new byte[length];
        buffer.getBytes(offset, copy);
        return copy;
    }
}
