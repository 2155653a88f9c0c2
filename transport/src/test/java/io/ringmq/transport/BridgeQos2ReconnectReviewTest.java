package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: QoS 2 toward the remote across a reconnect (cleansession false, the default). The connection drops after
 * the remote's PUBREC and before it got the bridge's PUBREL: the remote session keeps packet id 1 awaiting PUBREL.
 * The bridge never sends that PUBREL again [MQTT-4.4.0-1] (a new BridgeRelay starts empty), and its new relay
 * numbers from 1 again (BridgeRelay.nextId = 1), so the next QoS 2 message goes out as packet id 1, which the remote
 * takes for a duplicate of the one it holds: acknowledged, never delivered. A message is lost.
 */
@Timeout(90)
class BridgeQos2ReconnectReviewTest extends BridgeReviewBase
{
    private final AtomicBoolean cut = new AtomicBoolean();

    /**
     * A TCP proxy to the remote that drops the connection (both ways) at the first PUBREL the bridge sends.
     */
    private int proxyTo(final int remotePort) throws Exception
    {
        final ServerSocket server = new ServerSocket();
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        closeables.add(server);
        final Thread acceptor = new Thread(() ->
        {
            try
            {
                while (true)
                {
                    final Socket bridge = server.accept();
                    final Socket remote = new Socket("127.0.0.1", remotePort);
                    sockets.add(bridge);
                    sockets.add(remote);
                    pump(bridge, remote, true);
                    pump(remote, bridge, false);
                }
            }
            catch (final Exception ex)
            {
                // closed
            }
        }, "review-proxy");
        acceptor.setDaemon(true);
        acceptor.start();
        return server.getLocalPort();
    }

    private void pump(final Socket from, final Socket to, final boolean fromBridge)
    {
        final Thread thread = new Thread(() ->
        {
            try
            {
                final InputStream in = from.getInputStream();
                final OutputStream out = to.getOutputStream();
                while (true)
                {
                    final byte[][] packet = BridgeReviewSupport.readPacket(in);
                    if (null == packet)
                    {
                        break;
                    }
                    if (fromBridge && (packet[0][0] & 0xF0) == 0x60 && cut.compareAndSet(false, true))
                    {
                        break; // the PUBREL is lost with the connection
                    }
                    BridgeReviewSupport.write(out, BridgeReviewSupport.frame(packet));
                }
            }
            catch (final Exception ex)
            {
                // closed
            }
            try
            {
                from.close();
                to.close();
            }
            catch (final Exception ex)
            {
                // closed
            }
        }, "review-pump");
        thread.setDaemon(true);
        thread.start();
    }

    @Test
    void qos2MessageAfterAReconnectBetweenPubrecAndPubcompArrives() throws Exception
    {
        final Broker b = BridgeReviewSupport.remote();
        closeables.add(b);
        final int proxy = proxyTo(b.port());
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b", "address 127.0.0.1:" + proxy, "remote_clientid qos2", "try_private false",
            "notifications false", "restart_timeout 1", "topic q/# out 2");
        closeables.add(a);
        BridgeReviewSupport.await("the bridge connected", 15, () -> a.bridges().get(0).isConnected());

        final Paho onB = Paho.connect(b.ports()[0], "on-b");
        closeables.add(onB);
        onB.client.subscribe("q/#", 2);
        final Paho onA = Paho.connect(a.ports()[0], "on-a");
        closeables.add(onA);

        onA.publish("q/1", "first", 2, false);
        BridgeReviewSupport.await("the connection dropped at the PUBREL and the bridge back", 20, () ->
            cut.get() && a.bridges().get(0).connections() >= 2 && a.bridges().get(0).isConnected());
        onA.publish("q/2", "second", 2, false);

        final List<String> received = new ArrayList<>();
        while (!received.contains("q/2"))
        {
            final Paho.Received next = onB.next(); // 10 s
            assertThat(next).as("q/2 on the remote; received so far: " + received).isNotNull();
            received.add(next.topic());
        }
        assertThat(received).contains("q/1", "q/2");
    }
}
