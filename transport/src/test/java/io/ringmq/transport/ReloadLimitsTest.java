package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.LimitSettings;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Limits change on a reload while clients stay connected: a real broker, real clients, {@link Broker#reload}
 * with the configuration read again (as SIGHUP does), each effect waited for with a timeout.
 */
class ReloadLimitsTest extends InProcessBrokerTest
{
    private final List<String> logged = new ArrayList<>();
    private final Handler capture = new Handler()
    {
        public void publish(final LogRecord record)
        {
            synchronized (logged)
            {
                logged.add(record.getMessage());
            }
        }

        public void flush()
        {
        }

        public void close()
        {
        }
    };

    @TempDir
    Path directory;

    @BeforeEach
    void captureLog()
    {
        Logger.getLogger("io.ringmq").addHandler(capture);
    }

    @AfterEach
    void releaseLog()
    {
        Logger.getLogger("io.ringmq").removeHandler(capture);
    }

    private static BrokerContext settings()
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0));
    }

    /**
     * Starts with {@code start} applied to {@link #settings()}.
     */
    private void start(final UnaryOperator<BrokerContext> start) throws Exception
    {
        launch(start.apply(settings()));
    }

    /**
     * Reloads as SIGHUP does: the whole configuration again, with {@code change} on top.
     */
    private String reload(final UnaryOperator<BrokerContext> change) throws Exception
    {
        return broker.reload(change.apply(settings()).conclude());
    }

    private boolean refused(final int port) throws Exception
    {
        try (RawClient client = new RawClient(port))
        {
            client.send(RawClient.connect("probe-" + System.nanoTime(), true, 60));
            return client.readPacketOrClosed(5_000) < 0; // closed at accept, no CONNACK
        }
    }

    private static void stillServes(final Paho subscriber, final Paho publisher, final String topic) throws Exception
    {
        assertThat(subscriber.client.isConnected()).as(subscriber.client.getClientId() + " stayed").isTrue();
        final String payload = "still-" + System.nanoTime();
        publisher.publish(topic, payload, 1, false);
        final Paho.Received received = subscriber.next();
        assertThat(received).as("a message after the reload").isNotNull();
        assertThat(received.payload()).isEqualTo(payload);
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: lowering --max-connections refuses the next connection while the connected stay; raising "
        + "it admits again")
    void maxConnections() throws Exception
    {
        start(context -> context.limits(l -> l.maxConnections(10)));
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "sub"));
        subscriber.client.subscribe("limits/c", 1);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        final Paho third = closeLater(Paho.connect(broker.port(), "third"));

        assertThat(reload(context -> context.limits(l -> l.maxConnections(3)))).contains("max-connections");
        assertThat(refused(broker.port())).as("a fourth connection over the new limit").isTrue();
        stillServes(subscriber, publisher, "limits/c");
        assertThat(third.client.isConnected()).isTrue();

        assertThat(reload(context -> context.limits(l -> l.maxConnections(4)))).contains("max-connections");
        closeLater(Paho.connect(broker.port(), "fourth")); // admitted
        assertThat(refused(broker.port())).as("a fifth").isTrue();
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: lowering --max-packet-size refuses a bigger PUBLISH afterwards (3.1.1: closed; 5.0: "
        + "DISCONNECT 0x95 [MQTT-3.2.2-15]) while the other clients stay; a new 5.0 CONNACK announces the new size")
    void maxPacketSize() throws Exception
    {
        start(context -> context.limits(l -> l.maxPacketSize(64 * 1024)));
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "sub"));
        subscriber.client.subscribe("limits/p", 1);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        final RawClient v3 = closeLater(new RawClient(broker.port()));
        assertThat(v3.handshake(RawClient.connect("v3", true, 60))).isZero();
        final RawClient v5 = closeLater(new RawClient(broker.port()).v5());
        assertThat(v5.handshake(RawClient.connect5("v5", null))).isZero();
        final byte[] payload = new byte[4_000];
        v3.send(RawClient.publish("limits/p", payload, 0, 0));
        assertThat(subscriber.next()).as("4 kB fits 64 KiB").isNotNull();

        assertThat(reload(context -> context.limits(l -> l.maxPacketSize(2_048)))).contains("max-packet-size");
        v3.send(RawClient.publish("limits/p", payload, 0, 0));
        assertThat(v3.closedWithin(5_000)).as("3.1.1: closed without a word").isTrue();
        v5.send(RawClient.publish5("limits/p", payload, 0, 0, null));
        assertThat(v5.readPacketOrClosed(5_000)).isEqualTo(PacketType.DISCONNECT);
        assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.PACKET_TOO_LARGE);
        assertThat(v5.closedWithin(5_000)).isTrue();
        stillServes(subscriber, publisher, "limits/p");

        final RawClient fresh = closeLater(new RawClient(broker.port()).v5());
        assertThat(fresh.handshake(RawClient.connect5("fresh", null))).isZero();
        assertThat(fresh.decoder().connack().properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, 0))
            .isEqualTo(2_048);
        fresh.send(RawClient.publish5("limits/p", new byte[100], 0, 0, null));
        assertThat(subscriber.next()).as("a small one still goes through").isNotNull();
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: --max-queued changes what an offline persistent session queues from the next message on")
    void maxQueued() throws Exception
    {
        start(context -> context.limits(l -> l.maxQueued(5)));
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        assertThat(queuedWhileOffline(publisher, "slow-1", 20, 1)).isEqualTo(5);

        assertThat(reload(context -> context.limits(l -> l.maxQueued(12)))).contains("max-queued");
        assertThat(queuedWhileOffline(publisher, "slow-2", 20, 2)).isEqualTo(12);
    }

    @Test
    @Timeout(60)
    @DisplayName("reload, --threading dedicated with two I/O agents: every owner takes the limits on its own thread "
        + "before the reload returns")
    void dedicatedThreads() throws Exception
    {
        start(context -> context.threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .limits(l -> l.maxQueued(5)
            .maxConnections(10)));
        final Paho publisher = closeLater(Paho.connect(broker.port(), "pub"));
        assertThat(queuedWhileOffline(publisher, "slow-d1", 20, 1)).isEqualTo(5);
        assertThat(reload(context -> context.threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .limits(l -> l.maxQueued(9).maxConnections(3)))).contains("max-queued", "max-connections");
        synchronized (logged)
        {
            assertThat(logged).noneSatisfy(line -> assertThat(line).contains("not every agent"));
        }
        assertThat(queuedWhileOffline(publisher, "slow-d2", 20, 2)).isEqualTo(9);
        assertThat(refused(broker.port())).as("a fourth connection (pub, slow-d1, slow-d2 hold three)")
            .isTrue();
    }

    /**
     * A persistent session subscribes and goes offline, {@code count} QoS 1 messages are published to it, and it
     * comes back.
     *
     * @return how many it gets.
     */
    /**
     * @param connected the clients the test holds connected meanwhile (the publisher, earlier sessions).
     */
    private int queuedWhileOffline(final Paho publisher, final String clientId, final int count, final int connected)
        throws Exception
    {
        final Paho first = Paho.connect(broker.port(), clientId, Paho.options(false));
        first.client.subscribe("limits/q/" + clientId, 1);
        first.client.disconnect();
        first.close();
        // its end routed before the first message: with two I/O agents the publisher's messages could otherwise reach
        // the ring before the DISCONNECT, and one go in flight to the session still online (not counted as queued)
        final long deadline = System.currentTimeMillis() + 10_000;
        while (broker.counters().get(BrokerCounters.CLIENTS_CONNECTED) != connected)
        {
            assertThat(System.currentTimeMillis()).as(clientId + " seen offline").isLessThan(deadline);
            Thread.sleep(10);
        }
        for (int i = 0; i < count; i++)
        {
            publisher.publish("limits/q/" + clientId, "m" + i, 1, false);
        }
        final Paho again = closeLater(Paho.connect(broker.port(), clientId, Paho.options(false)));
        assertThat(again.sessionPresent()).isTrue();
        // the marker comes after everything queued, the marker itself may be dropped by the same limit: count
        // until nothing more arrives for a moment after the queued ones
        int received = 0;
        while (null != again.received.poll(1, TimeUnit.SECONDS))
        {
            received++;
        }
        return received;
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a --sys-interval change is seen on $SYS: from one round an hour to one every 200 ms")
    void sysInterval() throws Exception
    {
        start(context -> context.observability(o -> o.sysIntervalMs(3_600_000)));
        final Paho watcher = closeLater(Paho.connect(broker.port(), "sys-watcher"));
        watcher.client.subscribe("$SYS/broker/uptime", 0);
        assertThat(watcher.next()).as("the retained round of the start").isNotNull();
        assertThat(watcher.received.poll(1, TimeUnit.SECONDS)).as("no second round within the hour").isNull();

        assertThat(reload(context -> context.observability(o -> o.sysIntervalMs(200)))).contains("sys-interval");
        assertThat(watcher.next()).isNotNull();
        assertThat(watcher.next()).as("and another one, 200 ms later").isNotNull();
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: --anonymous none refuses new anonymous clients with CONNACK 5; connected anonymous "
        + "clients stay (as Mosquitto's reload)")
    void anonymousOff() throws Exception
    {
        start(context -> context.auth(a -> a.anonymous(Authenticator.AnonymousPolicy.ALL)));
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "anon-sub"));
        subscriber.client.subscribe("limits/a", 1);
        final Paho publisher = closeLater(Paho.connect(broker.port(), "anon-pub"));

        assertThat(reload(context -> context.auth(a -> a.anonymous(Authenticator.AnonymousPolicy.NONE))))
            .contains("anonymous");
        try (RawClient client = new RawClient(broker.port()))
        {
            assertThat(client.handshake(RawClient.connect("anon-new", true, 60)))
                .as("not authorized").isEqualTo(ReasonCode.V3_NOT_AUTHORIZED);
        }
        stillServes(subscriber, publisher, "limits/a");
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a bad value changes nothing (the configuration is refused whole), a bad file with good "
        + "limits neither")
    void badValueKeepsTheOldLimits() throws Exception
    {
        start(context -> context.limits(l -> l.maxConnections(10)));
        assertThatThrownBy(() -> reload(context -> context.limits(l -> l.maxConnections(0))))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--max-connections");
        assertThatThrownBy(() -> Main.rereadContext(new String[] {"--max-packet-size", "12"}))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--max-packet-size");
        assertThatThrownBy(() -> reload(context -> context.limits(l -> l.maxConnections(1))
            .auth(a -> a.passwordFile(directory.resolve("missing"))))).as("turning a password file on takes a restart");
        for (int i = 0; i < 3; i++)
        {
            closeLater(Paho.connect(broker.port(), "kept-" + i)); // still 10, not 1
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a change that needs a restart is named in one log line and keeps the old value; the live "
        + "ones beside it apply")
    void restartOnlyIsLogged() throws Exception
    {
        start(context -> context.memory(m -> m.ringSize(1024)).limits(l -> l.maxConnections(10)));
        final String done = reload(context -> context.memory(m -> m.ringSize(4096)).threads(t -> t.ioThreads(2))
            .limits(l -> l.maxConnections(2)));
        assertThat(done).contains("max-connections").doesNotContain("ring-size");
        synchronized (logged)
        {
            assertThat(logged).anySatisfy(line -> assertThat(line).startsWith("needs a restart: ")
                .contains("ring-size"));
        }
        closeLater(Paho.connect(broker.port(), "one"));
        closeLater(Paho.connect(broker.port(), "two"));
        assertThat(refused(broker.port())).isTrue();
        assertThat(reload(context -> context.memory(m -> m.ringSize(1024)).limits(l -> l.maxConnections(2))))
            .doesNotContain("limits");
    }

    @Test
    @Timeout(60)
    @DisplayName("reload: a raise of --max-packet-size beyond what the rings were sized for at start needs a restart")
    void packetSizeAboveTheRings() throws Exception
    {
        start(context -> context.limits(l -> l.maxPacketSize(64 * 1024)));
        reload(context -> context.limits(l -> l.maxPacketSize(LimitSettings.MAX_PACKET_SIZE_LIMIT)));
        synchronized (logged)
        {
            assertThat(logged).anySatisfy(line -> assertThat(line).contains("max-packet-size above"));
        }
        final RawClient v5 = closeLater(new RawClient(broker.port()).v5());
        assertThat(v5.handshake(RawClient.connect5("v5", null))).isZero();
        assertThat(v5.decoder().connack().properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, 0))
            .as("the old value stays").isEqualTo(64 * 1024);
    }
}
