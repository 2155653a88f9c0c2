package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link WebSocketLayer} over a real loopback socket, with hand-written RFC 6455 bytes: the Upgrade handshake
 * accepted and refused, masked and fragmented frames, MQTT packets across frames and several in one, ping, pong,
 * close, every protocol error, oversized headers and lengths, and everything again a byte at a time.
 */
@Timeout(30)
class WebSocketLayerTest
{
    /** RFC 6455 section 1.3's key and the accept value it gives. */
    static final String RFC_KEY = "dGhlIHNhbXBsZSBub25jZQ==";
    static final String RFC_ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
    /** RFC 6455 section 5.7's masking key. */
    static final byte[] MASK = {0x37, (byte)0xfa, 0x21, 0x3d};
    /** An MQTT 3.1.1 CONNECT (client id "ws", keep-alive 60) and a PINGREQ. */
    static final byte[] CONNECT = {0x10, 0x0E, 0, 4, 'M', 'Q', 'T', 'T', 4, 2, 0, 60, 0, 2, 'w', 's'};
    static final byte[] PINGREQ = {(byte)0xC0, 0};

    @Test
    @DisplayName("Sec-WebSocket-Accept of RFC 6455 section 1.3's example key")
    void acceptKeyOfTheRfcExample()
    {
        assertThat(WebSocketHandshake.acceptKey(RFC_KEY)).isEqualTo(RFC_ACCEPT);
    }

    @Test
    @DisplayName("MQTT-6.0.0-4: the Upgrade is answered with 101, the key's accept value and subprotocol mqtt")
    void upgradeWithSubprotocolMqtt() throws IOException
    {
        assertThat(handshake("/mqtt", "/mqtt", "Sec-WebSocket-Protocol: mqtt")).isEqualTo(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Accept: " + RFC_ACCEPT + "\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"mqtt|mqtt", "mqttv3.1|mqttv3.1", "foo, mqtt|mqtt", "mqttv3.1, mqtt|mqtt",
        "MQTT|MQTT"})
    @DisplayName("MQTT-6.0.0-4: the mqtt subprotocol (or mqttv3.1 for old clients) is chosen and echoed")
    void subprotocolEchoed(final String offered, final String chosen) throws IOException
    {
        final String response = handshake("/mqtt", null, "Sec-WebSocket-Protocol: " + offered);
        assertThat(response).startsWith("HTTP/1.1 101 Switching Protocols\r\n")
            .contains("\r\nSec-WebSocket-Protocol: " + chosen + "\r\n")
            .contains("\r\nSec-WebSocket-Accept: " + RFC_ACCEPT + "\r\n")
            .contains("\r\nUpgrade: websocket\r\n").contains("\r\nConnection: Upgrade\r\n");
    }

    @Test
    void noSubprotocolOfferedIsAcceptedWithoutOne() throws IOException
    {
        final String response = handshake("/anything/at/all", null);
        assertThat(response).startsWith("HTTP/1.1 101 ").doesNotContain("Sec-WebSocket-Protocol");
    }

    @Test
    void headerNamesAndTokensInAnyCaseAndTokenLists() throws IOException
    {
        final String response = handshake("/mqtt?client=1", "/mqtt",
            "sec-websocket-protocol: other", "SEC-WEBSOCKET-PROTOCOL:mqtt");
        assertThat(response).startsWith("HTTP/1.1 101 ");
        final String raw = "GET /mqtt HTTP/1.1\r\nHost: x\r\nUPGRADE: WebSocket\r\nconnection: keep-alive, Upgrade\r\n" +
            "sec-websocket-version: 13\r\nsec-websocket-key: " + RFC_KEY + "\r\n\r\n";
        assertThat(exchange(raw.getBytes(StandardCharsets.ISO_8859_1), null, false)).startsWith("HTTP/1.1 101 ");
    }

