package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review 2: QoS 2 from the remote, the bridge's PUBREC to the remote lost with the connection (the fake remote reads
 * it and closes, as if it never arrived). The remote kept its session, so on the new connection it sends the PUBLISH
 * again with DUP under the same packet id [MQTT-4.4.0-1]. BridgeRelay.onAck(PUBREC) already cleared
 * targetIdOf[sourceId] when the local broker's PUBREC came, so the resend is taken for a new message, gets a new
 * local packet id and is delivered a second time: exactly-once broken.
 */
@Timeout(60)
class BridgeQos2DuplicateReview2Test extends BridgeReviewBase
{
    private final AtomicReference<Throwable> remoteFailure = new AtomicReference<>();
    private final java.util.concurrent.CountDownLatch subscribed = new java.util.concurrent.CountDownLatch(1);

    private static byte[][] readUntil(final InputStream in, final OutputStream out, final int type) throws IOException
    {
        while (true)
        {
            final byte[][] packet = BridgeReviewSupport.readPacket(in);
            if (null == packet)
            {
                throw new IOException("closed while waiting for packet type " + type);
            }
            final int t = (packet[0][0] & 0xF0) >>> 4;
            if (t == 12)
            {
                BridgeReviewSupport.write(out, new byte[]{(byte)0xD0, 0}); // PINGRESP
                continue;
            }
            if (t == type)
            {
                return packet;
            }
        }
    }

    private static void suback(final InputStream in, final OutputStream out) throws IOException
    {
        final byte[][] subscribe = readUntil(in, out, 8);
        BridgeReviewSupport.write(out, new byte[]{(byte)0x90, 3, subscribe[1][0], subscribe[1][1], 2});
    }

    private ServerSocket fakeRemote() throws Exception
    {
        final ServerSocket server = new ServerSocket();
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        closeables.add(server);
        final Thread thread = new Thread(() ->
        {
            try
            {
                // first connection: the message, its PUBREC "lost"
                Socket socket = server.accept();
                sockets.add(socket);
                InputStream in = socket.getInputStream();
                OutputStream out = socket.getOutputStream();
                readUntil(in, out, 1);
                BridgeReviewSupport.write(out, new byte[]{0x20, 2, 0, 0});
                suback(in, out);
                subscribed.await();
                BridgeReviewSupport.write(out, BridgeReviewSupport.publish("q/x",
                    "once".getBytes(StandardCharsets.UTF_8), 2, 7));
                readUntil(in, out, 5); // PUBREC 7 ... and the connection drops
                socket.close();

                // second connection, session present: PUBLISH again with DUP [MQTT-4.4.0-1]
                socket = server.accept();
                sockets.add(socket);
                in = socket.getInputStream();
                out = socket.getOutputStream();
                readUntil(in, out, 1);
                BridgeReviewSupport.write(out, new byte[]{0x20, 2, 1, 0});
                suback(in, out);
                final byte[] again = BridgeReviewSupport.publish("q/x", "once".getBytes(StandardCharsets.UTF_8),
                    2, 7);
                again[0] |= 0x08; // DUP
                BridgeReviewSupport.write(out, again);
                readUntil(in, out, 5);
                BridgeReviewSupport.write(out, new byte[]{0x62, 2, 0, 7}); // PUBREL 7
                readUntil(in, out, 7); // PUBCOMP 7
                // a marker after it
                BridgeReviewSupport.write(out, BridgeReviewSupport.publish("q/end",
                    "end".getBytes(StandardCharsets.UTF_8), 2, 8));
                readUntil(in, out, 5);
                BridgeReviewSupport.write(out, new byte[]{0x62, 2, 0, 8});
                while (null != BridgeReviewSupport.readPacket(in))
                {
                    // PINGREQs until the end
                }
            }
            catch (final Throwable ex)
            {
                remoteFailure.compareAndSet(null, ex);
            }
        }, "review2-fake-remote");
        thread.setDaemon(true);
        thread.start();
        return server;
    }

    @Test
    void qos2ResentByTheRemoteAfterALostPubrecIsDeliveredOnce() throws Exception
    {
        final ServerSocket remote = fakeRemote();
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection r", "address 127.0.0.1:" + remote.getLocalPort(), "remote_clientid dup",
            "try_private false", "notifications false", "restart_timeout 1", "topic q/# in 2");
        closeables.add(a);
        final Paho onA = Paho.connect(a.ports()[0], "on-a");
        closeables.add(onA);
        onA.client.subscribe("q/#", 2);
        subscribed.countDown();

        final List<String> received = new ArrayList<>();
        while (!received.contains("q/end"))
        {
            final Paho.Received next = onA.next();
            assertThat(next).as("q/end on the local broker; so far " + received + "; remote: " + remoteFailure.get())
                .isNotNull();
            received.add(next.topic());
        }
        assertThat(received).as("QoS 2 from the remote, delivered exactly once").containsExactly("q/x", "q/end");
    }
}
