package io.ringmq.transport;

import io.ringmq.transport.ProxyProtocolLayer.Versions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;

import static io.ringmq.transport.WebSocketLayerTest.CONNECT;
import static io.ringmq.transport.WebSocketLayerTest.bytes;
import static io.ringmq.transport.WebSocketLayerTest.concat;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ProxyProtocolLayer} over a real loopback socket with the samples of HAProxy's proxy-protocol.txt: v1 and
 * v2, IPv4 and IPv6, LOCAL and UNKNOWN, TLVs, the bytes behind the header, byte-at-a-time delivery, and every
 * malformed case.
 */
@Timeout(30)
class ProxyProtocolLayerTest
{
    /** The v2 signature, then version 2 PROXY (0x21) or LOCAL (0x20). */
    static final byte[] SIGNATURE = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

    static Stream<Arguments> validHeaders()
    {
        return Stream.of(
            Arguments.of("v1 TCP4", ascii("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"), "192.168.0.1", 56324),
            Arguments.of("v1 TCP6", ascii("PROXY TCP6 2001:db8::1 2001:db8::2 56324 443\r\n"), "2001:db8:0:0:0:0:0:1",
                56324),
            Arguments.of("v1 TCP6 at its longest", ascii("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff " +
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"), "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                65535),
            Arguments.of("v1 UNKNOWN", ascii("PROXY UNKNOWN\r\n"), null, 0),
            Arguments.of("v1 UNKNOWN at the 107-byte limit", ascii("PROXY UNKNOWN " +
                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n"),
                null, 0),
            Arguments.of("v1 loopback client", ascii("PROXY TCP4 127.0.0.1 10.0.0.1 1 1883\r\n"), "127.0.0.1", 1),
            Arguments.of("v2 PROXY TCP/IPv4", v2(0x21, 0x11, inet4(), new byte[0]), "192.168.0.1", 56324),
            Arguments.of("v2 PROXY TCP/IPv4 with TLVs", v2(0x21, 0x11, inet4(), concat(
                bytes(0x01, 0x00, 0x02, 'h', '2'),                   // PP2_TYPE_ALPN
                bytes(0x20, 0x00, 0x05, 0x01, 0, 0, 0, 0),           // PP2_TYPE_SSL
                bytes(0x04, 0x00, 0x00))),                           // PP2_TYPE_NOOP
                "192.168.0.1", 56324),
            Arguments.of("v2 PROXY TCP/IPv6", v2(0x21, 0x21, inet6(), new byte[0]), "2001:db8:0:0:0:0:0:1", 443),
            Arguments.of("v2 LOCAL (health check)", v2(0x20, 0x00, new byte[0], new byte[0]), null, 0),
            Arguments.of("v2 LOCAL with an address block", v2(0x20, 0x11, inet4(), new byte[0]), null, 0),
            Arguments.of("v2 PROXY UNSPEC", v2(0x21, 0x00, new byte[0], new byte[0]), null, 0),
            Arguments.of("v2 PROXY UNIX", v2(0x21, 0x31, new byte[216], new byte[0]), null, 0));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("validHeaders")
    @DisplayName("a valid header: the client's address, and the bytes behind it in the same segment go up unchanged")
    void validHeader(final String name, final byte[] header, final String address, final int port)
        throws IOException
    {
        for (final boolean oneByte : new boolean[]{false, true})
        {
            try (LayerHarness pair = LayerHarness.open())
            {
                final ProxyProtocolLayer layer = layer(pair, Versions.ANY, oneByte);
                pair.send(concat(header, CONNECT));
                assertThat(pair.pumpBytes(layer, CONNECT.length)).as(name).isTrue();
                assertThat(pair.mqttBytes()).as(name).isEqualTo(CONNECT);
                assertThat(layer.malformed()).isNull();
                final InetSocketAddress proxied = layer.proxiedAddress();
                if (null == address)
                {
                    assertThat(proxied).as(name).isNull();
                }
                else
                {
                    assertThat(proxied.getAddress().getHostAddress()).as(name).isEqualTo(address);
                    assertThat(proxied.getPort()).as(name).isEqualTo(port);
                    assertThat(proxied.isUnresolved()).isFalse();
                }
            }
        }
    }

    @Test
    void bytesInLaterSegmentsPassThrough() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.V1, false);
            pair.send(ascii("PROXY TCP4 10.1.2.3 10.0.0.1 40000 1883\r\n"));
            assertThat(pair.pump(layer, () -> null != layer.proxiedAddress())).isTrue();
            assertThat(pair.in.readableBytes()).isZero();
            pair.send(CONNECT);
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(CONNECT);
            assertThat(layer.proxiedAddress()).isEqualTo(new InetSocketAddress("10.1.2.3", 40000));
        }
    }