    static Stream<Arguments> refusedRequests()
    {
        final String ok = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n";
        final String key = "Sec-WebSocket-Key: " + RFC_KEY + "\r\n";
        return Stream.of(
            Arguments.of("POST", "POST /mqtt HTTP/1.1\r\n" + ok + key + "\r\n", "400"),
            Arguments.of("HTTP/1.0", "GET /mqtt HTTP/1.0\r\n" + ok + key + "\r\n", "400"),
            Arguments.of("no path", "GET HTTP/1.1\r\n" + ok + key + "\r\n", "400"),
            Arguments.of("no Upgrade", "GET /mqtt HTTP/1.1\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
                key + "\r\n", "400"),
            Arguments.of("Upgrade: h2c", "GET /mqtt HTTP/1.1\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n" +
                "Sec-WebSocket-Version: 13\r\n" + key + "\r\n", "400"),
            Arguments.of("Connection: keep-alive", "GET /mqtt HTTP/1.1\r\nUpgrade: websocket\r\n" +
                "Connection: keep-alive\r\nSec-WebSocket-Version: 13\r\n" + key + "\r\n", "400"),
            Arguments.of("no key", "GET /mqtt HTTP/1.1\r\n" + ok + "\r\n", "400"),
            Arguments.of("short key", "GET /mqtt HTTP/1.1\r\n" + ok + "Sec-WebSocket-Key: c2hvcnQ=\r\n\r\n", "400"),
            Arguments.of("key not base64", "GET /mqtt HTTP/1.1\r\n" + ok + "Sec-WebSocket-Key: !!!!!!!!!!!!!!!!!!!!!!==\r\n\r\n",
                "400"),
            Arguments.of("two keys", "GET /mqtt HTTP/1.1\r\n" + ok + key + key + "\r\n", "400"),
            Arguments.of("folded header", "GET /mqtt HTTP/1.1\r\n" + ok + key + "X-A: 1\r\n  2\r\n\r\n", "400"),
            Arguments.of("header without colon", "GET /mqtt HTTP/1.1\r\n" + ok + key + "garbage\r\n\r\n", "400"),
            Arguments.of("control byte in a value", "GET /mqtt HTTP/1.1\r\n" + ok + key + "X-A: a\u0001b\r\n\r\n",
                "400"),
            Arguments.of("MQTT-6.0.0-3: other subprotocols only", "GET /mqtt HTTP/1.1\r\n" + ok + key +
                "Sec-WebSocket-Protocol: chat, superchat\r\n\r\n", "400"),
            Arguments.of("wrong path", "GET /other HTTP/1.1\r\n" + ok + key + "\r\n", "404"),
            Arguments.of("MQTT CONNECT on a WebSocket port", new String(CONNECT, StandardCharsets.ISO_8859_1), "400"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refusedRequests")
    @DisplayName("a bad Upgrade request is refused with a plain HTTP status, then the stream ends")
    void refused(final String name, final String request, final String status) throws IOException
    {
        for (final boolean oneByte : new boolean[]{false, true})
        {
            final String response = exchange(request.getBytes(StandardCharsets.ISO_8859_1), "/mqtt", oneByte);
            assertThat(response).as(name).startsWith("HTTP/1.1 " + status + " ").contains("Connection: close\r\n")
                .endsWith("\r\n\r\n");
        }
    }

    @Test
    void versionOtherThan13IsRefusedNaming13() throws IOException
    {
        final String raw = "GET /mqtt HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: " + RFC_KEY + "\r\n\r\n";
        assertThat(exchange(raw.getBytes(StandardCharsets.ISO_8859_1), null, false))
            .startsWith("HTTP/1.1 400 ").contains("\r\nSec-WebSocket-Version: 13\r\n");
    }

    @Test
    @DisplayName("hostile: a request header over 8 KiB is refused without reading more")
    void headerOverEightKibIsRefused() throws IOException
    {
        final StringBuilder raw = new StringBuilder("GET /mqtt HTTP/1.1\r\n");
        while (raw.length() < WebSocketHandshake.MAX_REQUEST_LENGTH + 100)
        {
            raw.append("X-Padding: 0123456789012345678901234567890123456789\r\n");
        }
        assertThat(exchange(raw.toString().getBytes(StandardCharsets.ISO_8859_1), null, false))
            .startsWith("HTTP/1.1 400 ");
    }

    @Test
    void endOfStreamDuringTheHandshakeEndsIt() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), null);
            pair.send("GET /mqtt HTTP/1.1\r\nUpgr".getBytes(StandardCharsets.US_ASCII));
            pair.client.shutdownOutput();
            assertThat(pair.pumpToEnd(layer)).isTrue();
            assertThat(pair.in.readableBytes()).isZero();
        }
    }

    @Test
    @DisplayName("a client that never finishes its request reads 0 (the agent's connect timeout ends it)")
    void unfinishedRequestReadsZero() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), null);
            pair.send("GET /mqtt HTTP/1.1\r\nHost: x\r\n".getBytes(StandardCharsets.US_ASCII));
            final int[] reads = new int[1];
            assertThat(pair.pump(layer, () -> ++reads[0] > 50)).isTrue();
            assertThat(pair.ended()).isFalse();
            assertThat(layer.write(io.netty.buffer.Unpooled.wrappedBuffer(PINGREQ))).isZero();
        }
    }

    @Test
    @DisplayName("RFC 6455 5.7: a single masked frame is unmasked (as binary: \"Hello\")")
    void rfcMaskedSample() throws IOException
    {
        final byte[] sample = bytes(0x82, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58);
        assertThat(session(null, sample, 5)).isEqualTo("Hello".getBytes(StandardCharsets.US_ASCII));
    }

    @Test
    @DisplayName("MQTT-6.0.0-2: packets span frames and frames hold several packets")
    void packetsAcrossAndWithinFrames() throws IOException
    {
        final byte[] both = concat(CONNECT, PINGREQ, CONNECT);
        final byte[] frames = concat(
            frame(0x82, Arrays.copyOfRange(both, 0, 5)),          // a CONNECT cut after its protocol name length
            frame(0x82, Arrays.copyOfRange(both, 5, 20)),         // its rest, a PINGREQ, the next CONNECT's start
            frame(0x82, new byte[0]),                              // an empty frame is no harm
            frame(0x82, Arrays.copyOfRange(both, 20, both.length)));
        assertThat(session(null, frames, both.length)).isEqualTo(both);
    }

    @Test
    @DisplayName("a fragmented message with pings between its fragments: payload joined, each ping ponged")
    void fragmentsWithInterleavedControlFrames() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            pair.send(concat(
                frame(0x02, Arrays.copyOfRange(CONNECT, 0, 3)),
                frame(0x89, "p1".getBytes(StandardCharsets.US_ASCII)),
                frame(0x00, Arrays.copyOfRange(CONNECT, 3, 9)),
                frame(0x8A, "unsolicited".getBytes(StandardCharsets.US_ASCII)),
                frame(0x89, new byte[0]),
                frame(0x80, Arrays.copyOfRange(CONNECT, 9, CONNECT.length)),
                frame(0x82, PINGREQ)));
            assertThat(pair.pumpBytes(layer, CONNECT.length + 2)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(concat(CONNECT, PINGREQ));
            assertThat(serverFrame(pair.clientIn())).isEqualTo(concat(bytes(0x8A, 0x02), "p1".getBytes(StandardCharsets.US_ASCII)));
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x8A, 0x00));
            assertThat(pair.ended()).isFalse();
        }
    }

    @Test
    @DisplayName("an idle connection's layer gives its frame buffer back, and the next write takes one again")
    void idleLayerGivesItsBufferBack() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            assertThat(layer.holdsBuffer()).as("the 101's buffer").isTrue();
            layer.releaseIdleBuffers();
            assertThat(layer.holdsBuffer()).isFalse();
            final io.netty.buffer.ByteBuf out = io.netty.buffer.Unpooled.wrappedBuffer(PINGREQ);
            assertThat(pair.pump(layer, () -> writeMore(layer, out))).isTrue();
            assertThat(layer.holdsBuffer()).as("taken again by the write").isTrue();
            assertThat(receiveBinary(pair, PINGREQ.length)).isEqualTo(PINGREQ);
            layer.releaseIdleBuffers();
            layer.releaseIdleBuffers(); // once only
            assertThat(layer.holdsBuffer()).isFalse();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {125, 126, 65_535, 65_536, 200_000})
    @DisplayName("7-bit, 16-bit and 64-bit payload lengths")
    void lengthForms(final int length) throws IOException
    {
        final byte[] payload = pattern(length);
        assertThat(session(null, frame(0x82, payload), length)).isEqualTo(payload);
    }

    @Test
    @DisplayName("hostile: a 2^63-1 payload length streams; nothing is sized by it")
    void hugeLengthStreams() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            pair.send(concat(bytes(0x82, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF), MASK));
            final byte[] chunk = masked(pattern(64 * 1024), 0);
            long sent = 0;
            for (int i = 0; i < 32; i++) // 2 MiB of one endless frame
            {
                pair.send(chunk);
                sent += chunk.length;
                assertThat(pair.pumpBytes(layer, chunk.length)).isTrue();
                assertThat(pair.mqttBytes()).isEqualTo(pattern(64 * 1024));
                pair.in.clear();
            }
            assertThat(sent).isEqualTo(2L << 20);
            assertThat(pair.in.capacity()).isLessThan(256 * 1024);
            assertThat(pair.ended()).isFalse();
        }
    }

    @Test
    @DisplayName("a close is echoed with its code and ends the stream, after MQTT bytes before it")
    void closeEchoedAfterTheBytesBeforeIt() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            final byte[] disconnect = {(byte)0xE0, 0};
            pair.send(concat(frame(0x82, disconnect), frame(0x88, concat(bytes(0x03, 0xE8), "bye".getBytes()))));
            assertThat(pair.pumpToEnd(layer)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(disconnect);
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x88, 0x02, 0x03, 0xE8));
            layer.close();
            assertThat(pair.clientSeesEnd()).isTrue();
        }
    }

    @Test
    void emptyCloseIsEchoedEmpty() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            pair.send(frame(0x88, new byte[0]));
            assertThat(pair.pumpToEnd(layer)).isTrue();
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x88, 0x00));
            assertThat(layer.write(io.netty.buffer.Unpooled.wrappedBuffer(PINGREQ))).isZero();
        }
    }

    static Stream<Arguments> protocolErrors()
    {
        return Stream.of(
            Arguments.of("MQTT-6.0.0-1: a text frame", frame(0x81, PINGREQ), 1003),
            Arguments.of("an unmasked frame", bytes(0x82, 0x02, 0xC0, 0x00), 1002),
            Arguments.of("RFC 6455 5.7's unmasked ping", bytes(0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f), 1002),
            Arguments.of("RSV1 set", frame(0xC2, PINGREQ), 1002),
            Arguments.of("RSV3 set", frame(0x92, PINGREQ), 1002),
            Arguments.of("reserved data opcode 3", frame(0x83, PINGREQ), 1002),
            Arguments.of("reserved data opcode 7", frame(0x87, PINGREQ), 1002),
            Arguments.of("reserved control opcode 0xB", frame(0x8B, PINGREQ), 1002),
            Arguments.of("reserved control opcode 0xF", frame(0x8F, PINGREQ), 1002),
            Arguments.of("a control frame over 125 bytes", frame(0x89, new byte[126]), 1002),
            Arguments.of("a fragmented ping", frame(0x09, PINGREQ), 1002),
            Arguments.of("a fragmented close", frame(0x08, bytes(0x03, 0xE8)), 1002),
            Arguments.of("a continuation of nothing", frame(0x80, PINGREQ), 1002),
            Arguments.of("a new message inside a fragmented one", concat(frame(0x02, PINGREQ), frame(0x82, PINGREQ)),
                1002),
            Arguments.of("a text frame inside a fragmented message", concat(frame(0x02, PINGREQ), frame(0x81, PINGREQ)),
                1003),
            Arguments.of("a 64-bit length with its top bit set (2^63)",
                concat(bytes(0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0), MASK), 1002),
            Arguments.of("a 1-byte close body", frame(0x88, bytes(0x03)), 1002),
            Arguments.of("close code 1005, never sent", frame(0x88, bytes(0x03, 0xED)), 1002),
            Arguments.of("close code 999", frame(0x88, bytes(0x03, 0xE7)), 1002),
            Arguments.of("close code 2000", frame(0x88, bytes(0x07, 0xD0)), 1002),
            Arguments.of("a close reason that is not UTF-8", frame(0x88, bytes(0x03, 0xE8, 0xC3, 0x28)), 1007));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("protocolErrors")
    @DisplayName("a protocol error sends a close with its code and ends the stream")
    void protocolError(final String name, final byte[] frames, final int code) throws IOException
    {
        for (final boolean oneByte : new boolean[]{false, true})
        {
            try (LayerHarness pair = LayerHarness.open())
            {
                final WebSocketLayer layer = opened(pair, null, oneByte);
                pair.send(frames);
                assertThat(pair.pumpToEnd(layer)).as(name).isTrue();
                assertThat(serverFrame(pair.clientIn())).as(name).isEqualTo(bytes(0x88, 0x02, code >> 8, code & 0xFF));
                layer.close();
                assertThat(pair.clientSeesEnd()).as(name).isTrue();
            }
        }
    }

    @Test
    @DisplayName("byte at a time: handshake, fragments, several packets, ping and close")
    void everythingByteAtATime() throws IOException
    {
        final byte[] both = concat(CONNECT, PINGREQ);
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(new LayerHarness.OneByteLayer(pair.tcp()), "/mqtt");
            pair.send(concat(request("/mqtt", "Sec-WebSocket-Protocol: mqtt"),
                frame(0x02, Arrays.copyOfRange(both, 0, 7)),
                frame(0x89, "x".getBytes(StandardCharsets.US_ASCII)),
                frame(0x80, Arrays.copyOfRange(both, 7, both.length)),
                frame(0x88, bytes(0x03, 0xE8))));
            assertThat(pair.pumpToEnd(layer)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(both);
            assertThat(httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ").contains("Sec-WebSocket-Protocol: mqtt");
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x8A, 0x01, 'x'));
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x88, 0x02, 0x03, 0xE8));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 125, 126, 65_535, WebSocketLayer.MAX_FRAME_PAYLOAD_LENGTH, 100_000})
    @DisplayName("outbound: binary frames, unmasked, at most MAX_FRAME_PAYLOAD_LENGTH each")
    void outboundFrames(final int length) throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            final byte[] payload = pattern(length);
            final CompletableFuture<byte[]> received = CompletableFuture.supplyAsync(() -> receiveBinary(pair, length));
            pair.writeAll(layer, payload);
            assertThat(received.join()).isEqualTo(payload);
            assertThat(layer.hasPendingOutput()).isFalse();
        }
    }

    @Test
    @DisplayName("outbound to a socket that takes a little at a time: pending, flushed, pongs after whole frames")
    void outboundPendingThroughAStingySocket() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(new LayerHarness.StingyLayer(pair.tcp(), 7), null);
            pair.send(request("/", "Sec-WebSocket-Protocol: mqtt"));
            assertThat(pair.pump(layer, () -> layer.isOpen() && !layer.hasPendingOutput())).isTrue();
            assertThat(httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ");
            final byte[] payload = pattern(3000);
            final io.netty.buffer.ByteBuf out = io.netty.buffer.Unpooled.wrappedBuffer(payload);
            layer.write(out);
            assertThat(layer.hasPendingOutput()).isTrue();
            pair.send(frame(0x89, "hi".getBytes(StandardCharsets.US_ASCII))); // a pong must wait for whole frames
            assertThat(pair.pump(layer, () -> !out.isReadable() && !layer.hasPendingOutput() &&
                writeMore(layer, out))).isTrue();
            final ByteArrayOutputStream received = new ByteArrayOutputStream();
            boolean pong = false;
            while (received.size() < payload.length || !pong)
            {
                final byte[] frame = serverFrame(pair.clientIn());
                if ((frame[0] & 0xFF) == 0x8A)
                {
                    assertThat(body(frame)).isEqualTo("hi".getBytes(StandardCharsets.US_ASCII));
                    pong = true;
                }
                else
                {
                    received.write(body(frame));
                }
            }
            assertThat(received.toByteArray()).isEqualTo(payload);
        }
    }

    @Test
    @DisplayName("close(): a best-effort close frame (1000), then the socket closes")
    void closeSendsCloseFrame() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = opened(pair, null);
            layer.close();
            layer.close();
            assertThat(serverFrame(pair.clientIn())).isEqualTo(bytes(0x88, 0x02, 0x03, 0xE8));
            assertThat(pair.clientSeesEnd()).isTrue();
        }
    }

    @Test
    @DisplayName("close(): a layer below that throws on the close frame (a TLS engine's fault) is still closed, and "
        + "what the layer holds goes back")
    void closeClosesBelowWhenTheCloseFrameThrows() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final boolean[] failing = new boolean[1];
            final boolean[] belowClosed = new boolean[1];
            final SocketLayer tcp = pair.tcp();
            final SocketLayer faulty = new SocketLayer()
            {
                public int read(final io.netty.buffer.ByteBuf in) throws IOException
                {
                    return tcp.read(in);
                }

                public int write(final io.netty.buffer.ByteBuf out) throws IOException
                {
                    if (failing[0])
                    {
                        throw new IllegalStateException("engine fault");
                    }
                    return tcp.write(out);
                }

                public void close()
                {
                    belowClosed[0] = true;
                    tcp.close();
                }
            };
            final WebSocketLayer layer = new WebSocketLayer(faulty, null);
            pair.send(request("/", "Sec-WebSocket-Protocol: mqtt"));
            assertThat(pair.pump(layer, layer::isOpen)).isTrue();
            assertThat(httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ");
            failing[0] = true;
            layer.close();
            assertThat(belowClosed[0]).as("the layer below closed").isTrue();
            assertThat(pair.clientSeesEnd()).isTrue();
        }
    }

    @Test
    @DisplayName("hostile: a ping flood to a client that reads nothing leaves the pending pongs bounded")
    void pingFloodIsBounded() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(new LayerHarness.StingyLayer(pair.tcp(), 0), null);
            final byte[] ping = frame(0x89, new byte[WebSocketFrameDecoder.MAX_CONTROL_PAYLOAD_LENGTH]);
            final byte[][] pings = new byte[2_000][];
            Arrays.fill(pings, ping);
            final CompletableFuture<Void> sent = pair.sendAsync(
                concat(request("/", "Sec-WebSocket-Protocol: mqtt"), concat(pings), frame(0x88, new byte[0])));
            assertThat(pair.pumpToEnd(layer)).isTrue();
            sent.join();
            assertThat(layer.pendingLength()).isLessThanOrEqualTo(WebSocketLayer.MAX_PENDING_LENGTH + ping.length);
            assertThat(layer.pendingLength()).isGreaterThan(WebSocketLayer.MAX_PENDING_LENGTH - ping.length);
        }
    }

    @Test
    @DisplayName("close() before the handshake ended sends no close frame")
    void closeDuringHandshakeSendsNoFrame() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), null);
            pair.send("GET / HTTP/1.1\r\n".getBytes(StandardCharsets.US_ASCII));
            final int[] reads = new int[1];
            assertThat(pair.pump(layer, () -> ++reads[0] > 5)).isTrue();
            layer.close();
            assertThat(pair.clientSeesEnd()).isTrue();
        }
    }

    @Test
    void framesRightBehindTheRequestInOneSegment() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), null);
            pair.send(concat(request("/", "Sec-WebSocket-Protocol: mqtt"), frame(0x82, CONNECT)));
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(CONNECT);
            assertThat(httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ");
        }
    }

    // ---- helpers ----

    /**
     * @return the payloads of binary frames the client receives until {@code length} bytes came.
     */
    private static byte[] receiveBinary(final LayerHarness pair, final int length)
    {
        try
        {
            final ByteArrayOutputStream received = new ByteArrayOutputStream();
            while (received.size() < length)
            {
                final byte[] frame = serverFrame(pair.clientIn());
                assertThat(frame[0] & 0xFF).isEqualTo(0x82);
                final byte[] body = body(frame);
                assertThat(body.length).isBetween(1, WebSocketLayer.MAX_FRAME_PAYLOAD_LENGTH);
                received.write(body);
            }
            return received.toByteArray();
        }
        catch (final IOException ex)
        {
            throw new UncheckedIOException(ex);
        }
    }

    private static boolean writeMore(final WebSocketLayer layer, final io.netty.buffer.ByteBuf out)
    {
        try
        {
            layer.write(out);
            return !out.isReadable() && !layer.hasPendingOutput();
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * Runs a handshake and returns the server's answer.
     */
    private static String handshake(final String path, final String requiredPath, final String... headers)
        throws IOException
    {
        return exchange(request(path, headers), requiredPath, false);
    }

    /**
     * Sends a request and returns the response; for a refusal, checks the stream ended and the socket closes.
     */
    private static String exchange(final byte[] request, final String requiredPath, final boolean oneByte)
        throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final SocketLayer below = oneByte ? new LayerHarness.OneByteLayer(pair.tcp()) : pair.tcp();
            final WebSocketLayer layer = new WebSocketLayer(below, requiredPath);
            pair.send(request);
            assertThat(pair.pump(layer, () -> pair.ended() || layer.isOpen() && !layer.hasPendingOutput())).isTrue();
            final String response = httpResponse(pair.clientIn());
            if (!response.startsWith("HTTP/1.1 101 "))
            {
                assertThat(pair.ended()).isTrue();
                assertThat(layer.refusal()).isNotNull();
                layer.close();
                assertThat(pair.clientSeesEnd()).isTrue();
            }
            return response;
        }
    }

    /**
     * Runs a handshake, sends {@code frames}, and returns the MQTT bytes once {@code expected} arrived.
     */
    private static byte[] session(final String requiredPath, final byte[] frames, final int expected)
        throws IOException
    {
        byte[] result = null;
        for (final boolean oneByte : new boolean[]{false, true})
        {
            try (LayerHarness pair = LayerHarness.open())
            {
                final WebSocketLayer layer = opened(pair, requiredPath, oneByte && frames.length < 10_000);
                final CompletableFuture<Void> sent = pair.sendAsync(frames);
                assertThat(pair.pumpBytes(layer, expected)).isTrue();
                sent.join();
                assertThat(pair.ended()).isFalse();
                final byte[] bytes = pair.mqttBytes();
                assertThat(result == null || Arrays.equals(result, bytes)).isTrue();
                result = bytes;
            }
        }
        return result;
    }

    static WebSocketLayer opened(final LayerHarness pair, final String requiredPath) throws IOException
    {
        return opened(pair, requiredPath, false);
    }

    /**
     * @return a layer past a successful handshake (subprotocol mqtt), its 101 already read by the client.
     */
    static WebSocketLayer opened(final LayerHarness pair, final String requiredPath, final boolean oneByte)
        throws IOException
    {
        final SocketLayer below = oneByte ? new LayerHarness.OneByteLayer(pair.tcp()) : pair.tcp();
        final WebSocketLayer layer = new WebSocketLayer(below, requiredPath);
        pair.send(request(null == requiredPath ? "/" : requiredPath, "Sec-WebSocket-Protocol: mqtt"));
        assertThat(pair.pump(layer, layer::isOpen)).isTrue();
        assertThat(httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ");
        return layer;
    }

    static byte[] request(final String path, final String... headers)
    {
        final StringBuilder request = new StringBuilder("GET ").append(path).append(" HTTP/1.1\r\n")
            .append("Host: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n")
            .append("Sec-WebSocket-Key: ").append(RFC_KEY).append("\r\nSec-WebSocket-Version: 13\r\n");
        for (final String header : headers)
        {
            request.append(header).append("\r\n");
        }
        return request.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * @return the HTTP response head the client received, blank line included.
     */
    static String httpResponse(final InputStream in) throws IOException
    {
        final StringBuilder response = new StringBuilder();
        while (!response.toString().endsWith("\r\n\r\n"))
        {
            final int b = in.read();
            if (b < 0)
            {
                break;
            }
            response.append((char)b);
        }
        return response.toString();
    }

    /**
     * @return one server frame as received: its header (which must be unmasked) and payload.
     */
    static byte[] serverFrame(final InputStream in) throws IOException
    {
        final ByteArrayOutputStream frame = new ByteArrayOutputStream();
        final int first = in.read();
        final int second = in.read();
        assertThat(second & 0x80).as("server frames are not masked").isZero();
        frame.write(first);
        frame.write(second);
        long length = second & 0x7F;
        final int extended = length == 126 ? 2 : length == 127 ? 8 : 0;
        if (extended > 0)
        {
            final byte[] bytes = in.readNBytes(extended);
            frame.write(bytes);
            length = 0;
            for (final byte b : bytes)
            {
                length = length << 8 | (b & 0xFF);
            }
        }
        frame.write(in.readNBytes((int)length));
        return frame.toByteArray();
    }

    static byte[] body(final byte[] frame)
    {
        final int length7 = frame[1] & 0x7F;
        final int header = length7 == 126 ? 4 : length7 == 127 ? 10 : 2;
        return Arrays.copyOfRange(frame, header, frame.length);
    }

    /**
     * @return a client frame: {@code first} (FIN, RSV, opcode), masked with {@link #MASK}, its length in the
     * shortest form.
     */
    static byte[] frame(final int first, final byte[] payload)
    {
        final ByteArrayOutputStream frame = new ByteArrayOutputStream();
        frame.write(first);
        if (payload.length < 126)
        {
            frame.write(0x80 | payload.length);
        }
        else if (payload.length <= 0xFFFF)
        {
            frame.write(0x80 | 126);
            frame.write(payload.length >> 8);
            frame.write(payload.length);
        }
        else
        {
            frame.write(0x80 | 127);
            for (int shift = 56; shift >= 0; shift -= 8)
            {
                frame.write((int)((long)payload.length >> shift));
            }
        }
        frame.writeBytes(MASK);
        frame.writeBytes(masked(payload, 0));
        return frame.toByteArray();
    }

    /**
     * @return {@code payload} XORed with {@link #MASK} as if it started {@code offset} bytes into a frame's payload.
     */
    static byte[] masked(final byte[] payload, final long offset)
    {
        final byte[] masked = new byte[payload.length];
        for (int i = 0; i < payload.length; i++)
        {
            masked[i] = (byte)(payload[i] ^ MASK[(int)((offset + i) & 3)]);
        }
        return masked;
    }

    static byte[] pattern(final int length)
    {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++)
        {
            bytes[i] = (byte)(i * 31 + (i >> 8));
        }
        return bytes;
    }

    static byte[] bytes(final int... values)
    {
        final byte[] bytes = new byte[values.length];
        for (int i = 0; i < values.length; i++)
        {
            bytes[i] = (byte)values[i];
        }
        return bytes;
    }

    static byte[] concat(final byte[]... parts)
    {
        final ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (final byte[] part : parts)
        {
            all.writeBytes(part);
        }
        return all.toByteArray();
    }
}
