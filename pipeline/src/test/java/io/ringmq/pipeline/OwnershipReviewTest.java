package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of "Ownership made structural" (attacker's view): each test fails on the code as landed. The stages are
 * stepped in-process, with two I/O agents (so two delivery shards), as {@link PipelineHarness} does for one.
 */
class OwnershipReviewTest
{
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    /**
     * The stepped pipeline, with packets offered as a given I/O agent would.
     */
    static final class MultiAgentHarness
    {
        private final PipelineHarness harness;
        final PipelineTest.RecordingOutbound outbound;
        final BrokerCounters counters;
        final Pipeline pipeline;
        final StageAgent agent;

        MultiAgentHarness(final BrokerContext context, final PipelineTest.RecordingOutbound outbound)
        {
            this(context, outbound, outbound);
        }

        MultiAgentHarness(final BrokerContext context, final Outbound front,
            final PipelineTest.RecordingOutbound outbound)
        {
            harness = new PipelineHarness(context, ANONYMOUS, front, outbound);
            this.outbound = outbound;
            this.counters = harness.counters;
            this.pipeline = harness.pipeline;
            this.agent = harness.agent;
        }

        MultiAgentHarness(final BrokerContext context)
        {
            this(context, new PipelineTest.RecordingOutbound());
        }

        void packet(final int agentIndex, final long connectionId, final byte[] packet)
        {
            harness.offer(agentIndex, connectionId, true, packet, IngressEvent.PACKET);
        }

        /**
         * What the client address of the packets from now on counts as.
         */
        void addressKey(final long addressKey)
        {
            harness.addressKey(addressKey);
        }

        void offerOnly(final int agentIndex, final long connectionId, final byte[] packet)
        {
            harness.offerOnly(agentIndex, connectionId, packet);
        }

        void end(final int agentIndex, final long connectionId, final int kind)
        {
            harness.offer(agentIndex, connectionId, true, new byte[0], kind);
        }

        void step()
        {
            harness.step();
        }

        boolean closed(final long connectionId)
        {
            return harness.closed(connectionId);
        }
    }

    static byte[] connectWill(final String clientId, final boolean clean, final String willTopic)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean);
        if (null != willTopic)
        {
            encoder.will(0, false, null);
        }
        encoder.clientId().wrap(clientId);
        if (null != willTopic)
        {
            encoder.willTopic().wrap(willTopic);
            encoder.willPayload().wrap("bye");
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static byte[] publish(final String topic, final int qos, final int packetId, final boolean retain,
        final boolean dup)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).retain(retain)
            .dup(dup).topic(topic).payload(new byte[]{42});
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    /**
     * A routing log whose entries hold at most 1024 bytes: 128 targets. The default (16 MiB log) holds about a
     * million, and persistent sessions, which are targets while offline, are not bounded in number.
     */
    private static BrokerContext smallRouteLog()
    {
        return new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .limits(l -> l.maxPacketSize(1024)).memory(m -> m.messageLogBytes(2048));
    }

    private static void watchers(final MultiAgentHarness harness, final int count, final String filter)
    {
        for (int i = 0; i < count; i++)
        {
            harness.packet(0, 1_000 + i, connect("watcher-" + i, true));
            harness.packet(0, 1_000 + i, subscribe(filter, 0));
        }
        harness.outbound.sent.clear();
    }

    @Test
    @DisplayName("a takeover whose will fans out to more sessions than a small message log holds: the routing log "
        + "is sized from --max-sessions, so the old connection is closed, the new one admitted, the will delivered")
    void takeoverWithALargeWillFanOut()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog().limits(l -> l.maxSessions(200)));
        watchers(harness, 130, "will/#"); // 130 targets: more than a 2 KiB entry would hold
        harness.packet(0, 1, connectWill("mortal", false, "will/mortal"));
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.CONNACK);
        harness.packet(1, 2, connectWill("mortal", false, null)); // takes over connection 1, moves to shard 1
        assertThat(harness.closed(1)).as("the taken-over connection is closed [MQTT-3.1.4-2]").isTrue();
        assertThat(harness.outbound.takeTypes(2)).containsExactly(PacketType.CONNACK);
        assertThat(harness.outbound.takeTypes(1_129)).as("the will reached every watcher")
            .containsExactly(PacketType.PUBLISH);
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("limits: a CONNECT that would create a session past --max-sessions is refused and counted")
    void sessionsPastTheLimitAreRefused()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog().limits(l -> l.maxSessions(2)));
        harness.packet(0, 1, connect("one", true));
        harness.packet(1, 2, connect("two", false));
        harness.packet(0, 3, connect("three", true));
        assertThat(harness.outbound.takePackets(3).get(0)).containsExactly(0x20, 0x02, 0x00, 0x03);
        assertThat(harness.closed(3)).isTrue();
        assertThat(harness.counters.get(BrokerCounters.SESSIONS_REFUSED_LIMIT)).isEqualTo(1);
        harness.packet(1, 4, connect("two", false)); // an existing session is not a new one: taken over
        assertThat(harness.outbound.takePackets(4).get(0)).containsExactly(0x20, 0x02, 0x01, 0x00);
    }

    @Test
    @DisplayName("a failed moving CONNECT leaves routing and the shards disagreeing on where a session lives: the "
        + "next reconnect waits forever for a hand-over and stalls the whole pipeline")
    void failedMoveStallsNextMove()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog());
        watchers(harness, 130, "will/#");
        harness.packet(0, 1, connectWill("mortal", false, "will/mortal"));
        harness.packet(1, 2, connectWill("mortal", false, null)); // fails in routing's commit, after routing moved it
        harness.end(1, 2, IngressEvent.CONNECTION_LOST);
        harness.end(0, 1, IngressEvent.CONNECTION_LOST);
        harness.outbound.sent.clear();
        // routing believes the session is in shard 1; shard 0 still holds it and nobody hands it over
        harness.packet(0, 3, connectWill("mortal", false, null));
        assertThat(harness.outbound.takeTypes(3)).as("the reconnecting client gets a CONNACK")
            .containsExactly(PacketType.CONNACK);
        harness.packet(0, 4, connect("bystander", true));
        assertThat(harness.outbound.takeTypes(4)).as("and shard 0 is not stuck for everybody else")
            .containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("an exception in the old shard while it handles a moving CONNECT (fail closed) must not leave the "
        + "session's next reconnect waiting forever for a hand-over that never comes")
    void shardErrorOnMoveStallsLaterMove()
    {
        final PipelineTest.RecordingOutbound recording = new PipelineTest.RecordingOutbound();
        final Outbound throwing = new FailingOutbound(recording, 1, true, "closing the taken-over connection fails");
        final MultiAgentHarness harness = new MultiAgentHarness(
            new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
                .ioThreads(2)), throwing, recording);
        harness.packet(0, 1, connectWill("p", false, null));
        harness.packet(1, 2, connectWill("p", false, null)); // takeover + move 0 -> 1; shard 0 throws before hand-over
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isPositive();
        harness.end(1, 2, IngressEvent.CONNECTION_LOST);
        harness.outbound.sent.clear();
        harness.packet(0, 3, connectWill("p", false, null)); // routing: held by shard 1 (it never got it): move 1 -> 0
        assertThat(harness.outbound.takeTypes(3)).as("the client gets an answer").containsExactly(PacketType.CONNACK);
        harness.packet(0, 4, connect("bystander", true));
        assertThat(harness.outbound.takeTypes(4)).as("shard 0 is not stuck").containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("a PUBLISH whose fan-out does not fit one routing log entry is not delivered to anyone, and its "
        + "publisher is disconnected")
    void fanOutLargerThanALogEntry()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog());
        watchers(harness, 130, "t");
        harness.packet(0, 1, connect("pub", true));
        harness.outbound.sent.clear();
        harness.packet(0, 1, publish("t", 0, 0, false, false));
        assertThat(harness.outbound.sent).as("130 subscribers get the message").hasSize(130);
        assertThat(harness.closed(1)).as("a valid PUBLISH does not close its publisher").isFalse();
    }

    @Test
    @DisplayName("MQTT-4.3.3-2: a QoS 2 PUBLISH with a large fan-out is acknowledged and delivered once; its resend "
        + "with DUP before PUBREL is acknowledged again, not delivered twice")
    void largeFanOutQos2PublishIsAppliedOnce()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog().limits(l -> l.maxSessions(200)));
        watchers(harness, 130, "t");
        harness.packet(0, 1, connectWill("pub", false, null));
        harness.packet(0, 1, publish("t", 2, 7, true, false));
        harness.packet(0, 1, publish("t", 2, 7, true, true)); // [MQTT-4.4.0-1] resent with DUP
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.CONNACK, PacketType.PUBREC,
            PacketType.PUBREC);
        assertThat(harness.outbound.takeTypes(1_050)).as("delivered once").containsExactly(PacketType.PUBLISH);
        harness.packet(0, 1, ack(PacketType.PUBREL, 7));
        assertThat(harness.outbound.takeTypes(1)).containsExactly(PacketType.PUBCOMP);
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    @Test
    @DisplayName("MQTT-3.3.1-5: a retained PUBLISH with a large fan-out is stored once its output is committed")
    void retainedPublishWithALargeFanOut()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog().limits(l -> l.maxSessions(200)));
        watchers(harness, 130, "t");
        harness.packet(0, 1, connect("pub", true));
        harness.packet(0, 1, publish("t", 0, 0, true, false));
        assertThat(harness.closed(1)).isFalse();
        harness.packet(1, 2, connect("late", true));
        harness.packet(1, 2, subscribe("t", 0));
        assertThat(harness.outbound.takeTypes(2)).containsExactly(PacketType.CONNACK, PacketType.SUBACK,
            PacketType.PUBLISH);
    }

    @Test
    @DisplayName("a hand-over whose CONNECT is then failed stays in the new shard's arrived map; once the id is "
        + "reused, another client's session moving in is given the stale one: its messages go to the wrong client")
    void staleArrivedSessionGoesToTheWrongClient()
    {
        final PipelineTest.RecordingOutbound recording = new PipelineTest.RecordingOutbound();
        final FailingOutbound throwing = new FailingOutbound(recording, 50, false,
            "delivering the will fails in the old shard").once().armed(false);
        final MultiAgentHarness harness = new MultiAgentHarness(
            new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
                .ioThreads(2)), throwing, recording);
        harness.packet(0, 50, connect("watcher", true));
        harness.packet(0, 50, subscribe("will/#", 0));
        harness.packet(0, 60, connect("pub", true));
        harness.packet(0, 1, connectWill("p", false, "will/p"));
        harness.packet(0, 1, subscribe("secret", 1));
        harness.packet(0, 60, publish("secret", 1, 1, false, false)); // in flight to p, never acknowledged
        assertThat(harness.outbound.takeTypes(1)).contains(PacketType.PUBLISH);
        throwing.armed(true);
        harness.packet(1, 2, connectWill("p", false, null)); // takeover + move 0 -> 1: shard 0 hands over, then throws
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isPositive();
        harness.end(1, 2, IngressEvent.CONNECTION_LOST);
        harness.end(0, 1, IngressEvent.CONNECTION_LOST);
        harness.packet(0, 7, connectWill("z", false, null)); // any other session moving into shard 1 meanwhile
        harness.end(0, 7, IngressEvent.CONNECTION_LOST);
        harness.packet(1, 8, connectWill("z", false, null)); // shard 1 drains its inbox into arrived: p's stays
        harness.packet(0, 3, connectWill("p", true, null)); // p's old session is discarded: its id is free again
        harness.packet(0, 4, connectWill("q", false, null)); // a different client gets that id (shard 0)
        harness.end(0, 4, IngressEvent.CONNECTION_LOST);
        harness.outbound.sent.clear();
        harness.packet(1, 5, connectWill("q", false, null)); // q moves 0 -> 1
        assertThat(harness.outbound.takeTypes(5)).as("q has nothing in flight: only its CONNACK")
            .containsExactly(PacketType.CONNACK);
    }

    @Test
    @DisplayName("a slot failed in one shard after routing committed it: the other shards still owe its takeover "
        + "close and its discarded ids (onFailed skips both: a zombie connection and a leaked delivery session)")
    void otherShardsSkipTakeoverAndDiscardsOfAFailedSlot() throws Exception
    {
        final PipelineTest.RecordingOutbound recording = new PipelineTest.RecordingOutbound();
        final Outbound throwing = new FailingOutbound(recording, 11, false,
            "shard 0 fails on the new connection's CONNACK");
        final MultiAgentHarness harness = new MultiAgentHarness(
            new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
                .ioThreads(2)), throwing, recording);
        harness.packet(1, 10, connect("x", true)); // session 0, in shard 1
        harness.packet(1, 10, subscribe("q", 1));
        harness.packet(1, 20, connect("pub", true));
        harness.packet(1, 20, publish("q", 1, 1, false, false)); // in flight to x: a pooled copy held
        harness.packet(0, 11, connect("x", true)); // takes over connection 10, discards session 0; shard 0 throws
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isPositive();
        final org.assertj.core.api.SoftAssertions soft = new org.assertj.core.api.SoftAssertions();
        soft.assertThat(harness.closed(10)).as("the taken-over connection is closed [MQTT-3.1.4-2]").isTrue();
        final Field shards = Pipeline.class.getDeclaredField("shards");
        shards.setAccessible(true);
        final Field stage = StageAgent.Step.class.getDeclaredField("stage");
        stage.setAccessible(true);
        final io.ringmq.pipeline.delivery.DeliveryShard shard1 = (io.ringmq.pipeline.delivery.DeliveryShard)
            stage.get(((StageAgent.Step[])shards.get(harness.pipeline))[1]);
        soft.assertThat(shard1.holds(0)).as("shard 1 forgot discarded session 0").isFalse();
        soft.assertAll();
    }

    @Test
    @DisplayName("many persistent sessions expiring together: their discarded ids do not fit one routing entry, so "
        + "every later event fails and no client is ever admitted again")
    void massExpiryBreaksEveryLaterEvent() throws Exception
    {
        final MultiAgentHarness harness = new MultiAgentHarness(smallRouteLog()
            .limits(l -> l.persistentClientExpirationMs(2_000)));
        for (int i = 0; i < 300; i++) // 300 ids × 4 bytes > 1024 (by default: 2 million ids > 8 MiB)
        {
            harness.packet(0, 100 + i, connectWill("gone-" + i, false, null));
            harness.end(0, 100 + i, IngressEvent.DISCONNECTED);
        }
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (harness.pipeline.routing().sessionCount() > 0 && System.nanoTime() < deadline)
        {
            harness.agent.doWork(); // no event meanwhile: the expiry timers run on their own
            Thread.sleep(1);
        }
        assertThat(harness.pipeline.routing().sessionCount()).isZero();
        harness.outbound.sent.clear();
        final List<Integer> codes = new java.util.ArrayList<>();
        for (int attempt = 0; attempt < 3; attempt++)
        {
            harness.packet(1, 1 + attempt, connect("newcomer", true));
            harness.outbound.takePackets(1 + attempt).forEach(connack -> codes.add((int)connack[3]));
        }
        assertThat(codes).as("CONNACK return codes of three attempts").containsExactly(0, 0, 0);
    }

    @Test
    @DisplayName("one SUBSCRIBE cannot hold the routing stage (and so every client) for long: 10,000 '#' filters in "
        + "it walk the 20,000 retained messages once, not once each, and each is sent once [MQTT-3.3.1-6]")
    void subscribeWithManyWildcardsStarvesRouting()
    {
        // the whole test on the timeout's thread: the stages assert that one thread owns them
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(30), () ->
        {
            final MultiAgentHarness harness = new MultiAgentHarness(
                new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)));
            harness.packet(0, 1, connect("pub", true));
            for (int batch = 0; batch < 20; batch++)
            {
                for (int i = 0; i < 1_000; i++)
                {
                    harness.offerOnly(0, 1, publish("r/" + batch + "/" + i, 0, 0, true, false)); // 20,000 retained
                }
                harness.step();
            }
            final io.ringmq.protocol.SubscribeEncoder encoder =
                new io.ringmq.protocol.SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(3);
            for (int i = 0; i < 10_000; i++)
            {
                encoder.filters().add("#", 0); // 4 bytes each: a 1 MiB SUBSCRIBE holds 262,000 of them
            }
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
            encoder.encode(buffer, 0);
            harness.packet(0, 2, connect("greedy", true));
            harness.outbound.takePackets(2); // its CONNACK
            // unbounded, this walked 10,000 x 20,000 retained messages and sent each 10,000 times; the work is
            // counted, not timed (a wall-clock limit fails on a busy machine, not on a defect)
            harness.packet(0, 2, buffer.byteArray());
            final List<byte[]> sent = harness.outbound.takePackets(2);
            final long publishes = sent.stream().filter(packet -> (packet[0] & 0xF0) == 0x30).count();
            assertThat(publishes).as("retained PUBLISHes sent for one SUBSCRIBE of 10,000 '#' filters")
                .isEqualTo(20_000);
            assertThat(harness.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();
        });
    }

    /**
     * @return a stepped pipeline of two I/O agents whose retained store holds 50,000 messages on two-level topics.
     */
    /**
     * A new client from {@code addressKey} subscribes to one retained topic: its message comes with the SUBACK
     * [MQTT-3.3.1-6], whatever other sessions' walks took of their windows.
     */
    private static void assertAnotherGetsItsRetainedAtOnce(final MultiAgentHarness harness, final long addressKey)
    {
        harness.addressKey(addressKey);
        harness.packet(0, 3, connect("other", true));
        harness.outbound.takePackets(3);
        harness.packet(0, 3, subscribe("r/7", 0));
        final long publishes = harness.outbound.takePackets(3).stream()
            .filter(packet -> (packet[0] & 0xF0) == 0x30).count();
        assertThat(publishes).as("another client's retained message").isEqualTo(1);
    }

    private static MultiAgentHarness retainedStore()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(
            new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)));
        harness.packet(0, 1, connect("pub", true));
        for (int batch = 0; batch < 50; batch++)
        {
            for (int i = 0; i < 1_000; i++)
            {
                harness.offerOnly(0, 1, publish("r/" + (batch * 1_000 + i), 0, 0, true, false));
            }
            harness.step();
        }
        return harness;
    }

    @Test
    @DisplayName("SUBSCRIBE after SUBSCRIBE cannot hold the routing stage either: one session's walks of the retained " +
        "store take at most two SUBSCRIBEs' budgets a second; past them its walks wait for a later window (counted), " +
        "none dropped, and another client's SUBSCRIBE still brings its retained message at once [MQTT-3.3.1-6]")
    void subscribeAfterSubscribeStarvesRouting()
    {
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () ->
        {
            final MultiAgentHarness harness = retainedStore();
            harness.packet(0, 2, connect("greedy", true));
            harness.outbound.takePackets(2);
            // +/+/+ matches none of the two-level topics but walks every one: about 50,000 steps a SUBSCRIBE, so
            // 40 of them spend a window; 200 in one batch (a window ends at most once or twice meanwhile)
            for (int i = 0; i < 200; i++)
            {
                harness.offerOnly(0, 2, subscribe("+/+/+", 0));
            }
            harness.step();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_IN_PARTS)).as("walks past the window, deferred")
                .isPositive();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();

            assertAnotherGetsItsRetainedAtOnce(harness, io.ringmq.pipeline.auth.AddressKeys.NONE);
        });
    }

    @Test
    @DisplayName("nor can one host's many connections: its sessions' walks of the retained store take at most two "
        + "sessions' windows a second together, the rest deferred; another address's SUBSCRIBE still brings its "
        + "retained message at once [MQTT-3.3.1-6]")
    void oneAddressesSessionsShareAWindow()
    {
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () ->
        {
            final MultiAgentHarness harness = retainedStore();
            final int sessions = 10;
            harness.addressKey(0x0A00_0001L); // one host
            for (int s = 0; s < sessions; s++)
            {
                harness.packet(0, 100 + s, connect("greedy-" + s, true));
                harness.outbound.takePackets(100 + s);
            }
            // 30 SUBSCRIBEs of +/+/+ a session, each about 50,000 steps: under a session's window (40), so without the
            // address's window none would be refused; 300 in all, nearly four times the address's (80)
            for (int i = 0; i < 300; i++)
            {
                harness.offerOnly(0, 100 + (i % sessions), subscribe("+/+/+", 0));
            }
            harness.step();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_IN_PARTS)).as("walks past the address's window")
                .isPositive();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();

            assertAnotherGetsItsRetainedAtOnce(harness, 0x0A00_0002L);
        });
    }

    @Test
    @DisplayName("nor can many hosts: all sessions' walks take at most 16 SUBSCRIBEs' budgets a second together, the "
        + "rest deferred, though each host stays within its own window; another address's SUBSCRIBE of one topic still "
        + "brings its retained message at once [MQTT-3.3.1-6] (review of d2d8785: 100 hosts held routing at a full core)")
    void manyAddressesShareTheBrokersWindow()
    {
        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60), () ->
        {
            final MultiAgentHarness harness = retainedStore();
            final int hosts = 120;
            for (int h = 0; h < hosts; h++)
            {
                harness.addressKey(0x0A01_0000L + h);
                harness.packet(0, 100 + h, connect("host-" + h, true));
                harness.outbound.takePackets(100 + h);
            }
            // 10 SUBSCRIBEs of +/+/+ a host, each about 100,000 steps (50,000 topics, none deep enough): half a
            // session's window, a quarter of an address's, so none would wait on its own; 1,200 in all, 120 M steps,
            // over seven of the broker's windows
            for (int i = 0; i < 10 * hosts; i++)
            {
                harness.addressKey(0x0A01_0000L + i % hosts);
                harness.offerOnly(0, 100 + i % hosts, subscribe("+/+/+", 0));
            }
            harness.step();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_IN_PARTS)).as("walks past the broker's window")
                .isPositive();
            assertThat(harness.counters.get(BrokerCounters.RETAINED_NOT_SENT)).isZero();

            assertAnotherGetsItsRetainedAtOnce(harness, 0x0A02_0001L);
        });
    }

    @Test
    @DisplayName("a session that moves to another shard takes copies of its own of the messages it shares with "
        + "sessions left in the old shard: each shard counts references on its own thread, and both get every "
        + "message, whole, in order")
    void aMovingSessionTakesPrivateCopies()
    {
        final MultiAgentHarness harness = new MultiAgentHarness(
            new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2)));
        harness.packet(0, 1, connect("a", false));
        harness.packet(0, 1, subscribe("t", 1));
        harness.packet(0, 2, connect("b", false));
        harness.packet(0, 2, subscribe("t", 1));
        harness.packet(0, 3, connect("pub", true));
        harness.outbound.sent.clear();
        harness.end(0, 1, IngressEvent.CONNECTION_LOST); // a: offline, its messages queue in shard 0
        for (int i = 1; i <= 3; i++)
        {
            harness.packet(0, 3, publishOf("t", 1, i, "m" + i)); // one copy each, shared by a's queue and b's window
        }
        assertThat(PipelineTest.payloads(harness.outbound.takePackets(2))).containsExactly("m1", "m2", "m3");

        harness.packet(1, 4, connect("a", false)); // a resumes through agent 1: its session moves to shard 1
        final List<byte[]> resent = harness.outbound.takePackets(4);
        assertThat(PipelineTest.payloads(resent.subList(1, resent.size()))).containsExactly("m1", "m2", "m3");
        for (final byte[] publish : resent.subList(1, resent.size()))
        {
            harness.packet(1, 4, ack(PacketType.PUBACK, PipelineTest.packetId(publish))); // shard 1 lets go of them
        }
        harness.packet(0, 3, publishOf("t", 1, 4, "m4")); // shard 0 may now reuse what it let go of
        final List<byte[]> toA = harness.outbound.takePackets(4);
        assertThat(PipelineTest.payloads(toA)).containsExactly("m4");
        harness.packet(1, 4, ack(PacketType.PUBACK, PipelineTest.packetId(toA.get(0))));
        final List<byte[]> toB = harness.outbound.takePackets(2);
        assertThat(PipelineTest.payloads(toB)).containsExactly("m4");
        harness.end(0, 2, IngressEvent.CONNECTION_LOST);
        harness.packet(0, 5, connect("b", false)); // b's unacknowledged messages come again, unchanged
        final List<byte[]> again = harness.outbound.takePackets(5);
        assertThat(PipelineTest.payloads(again.subList(1, again.size()))).containsExactly("m1", "m2", "m3", "m4");
        for (final byte[] publish : again.subList(1, again.size()))
        {
            harness.packet(0, 5, ack(PacketType.PUBACK, PipelineTest.packetId(publish)));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("every copy counted where it lives, "
            + "and given back").isZero();
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
    }

    private static byte[] publishOf(final String topic, final int qos, final int packetId, final String payload)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).topic(topic)
            .payload(payload.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