    @Test
    @DisplayName("a connection that never sends its header reads 0 (the agent's connect timeout ends it)")
    void noHeaderReadsZero() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.ANY, false);
            pair.send(ascii("PROXY TCP4 10.1.2.3"));
            final int[] reads = new int[1];
            assertThat(pair.pump(layer, () -> ++reads[0] > 30)).isTrue();
            assertThat(pair.ended()).isFalse();
            assertThat(pair.in.readableBytes()).isZero();
            assertThat(layer.proxiedAddress()).isNull();
        }
    }

    @Test
    @DisplayName("writes pass through before and after the header")
    void writesPassThrough() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.ANY, false);
            pair.writeAll(layer, CONNECT);
            assertThat(pair.receive(CONNECT.length)).isEqualTo(CONNECT);
            layer.close();
            assertThat(pair.clientSeesEnd()).isTrue();
        }
    }

    static Stream<Arguments> malformedHeaders()
    {
        return Stream.of(
            Arguments.of("an MQTT CONNECT", Versions.ANY, CONNECT),
            Arguments.of("an HTTP request", Versions.ANY, ascii("GET / HTTP/1.1\r\n\r\n")),
            Arguments.of("a TLS ClientHello", Versions.ANY, bytes(0x16, 0x03, 0x01, 0x00, 0x05)),
            Arguments.of("v1 on a v2 listener", Versions.V2, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v2 on a v1 listener", Versions.V1, v2(0x21, 0x11, inet4(), new byte[0])),
            Arguments.of("v1 lower case", Versions.ANY, ascii("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 PROXY without space", Versions.ANY, ascii("PROXYTCP4 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 no CRLF within 107 bytes", Versions.ANY, ascii("PROXY UNKNOWN " + "f".repeat(100))),
            Arguments.of("v1 CRLF at byte 108", Versions.ANY, ascii("PROXY UNKNOWN " + "f".repeat(92) + "\r\n")),
            Arguments.of("v1 LF without CR", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n")),
            Arguments.of("v1 CR without LF", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX")),
            Arguments.of("v1 unknown protocol", Versions.ANY, ascii("PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 UDP4", Versions.ANY, ascii("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 missing port", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n")),
            Arguments.of("v1 extra field", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n")),
            Arguments.of("v1 two spaces", Versions.ANY, ascii("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 octet over 255", Versions.ANY, ascii("PROXY TCP4 256.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 three octets", Versions.ANY, ascii("PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 leading zero octet", Versions.ANY, ascii("PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 host name", Versions.ANY, ascii("PROXY TCP4 localhost 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 TCP4 with IPv6", Versions.ANY, ascii("PROXY TCP4 ::1 ::2 1 2\r\n")),
            Arguments.of("v1 TCP6 with IPv4", Versions.ANY, ascii("PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n")),
            Arguments.of("v1 TCP6 bad IPv6", Versions.ANY, ascii("PROXY TCP6 1:2:3:4:5:6:7:8:9 ::2 1 2\r\n")),
            Arguments.of("v1 TCP6 zone id", Versions.ANY, ascii("PROXY TCP6 fe80::1%eth0 ::2 1 2\r\n")),
            Arguments.of("v1 port 65536", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n")),
            Arguments.of("v1 negative port", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 -1 2\r\n")),
            Arguments.of("v1 port with leading zero", Versions.ANY, ascii("PROXY TCP4 1.2.3.4 5.6.7.8 080 2\r\n")),
            Arguments.of("v1 control byte", Versions.ANY, ascii("PROXY TCP4 1.2.3.4\t5.6.7.8 1 2\r\n")),
            Arguments.of("v1 non-ASCII byte", Versions.ANY, concat(ascii("PROXY TCP4 1.2.3.4 "), bytes(0xC3, 0xA9),
                ascii(" 1 2\r\n"))),
            Arguments.of("v2 wrong signature byte", Versions.ANY, flip(v2(0x21, 0x11, inet4(), new byte[0]), 7)),
            Arguments.of("v2 version 1", Versions.ANY, v2(0x11, 0x11, inet4(), new byte[0])),
            Arguments.of("v2 version 3", Versions.ANY, v2(0x31, 0x11, inet4(), new byte[0])),
            Arguments.of("v2 command 2", Versions.ANY, v2(0x22, 0x11, inet4(), new byte[0])),
            Arguments.of("v2 address family 4", Versions.ANY, v2(0x21, 0x41, inet4(), new byte[0])),
            Arguments.of("v2 protocol 3", Versions.ANY, v2(0x21, 0x13, inet4(), new byte[0])),
            Arguments.of("v2 IPv4 over UDP", Versions.ANY, v2(0x21, 0x12, inet4(), new byte[0])),
            Arguments.of("v2 IPv4 block too short", Versions.ANY, v2(0x21, 0x11, new byte[11], new byte[0])),
            Arguments.of("v2 IPv6 block too short", Versions.ANY, v2(0x21, 0x21, inet4(), new byte[0])),
            Arguments.of("v2 UNIX block too short", Versions.ANY, v2(0x21, 0x31, new byte[100], new byte[0])),
            Arguments.of("v2 TLV past the end", Versions.ANY, v2(0x21, 0x11, inet4(), bytes(0x01, 0x00, 0x09, 'h'))),
            Arguments.of("v2 TLV header cut", Versions.ANY, v2(0x21, 0x11, inet4(), bytes(0x01, 0x00))),
            Arguments.of("v2 length over 4 KiB", Versions.ANY, concat(SIGNATURE, bytes(0x21, 0x11, 0x10, 0x01))),
            Arguments.of("v2 length 65535", Versions.ANY, concat(SIGNATURE, bytes(0x21, 0x11, 0xFF, 0xFF))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedHeaders")
    @DisplayName("a malformed, foreign or unexpected header ends the stream; nothing is passed up")
    void malformedHeader(final String name, final Versions versions, final byte[] header) throws IOException
    {
        for (final boolean oneByte : new boolean[]{false, true})
        {
            try (LayerHarness pair = LayerHarness.open())
            {
                final ProxyProtocolLayer layer = layer(pair, versions, oneByte);
                pair.send(concat(header, CONNECT));
                assertThat(pair.pumpToEnd(layer)).as(name).isTrue();
                assertThat(pair.in.readableBytes()).as(name).isZero();
                assertThat(layer.proxiedAddress()).as(name).isNull();
                assertThat(layer.malformed()).as(name).isNotNull();
            }
        }
    }

    @Test
    @DisplayName("the stream ending inside the header ends it")
    void endInsideTheHeader() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.ANY, false);
            pair.send(java.util.Arrays.copyOf(v2(0x21, 0x11, inet4(), new byte[0]), 20));
            pair.client.shutdownOutput();
            assertThat(pair.pumpToEnd(layer)).isTrue();
            assertThat(pair.in.readableBytes()).isZero();
            assertThat(layer.proxiedAddress()).isNull();
        }
    }

    @Test
    @DisplayName("the largest v2 header taken (4 KiB of TLVs) passes, with the bytes behind it")
    void largestV2Header() throws IOException
    {
        final byte[] tlv = new byte[ProxyProtocolLayer.MAX_V2_BLOCK_LENGTH - 12];
        tlv[0] = 0x04; // PP2_TYPE_NOOP spanning the rest
        tlv[1] = (byte)((tlv.length - 3) >> 8);
        tlv[2] = (byte)(tlv.length - 3);
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.V2, false);
            pair.send(concat(v2(0x21, 0x11, inet4(), tlv), CONNECT));
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(CONNECT);
            assertThat(layer.proxiedAddress()).isEqualTo(new InetSocketAddress("192.168.0.1", 56324));
        }
    }

    @Test
    @DisplayName("readAddress reads the header alone: the client is known before any byte behind it goes up, those " +
        "bytes wait in the layer (buffered input) and go up whole on the next read")
    void readAddressReadsTheHeaderAlone() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.ANY, false);
            assertThat(layer.addressKnown()).isFalse();
            final byte[] header = ascii("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n");
            pair.send(concat(header, CONNECT));
            final long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            int known = 0;
            while (known == 0 && System.nanoTime() < deadline)
            {
                known = layer.readAddress();
            }
            assertThat(known).isEqualTo(1);
            assertThat(layer.addressKnown()).isTrue();
            assertThat(layer.proxiedAddress()).isEqualTo(new InetSocketAddress("192.168.0.1", 56324));
            assertThat(layer.readAddress()).as("asked again").isEqualTo(1);
            assertThat(pair.in.readableBytes()).as("nothing went up").isZero();
            if (layer.hasBufferedInput()) // what came with the header in its read waits in the layer
            {
                assertThat(layer.read(pair.in)).isPositive();
            }
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(CONNECT);
            assertThat(layer.hasBufferedInput()).isFalse();
        }
    }

    @Test
    @DisplayName("what a v2 header's buffer grows past its first 108 bytes counts in the unadmitted share of the heap " +
        "while the header is incomplete, and goes back at close or once it is parsed; past the share the read ends " +
        "with HeapShare.Spent, nothing counted")
    void headerGrowthCountsInTheUnadmittedShare() throws Exception
    {
        final byte[] tlv = new byte[ProxyProtocolLayer.MAX_V2_BLOCK_LENGTH - 12];
        tlv[0] = 0x04; // PP2_TYPE_NOOP spanning the rest
        tlv[1] = (byte)((tlv.length - 3) >> 8);
        tlv[2] = (byte)(tlv.length - 3);
        final byte[] header = v2(0x21, 0x11, inet4(), tlv);
        final long before = HeapShare.UNADMITTED.held();
        final long grown = 3_456 - (ProxyProtocolLayer.MAX_V1_LENGTH + 1); // 108 doubled to hold 2,000 bytes
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.V2, false);
            pair.send(java.util.Arrays.copyOf(header, 2_000));
            final long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
            while (HeapShare.UNADMITTED.held() - before < grown && System.nanoTime() < deadline)
            {
                assertThat(layer.read(pair.in)).isZero();
            }
            assertThat(HeapShare.UNADMITTED.held() - before).as("2,000 bytes in").isEqualTo(grown);
            layer.close();
            assertThat(HeapShare.UNADMITTED.held()).as("given back at close").isEqualTo(before);
        }
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.V2, false);
            pair.send(concat(header, CONNECT));
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(HeapShare.UNADMITTED.held()).as("given back once parsed").isEqualTo(before);
        }
        final long limit = HeapShare.UNADMITTED.limitBytes;
        HeapShare.UNADMITTED.limitBytes = before + 100; // less than the first growth, 108 bytes
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer layer = layer(pair, Versions.V2, false);
            pair.send(header);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> pair.pumpBytes(layer, 1))
                .isInstanceOf(HeapShare.Spent.class);
            layer.close();
            assertThat(HeapShare.UNADMITTED.held()).isEqualTo(before);
        }
        finally
        {
            HeapShare.UNADMITTED.limitBytes = limit;
        }
    }

    @Test
    @DisplayName("WebSocket over PROXY: the header goes first, the Upgrade request and frames follow unchanged")
    void webSocketOverProxy() throws IOException
    {
        try (LayerHarness pair = LayerHarness.open())
        {
            final ProxyProtocolLayer proxy = layer(pair, Versions.ANY, false);
            final WebSocketLayer layer = new WebSocketLayer(proxy, "/mqtt");
            pair.send(concat(ascii("PROXY TCP6 2001:db8::7 2001:db8::2 50000 443\r\n"),
                WebSocketLayerTest.request("/mqtt", "Sec-WebSocket-Protocol: mqtt"),
                WebSocketLayerTest.frame(0x82, CONNECT)));
            assertThat(pair.pumpBytes(layer, CONNECT.length)).isTrue();
            assertThat(pair.mqttBytes()).isEqualTo(CONNECT);
            assertThat(layer.proxiedAddress().getAddress().getHostAddress()).isEqualTo("2001:db8:0:0:0:0:0:7");
            assertThat(WebSocketLayerTest.httpResponse(pair.clientIn())).startsWith("HTTP/1.1 101 ");
        }
    }

    private static ProxyProtocolLayer layer(final LayerHarness pair, final Versions versions, final boolean oneByte)
    {
        return new ProxyProtocolLayer(oneByte ? new LayerHarness.OneByteLayer(pair.tcp()) : pair.tcp(), versions);
    }

    /**
     * @return a v2 header: the signature, version and command, family and protocol, the block's length, the block.
     */
    static byte[] v2(final int command, final int family, final byte[] addresses, final byte[] tlvs)
    {
        final int length = addresses.length + tlvs.length;
        return concat(SIGNATURE, bytes(command, family, length >> 8, length & 0xFF), addresses, tlvs);
    }

    /**
     * @return HAProxy's IPv4 block: 192.168.0.1:56324 to 192.168.0.11:443.
     */
    static byte[] inet4()
    {
        return bytes(192, 168, 0, 1, 192, 168, 0, 11, 56324 >> 8, 56324 & 0xFF, 443 >> 8, 443 & 0xFF);
    }

    /**
     * @return an IPv6 block: [2001:db8::1]:443 to [2001:db8::2]:1883.
     */
    static byte[] inet6()
    {
        final byte[] block = new byte[36];
        block[0] = 0x20;
        block[1] = 0x01;
        block[2] = 0x0d;
        block[3] = (byte)0xb8;
        block[15] = 1;
        System.arraycopy(block, 0, block, 16, 15);
        block[31] = 2;
        block[32] = 443 >> 8;
        block[33] = (byte)(443 & 0xFF);
        block[34] = 1883 >> 8;
        block[35] = (byte)(1883 & 0xFF);
        return block;
    }

    static byte[] flip(final byte[] bytes, final int index)
    {
        final byte[] flipped = bytes.clone();
        flipped[index] ^= 0x01;
        return flipped;
    }

    static byte[] ascii(final String text)
    {
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }
}
