package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Bridges (Mosquitto's {@code connection} sections) between two in-process brokers, driven by Paho clients on both:
 * messages cross in the directions the topic lines say, renamed by their prefixes, with their QoS and retain flag;
 * nothing comes back where it came from; QoS 1 messages published while the remote is away arrive once it is back;
 * the bridge is admitted past the local password and ACL files, and no client can claim to be it.
 */
@Timeout(90)
class BridgeTest
{
    @TempDir
    Path directory;

    private final List<AutoCloseable> closeables = new ArrayList<>();
    private final List<Broker> brokers = new ArrayList<>();

    @AfterEach
    void stop() throws Exception
    {
        for (final Broker broker : brokers)
        {
            TestBrokers.closeAll(closeables, broker, true);
            closeables.clear();
        }
    }

    private Broker remote(final int port) throws Exception
    {
        final Broker broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(port)
            .observability(o -> o.sysIntervalMs(0)));
        brokers.add(broker);
        return broker;
    }

    /**
     * @return a broker started from a config file of these lines (after a loopback listener with anonymous clients).
     */
    private Broker local(final String... lines) throws Exception
    {
        final Path conf = directory.resolve("bridge-" + brokers.size() + ".conf");
        Files.writeString(conf, "listener 0 127.0.0.1\nallow_anonymous true\n" + String.join("\n", lines) + "\n",
            StandardCharsets.UTF_8);
        final Broker broker = Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(),
            "--sys-interval", "0", "--persistence", "memory", "--warmup", "0"}));
        brokers.add(broker);
        return broker;
    }

    private Paho client(final Broker broker, final String clientId) throws MqttException
    {
        return closeLater(Paho.connect(broker.ports()[0], clientId));
    }

    private <T extends AutoCloseable> T closeLater(final T closeable)
    {
        closeables.add(closeable);
        return closeable;
    }

    /**
     * Waits until the broker's bridge is connected: both brokers acknowledged its subscriptions.
     */
    private static void awaitBridge(final Broker broker) throws InterruptedException
    {
        TestBrokers.await("the bridge connected", () -> broker.bridges().get(0).isConnected());
    }

    /**
     * Waits until the bridge's state notification says 1 on that broker: the bridge's subscriptions there were
     * taken before it (one connection's packets are handled in order).
     */
    private void awaitUp(final Broker broker, final String stateTopic) throws Exception
    {
        try (Paho watcher = Paho.connect(broker.ports()[0], "watcher-" + System.nanoTime()))
        {
            watcher.client.subscribe(stateTopic, 1);
            while (true)
            {
                final Paho.Received state = watcher.next();
                assertThat(state).as("the bridge's state on " + stateTopic).isNotNull();
                if (state.payload().equals("1"))
                {
                    return;
                }
            }
        }
    }

    @Test
    @DisplayName("out and in: QoS 1 both ways, renamed by the prefixes; the local state topic reads 1, retained")
    void outAndInWithPrefixes() throws Exception
    {
        final Broker b = remote(0);
        final Broker a = local("connection b", "address 127.0.0.1:" + b.port(), "remote_clientid a-to-b",
            "topic sensors/# out 1", "topic cmd/# in 1 local/ remote/", "restart_timeout 1");
        awaitUp(a, "$SYS/broker/connection/a-to-b/state");
        awaitBridge(a);

        final Paho onB = client(b, "on-b");
        onB.client.subscribe("sensors/#", 1);
        final Paho onA = client(a, "on-a");
        onA.client.subscribe("local/cmd/#", 1);

        onA.publish("sensors/t1", "21.5", 1, false);
        final Paho.Received out = onB.next();
        assertThat(out).isNotNull();
        assertThat(out.topic()).isEqualTo("sensors/t1");
        assertThat(out.payload()).isEqualTo("21.5");
        assertThat(out.qos()).isEqualTo(1);

        onB.publish("remote/cmd/open", "now", 1, false);
        final Paho.Received in = onA.next();
        assertThat(in).isNotNull();
        assertThat(in.topic()).isEqualTo("local/cmd/open");
        assertThat(in.payload()).isEqualTo("now");

        // a topic no line names does not cross
        onB.client.subscribe("other/#", 1);
        onA.publish("other/x", "stays", 1, false);
        onA.publish("sensors/t2", "after", 1, false);
        assertThat(onB.next().payload()).isEqualTo("after");
        assertThat(a.bridges().get(0).isConnected()).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"mqttv311", "mqttv50"})
    @DisplayName("both: a message crosses once and never comes back (No Local here; there, 5.0's No Local or the "
        + "3.1.1 bridge level 0x84, which ringmq takes as Mosquitto does)")
    void bothWithoutLoops(final String version) throws Exception
    {
        final Broker b = remote(0);
        final Broker a = local("connection b", "address 127.0.0.1:" + b.port(), "remote_clientid loop",
            "topic shared/# both 1", "bridge_protocol_version " + version);
        awaitBridge(a);
        final Paho onA = client(a, "on-a");
        onA.client.subscribe("shared/#", 1);
        final Paho onB = client(b, "on-b");
        onB.client.subscribe("shared/#", 1);

        onA.publish("shared/from-a", "1", 1, false);
        onB.publish("shared/from-b", "2", 1, false);
        // each side: its own message and the other's, once each, then the markers, nothing in between
        final List<String> seenOnA = new ArrayList<>();
        final List<String> seenOnB = new ArrayList<>();
        for (int i = 0; i < 2; i++)
        {
            seenOnA.add(onA.next().topic());
            seenOnB.add(onB.next().topic());
        }
        assertThat(seenOnA).containsExactlyInAnyOrder("shared/from-a", "shared/from-b");
        assertThat(seenOnB).containsExactlyInAnyOrder("shared/from-a", "shared/from-b");
        onA.publish("shared/end", "end", 1, false);
        assertThat(onA.next().topic()).isEqualTo("shared/end");
        assertThat(onB.next().topic()).isEqualTo("shared/end");
        assertThat(onA.nextWithin(300)).as("an echo on a").isNull();
        assertThat(onB.nextWithin(300)).as("an echo on b").isNull();
    }

    @Test
    @DisplayName("retained messages stay retained across the bridge, and QoS 2 crosses as QoS 2")
    void retainedAndQos2() throws Exception
    {
        final Broker b = remote(0);
        final Broker a = local("connection b", "address 127.0.0.1:" + b.port(), "remote_clientid ret",
            "topic status/# out 2", "try_private false");
        awaitBridge(a);
        final Paho onA = client(a, "on-a");
        onA.publish("status/door", "open", 2, true);
        TestBrokers.await("the retained message on b", () ->
        {
            try (Paho late = Paho.connect(b.ports()[0], "late-" + System.nanoTime()))
            {
                late.client.subscribe("status/#", 2);
                final Paho.Received retained = late.nextWithin(200);
                return null != retained && retained.retained() && retained.qos() == 2 &&
                    retained.payload().equals("open");
            }
            catch (final Exception ex)
            {
                return false;
            }
        });
    }

    @Test
    @DisplayName("QoS 1 messages published while the remote is away reach it once it is back (cleansession false)")
    void queuedWhileRemoteAway() throws Exception
    {
        final int port = TestBrokers.freePort();
        final Broker first = remote(port);
        final Broker a = local("connection b", "address 127.0.0.1:" + port, "remote_clientid away",
            "topic jobs/# out 1", "restart_timeout 1", "try_private false");
        awaitBridge(a);
        first.close();
        brokers.remove(first);
        TestBrokers.await("the bridge down", () -> !a.bridges().get(0).isConnected());
        final Paho onA = client(a, "on-a");
        for (int i = 0; i < 5; i++)
        {
            onA.publish("jobs/" + i, "job " + i, 1, false);
        }
        // the new remote takes its subscriber on another listener first, then opens the bridge's port by a reload
        final BrokerContext only = new BrokerContext().bindAddress("127.0.0.1").port(TestBrokers.freePort())
            .observability(o -> o.sysIntervalMs(0));
        final Broker second = Broker.launch(only);
        brokers.add(second);
        final Paho onB = closeLater(Paho.connect(second.port(), "on-b"));
        onB.client.subscribe("jobs/#", 1);
        second.reload(new BrokerContext().bindAddress("127.0.0.1").port(second.port())
            .observability(o -> o.sysIntervalMs(0)).addListener(new io.ringmq.pipeline.ListenerSettings(port,
            "127.0.0.1")));
        final List<String> jobs = new ArrayList<>();
        for (int i = 0; i < 5; i++)
        {
            final Paho.Received job = onB.next();
            assertThat(job).as("job " + i + " after " + jobs).isNotNull();
            jobs.add(job.payload());
        }
        assertThat(jobs).containsExactly("job 0", "job 1", "job 2", "job 3", "job 4");
    }

    @Test
    @DisplayName("the bridge is admitted past the ACL file (as in Mosquitto); a client claiming its name is refused")
    void aclAndClaimedName() throws Exception
    {
        final Broker b = remote(0);
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, "topic write sensors/#\n", StandardCharsets.UTF_8);
        final Broker a = local("acl_file " + acl, "connection b", "address 127.0.0.1:" + b.port(),
            "remote_clientid acl", "topic sensors/# out 1", "topic in/# in 1", "try_private false");
        awaitBridge(a);
        final Paho onB = client(b, "on-b");
        onB.client.subscribe("sensors/#", 1);
        client(a, "writer").publish("sensors/x", "through", 1, false);
        assertThat(onB.next().payload()).isEqualTo("through");

        final MqttConnectOptions claimed = Paho.options(true);
        claimed.setUserName("$bridge");
        assertThatThrownBy(() -> closeLater(Paho.connect(a.ports()[0], "impostor", claimed)))
            .isInstanceOfSatisfying(MqttException.class, refused -> assertThat(refused.getReasonCode())
                .isEqualTo(MqttException.REASON_CODE_NOT_AUTHORIZED));
    }
    @Test
    @DisplayName("TLS to the remote: its certificate checked against bridge_cafile (and its host); another CA's "
        + "certificate is refused and the bridge stays down")
    void tlsToRemote() throws Exception
    {
        final Broker b = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)).addListener(new io.ringmq.pipeline.ListenerSettings(0,
            "127.0.0.1").certFile(TlsContextFactoryTest.tls("server-cert.pem"))
            .keyFile(TlsContextFactoryTest.tls("server-key.pem"))));
        brokers.add(b);
        final int tlsPort = b.ports()[1];
        final Broker a = local("connection good", "address 127.0.0.1:" + tlsPort, "remote_clientid good",
            "topic secure/# out 1", "try_private false", "bridge_cafile " + TlsContextFactoryTest.tls("ca.pem"),
            "connection bad", "address 127.0.0.1:" + tlsPort, "remote_clientid bad", "topic secure/# out 1",
            "try_private false", "restart_timeout 1", "bridge_cafile " + TlsContextFactoryTest.tls("other-ca.pem"));
        TestBrokers.await("the good bridge up", () -> a.bridges().get(0).isConnected());
        final Paho onB = client(b, "on-b");
        onB.client.subscribe("secure/#", 1);
        client(a, "writer").publish("secure/x", "over tls", 1, false);
        final Paho.Received crossed = onB.next();
        assertThat(crossed).isNotNull();
        assertThat(crossed.payload()).isEqualTo("over tls");
        assertThat(onB.nextWithin(300)).as("a copy through the bad bridge").isNull();
        TestBrokers.await("the bad bridge failed", () -> null != a.bridges().get(1).lastFailure());
        assertThat(a.bridges().get(1).isConnected()).isFalse();
        assertThat(a.bridges().get(1).connections()).isZero();
    }

    @Test
    @DisplayName("5.0 to the remote: user properties, content type and the message expiry cross with the message")
    void mqtt5PropertiesCross() throws Exception
    {
        final Broker b = remote(0);
        final Broker a = local("connection b", "address 127.0.0.1:" + b.port(), "remote_clientid five",
            "topic v5/# out 2", "bridge_protocol_version mqttv50");
        awaitBridge(a);
        final Paho5 onB = closeLater(Paho5.connect(b.port(), "on-b"));
        onB.subscribe(new org.eclipse.paho.mqttv5.common.MqttSubscription("v5/#", 2), 0);
        final Paho5 onA = closeLater(Paho5.connect(a.ports()[0], "on-a"));
        final org.eclipse.paho.mqttv5.common.MqttMessage message =
            new org.eclipse.paho.mqttv5.common.MqttMessage("props".getBytes(StandardCharsets.UTF_8));
        message.setQos(2);
        final org.eclipse.paho.mqttv5.common.packet.MqttProperties properties =
            new org.eclipse.paho.mqttv5.common.packet.MqttProperties();
        properties.setUserProperties(List.of(new org.eclipse.paho.mqttv5.common.packet.UserProperty("k", "v")));
        properties.setContentType("text/plain");
        properties.setMessageExpiryInterval(3_600L);
        message.setProperties(properties);
        onA.publish("v5/x", message);
        final Paho5.Received crossed = onB.next();
        assertThat(crossed).isNotNull();
        assertThat(crossed.payload()).isEqualTo("props");
        assertThat(crossed.message().getQos()).isEqualTo(2);
        assertThat(crossed.message().getProperties().getUserProperties()).extracting(p -> p.getKey() + "=" +
            p.getValue()).containsExactly("k=v");
        assertThat(crossed.message().getProperties().getContentType()).isEqualTo("text/plain");
        assertThat(crossed.message().getProperties().getMessageExpiryInterval()).isBetween(3_590L, 3_600L);
    }
}
