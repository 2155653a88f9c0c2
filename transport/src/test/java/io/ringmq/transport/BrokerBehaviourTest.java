package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.MqttSecurityException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every broker behaviour of MQTT 3.1.1, against a real ringmq on an ephemeral port, driven by Eclipse Paho and
 * by raw sockets for what well-behaved clients never do. Subclasses run it in each threading mode.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
abstract class BrokerBehaviourTest
{
    private final List<AutoCloseable> closeables = new ArrayList<>();
    private Broker broker;

    abstract BrokerContext.Threading threading();

    /**
     * @return routing shards (--route-shards) the behaviours run on.
     */
    int routeShards()
    {
        return 1;
    }

    Broker broker()
    {
        return broker(context -> { });
    }

    Broker broker(final Consumer<BrokerContext> settings)
    {
        final BrokerContext context = new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(threading())).observability(o -> o.sysIntervalMs(0))
            .threads(t -> t.ioThreads(2).routeShards(routeShards()));
        settings.accept(context);
        try
        {
            broker = Broker.launch(context);
        }
        catch (final IOException ex)
        {
            throw new IllegalStateException(ex);
        }
        return broker;
    }

    <T extends AutoCloseable> T closeLater(final T closeable)
    {
        closeables.add(closeable);
        return closeable;
    }

    Paho paho(final String clientId) throws MqttException
    {
        return closeLater(Paho.connect(broker.port(), clientId));
    }

    RawClient raw() throws IOException
    {
        return closeLater(new RawClient(broker.port()));
    }

    /**
     * @return a raw 3.1.1 client, connected with a clean session.
     */
    RawClient rawConnected(final String clientId) throws IOException
    {
        final RawClient client = raw();
        assertThat(client.handshake(RawClient.connect(clientId, true, 0))).isZero();
        return client;
    }

    /**
     * @return a raw 3.1.1 client, connected with a clean session and subscribed to the filter.
     */
    RawClient rawSubscriber(final String clientId, final String filter, final int qos) throws IOException
    {
        final RawClient client = rawConnected(clientId);
        client.send(RawClient.subscribe(1, filter, qos));
        assertThat(client.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        return client;
    }

    @AfterEach
    void tearDown() throws Exception
    {
        TestBrokers.closeAll(closeables, broker, true);
    }

    @Test
    @DisplayName("PUBLISH at QoS 0, 1 and 2 reaches a subscriber at min(publish, granted) QoS")
    void publishAtEveryQos() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("t/#", 2);
        final Paho publisher = paho("pub");
        for (int qos = 0; qos <= 2; qos++)
        {
            publisher.publish("t/" + qos, "m" + qos, qos, false);
            final Paho.Received received = subscriber.next();
            assertThat(received).isNotNull();
            assertThat(received.topic()).isEqualTo("t/" + qos);
            assertThat(received.payload()).isEqualTo("m" + qos);
            assertThat(received.qos()).isEqualTo(qos);
            assertThat(received.retained()).isFalse();
        }
        final Paho low = paho("low");
        low.client.subscribe("t/#", 0);
        publisher.publish("t/x", "downgraded", 2, false);
        assertThat(low.next().qos()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.1-5, MQTT-3.3.1-10: a retained message is stored, replaced, sent on subscribe, cleared")
    void retainedMessages() throws Exception
    {
        broker();
        final Paho publisher = paho("pub");
        publisher.publish("r/a", "first", 1, true);
        publisher.publish("r/a", "second", 1, true);
        publisher.publish("r/b", "other", 0, true);

        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("r/a", 1);
        final Paho.Received received = subscriber.next();
        assertThat(received.payload()).isEqualTo("second");
        assertThat(received.retained()).isTrue();

        publisher.publish("r/a", "", 1, true); // clear
        final Paho late = paho("late");
        late.client.subscribe("r/#", 1);
        final List<Paho.Received> retained = late.drainUntilMarker(publisher, "r/marker");
        assertThat(retained).extracting(Paho.Received::payload).containsExactly("other");
    }

    @Test
    @DisplayName("MQTT-3.3.5-1: overlapping subscriptions are delivered once, at the highest granted QoS")
    void overlappingSubscriptions() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe(new String[]{"a/#", "a/+", "+/b"}, new int[]{0, 2, 1});
        final Paho publisher = paho("pub");
        publisher.publish("a/b", "once", 2, false);
        // Paho hands a QoS 2 message over on PUBREL, so wait for it before the marker that proves no copy follows
        final Paho.Received received = subscriber.next();
        assertThat(received.payload()).isEqualTo("once");
        assertThat(received.qos()).isEqualTo(2);
        assertThat(subscriber.drainUntilMarker(publisher, "a/marker")).isEmpty();
    }

    @Test
    @DisplayName("MQTT-4.7.2-1: '#' and '+' in the first level do not match topics starting with '$'")
    void dollarTopics() throws Exception
    {
        broker();
        final Paho all = paho("all");
        all.client.subscribe("#", 0);
        final Paho plus = paho("plus");
        plus.client.subscribe("+/x", 0);
        final Paho sys = paho("sys");
        sys.client.subscribe("$internal/#", 0);
        sys.client.subscribe("$SYS/#", 0);
        final Paho publisher = paho("pub");
        publisher.publish("$SYS/x", "spoofed", 0, false); // $SYS is the broker's: dropped, counted
        publisher.publish("$internal/x", "system", 0, false);
        publisher.publish("a/x", "plain", 0, false);
        assertThat(all.drainUntilMarker(publisher, "m")).extracting(Paho.Received::payload).containsExactly("plain");
        assertThat(sys.next().payload()).isEqualTo("system");
        assertThat(plus.next().payload()).isEqualTo("plain");
        assertThat(broker.counters().get(BrokerCounters.SYS_PUBLISH_REFUSED)).isEqualTo(1);
    }

    @Test
    @DisplayName("UNSUBSCRIBE stops delivery on that filter only")
    void unsubscribe() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe(new String[]{"u/1", "u/2"}, new int[]{1, 1});
        subscriber.client.unsubscribe("u/1");
        final Paho publisher = paho("pub");
        publisher.publish("u/1", "gone", 1, false);
        publisher.publish("u/2", "kept", 1, false);
        assertThat(subscriber.drainUntilMarker(publisher, "u/2")).extracting(Paho.Received::payload)
            .containsExactly("kept");
    }

    @Test
    @DisplayName("MQTT-3.1.2-8: the will is published when the client's socket dies")
    void willOnSocketKill() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("will/#", 1);
        final RawClient victim = raw();
        assertThat(victim.handshake(RawClient.connectWithWill("victim", "will/victim", "gone", 1))).isZero();
        victim.kill();
        final Paho.Received will = subscriber.next();
        assertThat(will).isNotNull();
        assertThat(will.topic()).isEqualTo("will/victim");
        assertThat(will.payload()).isEqualTo("gone");
        assertThat(will.qos()).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.1.2-8: the will is published when the client breaks the protocol")
    void willOnProtocolError() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("will/#", 0);
        final RawClient rude = raw();
        assertThat(rude.handshake(RawClient.connectWithWill("rude", "will/rude", "bye", 0))).isZero();
        rude.send(new byte[]{0x30, 0x03, 0x00, 0x01, '#'}); // wildcard in a topic name
        assertThat(rude.closedWithin(5_000)).isTrue();
        assertThat(subscriber.next().topic()).isEqualTo("will/rude");
    }

    @Test
    @DisplayName("MQTT-3.1.2-10: no will after DISCONNECT")
    void noWillAfterDisconnect() throws Exception
    {
        broker();
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("will/#", 0);
        final RawClient polite = raw();
        assertThat(polite.handshake(RawClient.connectWithWill("polite", "will/polite", "bye", 0))).isZero();
        polite.send(new byte[]{(byte)0xE0, 0x00});
        assertThat(polite.closedWithin(5_000)).isTrue();
        final Paho publisher = paho("pub");
        assertThat(subscriber.drainUntilMarker(publisher, "will/marker")).isEmpty();
    }

    @Test
    @DisplayName("MQTT-3.1.4-2: a second connection with a live client id takes over and closes the first")
    void takeover() throws Exception
    {
        broker();
        final Paho first = paho("same-id");
        final Paho second = paho("same-id");
        assertThat(first.lost.await(10, TimeUnit.SECONDS)).isTrue();
        assertThat(second.client.isConnected()).isTrue();
        second.client.subscribe("t", 0);
        final Paho publisher = paho("pub");
        publisher.publish("t", "to-second", 0, false);
        assertThat(second.next().payload()).isEqualTo("to-second");
        assertThat(broker.counters().get(BrokerCounters.CONNECTIONS_TAKEN_OVER)).isEqualTo(1);
    }

    @Test
    @DisplayName("MQTT-3.1.2-4, MQTT-3.2.2-2: a persistent session queues QoS 1/2 while offline and delivers on return")
    void offlineQueueing() throws Exception
    {
        broker();
        final Paho subscriber = closeLater(Paho.connect(broker.port(), "persistent", Paho.options(false)));
        subscriber.client.subscribe("q/#", 1);
        subscriber.client.disconnect();
        final Paho publisher = paho("pub");
        for (int i = 0; i < 5; i++)
        {
            publisher.publish("q/" + i, "offline-" + i, 1, false);
        }
        publisher.publish("q/zero", "dropped", 0, false);
        final Paho back = closeLater(Paho.connect(broker.port(), "persistent", Paho.options(false)));
        assertThat(back.sessionPresent()).isTrue();
        final List<Paho.Received> received = back.drainUntilMarker(publisher, "q/marker");
        assertThat(received).extracting(Paho.Received::payload)
            .containsExactly("offline-0", "offline-1", "offline-2", "offline-3", "offline-4");
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: an unacknowledged QoS 1 message is resent with DUP on reconnect")
    void redeliveryWithDup() throws Exception
    {
        broker();
        final RawClient first = raw();
        assertThat(first.handshake(RawClient.connect("forgetful", false, 60))).isZero();
        first.send(RawClient.subscribe(1, "d/#", 1));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final Paho publisher = paho("pub");
        publisher.publish("d/1", "unacked", 1, false);
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(first.decoder().publish().isDup()).isFalse();
        final int packetId = first.decoder().publish().packetId();
        first.kill(); // no PUBACK

        final RawClient second = raw();
        second.send(RawClient.connect("forgetful", false, 60));
        assertThat(second.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        assertThat(second.decoder().connack().isSessionPresent()).isTrue();
        assertThat(second.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(second.decoder().publish().isDup()).isTrue();
        assertThat(second.decoder().publish().packetId()).isEqualTo(packetId);
        assertThat(second.decoder().publish().payload().asString()).isEqualTo("unacked");
    }

    @Test
    @DisplayName("MQTT-4.4.0-1: a session resumed through another I/O agent brings its in-flight and queued "
        + "messages, in order (its delivery half moves between shards)")
    void sessionMovesBetweenShards() throws Exception
    {
        broker(context -> context.limits(l -> l.maxInflight(2)));
        final RawClient first = raw(); // connections go to the I/O agents in turn: first and dummy share one
        assertThat(first.handshake(RawClient.connect("mover", false, 60))).isZero();
        first.send(RawClient.subscribe(1, "mv/#", 1));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final Paho publisher = paho("pub");
        for (int i = 0; i < 5; i++)
        {
            publisher.publish("mv/" + i, "m" + i, 1, false);
        }
        final int[] inflight = new int[2];
        for (int i = 0; i < 2; i++)
        {
            assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            inflight[i] = first.decoder().publish().packetId();
        }
        first.kill(); // no PUBACK: two in flight, three queued
        closeLater(new java.net.Socket("127.0.0.1", broker.port())); // takes the first agent's turn

        final RawClient second = raw(); // on the publisher's agent, so not on the first one's
        second.send(RawClient.connect("mover", false, 60));
        assertThat(second.readPacket(5_000)).isEqualTo(PacketType.CONNACK);
        assertThat(second.decoder().connack().isSessionPresent()).isTrue();
        final List<String> payloads = new ArrayList<>();
        for (int i = 0; i < 2; i++)
        {
            assertThat(second.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            assertThat(second.decoder().publish().isDup()).isTrue();
            assertThat(second.decoder().publish().packetId()).isEqualTo(inflight[i]);
            payloads.add(second.decoder().publish().payload().asString());
        }
        for (int i = 0; i < 3; i++)
        {
            second.send(RawClient.ack(PacketType.PUBACK, i < 2 ? inflight[i] : second.decoder().publish().packetId()));
            assertThat(second.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            payloads.add(second.decoder().publish().payload().asString());
        }
        assertThat(payloads).containsExactly("m0", "m1", "m2", "m3", "m4");
        if (threading() != BrokerContext.Threading.SHARED)
        {
            assertThat(broker.counters().get(BrokerCounters.SESSIONS_MOVED)).isEqualTo(1);
        }
    }

    @Test
    @DisplayName("MQTT-3.1.3-8: an empty client id needs a clean session; with one, an id is assigned")
    void emptyClientId() throws Exception
    {
        broker();
        final RawClient persistent = raw();
        assertThat(persistent.handshake(RawClient.connect("", false, 60))).isEqualTo(2);
        assertThat(persistent.closedWithin(5_000)).isTrue();
        final RawClient clean = raw();
        assertThat(clean.handshake(RawClient.connect("", true, 60))).isZero();
    }

    @Test
    @DisplayName("credentials: a wrong password gets return code 4, no user name 5, the right one is accepted")
    void credentials(@TempDir final Path directory) throws Exception
    {
        final Path file = directory.resolve("passwd");
        PasswordFile.write(file, "filed", "s3cret", 1_000);
        broker(context -> context.auth(a -> a.credentials("u", "p").passwordFile(file)
            .anonymous(Authenticator.AnonymousPolicy.NONE)));
        final MqttConnectOptions wrong = Paho.options(true);
        wrong.setUserName("u");
        wrong.setPassword("nope".toCharArray());
        assertThatThrownBy(() -> Paho.connect(broker.port(), "w", wrong)).isInstanceOf(MqttSecurityException.class)
            .extracting(ex -> ((MqttException)ex).getReasonCode()).isEqualTo(4);
        assertThatThrownBy(() -> Paho.connect(broker.port(), "anon", Paho.options(true)))
            .isInstanceOf(MqttSecurityException.class)
            .extracting(ex -> ((MqttException)ex).getReasonCode()).isEqualTo(5);
        final MqttConnectOptions right = Paho.options(true);
        right.setUserName("u");
        right.setPassword("p".toCharArray());
        closeLater(Paho.connect(broker.port(), "r", right));
        final MqttConnectOptions filed = Paho.options(true);
        filed.setUserName("filed");
        filed.setPassword("s3cret".toCharArray());
        closeLater(Paho.connect(broker.port(), "f", filed));
        assertThat(broker.counters().get(BrokerCounters.AUTH_FAILURES)).isEqualTo(2);
    }

    @Test
    @DisplayName("malformed bytes close only the connection that sent them")
    void malformedBytesOnARawSocket() throws Exception
    {
        broker();
        final Paho bystander = paho("bystander");
        bystander.client.subscribe("ok", 0);
        final RawClient garbage = raw();
        garbage.send(new byte[]{0x10, (byte)0xFF, (byte)0xFF, (byte)0xFF, (byte)0xFF, 0x7F}); // 5-byte length
        assertThat(garbage.closedWithin(5_000)).isTrue();
        final RawClient noise = raw();
        assertThat(noise.handshake(RawClient.connect("noise", true, 60))).isZero();
        noise.send(new byte[]{0x00, 0x00}); // reserved packet type 0
        assertThat(noise.closedWithin(5_000)).isTrue();
        final Paho publisher = paho("pub");
        publisher.publish("ok", "still-fine", 0, false);
        assertThat(bystander.next().payload()).isEqualTo("still-fine");
        assertThat(broker.counters().get(BrokerCounters.PROTOCOL_ERRORS)).isGreaterThanOrEqualTo(2);
    }

    @Test
    @DisplayName("MQTT-3.1.0-1, MQTT-3.1.0-2: the first packet must be CONNECT, and only the first")
    void connectFirstAndOnce() throws Exception
    {
        broker();
        final RawClient early = raw();
        early.send(RawClient.subscribe(1, "x", 0));
        assertThat(early.closedWithin(5_000)).isTrue();
        final RawClient twice = raw();
        assertThat(twice.handshake(RawClient.connect("twice", true, 60))).isZero();
        twice.send(RawClient.connect("twice", true, 60));
        assertThat(twice.closedWithin(5_000)).isTrue();
    }

    @Test
    @DisplayName("MQTT-3.1.2-24: a client silent for 1.5 times its keep-alive is disconnected")
    void keepAlive() throws Exception
    {
        broker();
        final RawClient sleepy = raw();
        assertThat(sleepy.handshake(RawClient.connect("sleepy", true, 1))).isZero();
        assertThat(sleepy.closedWithin(1_000)).isFalse(); // within 1.5 s it stays
        assertThat(sleepy.closedWithin(4_000)).isTrue();
        assertThat(broker.counters().get(BrokerCounters.KEEP_ALIVE_TIMEOUTS)).isEqualTo(1);
    }

    @Test
    @DisplayName("PINGREQ is answered with PINGRESP and keeps the connection alive")
    void ping() throws Exception
    {
        broker();
        final RawClient pinger = raw();
        assertThat(pinger.handshake(RawClient.connect("pinger", true, 1))).isZero();
        for (int i = 0; i < 4; i++)
        {
            pinger.send(new byte[]{(byte)0xC0, 0x00});
            assertThat(pinger.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
            Thread.sleep(500);
        }
    }

    @Test
    @DisplayName("a connection that sends no CONNECT within the connect timeout is closed")
    void connectTimeout() throws Exception
    {
        broker(context -> context.limits(l -> l.connectTimeoutMs(500)));
        final RawClient silent = raw();
        assertThat(silent.closedWithin(5_000)).isTrue();
        assertThat(broker.counters().get(BrokerCounters.CONNECT_TIMEOUTS)).isEqualTo(1);
    }

    @Test
    @DisplayName("1,000 simultaneous dials are all accepted and answered")
    void thousandSimultaneousDials() throws Exception
    {
        broker();
        final int count = 1_000;
        final ExecutorService executor = Executors.newFixedThreadPool(200);
        try
        {
            final List<Callable<Integer>> dials = new ArrayList<>();
            for (int i = 0; i < count; i++)
            {
                final String id = "dial-" + i;
                dials.add(() ->
                {
                    final RawClient client = new RawClient(broker.port());
                    synchronized (closeables)
                    {
                        closeables.add(client);
                    }
                    return client.handshake(RawClient.connect(id, true, 60));
                });
            }
            int accepted = 0;
            for (final Future<Integer> result : executor.invokeAll(dials, 60, TimeUnit.SECONDS))
            {
                accepted += result.get() == 0 ? 1 : 0;
            }
            assertThat(accepted).isEqualTo(count);
        }
        finally
        {
            executor.shutdownNow();
        }
    }

    @Test
    @DisplayName("a full ingress ring pauses reading; no QoS 1 message is lost and order is kept")
    void backpressureNeverDropsQos1() throws Exception
    {
        broker(context -> context.memory(m -> m.ringSize(64)).limits(l -> l.maxQueued(10_000)));
        final Paho subscriber = paho("sub");
        subscriber.client.subscribe("bp", 1);
        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect("burst", true, 0))).isZero();
        final int count = 5_000;
        final java.io.ByteArrayOutputStream burst = new java.io.ByteArrayOutputStream();
        for (int i = 1; i <= count; i++)
        {
            burst.write(RawClient.publish("bp", Integer.toString(i).getBytes(), 1, i));
        }
        publisher.send(burst.toByteArray()); // far more than 64 slots in one go
        for (int i = 1; i <= count; i++)
        {
            assertThat(publisher.readPacket(10_000)).isEqualTo(PacketType.PUBACK);
            assertThat(publisher.decoder().ack().packetId()).isEqualTo(i);
        }
        for (int i = 1; i <= count; i++)
        {
            final Paho.Received received = subscriber.next();
            assertThat(received).isNotNull();
            assertThat(received.payload()).isEqualTo(Integer.toString(i));
        }
    }

    @Test
    @DisplayName("a subscriber that never reads does not slow one that does; its QoS 0 messages are dropped")
    void slowSubscriberIsolation() throws Exception
    {
        broker();
        final RawClient stuck = closeLater(new RawClient(broker.port(), 4096));
        assertThat(stuck.handshake(RawClient.connect("stuck", true, 0))).isZero();
        stuck.send(RawClient.subscribe(1, "flood/#", 0));
        assertThat(stuck.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        // from here on the stuck subscriber never reads again

        final RawClient fast = raw();
        assertThat(fast.handshake(RawClient.connect("fast", true, 0))).isZero();
        fast.send(RawClient.subscribe(1, "flood/#", 0));
        assertThat(fast.readPacket(5_000)).isEqualTo(PacketType.SUBACK);

        final RawClient publisher = raw();
        assertThat(publisher.handshake(RawClient.connect("flooder", true, 0))).isZero();
        final byte[] message = RawClient.publish("flood/x", new byte[1024], 0, 0);
        final int rounds = 40;
        final int perRound = 500;
        int received = 0;
        for (int round = 0; round < rounds; round++)
        {
            final byte[] batch = new byte[message.length * perRound];
            for (int i = 0; i < perRound; i++)
            {
                System.arraycopy(message, 0, batch, i * message.length, message.length);
            }
            publisher.send(batch);
            for (int i = 0; i < perRound; i++)
            {
                assertThat(fast.readPacket(10_000)).isEqualTo(PacketType.PUBLISH);
                received++;
            }
        }
        assertThat(received).isEqualTo(rounds * perRound);
        assertThat(broker.counters().get(BrokerCounters.QOS0_DROPPED_SLOW_SUBSCRIBER)).isGreaterThan(0);
    }

    @Test
    @DisplayName("MQTT-4.3.2-2, MQTT-4.3.2-4: a QoS 1 PUBLISH that meets the broker asleep is handled once, " +
        "delivered once and acknowledged once, and no wake-up on the way is lost")
    void publishToASleepingBroker() throws Exception
    {
        broker();
        final RawClient subscriber = rawSubscriber("sleep-sub", "sleep/#", 1);
        final RawClient publisher = rawConnected("sleep-pub");
        final int rounds = 20;
        long elapsedNs = 0;
        for (int round = 0; round < rounds; round++)
        {
            TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
            final long startNs = System.nanoTime();
            publisher.send(RawClient.publish("sleep/" + round, new byte[]{(byte)round}, 1, 1 + round));
            assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
            assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
            elapsedNs += System.nanoTime() - startNs;
            assertThat(subscriber.decoder().publish().topic().asString()).isEqualTo("sleep/" + round);
            subscriber.send(RawClient.ack(PacketType.PUBACK, subscriber.decoder().publish().packetId()));
        }
        // a ping round trip on each: a packet handled twice would have put a second PUBLISH or PUBACK before it
        publisher.send(RawClient.ping());
        subscriber.send(RawClient.ping());
        assertThat(publisher.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
        assertThat(subscriber.readPacket(5_000)).isEqualTo(PacketType.PINGRESP);
        assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).isEqualTo(rounds);
        // a lost wake-up costs a whole sleep (100 ms): were it lost in every round, they would take 2 s
        assertThat(TimeUnit.NANOSECONDS.toMillis(elapsedNs)).as("%d rounds from a sleeping broker", rounds)
            .isLessThan(rounds * IdleStrategies.SLEEP_MS / 2);
    }

    @Test
    @DisplayName("MQTT-3.3.1-4: a malformed PUBLISH (QoS 3), a truncated packet and a reset that meet the broker " +
        "asleep end only their own connections; the broker sleeps again and serves the next PUBLISH")
    void hostileInputToASleepingBroker() throws Exception
    {
        broker();
        final RawClient calm = rawSubscriber("calm", "calm/#", 0);

        final RawClient malformed = rawConnected("malformed");
        TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
        malformed.send(new byte[]{0x36, 0x05, 0x00, 0x01, 't', 0x00, 0x01}); // QoS 3 [MQTT-3.3.1-4]
        assertThat(malformed.closedWithin(5_000)).as("a QoS 3 PUBLISH closes its connection").isTrue();

        final RawClient truncated = rawConnected("truncated");
        TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
        final byte[] publish = RawClient.publish("calm/lost", new byte[64], 0, 0);
        truncated.send(java.util.Arrays.copyOf(publish, publish.length / 2)); // half a packet, then a reset
        TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
        truncated.kill();

        TestBrokers.await("the broker asleep", broker::ioAgentsAsleep);
        calm.send(RawClient.publish("calm/1", new byte[]{1}, 0, 0));
        assertThat(calm.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        assertThat(calm.decoder().publish().topic().asString()).isEqualTo("calm/1");
        assertThat(broker.counters().get(BrokerCounters.PUBLISH_IN)).as("the half PUBLISH never counted")
            .isEqualTo(1);
    }
}
