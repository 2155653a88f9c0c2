package io.ringmq.transport;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.AckFlyweight;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One I/O agent, stepped, between a raw client and a ring the test reads: the acknowledgements a client sends back
 * to back go on as runs, one slot each (PUBACK, PUBREC or PUBCOMP, one type to a run, as many as a slot's inline
 * bytes hold), in the order sent among the other packets, and a run that meets a full ring is read again whole.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AckRunTest
{
    private static final BrokerContext CONTEXT =
        new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0)).conclude();

    @Test
    @DisplayName("acknowledgements read back to back take one slot per run of one type; PUBREL and others go alone")
    void runsOfOneTypeShareASlot() throws Exception
    {
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT); RawClient client = connected(stepped))
        {
            final ByteArrayOutputStream sent = new ByteArrayOutputStream();
            acks(sent, PacketType.PUBACK, 1, 3);
            sent.write(RawClient.ping());
            acks(sent, PacketType.PUBCOMP, 10, 2);
            acks(sent, PacketType.PUBREL, 20, 2);
            acks(sent, PacketType.PUBREC, 30, 2);
            acks(sent, PacketType.PUBACK, 100, 70); // 64 fit in 256 inline bytes: a run of 64, then one of 6
            sent.write(RawClient.subscribe(7, "t", 1));
            client.send(sent.toByteArray());
            stepped.stepUntil(() -> stepped.ring.getCursor() == 8);
            assertThat(client.readPacket(5_000)).as("the PINGREQ between runs answered").isEqualTo(PacketType.PINGRESP);

            final RingBuffer<IngressEvent> ring = stepped.ring;
            assertRun(ring.get(1), PacketType.PUBACK, 1, 3);
            assertRun(ring.get(2), PacketType.PUBCOMP, 10, 2);
            assertRun(ring.get(3), PacketType.PUBREL, 20, 1);
            assertRun(ring.get(4), PacketType.PUBREL, 21, 1);
            assertRun(ring.get(5), PacketType.PUBREC, 30, 2);
            assertRun(ring.get(6), PacketType.PUBACK, 100, 64);
            assertRun(ring.get(7), PacketType.PUBACK, 164, 6);
            assertThat(ring.get(8).packetType).isEqualTo(PacketType.SUBSCRIBE);
        }
    }

    @Test
    @DisplayName("a run that meets a full ingress ring waits, and goes on whole, in order, once there is room")
    void aRunMeetingAFullRingIsReadAgain() throws Exception
    {
        final Sequence consumed = new Sequence(); // nothing taken yet: 64 slots from the CONNECT's fill the ring
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT, consumed); RawClient client = connected(stepped))
        {
            runBehindAFullRing(stepped, client, RawClient.publish("t", new byte[]{99}, 0, 0));

            consumed.set(1); // two slots free: the run and the PUBLISH behind it
            stepped.stepUntil(() -> stepped.ring.getCursor() == 65);
            assertRun(stepped.ring.get(64), PacketType.PUBACK, 1, 5);
            assertThat(stepped.ring.get(65).packetType).isEqualTo(PacketType.PUBLISH);
            assertThat(stepped.ring.get(65).packet.getByte(stepped.ring.get(65).packetLength - 1)).isEqualTo((byte)99);
        }
    }

    @Test
    @DisplayName("the acknowledgements before a malformed packet go on before the connection's end [MQTT-4.13.1-1]")
    void aRunBeforeAMalformedPacketGoesOnFirst() throws Exception
    {
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT); RawClient client = connected(stepped))
        {
            final ByteArrayOutputStream sent = new ByteArrayOutputStream();
            acks(sent, PacketType.PUBACK, 1, 2);
            sent.write(new byte[]{0x40, 0x02, 0x00, 0x00}); // packet identifier 0 [MQTT-2.3.1-1]
            acks(sent, PacketType.PUBACK, 3, 2);
            client.send(sent.toByteArray());
            stepped.stepUntil(() -> stepped.ring.getCursor() == 2);
            assertRun(stepped.ring.get(1), PacketType.PUBACK, 1, 2);
            assertThat(stepped.ring.get(2).kind).as("the end, nothing after it")
                .isEqualTo(IngressEvent.CONNECTION_LOST);
            idle(stepped);
            assertThat(stepped.ring.getCursor()).isEqualTo(2);
        }
    }

    @Test
    @DisplayName("a run that ends the read goes on at the end of it, whole; one cut by a partial packet goes on in two")
    void aRunEndingTheReadGoesOn() throws Exception
    {
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT); RawClient client = connected(stepped))
        {
            final ByteArrayOutputStream sent = new ByteArrayOutputStream();
            acks(sent, PacketType.PUBACK, 1, 3);
            client.send(sent.toByteArray());
            stepped.stepUntil(() -> stepped.ring.getCursor() == 1);
            assertRun(stepped.ring.get(1), PacketType.PUBACK, 1, 3);

            sent.reset();
            acks(sent, PacketType.PUBCOMP, 4, 3);
            final byte[] bytes = sent.toByteArray();
            client.send(java.util.Arrays.copyOf(bytes, 10)); // two and a half
            stepped.stepUntil(() -> stepped.ring.getCursor() == 2);
            client.send(java.util.Arrays.copyOfRange(bytes, 10, bytes.length));
            stepped.stepUntil(() -> stepped.ring.getCursor() == 3);
            assertRun(stepped.ring.get(2), PacketType.PUBCOMP, 4, 2);
            assertRun(stepped.ring.get(3), PacketType.PUBCOMP, 6, 1);
        }
    }

    @Test
    @DisplayName("a run that ends the read and meets a full ingress ring goes on whole once there is room")
    void aRunEndingTheReadMeetingAFullRing() throws Exception
    {
        final Sequence consumed = new Sequence();
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT, consumed); RawClient client = connected(stepped))
        {
            runBehindAFullRing(stepped, client, new byte[0]);
            consumed.set(0);
            stepped.stepUntil(() -> stepped.ring.getCursor() == 64);
            assertRun(stepped.ring.get(64), PacketType.PUBACK, 1, 5);
        }
    }

    @Test
    @DisplayName("[MQTT-3.1.2-24] acknowledgements alone keep a connection alive: each resets its keep-alive")
    void acknowledgementsResetKeepAlive() throws Exception
    {
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT); RawClient client = connected(stepped, 1))
        {
            final long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(3); // twice the 1.5 s a silent one gets
            int packetId = 1;
            while (System.nanoTime() < end)
            {
                client.send(RawClient.ack(PacketType.PUBACK, packetId++));
                final long next = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
                while (System.nanoTime() < next)
                {
                    stepped.agent.doWork();
                    Thread.sleep(1); // the client's pace, not a wait for the agent
                }
            }
            for (long sequence = 1; sequence <= stepped.ring.getCursor(); sequence++)
            {
                assertThat(stepped.ring.get(sequence).kind).as("slot " + sequence).isEqualTo(IngressEvent.PACKET);
            }
            assertThat(stepped.ring.getCursor()).isGreaterThanOrEqualTo(9);
        }
    }

    @Test
    @DisplayName("5.0 acknowledgements with reason codes join a run; one past a slot's inline bytes goes alone, "
        + "in order")
    void mqtt5RunsAndAnAcknowledgementTooLargeForARun() throws Exception
    {
        try (SteppedAgent stepped = SteppedAgent.open(CONTEXT); RawClient client = new RawClient(stepped.port()))
        {
            stepped.agent.wire(new IoAgent[]{stepped.agent}, new Wakeable[]{Wakeable.NONE}, Wakeable.NONE);
            client.send(RawClient.connect5("c5", 60, null));
            stepped.stepUntil(() -> stepped.ring.getCursor() == 0);
            assertThat(OutboundFrame.send(stepped.outbound, stepped.ring.get(0).connectionId,
                new UnsafeBuffer(new byte[]{0x20, 0x03, 0x00, 0x00, 0x00}), 0, 5)).isTrue();
            stepped.stepUntil(() -> SteppedAgent.hasBytes(client));
            client.discardAvailable();
            final ByteArrayOutputStream sent = new ByteArrayOutputStream();
            sent.write(new byte[]{0x50, 0x03, 0x00, 0x01, (byte)0x80}); // PUBREC 1: refused
            sent.write(new byte[]{0x50, 0x02, 0x00, 0x02});
            final UnsafeBuffer large = new UnsafeBuffer(new byte[400]);
            final int largeLength = AckEncoder.encode(large, 0, PacketType.PUBREC, 3, MqttVersion.V5, 0x80,
                new MqttProperties().set(PropertyId.REASON_STRING, "x".repeat(300)));
            sent.write(large.byteArray(), 0, largeLength);
            sent.write(new byte[]{0x50, 0x02, 0x00, 0x04});
            client.send(sent.toByteArray());
            stepped.stepUntil(() -> stepped.ring.getCursor() == 3);
            final AckFlyweight ack = new AckFlyweight();
            final List<String> seen = new ArrayList<>();
            for (long sequence = 1; sequence <= 3; sequence++)
            {
                final IngressEvent event = stepped.ring.get(sequence);
                for (int offset = 0, length; offset < event.packetLength; offset += length)
                {
                    length = ack.wrapNext(event.packet, offset, event.packetLength, MqttVersion.V5);
                    assertThat(length).isPositive();
                    seen.add(sequence + ":" + ack.packetId() + "/" + ack.reasonCode());
                }
            }
            assertThat(seen).containsExactly("1:1/128", "1:2/0", "2:3/128", "3:4/0");
            assertThat(stepped.ring.get(2).packetLength).isEqualTo(largeLength);
        }
    }

    /**
     * Sends 63 PUBLISHes (slots 1..63 of a ring nothing consumes: full), PUBACKs 1..5, then {@code after}; the run
     * finds no room and stays buffered, the connection paused.
     */
    private static void runBehindAFullRing(final SteppedAgent stepped, final RawClient client, final byte[] after)
        throws Exception
    {
        final ByteArrayOutputStream sent = new ByteArrayOutputStream();
        for (int i = 0; i < 63; i++)
        {
            sent.write(RawClient.publish("t", new byte[]{(byte)i}, 0, 0));
        }
        acks(sent, PacketType.PUBACK, 1, 5);
        sent.write(after);
        client.send(sent.toByteArray());
        stepped.stepUntil(() -> stepped.ring.getCursor() == 63);
        idle(stepped);
        assertThat(stepped.ring.getCursor()).as("nothing more while the ring is full").isEqualTo(63);
    }

    /**
     * Twenty more duty cycles: time for anything the agent would still hand on.
     */
    private static void idle(final SteppedAgent stepped) throws Exception
    {
        for (int i = 0; i < 20; i++)
        {
            stepped.agent.doWork();
        }
    }

    private static RawClient connected(final SteppedAgent stepped) throws Exception
    {
        return connected(stepped, 60);
    }

    /**
     * Connects a raw 3.1.1 client through the agent and answers its CONNECT as the pipeline would (slot 0).
     */
    private static RawClient connected(final SteppedAgent stepped, final int keepAliveSeconds) throws Exception
    {
        stepped.agent.wire(new IoAgent[]{stepped.agent}, new Wakeable[]{Wakeable.NONE}, Wakeable.NONE);
        final RawClient client = new RawClient(stepped.port());
        client.send(RawClient.connect("c", true, keepAliveSeconds));
        stepped.stepUntil(() -> stepped.ring.getCursor() == 0);
        assertThat(OutboundFrame.send(stepped.outbound, stepped.ring.get(0).connectionId,
            new UnsafeBuffer(new byte[]{0x20, 0x02, 0x00, 0x00}), 0, 4)).isTrue();
        stepped.stepUntil(() -> SteppedAgent.hasBytes(client));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        return client;
    }

    private static void acks(final ByteArrayOutputStream out, final int packetType, final int firstId, final int count)
        throws java.io.IOException
    {
        for (int i = 0; i < count; i++)
        {
            out.write(RawClient.ack(packetType, firstId + i));
        }
    }

    /**
     * The slot holds exactly the acknowledgements of that type with consecutive identifiers from {@code firstId}.
     */
    private static void assertRun(final IngressEvent event, final int packetType, final int firstId, final int count)
    {
        assertThat(event.kind).isEqualTo(IngressEvent.PACKET);
        assertThat(event.packetType).isEqualTo(packetType);
        assertThat(event.packetLength).isEqualTo(4 * count);
        final List<Integer> ids = new ArrayList<>();
        for (int offset = 0; offset < event.packetLength; offset += 4)
        {
            assertThat(event.packet.getByte(offset + 1)).isEqualTo((byte)2);
            ids.add(event.packet.getShort(offset + 2, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF);
        }
        final List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < count; i++)
        {
            expected.add(firstId + i);
        }
        assertThat(ids).isEqualTo(expected);
    }
}
