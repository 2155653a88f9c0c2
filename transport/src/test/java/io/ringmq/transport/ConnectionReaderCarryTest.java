package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The read path's partial packets: a read that ends mid-packet leaves the rest in the connection's own buffer, and
 * the next read carries a rest of up to 4 KiB into the agent's scratch buffer and reads behind it there (a longer
 * one grows its own buffer). Whatever the split, every packet reaches the ingress ring whole, once, in order, with
 * its bytes as sent: just below, at and above a slot's inline size (256 bytes here), a KiB, the carry limit, and
 * larger than the scratch buffer (64 KiB).
 */
class ConnectionReaderCarryTest
{
    /** The stepped edge's slots hold 256 bytes inline. */
    private static final int INLINE = 256;
    /** InboundBuffers.CARRY_LENGTH: a rest up to this long is carried into the scratch buffer. */
    private static final int CARRY = 4 * 1024;

    @Test
    @Timeout(180)
    @DisplayName("two PUBLISHes split at every byte, for sizes around the inline size, a KiB and the carry limit: "
        + "both handed on whole and in order")
    void splitAtEveryByte() throws Exception
    {
        for (final int size : new int[]{INLINE - 1, INLINE, INLINE + 1, 1040, CARRY - 1, CARRY, CARRY + 1})
        {
            try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
            {
                final RawClient client = edge.client();
                final long id = edge.connect3(client, "split-" + size);
                final byte[] first = publishOfLength(size, 1);
                final byte[] second = publishOfLength(size, 2);
                final byte[] stream = concat(first, second);
                for (int split = 1; split < stream.length; split++)
                {
                    client.send(Arrays.copyOf(stream, split));
                    if (split >= first.length)
                    {
                        expectPublish(edge, id, first, "size " + size + " split at " + split);
                    }
                    if (split != first.length)
                    {
                        edge.step(() -> edge.agent.connectionsHoldingInbound() == 1); // the partial rest, kept
                    }
                    assertThat(edge.hasNext()).as("nothing more from a partial packet").isFalse();
                    client.send(Arrays.copyOfRange(stream, split, stream.length));
                    if (split < first.length)
                    {
                        expectPublish(edge, id, first, "size " + size + " split at " + split);
                    }
                    expectPublish(edge, id, second, "size " + size + " split at " + split);
                    edge.step(() -> edge.agent.connectionsHoldingInbound() == 0);
                }
            }
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("a stream of PUBLISHes of mixed sizes (64 B to 70 KiB, past the 64 KiB scratch buffer) sent in "
        + "chunks of random length: every one handed on whole, once, in order")
    void mixedSizesInRandomChunks() throws Exception
    {
        final SplittableRandom random = new SplittableRandom(11);
        final int[] sizes = {64, INLINE, INLINE + 1, 1040, CARRY + 1, 9000, 17_000, 70_000};
        final List<byte[]> packets = new ArrayList<>();
        final ByteArrayOutputStream stream = new ByteArrayOutputStream();
        for (int i = 0; i < 300; i++)
        {
            final byte[] packet = publishOfLength(sizes[random.nextInt(sizes.length)], i);
            packets.add(packet);
            stream.write(packet);
        }
        final byte[] bytes = stream.toByteArray();
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final long id = edge.connect3(client, "chunks");
            int sent = 0;
            int handed = 0;
            int handedEnd = packets.get(0).length;
            while (sent < bytes.length)
            {
                final int chunk = Math.min(bytes.length - sent, 1 + random.nextInt(random.nextBoolean() ? 64 : 24_000));
                client.send(Arrays.copyOfRange(bytes, sent, sent + chunk));
                sent += chunk;
                while (handed < packets.size() && handedEnd <= sent)
                {
                    expectPublish(edge, id, packets.get(handed), "packet " + handed);
                    handed++;
                    handedEnd += handed < packets.size() ? packets.get(handed).length : 0;
                }
            }
            assertThat(handed).isEqualTo(packets.size());
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 0);
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("oversized: a PUBLISH whose remaining length, completed behind a carried partial header, passes "
        + "--max-packet-size closes the connection with 0x95 before its body is buffered")
    void oversizedBehindCarriedHeader() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext().limits(l -> l.maxPacketSize(8 * 1024))))
        {
            final RawClient client = edge.client();
            final long id = edge.connect5(client, "oversized", 60, null);
            final byte[] first = RawClient.publish5("t/a", new byte[1000], 0, 0, null);
            // the next PUBLISH's first byte and one continuation byte of its remaining length end the read
            client.send(concat(first, new byte[]{0x30, (byte)0x80}));
            expectPublish(edge, id, first, "the PUBLISH before it");
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            client.send(new byte[]{(byte)0x80, 0x04}); // 65,536 bytes claimed, none of them sent
            edge.expectDisconnect(client, id, ReasonCode.PACKET_TOO_LARGE);
            assertThat(edge.counters.get(BrokerCounters.PACKET_TOO_LARGE)).isEqualTo(1);
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("malformed: a remaining length of five bytes, completed behind a carried partial header, closes "
        + "the connection with 0x81 [MQTT-1.5.5-1]")
    void malformedBehindCarriedHeader() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final long id = edge.connect5(client, "malformed", 60, null);
            final byte[] first = RawClient.publish5("t/a", new byte[2000], 0, 0, null);
            client.send(concat(first, new byte[]{0x30, (byte)0xFF, (byte)0xFF}));
            expectPublish(edge, id, first, "the PUBLISH before it");
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            client.send(new byte[]{(byte)0xFF, (byte)0xFF, 0x01});
            edge.expectDisconnect(client, id, ReasonCode.MALFORMED_PACKET);
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("malformed after a run of PUBLISHes read into the connection's own buffer: the connection closes "
        + "with 0x81 and gives its buffer back, and every PUBLISH before it is handed on whole, once, in order")
    void malformedAfterARunInItsOwnBuffer() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final long id = edge.connect5(client, "run-then-malformed", 60, null);
            final byte[] large = RawClient.publish5("t/a", new byte[9000], 0, 0, null);
            client.send(Arrays.copyOf(large, CARRY + 1000)); // a rest too long to carry: its own buffer grows
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            final List<byte[]> run = new ArrayList<>();
            final ByteArrayOutputStream rest = new ByteArrayOutputStream();
            rest.write(Arrays.copyOfRange(large, CARRY + 1000, large.length));
            for (int i = 0; i < 5; i++)
            {
                final byte[] payload = new byte[1000];
                Arrays.fill(payload, (byte)('a' + i));
                final byte[] publish = RawClient.publish5("t/run", payload, 0, 0, null);
                run.add(publish);
                rest.write(publish);
            }
            rest.write(new byte[]{0x30, (byte)0xFF, (byte)0xFF, (byte)0xFF, (byte)0xFF}); // five length bytes
            client.send(rest.toByteArray());
            expectPublish(edge, id, large, "the one completed in its own buffer");
            for (int i = 0; i < run.size(); i++)
            {
                expectPublish(edge, id, run.get(i), "run " + i);
            }
            edge.expectDisconnect(client, id, ReasonCode.MALFORMED_PACKET);
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 0);
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("truncated: a connection lost with a partial packet carried hands on nothing of it, only its end")
    void truncatedThenLost() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final long id = edge.connect3(client, "truncated");
            final byte[] first = publishOfLength(1040, 1);
            final byte[] second = publishOfLength(1040, 2);
            client.send(concat(first, Arrays.copyOf(second, 700)));
            expectPublish(edge, id, first, "the whole one");
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            client.send(Arrays.copyOfRange(second, 700, 1000));
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            client.close();
            edge.expectEnd(id, IngressEvent.CONNECTION_LOST, 0);
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 0);
        }
    }

    private static void expectPublish(final SteppedEdge edge, final long connectionId, final byte[] expected,
        final String what)
    {
        final IngressEvent event;
        try
        {
            event = edge.next();
        }
        catch (final AssertionError ex)
        {
            throw new AssertionError(what + ": not handed on", ex);
        }
        assertThat(event.kind).as(what).isEqualTo(IngressEvent.PACKET);
        assertThat(event.packetType).as(what).isEqualTo(PacketType.PUBLISH);
        assertThat(event.connectionId).as(what).isEqualTo(connectionId);
        assertThat(event.logEnd < 0).as(what + ": inline only when it fits").isEqualTo(expected.length <= INLINE);
        final byte[] seen = new byte[event.packetLength];
        event.packet.getBytes(0, seen);
        assertThat(seen).as(what).isEqualTo(expected);
    }

    /**
     * @return an MQTT 3.1.1 QoS 0 PUBLISH of exactly {@code length} bytes, its payload a pattern of {@code seed}.
     */
    static byte[] publishOfLength(final int length, final int seed)
    {
        for (int payload = length - 7; payload >= 0; payload--)
        {
            final byte[] bytes = new byte[payload];
            for (int i = 0; i < payload; i++)
            {
                bytes[i] = (byte)(i * 31 + seed);
            }
            final byte[] packet = RawClient.publish("t/s", bytes, 0, 0);
            if (packet.length == length)
            {
                return packet;
            }
        }
        throw new IllegalArgumentException("no PUBLISH of " + length + " bytes");
    }

    private static byte[] concat(final byte[] a, final byte[] b)
    {
        final byte[] both = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}
