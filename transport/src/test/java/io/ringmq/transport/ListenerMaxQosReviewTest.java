package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review probes of the per-listener {@code max_qos} and of the reload that keeps a listener's socket while changing
 * what it admits: enhanced authentication, the default-listener rule of the config file, connection counts, reload
 * races, route shards and shared subscriptions.
 */
@Timeout(90)
class ListenerMaxQosReviewTest extends InProcessBrokerTest
{
    @TempDir
    Path directory;


    private static BrokerContext context(final ListenerSettings... extra)
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)).persistence(p -> p.persistent(false));
        for (final ListenerSettings listener : extra)
        {
            context.addListener(listener);
        }
        return context;
    }

    /**
     * @return the Maximum QoS the last CONNACK told (2: none said).
     */
    private static int maximumQosTold(final RawClient v5)
    {
        return v5.decoder().connack().properties().has(PropertyId.MAXIMUM_QOS) ?
            (int)v5.decoder().connack().properties().longValue(PropertyId.MAXIMUM_QOS, 2) : 2;
    }

    /**
     * @return the Maximum QoS a 5.0 client of the port is told, or -1 when its CONNECT is refused.
     */
    private static int maximumQosTold(final int port, final String clientId) throws Exception
    {
        try (RawClient v5 = new RawClient(port).v5())
        {
            if (0 != v5.handshake(RawClient.connect5(clientId, null)))
            {
                return -1;
            }
            return maximumQosTold(v5);
        }
    }

    /**
     * @return the CONNACK code an anonymous 3.1.1 client gets on the port, or -1 when it gets none.
     */
    private static int anonymousConnack(final int port, final String clientId)
    {
        try (RawClient client = new RawClient(port))
        {
            return client.handshake(RawClient.connect(clientId, true, 60));
        }
        catch (final Exception | AssertionError ex)
        {
            return -1;
        }
    }

    private static boolean portFree(final int port)
    {
        try (ServerSocket probe = new ServerSocket())
        {
            probe.bind(new InetSocketAddress("0.0.0.0", port));
            return true;
        }
        catch (final IOException ex)
        {
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // enhanced authentication

    @Test
    @DisplayName("MQTT-3.2.2-9: a 5.0 client admitted by a SCRAM exchange (CONNECT, AUTH 0x18, AUTH) on a listener "
        + "with max_qos 1 is told Maximum QoS 1 in its CONNACK and its QoS 2 SUBSCRIBE is granted QoS 1, as a client "
        + "of the same listener admitted by its CONNECT alone")
    void enhancedAuthenticationKeepsTheListenersMaximum() throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "alice", PasswordHash.createScram("wonderland", 4096));
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(1))
            .auth(a -> a.passwordFile(file).anonymous(Authenticator.AnonymousPolicy.NONE)));
        final int restricted = broker.ports()[1];
        try (RawClient client = new RawClient(restricted).v5())
        {
            final ScramClient scram = new ScramClient("alice", "wonderland", "fyko+d2lbbFgONRv9qkxdawL");
            client.send(RawClient.connect5("scram-client", 60, RawClient.scram(scram.first())));
            assertThat(client.finishScram(scram)).isZero();
            final int told = maximumQosTold(client);
            client.send(RawClient.subscribe5(1, "cap/#", 2));
            assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            final int granted = client.decoder().suback().reasonCode(0);
            assertThat(new int[]{told, granted}).as("{Maximum QoS told, QoS granted} after the exchange")
                .containsExactly(1, 1);
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // the config file's default listener

    @Test
    @DisplayName("per_listener_settings true with allow_anonymous before the first listener line: Mosquitto 2.0 "
        + "does not open its default listener for it (config__parse_args tests password_file, not allow_anonymous), so "
        + "only the file's listener is open; no extra listener on every address admitting anonymous clients")
    void perListenerAllowAnonymousDoesNotOpenTheDefaultListener() throws Exception
    {
        final int port = TestBrokers.freePort();
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "per_listener_settings true\nallow_anonymous true\nlistener " + port +
            " 127.0.0.1\n", StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory", "--warmup", "0"});
        final List<String> opened = new ArrayList<>();
        context.listeners().forEach(listener -> opened.add(listener.toString()));
        // the default listener (if any) moved off 0.0.0.0:1883 for the test: same settings otherwise
        launch(context.bindAddress("127.0.0.1").port(0));
        final List<String> admittedAnonymously = new ArrayList<>();
        for (final int open : broker.ports())
        {
            if (open != port && 0 == anonymousConnack(open, "anon-" + open))
            {
                admittedAnonymously.add("127.0.0.1:" + open);
            }
        }
        assertThat(opened).as("listeners of the file (an extra one admitted anonymous clients at %s)",
            admittedAnonymously).containsExactly("mqtt://127.0.0.1:" + port);
    }

    @Test
    @DisplayName("a config file with max_qos before 'listener 1883' (the layout ConfigFileTest used before this "
        + "change, and ringmq started with) still starts: the default listener it opens must not take 1883 from the "
        + "file's own listener")
    void maxQosBeforeListener1883Starts() throws Exception
    {
        Assumptions.assumeTrue(portFree(1883), "port 1883 is in use on this machine");
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "max_qos 1\nallow_anonymous true\nlistener 1883 127.0.0.1\n",
            StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--sys-interval", "0",
            "--persistence", "memory", "--warmup", "0"});
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        try
        {
            launch(context);
        }
        catch (final Exception ex)
        {
            failure.set(ex);
        }
        assertThat(failure.get()).as("the broker starts (listeners: %s)", context.listeners()).isNull();
        assertThat(maximumQosTold(1883, "on-1883")).isGreaterThanOrEqualTo(0);
    }

    @Test
    @DisplayName("a config file with no listener and no port, only a max_qos: anonymous loopback clients stay "
        + "admitted as before (ringmq's loopback default; Mosquitto 2.0's local-only mode allows anonymous too)")
    void listenerDirectiveAloneKeepsTheAnonymousDefault() throws Exception
    {
        final Path conf = directory.resolve("mosquitto.conf");
        Files.writeString(conf, "max_qos 1\n", StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", conf.toString(), "--bind", "127.0.0.1",
            "--port", "0", "--sys-interval", "0",
            "--persistence", "memory", "--warmup", "0"});
        launch(context);
        assertThat(anonymousConnack(broker.ports()[0], "local")).as("CONNACK of an anonymous loopback client")
            .isZero();
    }

    @Test
    @DisplayName("max_qos values: 0, 1, 2 in a listener section; 3, -1, 'two' and an empty value are refused with "
        + "the file, line and directive named")
    void maxQosValues() throws Exception
    {
        final Path good = directory.resolve("good.conf");
        Files.writeString(good, "allow_anonymous true\nlistener 0 127.0.0.1\nmax_qos 0\nlistener 0 127.0.0.1\n" +
            "max_qos 1\nlistener 0 127.0.0.1\nmax_qos 2\n", StandardCharsets.UTF_8);
        final BrokerContext context = Main.rereadContext(new String[]{"-c", good.toString(), "--sys-interval", "0",
            "--persistence", "memory", "--warmup", "0"});
        assertThat(context.listeners()).extracting(ListenerSettings::maxQos).containsExactly(0, 1, 2);
        launch(context);
        final int[] ports = broker.ports();
        assertThat(new int[]{maximumQosTold(ports[0], "q0"), maximumQosTold(ports[1], "q1"),
            maximumQosTold(ports[2], "q2")}).containsExactly(0, 1, 2);
        for (final String bad : List.of("3", "-1", "two", ""))
        {
            final Path file = directory.resolve("bad" + bad.length() + bad.hashCode() + ".conf");
            Files.writeString(file, "listener 0 127.0.0.1\nmax_qos " + bad + "\n", StandardCharsets.UTF_8);
            final AtomicReference<Throwable> thrown = new AtomicReference<>();
            try
            {
                Main.rereadContext(new String[]{"-c", file.toString(), "--persistence", "memory"});
            }
            catch (final Exception ex)
            {
                thrown.set(ex);
            }
            assertThat(thrown.get()).as("max_qos '%s'", bad).isNotNull();
            assertThat(thrown.get().getMessage()).contains(file + ":2").contains("max_qos");
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // routing: shards, shared subscriptions, session takeover

    @Test
    @DisplayName("--route-shards 2: a QoS 2 $share/g/ SUBSCRIBE and a plain one on a max_qos 1 listener are granted "
        + "QoS 1, and a QoS 2 message from the open listener reaches both at QoS 1")
    void routeShardsAndSharedSubscriptions() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(1)).threads(t -> t.routeShards(2)));
        final int open = broker.ports()[0];
        final int restricted = broker.ports()[1];
        try (RawClient shared = new RawClient(restricted).v5(); RawClient plain = new RawClient(restricted).v5())
        {
            assertThat(shared.handshake(RawClient.connect5("shared", null))).isZero();
            assertThat(plain.handshake(RawClient.connect5("plain", null))).isZero();
            shared.send(RawClient.subscribe5(1, "$share/g/cap/#", 2));
            assertThat(shared.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(shared.decoder().suback().reasonCode(0)).isEqualTo(1);
            plain.send(RawClient.subscribe5(1, "cap/#", 2));
            assertThat(plain.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(plain.decoder().suback().reasonCode(0)).isEqualTo(1);
            try (RawClient publisher = new RawClient(open).v5())
            {
                assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
                for (int i = 0; i < 8; i++) // topics hashing to either shard
                {
                    publisher.send(RawClient.publish5("cap/t" + i, "m".getBytes(), 2, i + 1, null));
                    assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBREC);
                    publisher.send(RawClient.ack(PacketType.PUBREL, i + 1));
                    assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBCOMP);
                }
            }
            for (final RawClient subscriber : List.of(shared, plain))
            {
                for (int i = 0; i < 8; i++)
                {
                    assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
                    assertThat(subscriber.decoder().publish().qos()).isEqualTo(1);
                    subscriber.send(RawClient.ack(PacketType.PUBACK, subscriber.decoder().publish().packetId()));
                }
            }
        }
    }

    @Test
    @DisplayName("a session taken over from the open listener by a connection on a max_qos 0 listener: the new "
        + "connection is told Maximum QoS 0, its QoS 1 PUBLISH ends it with 0x9B, and its new SUBSCRIBEs are granted "
        + "QoS 0")
    void takeoverOnARestrictedListener() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(0)));
        final int open = broker.ports()[0];
        final int restricted = broker.ports()[1];
        final MqttProperties expiry = new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 300);
        try (RawClient first = new RawClient(open).v5())
        {
            assertThat(first.handshake(RawClient.connect5("same", expiry))).isZero();
            assertThat(maximumQosTold(first)).isEqualTo(2);
            try (RawClient second = new RawClient(restricted).v5())
            {
                final byte[] resume = RawClient.connect5("same", expiry);
                resume[9] &= ~0x02; // clean start off: the session is resumed
                assertThat(second.handshake(resume)).isZero();
                assertThat(maximumQosTold(second)).isZero();
                assertThat(first.readPacketOrClosed(5_000)).as("taken over").isEqualTo(PacketType.DISCONNECT);
                second.send(RawClient.subscribe5(1, "cap/#", 2));
                assertThat(second.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
                assertThat(second.decoder().suback().reasonCode(0)).isZero();
                second.send(RawClient.publish5("cap/x", "m".getBytes(), 1, 1, null));
                assertThat(second.readPacketOrClosed(5_000)).isEqualTo(PacketType.DISCONNECT);
                assertThat(second.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------------
    // reload: counts and races

    private static boolean connects(final int port, final String clientId, final List<AutoCloseable> held)
    {
        RawClient client = null;
        try
        {
            client = new RawClient(port);
            if (0 == client.handshake(RawClient.connect(clientId, true, 60)))
            {
                held.add(client);
                return true;
            }
        }
        catch (final Exception | AssertionError ex)
        {
            // refused: closed at accept
        }
        if (null != client)
        {
            try
            {
                client.close();
            }
            catch (final IOException ex)
            {
                // gone
            }
        }
        return false;
    }

    @Test
    @DisplayName("connections counted while the listener had no limit (sockets closed before CONNECT, refused "
        + "CONNECTs, clients gone) are all given back: a reload setting max_connections 2 with one client held admits "
        + "exactly one more")
    void countsStayExactAcrossAReloadThatSetsALimit() throws Exception
    {
        final int port = TestBrokers.freePort();
        launch(context(new ListenerSettings(port, "127.0.0.1")).limits(l -> l.maxKeepAliveSeconds(100)));
        final List<AutoCloseable> held = new ArrayList<>();
        for (int i = 0; i < 5; i++)
        {
            try (Socket socket = new Socket("127.0.0.1", port))
            {
                socket.getOutputStream().write(new byte[]{0x10}); // a CONNECT never finished
            }
            try (RawClient refused = new RawClient(port))
            {
                // keep-alive 0 over --max-keepalive: refused by the I/O agent itself
                assertThat(refused.handshake(RawClient.connect("refused" + i, true, 0))).isEqualTo(2);
            }
            try (RawClient wrongFirst = new RawClient(port))
            {
                wrongFirst.send(RawClient.ping()); // first packet not a CONNECT
                assertThat(wrongFirst.closedWithin(5_000)).isTrue();
            }
        }
        for (int i = 0; i < 3; i++)
        {
            assertThat(connects(port, "gone" + i, held)).isTrue();
        }
        for (final AutoCloseable client : held)
        {
            client.close();
        }
        held.clear();
        final List<AutoCloseable> kept = new ArrayList<>();
        closeLater(() ->
        {
            for (final AutoCloseable client : kept)
            {
                client.close();
            }
        });
        assertThat(connects(port, "kept", kept)).isTrue();
        broker.reload(context(new ListenerSettings(port, "127.0.0.1").maxConnections(2))
            .limits(l -> l.maxKeepAliveSeconds(100)));
        // the closes above reach the acceptor's counts asynchronously: wait for one to fit
        TestBrokers.await("a second connection under the new limit", () -> connects(port, "second", kept));
        assertThat(connects(port, "third", kept)).as("over max_connections 2").isFalse();
        assertThat(kept).hasSize(2);
    }

    @Test
    @DisplayName("reloads flipping a listener's max_qos between 0 and 1 while clients connect: each client is "
        + "told 0 or 1 and is held to what it was told (QoS 1 PUBLISH: PUBACK when told 1, DISCONNECT 0x9B when told "
        + "0), never a mix")
    void reloadRaceKeepsEachConnectionConsistent() throws Exception
    {
        final int port = TestBrokers.freePort();
        launch(context(new ListenerSettings(port, "127.0.0.1").maxQos(1)));
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> reloadFailure = new AtomicReference<>();
        final Thread reloader = new Thread(() ->
        {
            int flip = 0;
            while (!stop.get())
            {
                try
                {
                    broker.reload(context(new ListenerSettings(port, "127.0.0.1").maxQos(flip++ & 1)));
                }
                catch (final Exception ex)
                {
                    reloadFailure.set(ex);
                    return;
                }
            }
        }, "reloader");
        reloader.start();
        int toldZero = 0;
        int toldOne = 0;
        try
        {
            for (int i = 0; i < 40; i++)
            {
                try (RawClient client = new RawClient(port).v5())
                {
                    assertThat(client.handshake(RawClient.connect5("race" + i, null))).isZero();
                    final int told = maximumQosTold(client);
                    assertThat(told).isIn(0, 1);
                    client.send(RawClient.publish5("race/t", "m".getBytes(), 1, 1, null));
                    final int answer = client.readPacketOrClosed(5_000);
                    if (told == 1)
                    {
                        toldOne++;
                        assertThat(answer).as("told 1, published QoS 1").isEqualTo(PacketType.PUBACK);
                    }
                    else
                    {
                        toldZero++;
                        assertThat(answer).as("told 0, published QoS 1").isEqualTo(PacketType.DISCONNECT);
                        assertThat(client.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
                    }
                }
            }
        }
        finally
        {
            stop.set(true);
            reloader.join(30_000);
        }
        assertThat(reloadFailure.get()).isNull();
        assertThat(toldZero + toldOne).isEqualTo(40);
    }

    @Test
    @DisplayName("two port-0 listeners on one address with different max_qos: a reload changing only the second one's "
        + "changes that listener (its port tells the new maximum), the default one keeps QoS 2, no socket is rebound")
    void reloadPairsPortZeroListeners() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").maxQos(1)));
        final int[] before = broker.ports();
        final String line = broker.reload(context(new ListenerSettings(0, "127.0.0.1").maxQos(0)));
        assertThat(line).doesNotContain("listeners:");
        assertThat(broker.ports()).containsExactly(before);
        assertThat(maximumQosTold(before[0], "default")).isEqualTo(2);
        assertThat(maximumQosTold(before[1], "second")).isZero();
    }

    @Test
    @DisplayName("a WebSocket listener with max_qos 1: a 3.1.1 client over ws is granted QoS 1 for a QoS 2 "
        + "SUBSCRIBE and closed for a QoS 2 PUBLISH")
    void webSocketListener() throws Exception
    {
        launch(context(new ListenerSettings(0, "127.0.0.1").protocol(ListenerSettings.Protocol.WEBSOCKETS)
            .maxQos(1)));
        final int ws = broker.ports()[1];
        try (Paho client = new Paho("ws://127.0.0.1:" + ws, "ws-client"))
        {
            client.client.connect();
            final org.eclipse.paho.client.mqttv3.IMqttToken token = client.client.subscribeWithResponse("cap/#", 2);
            assertThat(token.getGrantedQos()).containsExactly(1);
            client.client.publish("cap/x", "m".getBytes(), 1, false); // QoS 1 is fine
            final AtomicReference<Throwable> thrown = new AtomicReference<>();
            try
            {
                client.client.publish("cap/x", "m".getBytes(), 2, false);
            }
            catch (final Exception ex)
            {
                thrown.set(ex);
            }
            TestBrokers.await("the QoS 2 publisher closed", () -> !client.client.isConnected());
        }
    }
}
