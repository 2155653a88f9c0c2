package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: a remote broker that accepts the bridge, answers its CONNECT, then stops reading (a hung or hostile
 * broker, or a dead path where TCP still holds). The bridge's local reader writes the outward messages to the
 * remote link under BridgeLink's write lock and blocks there (blocking socket, no write timeout) holding the lock;
 * the remote reader's keep-alive (BridgeLink.upkeep) then needs the same lock for its PINGREQ and blocks too, so the
 * keep-alive never ends the link and the bridge never reconnects; and Bridge.close() -> closeLinks() ->
 * notify()/disconnect() needs the lock as well: Broker.close() never returns.
 */
@Timeout(90)
class BridgeStalledRemoteReviewTest extends BridgeReviewBase
{
    private final AtomicInteger connections = new AtomicInteger();

    /**
     * A remote that answers each CONNECT with a CONNACK and then never reads again.
     */
    private ServerSocket stallingRemote() throws Exception
    {
        final ServerSocket server = new ServerSocket();
        server.setReceiveBufferSize(4_096);
        server.bind(new InetSocketAddress("127.0.0.1", 0));
        closeables.add(server);
        final Thread acceptor = new Thread(() ->
        {
            try
            {
                while (true)
                {
                    final Socket socket = server.accept();
                    sockets.add(socket);
                    connections.incrementAndGet();
                    final InputStream in = socket.getInputStream();
                    BridgeReviewSupport.readPacket(in); // the CONNECT
                    final OutputStream out = socket.getOutputStream();
                    BridgeReviewSupport.write(out, new byte[]{0x20, 0x02, 0x00, 0x00});
                    // and nothing is read any more
                }
            }
            catch (final Exception ex)
            {
                // closed
            }
        }, "review-stalling-remote");
        acceptor.setDaemon(true);
        acceptor.start();
        return server;
    }

    private Broker bridgeTo(final ServerSocket remote) throws Exception
    {
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b", "address 127.0.0.1:" + remote.getLocalPort(), "topic big/# out 0",
            "try_private false", "keepalive_interval 5", "restart_timeout 1");
        BridgeReviewSupport.await("the bridge connected", 15, () -> a.bridges().get(0).isConnected());
        return a;
    }

    /**
     * Publishes 64 KiB QoS 0 messages on big/x until the bridge's local reader is stuck writing to the remote.
     */
    private void stall(final Broker a) throws Exception
    {
        final Socket publisher = new Socket("127.0.0.1", a.ports()[0]);
        closeables.add(publisher);
        final OutputStream out = publisher.getOutputStream();
        BridgeReviewSupport.write(out, BridgeReviewSupport.connect311("flood", true, 0));
        assertThat(BridgeReviewSupport.readPacket(publisher.getInputStream())[1][1]).isZero();
        final byte[] message = BridgeReviewSupport.publish("big/x", new byte[64 * 1024], 0, 0);
        final long deadline = System.nanoTime() + 30_000_000_000L;
        int stuckSamples = 0;
        while (stuckSamples < 3)
        {
            assertThat(System.nanoTime() < deadline).as("the bridge's writer blocked on the remote").isTrue();
            for (int i = 0; i < 16; i++)
            {
                out.write(message);
            }
            out.flush();
            Thread.sleep(100);
            stuckSamples = BridgeReviewSupport.threadIn("ringmq-bridge-b-local", "implWrite", "socketWrite0",
                "socketWrite") ? stuckSamples + 1 : 0;
        }
    }

    @Test
    void keepAliveEndsTheLinkToARemoteThatStoppedReading() throws Exception
    {
        final ServerSocket remote = stallingRemote();
        final Broker a = bridgeTo(remote);
        closeables.add(() -> BridgeReviewSupport.timed(5_000, a::close));
        stall(a);
        // keepalive 5 s: nothing heard from the remote for 7.5 s ends the link, and the bridge dials again
        BridgeReviewSupport.await("the keep-alive ending the link and a new connection to the remote", 20,
            () -> connections.get() >= 2);
    }

    @Test
    void brokerClosesPromptlyWhileTheRemoteDoesNotRead() throws Exception
    {
        final ServerSocket remote = stallingRemote();
        final Broker a = bridgeTo(remote);
        stall(a);
        final long tookMs = BridgeReviewSupport.timed(20_000, a::close);
        assertThat(tookMs).as("Broker.close() with a bridge whose remote stopped reading (ms; -1: > 20 s)")
            .isBetween(0L, 5_000L);
    }
}
