package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLSocket;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * TLS 1.2 renegotiation asked by a client: each one is a full handshake (key exchange, signature) on the broker's
 * TLS task pool, on a connection that already passed the connect timeout and the per-address limit, so a few
 * clients renegotiating in a loop would hold the pool that new clients' handshakes need.
 */
class TlsRenegotiationTest
{
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, false);
    }

    @Test
    @Timeout(60)
    @DisplayName("a client-initiated TLS 1.2 renegotiation ends the connection instead of costing a full handshake")
    void clientRenegotiationRefused() throws Exception
    {
        final BrokerContext context = TestBrokers.v5Context();
        context.addListener(ListenersTest.tlsListener().tlsVersion("tlsv1.2"));
        broker = Broker.launch(context);
        final int tlsPort = broker.ports()[1];
        final javax.net.ssl.SSLContext client = TlsSocketLayerTest.clientContext(null);
        for (int i = 0; i < 2; i++) // a full handshake, then one resuming its session: both go on
        {
            try (SSLSocket first = connected(client, tlsPort, "first" + i))
            {
                first.getOutputStream().write(new byte[]{(byte)0xE0, 0}); // DISCONNECT
            }
        }
        final SSLSocket socket = connected(client, tlsPort, "renegotiating");
        final OutputStream out = socket.getOutputStream();
        final DataInputStream in = new DataInputStream(socket.getInputStream());
        int renegotiated = 0;
        try
        {
            for (int i = 0; i < 20; i++)
            {
                socket.getSession().invalidate();
                socket.startHandshake();
                out.write(new byte[]{(byte)0xC0, 0}); // PINGREQ
                out.flush();
                if (in.readUnsignedByte() != 0xD0 || in.readUnsignedByte() != 0)
                {
                    break;
                }
                renegotiated++;
            }
        }
        catch (final IOException expected)
        {
            // the broker ended the connection
        }
        assertThat(renegotiated).as("full handshakes a client made the broker run on one connection").isZero();
    }

    /**
     * @return a TLS 1.2 socket whose CONNECT was accepted.
     */
    private SSLSocket connected(final javax.net.ssl.SSLContext client, final int port, final String clientId)
        throws IOException
    {
        final SSLSocket socket = (SSLSocket)client.getSocketFactory().createSocket("127.0.0.1", port);
        closeables.add(socket);
        socket.setEnabledProtocols(new String[]{"TLSv1.2"});
        socket.setSoTimeout(10_000);
        socket.startHandshake();
        socket.getOutputStream().write(RawClient.connect(clientId, true, 60));
        final DataInputStream in = new DataInputStream(socket.getInputStream());
        assertThat(in.readUnsignedByte()).as("CONNACK").isEqualTo(0x20);
        final byte[] body = new byte[in.readUnsignedByte()];
        in.readFully(body);
        assertThat(body[1]).as("accepted").isZero();
        return socket;
    }
}
