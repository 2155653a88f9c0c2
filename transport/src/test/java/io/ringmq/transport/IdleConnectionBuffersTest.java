package io.ringmq.transport;

import io.netty.buffer.PooledByteBufAllocator;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.IngressEvent;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Idle connections hold no pooled buffer: a connection takes its inbound buffer only while a partial packet waits
 * and its outbound buffer only while bytes wait for the socket, and gives each back exactly once, however the
 * connection ends. Counted two ways: the agent's connections that hold a buffer, and the bytes netty's pool has
 * handed out and not had back ({@code pinnedDirectMemory} + {@code pinnedHeapMemory}, exact, thread caches aside).
 */
class IdleConnectionBuffersTest
{
    private static final int CONNECTIONS = 300;
    /** Far less than one 1 KiB buffer per connection: what other threads of the test JVM may pin meanwhile. */
    private static final long TOLERANCE_BYTES = CONNECTIONS * 128L;

    @Test
    @Timeout(60)
    @DisplayName("a WebSocket connection that went idle, then pinged only at the WebSocket level (a proxy's "
        + "keep-alive, MQTT keep-alive 0), holds no frame buffer once its pong is written")
    void webSocketPingThenIdleHoldsNoFrameBuffer() throws Exception
    {
        final io.ringmq.pipeline.ListenerSettings webSocket = new io.ringmq.pipeline.ListenerSettings(0, null)
            .protocol(io.ringmq.pipeline.ListenerSettings.Protocol.WEBSOCKETS);
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext(), webSocket);
            java.net.Socket socket = new java.net.Socket("127.0.0.1", edge.port()))
        {
            final java.io.InputStream in = socket.getInputStream();
            final java.io.OutputStream out = socket.getOutputStream();
            out.write(("GET /mqtt HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + WebSocketLayerTest.RFC_KEY + "\r\n" +
                "Sec-WebSocket-Protocol: mqtt\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            final StringBuilder response = new StringBuilder();
            edge.step(() -> readAvailable(in, response).endsWith("\r\n\r\n"));
            assertThat(response.toString()).startsWith("HTTP/1.1 101 ");
            out.write(WebSocketLayerTest.frame(0x82, RawClient.connect("ws-idle", true, 0)));
            final IngressEvent connect = edge.next();
            assertThat(connect.packetType).isEqualTo(PacketType.CONNECT);
            edge.send(connect.connectionId, SteppedEdge.CONNACK_V3);
            final StringBuilder connack = new StringBuilder();
            edge.step(() -> readAvailable(in, connack).length() >= 2 + 4); // a binary frame's header, the CONNACK
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 0 &&
                edge.agent.webSocketLayersHoldingBuffers() == 0);

            out.write(WebSocketLayerTest.frame(0x89, "hi".getBytes(StandardCharsets.US_ASCII))); // a ping
            final StringBuilder pong = new StringBuilder();
            edge.step(() -> readAvailable(in, pong).length() >= 2 + 2);
            assertThat(pong.charAt(0)).as("a pong").isEqualTo((char)0x8A);
            edge.step(() -> edge.agent.webSocketLayersHoldingBuffers() == 0); // given back once unused for a sweep
            assertThat(edge.agent.connectionCount()).isEqualTo(1);
        }
    }

    private static String readAvailable(final java.io.InputStream in, final StringBuilder into)
    {
        try
        {
            while (in.available() > 0)
            {
                into.append((char)in.read());
            }
        }
        catch (final java.io.IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
        return into.toString();
    }

    @Test
    @Timeout(120)
    @DisplayName("many connections that went idle (CONNECT, CONNACK, PINGREQ answered) hold no pooled buffer; closed, "
        + "the pool has every byte back")
    void idleConnectionsHoldNoBuffer() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final long before = pinned();
            final List<RawClient> clients = new ArrayList<>();
            final List<Long> ids = new ArrayList<>();
            for (int i = 0; i < CONNECTIONS; i++)
            {
                final RawClient client = edge.client();
                clients.add(client);
                ids.add(edge.connect3(client, "idle-" + i));
            }
            for (final RawClient client : clients)
            {
                client.send(RawClient.ping());
                assertThat(edge.read(client)).isEqualTo(PacketType.PINGRESP);
            }
            // a buffer stays while it is used, and goes back within two sweeps once it is not
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 0);
            assertThat(edge.agent.connectionCount()).isEqualTo(CONNECTIONS);
            assertThat(pinned() - before).as("pool bytes held by %d idle connections", CONNECTIONS)
                .isLessThan(TOLERANCE_BYTES);

            for (int i = 0; i < CONNECTIONS; i++)
            {
                clients.get(i).close();
                edge.expectEnd(ids.get(i), IngressEvent.CONNECTION_LOST, 0);
            }
            assertThat(edge.agent.connectionCount()).isZero();
            assertThat(pinned() - before).as("pool bytes after every connection closed").isLessThan(TOLERANCE_BYTES);
        }
    }

    @Test
    @Timeout(30)
    @DisplayName("bad input: a partial PUBLISH then idle keeps one buffer, only while it is partial; the rest of it "
        + "arriving hands the PUBLISH on, and the buffer goes back once unused")
    void partialPacketThenIdle() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient client = edge.client();
            final long id = edge.connect3(client, "partial");
            final byte[] publish = RawClient.publish("t/partial", new byte[3000], 0, 0);
            client.send(Arrays.copyOf(publish, 1500));
            edge.step(() -> edge.agent.connectionsHoldingInbound() == 1);
            for (int i = 0; i < 10; i++)
            {
                edge.agent.doWork(); // idle with half a packet: it is kept, not handed on
            }
            assertThat(edge.hasNext()).as("nothing handed on from half a packet").isFalse();
            assertThat(edge.agent.connectionsHoldingInbound()).isEqualTo(1);

            client.send(Arrays.copyOfRange(publish, 1500, publish.length));
            final IngressEvent event = edge.next();
            assertThat(event.connectionId).isEqualTo(id);
            assertThat(event.packetType).isEqualTo(PacketType.PUBLISH);
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 0); // given back once unused for a sweep
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("bad input: partial packets then close (a cut CONNECT, a cut PUBLISH after CONNECT, a CONNECT with a "
        + "PINGREQ cut behind it) free their buffers exactly once")
    void partialPacketThenClose() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final long before = pinned();
            for (int round = 0; round < 100; round++)
            {
                final RawClient cutConnect = edge.client();
                cutConnect.send(Arrays.copyOf(RawClient.connect("cut-" + round, true, 60), 7));
                final RawClient cutPublish = edge.client();
                final long id = edge.connect3(cutPublish, "cut-publish-" + round);
                cutPublish.send(Arrays.copyOf(
                    RawClient.publish("t", "payload".getBytes(StandardCharsets.UTF_8), 1, 1), 5));
                edge.step(() -> edge.agent.connectionsHoldingInbound() == 2);

                cutConnect.close(); // never got as far as CONNECT: no end goes to the pipeline
                cutPublish.close();
                edge.expectEnd(id, IngressEvent.CONNECTION_LOST, 0);
                edge.step(() -> edge.agent.connectionCount() == 0);
            }
            final RawClient held = edge.client();
            final byte[] connect = RawClient.connect("held", true, 60);
            final byte[] both = Arrays.copyOf(connect, connect.length + 1);
            both[connect.length] = (byte)0xC0; // a PINGREQ's first byte, its length never comes
            held.send(both);
            final IngressEvent connectEvent = edge.next();
            assertThat(connectEvent.packetType).isEqualTo(PacketType.CONNECT);
            assertThat(edge.agent.connectionsHoldingInbound()).as("the cut PINGREQ waits behind the CONNECT")
                .isEqualTo(1);
            edge.answer(connectEvent.connectionId, SteppedEdge.CONNACK_V3, held, PacketType.CONNACK);
            for (int i = 0; i < 10; i++)
            {
                edge.agent.doWork(); // the held byte is framed after the CONNACK: still partial, still kept
            }
            assertThat(edge.agent.connectionsHoldingInbound()).as("the cut PINGREQ waits in a buffer").isEqualTo(1);
            held.close();
            edge.expectEnd(connectEvent.connectionId, IngressEvent.CONNECTION_LOST, 0);
            assertThat(edge.agent.connectionCount()).isZero();
            assertThat(pinned() - before).as("pool bytes after 201 cut connections closed")
                .isLessThan(TOLERANCE_BYTES);
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("an outbound buffer is held while the socket has not taken its bytes: a client that does not read "
        + "keeps one, and once it read everything and nothing more is sent the buffer goes back")
    void outboundBufferOnlyWhileBlocked() throws Exception
    {
        final int publishes = 512;
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final RawClient slow = new RawClient(edge.port(), 4096);
            final long id = edge.connect3(slow, "slow");
            for (int i = 0; i < publishes; i++)
            {
                // QoS 1 (never shed): 8 MiB in all, more than the sockets between them hold
                edge.send(id, RawClient.publish("t", new byte[16 * 1024], 1, i + 1));
                if (i % 8 == 7)
                {
                    edge.step(() -> !edge.outboundPending());
                }
            }
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 1 && !edge.outboundPending());
            int read = 0;
            final long deadline = System.nanoTime() + 30_000_000_000L;
            while (read < publishes && System.nanoTime() < deadline)
            {
                edge.agent.doWork();
                if (slow.hasBytes())
                {
                    assertThat(slow.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
                    read++;
                }
            }
            assertThat(read).as("every PUBLISH arrived").isEqualTo(publishes);
            edge.step(() -> edge.agent.connectionsHoldingBuffers() == 0);
            slow.close();
            edge.expectEnd(id, IngressEvent.CONNECTION_LOST, 0);
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("[MQTT-3.12.4-1] idle connections answering PINGREQs take nothing from the pool: right after each "
        + "PINGRESP none holds a buffer (none waits for a sweep to give it back), and the pool's pinned bytes stay put")
    void keepAliveAnswersTakeNoPooledBuffer() throws Exception
    {
        final int connections = 50;
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            final List<RawClient> clients = new ArrayList<>();
            for (int i = 0; i < connections; i++)
            {
                final RawClient client = edge.client();
                clients.add(client);
                edge.connect3(client, "keep-alive-" + i);
                assertThat(edge.agent.connectionsHoldingBuffers()).as("the CONNACK took no buffer").isZero();
            }
            final long before = pinned();
            for (int round = 0; round < 5; round++)
            {
                for (final RawClient client : clients)
                {
                    client.send(RawClient.ping());
                }
                for (final RawClient client : clients)
                {
                    assertThat(edge.read(client)).isEqualTo(PacketType.PINGRESP);
                }
                assertThat(edge.agent.connectionsHoldingBuffers()).as("buffers held after round %d", round).isZero();
            }
            assertThat(pinned() - before).as("pool bytes taken by %d keep-alives", 5 * connections)
                .isLessThan(TOLERANCE_BYTES);
        }
    }

    private static long pinned()
    {
        return PooledByteBufAllocator.DEFAULT.pinnedDirectMemory() + PooledByteBufAllocator.DEFAULT.pinnedHeapMemory();
    }
}
