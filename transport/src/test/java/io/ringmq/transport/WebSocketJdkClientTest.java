package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

import static io.ringmq.transport.WebSocketLayerTest.CONNECT;
import static io.ringmq.transport.WebSocketLayerTest.PINGREQ;
import static io.ringmq.transport.WebSocketLayerTest.concat;
import static io.ringmq.transport.WebSocketLayerTest.pattern;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link WebSocketLayer} against the JDK's own WebSocket client ({@code java.net.http}), which masks its frames,
 * asks for subprotocol {@code mqtt} and checks the accept value and the echoed subprotocol.
 */
@Timeout(30)
class WebSocketJdkClientTest
{
    @Test
    @DisplayName("MQTT-6.0.0-2, MQTT-6.0.0-4: the JDK client connects with subprotocol mqtt and exchanges binary")
    void jdkClientExchangesBinary() throws Exception
    {
        try (ServerSocketChannel listener = LayerHarness.listen())
        {
            final Collector collector = new Collector();
            final CompletableFuture<WebSocket> connecting = connect(listener, "/mqtt", collector);
            try (LayerHarness pair = LayerHarness.accepted(listener))
            {
                final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), "/mqtt");
                assertThat(pair.pump(layer, connecting::isDone)).isTrue();
                final WebSocket client = connecting.join();
                assertThat(client.getSubprotocol()).isEqualTo("mqtt");

                // a CONNECT cut in two fragments of one message, then a PINGREQ in its own message
                client.sendBinary(ByteBuffer.wrap(CONNECT, 0, 5), false).join();
                client.sendBinary(ByteBuffer.wrap(CONNECT, 5, CONNECT.length - 5), true).join();
                client.sendBinary(ByteBuffer.wrap(PINGREQ), true).join();
                assertThat(pair.pumpBytes(layer, CONNECT.length + PINGREQ.length)).isTrue();
                assertThat(pair.mqttBytes()).isEqualTo(concat(CONNECT, PINGREQ));

                client.sendPing(ByteBuffer.wrap(new byte[]{1, 2, 3})).join();
                assertThat(pair.pump(layer, () -> collector.pongs > 0)).isTrue();

                final byte[] answer = pattern(40_000); // more than one server frame
                pair.writeAll(layer, answer);
                assertThat(pair.pump(layer, () -> collector.binary().length == answer.length)).isTrue();
                assertThat(collector.binary()).isEqualTo(answer);

                client.sendClose(WebSocket.NORMAL_CLOSURE, "done").join();
                assertThat(pair.pumpToEnd(layer)).isTrue();
                layer.close();
                assertThat(collector.closed.get(5, TimeUnit.SECONDS)).isEqualTo(WebSocket.NORMAL_CLOSURE);
            }
        }
    }

    @Test
    @DisplayName("the server's close() reaches the JDK client as a close frame 1000")
    void serverCloseReachesTheClient() throws Exception
    {
        try (ServerSocketChannel listener = LayerHarness.listen())
        {
            final Collector collector = new Collector();
            final CompletableFuture<WebSocket> connecting = connect(listener, "/", collector);
            try (LayerHarness pair = LayerHarness.accepted(listener))
            {
                final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), null);
                assertThat(pair.pump(layer, connecting::isDone)).isTrue();
                connecting.join();
                layer.close();
                assertThat(collector.closed.get(5, TimeUnit.SECONDS)).isEqualTo(WebSocket.NORMAL_CLOSURE);
            }
        }
    }

    @Test
    @DisplayName("a wrong path is refused with 404, which the JDK client reports as a failed handshake")
    void wrongPathRefused() throws Exception
    {
        try (ServerSocketChannel listener = LayerHarness.listen())
        {
            final CompletableFuture<WebSocket> connecting = connect(listener, "/other", new Collector());
            try (LayerHarness pair = LayerHarness.accepted(listener))
            {
                final WebSocketLayer layer = new WebSocketLayer(pair.tcp(), "/mqtt");
                assertThat(pair.pumpToEnd(layer)).isTrue();
                layer.close();
                assertThatThrownBy(connecting::join).isInstanceOf(CompletionException.class)
                    .hasCauseInstanceOf(WebSocketHandshakeException.class);
                assertThat(((WebSocketHandshakeException)connecting.handle((ws, ex) -> ex.getCause()).join())
                    .getResponse().statusCode()).isEqualTo(404);
            }
        }
    }

    /**
     * Starts the JDK client's handshake, asking for subprotocol mqtt; the test's pump answers it.
     */
    private static CompletableFuture<WebSocket> connect(final ServerSocketChannel listener, final String path,
        final WebSocket.Listener collector) throws IOException
    {
        final int port = ((java.net.InetSocketAddress)listener.getLocalAddress()).getPort();
        return HttpClient.newHttpClient().newWebSocketBuilder().subprotocols("mqtt")
            .buildAsync(URI.create("ws://127.0.0.1:" + port + path), collector);
    }

    /**
     * What the client's listener saw, read by the test thread.
     */
    private static final class Collector implements WebSocket.Listener
    {
        final CompletableFuture<Integer> closed = new CompletableFuture<>();
        private final ByteArrayOutputStream binary = new ByteArrayOutputStream();
        volatile int pongs;

        public CompletionStage<?> onBinary(final WebSocket webSocket, final ByteBuffer data, final boolean last)
        {
            final byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            synchronized (binary)
            {
                binary.writeBytes(bytes);
            }
            webSocket.request(1);
            return null;
        }

        public CompletionStage<?> onPong(final WebSocket webSocket, final ByteBuffer message)
        {
            pongs++;
            webSocket.request(1);
            return null;
        }

        public CompletionStage<?> onClose(final WebSocket webSocket, final int statusCode, final String reason)
        {
            closed.complete(statusCode);
            return null;
        }

        public void onError(final WebSocket webSocket, final Throwable error)
        {
            closed.completeExceptionally(error);
        }

        byte[] binary()
        {
            synchronized (binary)
            {
                return binary.toByteArray();
            }
        }
    }
}
