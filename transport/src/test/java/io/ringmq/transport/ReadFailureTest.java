package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLContextSpi;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLServerSocketFactory;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSessionContext;
import javax.net.ssl.SSLSocketFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A socket layer that throws while reading (here a TLS engine that throws on the client's first bytes, as a fault in
 * an engine might on bytes it did not expect) ends only that connection: it is closed and its count given back, the
 * error goes on to the agent's error log, and the agent does not read it again. Before, the connection stayed open and
 * readable, so every later duty cycle read it and threw again.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadFailureTest
{
    private static final long STEP_LIMIT_NS = 10_000_000_000L;

    @Test
    void aLayerThatThrowsOnReadEndsItsConnectionOnce() throws Exception
    {
        try (SteppedEdge edge = new SteppedEdge(new BrokerContext()))
        {
            edge.listener.layers.tls(new TlsContext(throwingEngines(), new String[]{"TLSv1.3", "TLSv1.2"}, null,
                TlsContext.CLIENT_AUTH_NONE, TlsContext.IDENTITY_NONE));
            final RawClient client = edge.client();
            client.send(new byte[]{0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5}); // what a TLS client hello starts as
            final List<RuntimeException> errors = new ArrayList<>();
            final long deadline = System.nanoTime() + STEP_LIMIT_NS;
            while (errors.isEmpty() && System.nanoTime() < deadline)
            {
                try
                {
                    edge.agent.doWork();
                }
                catch (final RuntimeException ex)
                {
                    errors.add(ex);
                }
            }
            assertThat(errors).as("the engine's fault, passed on to the error log").hasSize(1);
            assertThat(errors.get(0)).isInstanceOf(IllegalStateException.class);
            assertThat(client.readPacketOrClosed(5_000)).as("closed by the broker").isEqualTo(-1);
            assertThat(edge.connectionCount.get()).as("its count given back").isZero();
            assertThat(edge.counters.get(BrokerCounters.CONNECTIONS_CLOSED)).isEqualTo(1);
            for (int i = 0; i < 100; i++)
            {
                edge.agent.doWork(); // nothing left to throw: the connection is not read again
            }

            edge.listener.layers.tls(null);
            edge.connect3(edge.client(), "after-the-fault");
            assertThat(edge.connectionCount.get()).as("the next client connects").isEqualTo(1);
        }
    }

    /**
     * @return a TLS context whose server engines are the JDK's, but throw {@link IllegalStateException} from
     * {@code unwrap}: the client's first bytes.
     */
    private static SSLContext throwingEngines() throws Exception
    {
        final SSLContext real = SSLContext.getDefault();
        final SSLContextSpi spi = new SSLContextSpi()
        {
            @Override
            protected void engineInit(final javax.net.ssl.KeyManager[] km, final javax.net.ssl.TrustManager[] tm,
                final java.security.SecureRandom random)
            {
            }

            @Override
            protected SSLSocketFactory engineGetSocketFactory()
            {
                return real.getSocketFactory();
            }

            @Override
            protected SSLServerSocketFactory engineGetServerSocketFactory()
            {
                return real.getServerSocketFactory();
            }

            @Override
            protected SSLEngine engineCreateSSLEngine()
            {
                return new ThrowingEngine(real.createSSLEngine());
            }

            @Override
            protected SSLEngine engineCreateSSLEngine(final String host, final int port)
            {
                return new ThrowingEngine(real.createSSLEngine(host, port));
            }

            @Override
            protected SSLSessionContext engineGetServerSessionContext()
            {
                return real.getServerSessionContext();
            }

            @Override
            protected SSLSessionContext engineGetClientSessionContext()
            {
                return real.getClientSessionContext();
            }
        };
        return new SSLContext(spi, real.getProvider(), "TLS")
        {
        };
    }

    /** The JDK's engine, but for {@code unwrap}, which throws. */
    private static final class ThrowingEngine extends SSLEngine
    {
        private final SSLEngine real;

        ThrowingEngine(final SSLEngine real)
        {
            this.real = real;
        }

        @Override
        public SSLEngineResult wrap(final ByteBuffer[] sources, final int offset, final int length,
            final ByteBuffer destination) throws SSLException
        {
            return real.wrap(sources, offset, length, destination);
        }

        @Override
        public SSLEngineResult unwrap(final ByteBuffer source, final ByteBuffer[] destinations, final int offset,
            final int length)
        {
            throw new IllegalStateException("an engine's fault on the client's bytes");
        }

        @Override
        public Runnable getDelegatedTask()
        {
            return real.getDelegatedTask();
        }

        @Override
        public void closeInbound() throws SSLException
        {
            real.closeInbound();
        }

        @Override
        public boolean isInboundDone()
        {
            return real.isInboundDone();
        }

        @Override
        public void closeOutbound()
        {
            real.closeOutbound();
        }

        @Override
        public boolean isOutboundDone()
        {
            return real.isOutboundDone();
        }

        @Override
        public String[] getSupportedCipherSuites()
        {
            return real.getSupportedCipherSuites();
        }

        @Override
        public String[] getEnabledCipherSuites()
        {
            return real.getEnabledCipherSuites();
        }

        @Override
        public void setEnabledCipherSuites(final String[] suites)
        {
            real.setEnabledCipherSuites(suites);
        }

        @Override
        public String[] getSupportedProtocols()
        {
            return real.getSupportedProtocols();
        }

        @Override
        public String[] getEnabledProtocols()
        {
            return real.getEnabledProtocols();
        }

        @Override
        public void setEnabledProtocols(final String[] protocols)
        {
            real.setEnabledProtocols(protocols);
        }

        @Override
        public SSLSession getSession()
        {
            return real.getSession();
        }

        @Override
        public void beginHandshake() throws SSLException
        {
            real.beginHandshake();
        }

        @Override
        public SSLEngineResult.HandshakeStatus getHandshakeStatus()
        {
            return real.getHandshakeStatus();
        }

        @Override
        public void setUseClientMode(final boolean mode)
        {
            real.setUseClientMode(mode);
        }

        @Override
        public boolean getUseClientMode()
        {
            return real.getUseClientMode();
        }

        @Override
        public void setNeedClientAuth(final boolean need)
        {
            real.setNeedClientAuth(need);
        }

        @Override
        public boolean getNeedClientAuth()
        {
            return real.getNeedClientAuth();
        }

        @Override
        public void setWantClientAuth(final boolean want)
        {
            real.setWantClientAuth(want);
        }

        @Override
        public boolean getWantClientAuth()
        {
            return real.getWantClientAuth();
        }

        @Override
        public void setEnableSessionCreation(final boolean flag)
        {
            real.setEnableSessionCreation(flag);
        }

        @Override
        public boolean getEnableSessionCreation()
        {
            return real.getEnableSessionCreation();
        }
    }
}
