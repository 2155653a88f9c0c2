package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review 2: a remote that is alive and reads all the time, only slowly (4 KiB reads 100 ms apart, a slow WAN or
 * cellular link), and a 300 KB QoS 1 message that takes it several seconds, with keepalive_interval 15. Before,
 * BridgeLink.checkStall cut a single write that took longer than the keep-alive, and a peer that had sent nothing
 * for one and a half keep-alives counted as dead while it was reading what the bridge sent; the local session then
 * sent the message again on the next connection, cut the same way. Now a write moves in 64 KiB pieces, and a peer
 * is dead only when nothing answers a PINGREQ within the keep-alive (as an MQTT client judges it: a peer that takes
 * longer than the keep-alive to read what was sent before a PINGREQ is taken for dead, by Mosquitto's bridge too).
 */
@Timeout(90)
class BridgeSlowRemoteReview2Test extends BridgeReviewBase
{
    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicInteger bigReceived = new AtomicInteger();
    private final AtomicLong bytesBeforeCut = new AtomicLong();

    /** At most 16 KiB (4 KiB, its receive buffer) per 100 ms: slow, but never stopping. */
    private static final class Throttled extends FilterInputStream
    {
        final AtomicLong total;

        Throttled(final InputStream in, final AtomicLong total)
        {
            super(in);
            this.total = total;
        }

        @Override
        public int read() throws IOException
        {
            final int b = super.read();
            if (b >= 0)
            {
                total.incrementAndGet();
            }
            return b;
        }

        @Override
        public int read(final byte[] b, final int off, final int len) throws IOException
        {
            try
            {
                Thread.sleep(100);
            }
            catch (final InterruptedException ex)
            {
                throw new IOException(ex);
            }
            final int n = super.read(b, off, Math.min(len, 16 * 1024));
            if (n > 0)
            {
                total.addAndGet(n);
            }
            return n;
        }
    }

    private void serve(final Socket socket)
    {
        try
        {
            final AtomicLong total = new AtomicLong();
            final InputStream in = new Throttled(socket.getInputStream(), total);
            final OutputStream out = socket.getOutputStream();
            BridgeReviewSupport.readPacket(in); // CONNECT
            BridgeReviewSupport.write(out, new byte[]{0x20, 0x02, 0x00, 0x00});
            byte[][] packet;
            while (null != (packet = BridgeReviewSupport.readPacket(in)))
            {
                final int type = (packet[0][0] & 0xF0) >>> 4;
                if (type == 12)
                {
                    BridgeReviewSupport.write(out, new byte[]{(byte)0xD0, 0});
                }
                else if (type == 3 && packet[1].length > 250_000)
                {
                    final int topicLength = (packet[1][0] & 0xFF) << 8 | (packet[1][1] & 0xFF);
                    bigReceived.incrementAndGet();
                    BridgeReviewSupport.write(out, new byte[]{0x40, 2, packet[1][2 + topicLength],
                        packet[1][3 + topicLength]});
                }
            }
            bytesBeforeCut.set(total.get());
            socket.close();
        }
        catch (final Exception ex)
        {
            // closed
        }
    }

    private ServerSocket slowRemote() throws Exception
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
                    final Thread serve = new Thread(() -> serve(socket), "review2-slow-remote-conn");
                    serve.setDaemon(true);
                    serve.start();
                }
            }
            catch (final Exception ex)
            {
                // closed
            }
        }, "review2-slow-remote");
        acceptor.setDaemon(true);
        acceptor.start();
        return server;
    }

    @Test
    void aLargeMessageToASlowButLiveRemoteArrives() throws Exception
    {
        final ServerSocket remote = slowRemote();
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous true",
            "connection b", "address 127.0.0.1:" + remote.getLocalPort(), "topic big/# out 1",
            "try_private false", "notifications false", "keepalive_interval 15", "restart_timeout 1");
        closeables.add(() -> BridgeReviewSupport.timed(5_000, a::close));
        BridgeReviewSupport.await("the bridge connected", 15, () -> a.bridges().get(0).isConnected());

        final Paho onA = Paho.connect(a.ports()[0], "pub");
        closeables.add(onA);
        onA.publish("big/x", "x".repeat(300_000), 1, false);

        BridgeReviewSupport.await("the large message at the remote, or the bridge cutting a live link", 60,
            () -> bigReceived.get() > 0 || null != a.bridges().get(0).lastFailure());
        assertThat(a.bridges().get(0).lastFailure()).as("why the bridge cut a link to a remote that kept reading")
            .isNull();
        assertThat(bigReceived.get()).isEqualTo(1);
    }
}
