package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The warm-up at start ({@code --warmup}): it goes through every step against the real broker, leaves no session,
 * subscription, message or count behind, touches no session the store recovered, and its client gives up cleanly on
 * a peer that refuses, says nothing, or sends what it never asked for.
 */
@Timeout(60)
class WarmupTest
{
    private static final long SHORT_DEADLINE_NS = TimeUnit.MILLISECONDS.toNanos(500);

    @TempDir
    Path directory;

    @ParameterizedTest
    @EnumSource(value = BrokerContext.Threading.class, names = {"SHARED", "SHARED_NETWORK", "DEDICATED"})
    @DisplayName("the warm-up goes through every step, then leaves no connection, session or count behind")
    void warmsUpAndLeavesNothingBehind(final BrokerContext.Threading threading) throws Exception
    {
        try (Broker broker = Broker.launch(TestBrokers.v5Context().threads(t -> t.threading(threading)
            .warmupConnections(40))))
        {
            assertThat(broker.warmup().completed()).isEqualTo(40);
            assertThat(broker.warmup().failed()).isZero();
            assertThat(broker.sessionCount()).isZero();
            for (int i = 0; i < BrokerCounters.count(); i++)
            {
                if (i != BrokerCounters.RELOAD_READY)
                {
                    assertThat(broker.counters().get(i)).as(BrokerCounters.label(i)).isZero();
                }
            }
            try (RawClient client = new RawClient(broker.port()))
            {
                assertThat(client.handshake(RawClient.connect("real", true, 60))).isZero();
                client.send(RawClient.subscribe(1, "#", 0));
                assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                client.send(RawClient.publish("t", "x".getBytes(StandardCharsets.UTF_8), 0, 0));
                assertThat(client.readPacket(5_000)).as("its own message, and none of the warm-up's")
                    .isEqualTo(PacketType.PUBLISH);
            }
            assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_ACCEPTED)).isEqualTo(1);
            assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"#", "$ringmq/#"})
    @DisplayName("a persistent session recovered with a '#' subscription, or one to the broker's own '$ringmq/#', gets "
        + "none of the warm-up's $ messages (nothing queued for it), and keeps its session [MQTT-4.7.2-1]")
    void aRecoveredSessionIsNotTouched(final String filter) throws Exception
    {
        final BrokerContext first = TestBrokers.v5Context().persistence(p -> p.persistent(true)
            .dataDir(directory.resolve("data")));
        try (Broker broker = Broker.launch(first);
            RawClient keeper = new RawClient(broker.port()))
        {
            assertThat(keeper.handshake(RawClient.connect("keeper", false, 60))).isZero();
            keeper.send(RawClient.subscribe(1, filter, 1));
            assertThat(keeper.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        }
        final BrokerContext second = TestBrokers.v5Context().persistence(p -> p.persistent(true)
            .dataDir(directory.resolve("data")))
            .threads(t -> t.warmupConnections(20));
        try (Broker broker = Broker.launch(second);
            RawClient keeper = new RawClient(broker.port()))
        {
            assertThat(broker.warmup().completed()).isEqualTo(20);
            assertThat(broker.sessionCount()).isEqualTo(1);
            assertThat(keeper.handshake(RawClient.connect("keeper", false, 60))).isZero();
            assertThat(keeper.decoder().connack().isSessionPresent()).isTrue();
            keeper.send(RawClient.ping());
            assertThat(keeper.readPacket(5_000)).as("nothing queued before the PINGRESP")
                .isEqualTo(PacketType.PINGRESP);
        }
    }

    @Test
    @DisplayName("under an ACL that refuses anonymous clients, and with anonymous clients refused, the warm-up still "
        + "goes through, without waiting for messages that cannot come")
    void anAclThatRefusesEverything() throws Exception
    {
        final Path acl = java.nio.file.Files.writeString(directory.resolve("acl"), "user alice\ntopic readwrite a/#\n");
        try (Broker broker = Broker.launch(TestBrokers.v5Context().auth(a -> a.aclFile(acl)
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.NONE))
            .threads(t -> t.warmupConnections(30))))
        {
            assertThat(broker.warmup().completed()).isEqualTo(30);
            assertThat(broker.warmup().elapsedNs()).isLessThan(Warmup.DEADLINE_NS);
            assertThat(broker.sessionCount()).isZero();
            assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_ACCEPTED)).isZero();
            assertThat(broker.counters().get(BrokerCounters.AUTH_FAILURES)).isZero();
        }
    }

    @Test
    @DisplayName("a port in use, found after the warm-up (the real listeners are bound last), refuses the start")
    void aPortInUseIsFoundAfterTheWarmup() throws Exception
    {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> Broker.launch(TestBrokers.v5Context()
                .port(taken.getLocalPort()).threads(t -> t.warmupConnections(10))))
                .isInstanceOf(IOException.class).hasMessageContaining("cannot listen on");
        }
        try (Broker broker = Broker.launch(TestBrokers.v5Context().threads(t -> t.warmupConnections(10))))
        {
            assertThat(broker.warmup().completed()).as("the failed start left nothing in the way").isEqualTo(10);
        }
    }

    @Test
    void invokerThreadingHasNoWarmup() throws Exception
    {
        try (Broker broker = Broker.launch(TestBrokers.v5Context()
            .threads(t -> t.threading(BrokerContext.Threading.INVOKER)
            .warmupConnections(10))))
        {
            assertThat(broker.warmup()).isNull();
        }
    }

    @Test
    void aNegativeCountIsRefused()
    {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new BrokerContext()
            .threads(t -> t.warmupConnections(-1)).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--warmup");
    }

    @Test
    @DisplayName("the warm-up's anonymous listener admits the warm-up's own sockets only: a local process that "
        + "connects while the broker starts is not admitted")
    void theWarmupListenerAdmitsItsOwnSocketsOnly() throws IOException
    {
        final Listener[] listeners = Listener.bindAll(java.util.List.of(new ListenerSettings(0, "127.0.0.1")
            .anonymous(io.ringmq.pipeline.auth.Authenticator.AnonymousPolicy.ALL).conclude()), 16, null);
        try (java.nio.channels.SocketChannel stranger = java.nio.channels.SocketChannel.open();
            java.nio.channels.SocketChannel own = java.nio.channels.SocketChannel.open())
        {
            final Listener listener = listeners[0];
            final java.util.Set<Integer> ownPorts = java.util.concurrent.ConcurrentHashMap.newKeySet();
            listener.admitOnly(ownPorts::contains);
            own.bind(new java.net.InetSocketAddress("127.0.0.1", 0));
            ownPorts.add(((java.net.InetSocketAddress)own.getLocalAddress()).getPort());
            own.connect(new java.net.InetSocketAddress("127.0.0.1", listener.port));
            stranger.connect(new java.net.InetSocketAddress("127.0.0.1", listener.port));
            final java.util.Map<Integer, Boolean> admitted = new java.util.HashMap<>();
            for (int i = 0; i < 2; i++)
            {
                java.nio.channels.SocketChannel accepted = listener.server.accept(); // a non-blocking listener
                final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (null == accepted && System.nanoTime() < deadline)
                {
                    Thread.onSpinWait();
                    accepted = listener.server.accept();
                }
                assertThat(accepted).isNotNull();
                admitted.put(((java.net.InetSocketAddress)accepted.getRemoteAddress()).getPort(),
                    listener.admits(accepted));
                accepted.close();
            }
            assertThat(admitted).containsEntry(((java.net.InetSocketAddress)own.getLocalAddress()).getPort(), true)
                .containsEntry(((java.net.InetSocketAddress)stranger.getLocalAddress()).getPort(), false);
            listener.admitOnly(null);
            assertThat(listener.admits(stranger)).isTrue(); // any listener but the warm-up's admits anyone
        }
        finally
        {
            Listener.closeAll(listeners);
        }
    }

    @Test
    @DisplayName("nothing listening: every connection fails, at once")
    void nothingListening() throws IOException
    {
        final int port;
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress()))
        {
            port = server.getLocalPort();
        }
        final Warmup.Result result = Warmup.run(port, 5, TimeUnit.SECONDS.toNanos(5));
        assertThat(result.completed()).isZero();
        assertThat(result.failed()).isEqualTo(5);
    }

    @Test
    @DisplayName("a peer that accepts and says nothing: the deadline ends it")
    void silentPeer() throws Exception
    {
        final Warmup.Result result = againstPeer(3, (in, out) -> drain(in));
        assertThat(result.completed()).isZero();
        assertThat(result.failed()).isEqualTo(3);
        assertThat(result.elapsedNs()).isLessThan(TimeUnit.SECONDS.toNanos(5));
    }

    @Test
    @DisplayName("a refused CONNECT (CONNACK return code 5) fails that connection")
    void refusedConnect() throws Exception
    {
        final Warmup.Result result = againstPeer(2, (in, out) -> reply(in, out, new byte[]{0x20, 2, 0, 5}));
        assertThat(result.completed()).isZero();
        assertThat(result.failed()).isEqualTo(2);
    }

    @Test
    @DisplayName("a peer that grants the SUBSCRIBE and acknowledges everything but delivers nothing: the round ends "
        + "after its grace and the connection still completes")
    void acknowledgedButNothingDelivered() throws Exception
    {
        final Warmup.Result result = againstPeer(1, (in, out) ->
        {
            final byte[] sink = new byte[256];
            in.read(sink); // CONNECT
            out.write(new byte[]{0x20, 2, 0, 0});
            out.flush();
            in.read(sink); // SUBSCRIBE, two PUBLISHes, PINGREQ: one write
            out.write(new byte[]{(byte)0x90, 3, 0, 1, 1, 0x40, 2, 0, 2, (byte)0xD0, 0});
            out.flush();
            in.read(sink); // UNSUBSCRIBE
            out.write(new byte[]{(byte)0xB0, 2, 0, 3});
            out.flush();
            drain(in);
        });
        assertThat(result.completed()).isEqualTo(1);
        assertThat(result.failed()).isZero();
    }

    @Test
    @DisplayName("hostile replies: an unexpected packet type, a truncated one, or one too large, fail the connection")
    void hostileReplies() throws Exception
    {
        final byte[][] replies = {
            {0x20, 2, 0, 0, (byte)0xF0, 0}, // CONNACK, then a reserved packet type
            {0x20, 2, 0, 0, (byte)0x90, 0x03, 0, 1}, // a SUBACK cut short, then the end of the stream
            {0x20, 2, 0, 0, 0x30, (byte)0xFF, (byte)0xFF, (byte)0xFF, 0x7F}, // a PUBLISH of 256 MB
            {0x20, 1}, // a CONNACK too short
            {0x40, 2, 0, 1}, // a PUBACK before any CONNACK
        };
        for (final byte[] reply : replies)
        {
            final Warmup.Result result = againstPeer(1, (in, out) -> reply(in, out, reply));
            assertThat(result.completed()).isZero();
            assertThat(result.failed()).isEqualTo(1);
        }
    }

    /**
     * Runs a short warm-up against a peer that serves each connection with {@code serve} on a thread of its own.
     */
    private static Warmup.Result againstPeer(final int connections, final Serve serve) throws Exception
    {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress()))
        {
            final Thread acceptor = new Thread(() ->
            {
                while (!server.isClosed())
                {
                    try
                    {
                        final Socket socket = server.accept();
                        final Thread handler = new Thread(() ->
                        {
                            try (socket)
                            {
                                serve.accept(socket.getInputStream(), socket.getOutputStream());
                            }
                            catch (final IOException ex)
                            {
                                // the warm-up closed it
                            }
                        }, "warmup-test-peer");
                        handler.setDaemon(true);
                        handler.start();
                    }
                    catch (final IOException ex)
                    {
                        return; // closed
                    }
                }
            }, "warmup-test-acceptor");
            acceptor.setDaemon(true);
            acceptor.start();
            return Warmup.run(server.getLocalPort(), connections, SHORT_DEADLINE_NS);
        }
    }

    /**
     * Serves one connection.
     */
    private interface Serve
    {
        void accept(InputStream in, OutputStream out) throws IOException;
    }

    private static void reply(final InputStream in, final OutputStream out, final byte[] reply) throws IOException
    {
        in.read(new byte[64]); // the CONNECT
        out.write(reply);
        out.flush();
        drain(in);
    }

    private static void drain(final InputStream in) throws IOException
    {
        final byte[] sink = new byte[256];
        while (in.read(sink) >= 0)
        {
            // until the warm-up closes it
        }
    }
}
