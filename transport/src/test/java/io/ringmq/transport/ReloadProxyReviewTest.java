package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A reload that turns a kept listener's PROXY protocol on or off: the per-address limit must follow the new layers.
 */
@Timeout(60)
class ReloadProxyReviewTest
{
    private Broker broker;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, false);
    }

    private static BrokerContext context(final ListenerSettings listener)
    {
        final BrokerContext context = TestBrokers.v5Context().persistence(p -> p.persistent(false))
            .maxConnectionsPerAddress(2).limitLoopback(true)
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.ALL));
        context.addListener(listener);
        return context.conclude();
    }

    private Socket connected(final int port, final byte[] header, final String clientId) throws IOException
    {
        final Socket socket = new Socket("127.0.0.1", port);
        closeables.add(socket);
        socket.setSoTimeout(10_000);
        final OutputStream out = socket.getOutputStream();
        final byte[] connect = RawClient.connect(clientId, true, 60);
        final byte[] both = new byte[header.length + connect.length];
        System.arraycopy(header, 0, both, 0, header.length);
        System.arraycopy(connect, 0, both, header.length, connect.length);
        out.write(both);
        out.flush();
        return socket;
    }

    /** @return the CONNACK's return code, or -1 when the socket was closed without one. */
    private static int connack(final Socket socket) throws IOException
    {
        try
        {
            final InputStream in = socket.getInputStream();
            final byte[] packet = in.readNBytes(4);
            return packet.length < 4 ? -1 : packet[3];
        }
        catch (final java.net.SocketException reset)
        {
            return -1; // closed at accept: a reset rather than an end of stream
        }
    }

    private static byte[] header(final String client)
    {
        return ("PROXY TCP4 " + client + " 127.0.0.1 51000 1883\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    @DisplayName("PROXY turned off by a reload: --max-connections-per-address applies to the clients of the "
        + "listener again (the third from 127.0.0.1 is refused)")
    void proxyOffKeepsThePerAddressLimit() throws Exception
    {
        final int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")
            .proxyProtocol(ListenerSettings.ProxyProtocol.V1)));
        assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1")))).contains("listener settings");
        final int[] codes = new int[3];
        for (int i = 0; i < 3; i++)
        {
            codes[i] = connack(connected(port, new byte[0], "direct-" + i));
        }
        assertThat(codes).as("CONNACK codes (-1: closed at accept)")
            .containsExactly(ReasonCode.V3_CONNECTION_ACCEPTED, ReasonCode.V3_CONNECTION_ACCEPTED, -1);
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS)).isEqualTo(1);
    }

    @Test
    @DisplayName("PROXY turned on by a reload: the limit counts the clients the headers name, not the proxy, and "
        + "nothing is left counted when they close")
    void proxyOnCountsTheClients() throws Exception
    {
        final int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")));
        assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1")
            .proxyProtocol(ListenerSettings.ProxyProtocol.V1)))).contains("listener settings");
        final List<Socket> held = new ArrayList<>();
        for (int i = 1; i <= 2; i++)
        {
            final Socket socket = connected(port, header("203.0.113." + i), "held-" + i);
            assertThat(connack(socket)).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
            held.add(socket);
        }
        // another client behind the same proxy is not affected (as ListenersTest.proxyPerAddressLimit without reload)
        assertThat(connack(connected(port, header("203.0.113.3"), "third")))
            .as("a third client, with its own address, behind the proxy").isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
    }

    @Test
    @DisplayName("PROXY turned on by a reload: closing proxied clients gives back everything they held")
    void proxyOnLeaksNothing() throws Exception
    {
        final int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")));
        assertThat(broker.reload(context(new ListenerSettings(port, "127.0.0.1")
            .proxyProtocol(ListenerSettings.ProxyProtocol.V1)))).contains("listener settings");
        for (int i = 1; i <= 2; i++)
        {
            try (Socket socket = connected(port, header("203.0.113." + i), "gone-" + i))
            {
                assertThat(connack(socket)).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
            }
        }
        TestBrokers.await("a proxied client accepted once the two before it closed", () ->
        {
            try (Socket after = connected(port, header("203.0.113.9"), "after"))
            {
                return connack(after) == ReasonCode.V3_CONNECTION_ACCEPTED;
            }
            catch (final IOException ex)
            {
                return false;
            }
        });
    }

    @Test
    @DisplayName("control: the same listeners from the start (no reload) pass the same checks")
    void controlsWithoutReload() throws Exception
    {
        int port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")));
        assertThat(connack(connected(port, new byte[0], "d1"))).isZero();
        assertThat(connack(connected(port, new byte[0], "d2"))).isZero();
        assertThat(connack(connected(port, new byte[0], "d3"))).isEqualTo(-1);
        TestBrokers.closeAll(closeables, broker, false);
        closeables.clear();

        port = TestBrokers.freePort();
        broker = Broker.launch(context(new ListenerSettings(port, "127.0.0.1")
            .proxyProtocol(ListenerSettings.ProxyProtocol.V1)));
        assertThat(connack(connected(port, header("203.0.113.1"), "p1"))).isZero();
        assertThat(connack(connected(port, header("203.0.113.2"), "p2"))).isZero();
        assertThat(connack(connected(port, header("203.0.113.3"), "p3"))).isZero();
    }

    @Test
    @DisplayName("PROXY turned off by a reload: a direct client from loopback is a loopback client again (anonymous "
        + "allowed from loopback, the default)")
    void proxyOffLoopbackIsLoopback() throws Exception
    {
        final int port = TestBrokers.freePort();
        final BrokerContext proxied = TestBrokers.v5Context().persistence(p -> p.persistent(false));
        proxied.addListener(new ListenerSettings(port, "127.0.0.1").proxyProtocol(ListenerSettings.ProxyProtocol.V1));
        broker = Broker.launch(proxied.conclude());
        final BrokerContext plain = TestBrokers.v5Context().persistence(p -> p.persistent(false));
        plain.addListener(new ListenerSettings(port, "127.0.0.1"));
        assertThat(broker.reload(plain.conclude())).contains("listener settings");
        assertThat(connack(connected(port, new byte[0], "local"))).isEqualTo(ReasonCode.V3_CONNECTION_ACCEPTED);
    }
}
