package io.ringmq.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * MQTT.js over {@code ws://} (interop/mqttjs-ws.js) through {@link WebSocketLayer} to a real in-process broker:
 * until the broker's listeners construct the layer themselves, a bridge thread here plays the agent, with one
 * WebSocket layer per client and a plain TCP connection to the broker behind it. Runs where node and MQTT.js are
 * installed ({@code npm install --prefix /tmp/mqttjs mqtt@5}, or {@code MQTTJS_NODE_PATH}); skipped elsewhere.
 */
@Timeout(120)
class WebSocketMqttJsTest
{
    private static final String NODE_PATH = System.getenv().getOrDefault("MQTTJS_NODE_PATH", "/tmp/mqttjs/node_modules");

    @Test
    @DisplayName("MQTT-6.0.0-1..4: MQTT.js over ws:// with subprotocol mqtt, QoS 0/1/2 on 3.1.1 and 5.0")
    void mqttJsOverWebSocket() throws Exception
    {
        final File script = new File("../interop/mqttjs-ws.js");
        assumeTrue(script.isFile() && new File(NODE_PATH, "mqtt").isDirectory(), "MQTT.js is not installed");
        try (Broker broker = Broker.launch(TestBrokers.v5Context());
            Bridge bridge = new Bridge(broker.port()))
        {
            final Thread thread = new Thread(bridge, "ws-bridge");
            thread.start();
            final ProcessBuilder node = new ProcessBuilder("node", script.getPath(), String.valueOf(bridge.port()))
                .redirectErrorStream(true);
            node.environment().put("NODE_PATH", NODE_PATH);
            final Process process = node.start();
            final boolean exited = process.waitFor(90, TimeUnit.SECONDS);
            final String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!exited)
            {
                process.destroyForcibly();
            }
            bridge.running = false;
            thread.join(5_000);
            assertThat(exited).as(output).isTrue();
            assertThat(process.exitValue()).as(output).isZero();
            assertThat(bridge.failure).as(output).isNull();
        }
    }

    /**
     * Plays the I/O agent for WebSocket clients and relays their MQTT bytes to the broker and back.
     */
    private static final class Bridge implements Runnable, AutoCloseable
    {
        private final int brokerPort;
        private final ServerSocketChannel listener;
        private final Selector selector;
        private final List<Relay> relays = new ArrayList<>();
        volatile boolean running = true;
        volatile Throwable failure;

        Bridge(final int brokerPort) throws IOException
        {
            this.brokerPort = brokerPort;
            listener = LayerHarness.listen();
            listener.configureBlocking(false);
            selector = Selector.open();
            listener.register(selector, SelectionKey.OP_ACCEPT);
        }

        int port() throws IOException
        {
            return ((InetSocketAddress)listener.getLocalAddress()).getPort();
        }

        public void run()
        {
            try
            {
                while (running)
                {
                    selector.select(1);
                    selector.selectedKeys().clear();
                    SocketChannel accepted;
                    while (null != (accepted = listener.accept()))
                    {
                        relays.add(new Relay(accepted, brokerPort, selector));
                    }
                    relays.removeIf(Relay::step);
                }
            }
            catch (final Throwable ex)
            {
                failure = ex;
            }
        }

        public void close() throws IOException
        {
            running = false;
            relays.forEach(Relay::close);
            selector.close();
            listener.close();
        }
    }

    /**
     * One client: its WebSocket layer on one side, a TCP connection to the broker on the other.
     */
    private static final class Relay
    {
        private final WebSocketLayer layer;
        private final SocketChannel broker;
        private final ByteBuf fromClient = Unpooled.buffer(16 * 1024);
        private final ByteBuf fromBroker = Unpooled.buffer(16 * 1024);

        Relay(final SocketChannel client, final int brokerPort, final Selector selector) throws IOException
        {
            client.configureBlocking(false);
            client.register(selector, SelectionKey.OP_READ);
            layer = new WebSocketLayer(new TcpSocketLayer(client), "/mqtt");
            broker = SocketChannel.open(new InetSocketAddress("127.0.0.1", brokerPort));
            broker.configureBlocking(false);
            broker.register(selector, SelectionKey.OP_READ);
        }

        /**
         * @return true when the relay ended.
         */
        boolean step()
        {
            try
            {
                fromClient.ensureWritable(4096);
                int read;
                while ((read = layer.read(fromClient)) > 0 || layer.hasBufferedInput())
                {
                    fromClient.ensureWritable(4096);
                }
                while (fromClient.isReadable() && fromClient.readBytes(broker, fromClient.readableBytes()) > 0)
                {
                    // the broker takes what it can
                }
                fromClient.discardReadBytes();
                fromBroker.ensureWritable(4096);
                final int answered = fromBroker.writeBytes(broker, fromBroker.writableBytes());
                if (fromBroker.isReadable())
                {
                    layer.write(fromBroker);
                    fromBroker.discardReadBytes();
                }
                if (layer.hasPendingOutput())
                {
                    layer.flush();
                }
                if (read < 0 || answered < 0)
                {
                    close();
                    return true;
                }
                return false;
            }
            catch (final IOException ex)
            {
                close();
                return true;
            }
        }

        void close()
        {
            layer.close();
            try
            {
                broker.close();
            }
            catch (final IOException ignore)
            {
                // closing anyway
            }
        }
    }
}
