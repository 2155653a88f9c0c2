package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review: the bridge listener trusts a peer by its port alone (Listener.admits: any loopback address, a port in
 * ownPorts). Another local process that sees the bridge's source port (ss, /proc/net/tcp) binds the same port on
 * another loopback address (127.0.0.2) and connects while the bridge's own connection is being set up: it is
 * admitted as $bridge (ClientAcl.BRIDGE: every topic, $SYS writes), whatever allow_anonymous, the password file and
 * the ACL file say. Here the port is read from Bridge.ownPorts by reflection; the bridge reconnects every second.
 */
@Timeout(60)
class BridgeListenerSpoofReviewTest extends BridgeReviewBase
{

    /** A remote that takes each CONNECT and drops the bridge 300 ms later: the bridge sets up again every second. */
    private int droppingRemote() throws Exception
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
                    final Socket socket = server.accept();
                    sockets.add(socket);
                    BridgeReviewSupport.readPacket(socket.getInputStream());
                    BridgeReviewSupport.write(socket.getOutputStream(), new byte[]{0x20, 0x02, 0x00, 0x00});
                    final Thread closer = new Thread(() ->
                    {
                        try
                        {
                            Thread.sleep(300);
                            socket.close();
                        }
                        catch (final Exception ex)
                        {
                            // closed
                        }
                    });
                    closer.setDaemon(true);
                    closer.start();
                }
            }
            catch (final Exception ex)
            {
                // closed
            }
        }, "review-dropping-remote");
        acceptor.setDaemon(true);
        acceptor.start();
        return server.getLocalPort();
    }

    @Test
    @SuppressWarnings("unchecked")
    void aLocalProcessCannotGetInAsTheBridge() throws Exception
    {
        final Broker a = BridgeReviewSupport.fromConfig(directory, "listener 0 127.0.0.1\nallow_anonymous false",
            "connection b", "address 127.0.0.1:" + droppingRemote(), "topic x out 0", "try_private false",
            "restart_timeout 1");
        closeables.add(a);
        final Bridge bridge = a.bridges().get(0);
        final java.lang.reflect.Field portsField = Bridge.class.getDeclaredField("ownPorts");
        portsField.setAccessible(true);
        final Set<Integer> ownPorts = (Set<Integer>)portsField.get(bridge);
        final java.lang.reflect.Field localPortField = Bridge.class.getDeclaredField("localPort");
        localPortField.setAccessible(true);
        final int bridgeListener = localPortField.getInt(bridge);

        // an anonymous client on the ordinary listener is refused: the policy the intruder gets around
        try (Socket plain = new Socket("127.0.0.1", a.ports()[0]))
        {
            BridgeReviewSupport.write(plain.getOutputStream(), BridgeReviewSupport.connect311("plain", true, 0));
            assertThat(BridgeReviewSupport.readPacket(plain.getInputStream())[1][1]).isNotZero();
        }

        final AtomicInteger attempts = new AtomicInteger();
        final List<String> admitted = new CopyOnWriteArrayList<>();
        final AtomicBoolean done = new AtomicBoolean();
        final Thread intruder = new Thread(() ->
        {
            final Set<Integer> tried = new HashSet<>();
            while (!done.get())
            {
                for (final Integer port : ownPorts)
                {
                    if (!tried.add(port))
                    {
                        continue;
                    }
                    attempts.incrementAndGet();
                    try
                    {
                        final Socket socket = new Socket();
                        sockets.add(socket);
                        socket.bind(new InetSocketAddress("127.0.0.2", port));
                        socket.connect(new InetSocketAddress("127.0.0.1", bridgeListener), 2_000);
                        socket.setSoTimeout(3_000);
                        BridgeReviewSupport.write(socket.getOutputStream(),
                            BridgeReviewSupport.connect311("intruder-" + port, true, 0));
                        final InputStream in = socket.getInputStream();
                        final byte[][] connack = BridgeReviewSupport.readPacket(in);
                        if (null != connack && connack[1][1] == 0)
                        {
                            admitted.add("from 127.0.0.2:" + port);
                        }
                    }
                    catch (final Exception ex)
                    {
                        // refused
                    }
                }
                Thread.onSpinWait();
            }
        }, "review-intruder");
        intruder.setDaemon(true);
        intruder.start();
        try
        {
            BridgeReviewSupport.await("10 tries by the intruder, or one admitted", 40,
                () -> attempts.get() >= 10 || !admitted.isEmpty());
        }
        finally
        {
            done.set(true);
            intruder.join(5_000);
        }
        assertThat(admitted).as("anonymous connections admitted as $bridge on the bridge listener (of " +
            attempts.get() + " tries)").isEmpty();
    }
}
