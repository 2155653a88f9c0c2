package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import io.ringmq.protocol.SubscriptionOptions;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded chaos over the whole pipeline in MQTT 5.0 (and some 3.1.1 clients among them): clients on two I/O agents connecting, taking over and resuming
 * sessions with every session expiry, will delay, Receive Maximum, Maximum Packet Size and Topic Alias Maximum;
 * subscribing with every option, subscription identifiers and shared groups; publishing with properties and
 * expiry; acknowledging with random packet ids; leaving with every kind of end. Whatever the order, no stage ever
 * throws (a failed slot would be counted as an unexpected error), and when every client has gone, no clean session
 * is left.
 */
class Mqtt5ChaosTest
{
    private static final String[] FILTERS = {"t/#", "t/+", "t/a", "$share/g1/t/#", "$share/g2/t/a", "#", "t/+/x",
        "$share/g1/t/+"};
    private static final String[] TOPICS = {"t/a", "t/b", "t/a/x", "u", "t"};
    private static final int CLIENTS = 12;

    @Test
    @Timeout(120)
    @DisplayName("50 seeds × 2,000 random 5.0 events on two agents: no stage throws, no clean session outlives its "
        + "connection")
    void chaos()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            run(seed, null, 1, false);
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("the chaos with 3 routing shards: no stage throws, and every shard holds the same sessions and "
        + "subscriptions as shard 0")
    void chaosOnRouteShards()
    {
        final long[] routed = new long[3];
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            final PipelineHarness harness = run(seed, null, 3, false);
            for (int shard = 0; shard < routed.length; shard++)
            {
                routed[shard] += harness.pipeline.routing(shard).publishesRouted();
            }
        }
        assertThat(java.util.Arrays.stream(routed).boxed()).as("PUBLISHes routed by each shard")
            .allSatisfy(count -> assertThat(count).isPositive());
    }

    @Test
    @Timeout(120)
    @DisplayName("with 3 routing shards every connection is sent exactly what one routing stage sends it, in the same "
        + "order (chaos without timers, hash-chosen shared members)")
    void routeShardsSendWhatOneStageSends()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            assertThat(sent(run(seed, null, 3, true))).as("seed " + seed).isEqualTo(sent(run(seed, null, 1, true)));
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("a PUBLISH located by the I/O agent and one the stages parse themselves send the same bytes to every "
        + "connection, in the same order (chaos without timers, 1 and 3 routing shards)")
    void locatedPublishesSendWhatParsedOnesSend()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            final int shards = 1 + (int)(seed % 2) * 2;
            assertThat(sentBytes(run(seed, null, shards, true, true))).as("seed " + seed)
                .isEqualTo(sentBytes(run(seed, null, shards, true, false)));
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("acknowledgements handed on in runs, one slot each, and one by one send the same bytes to every "
        + "connection, in the same order (chaos without timers, 1 and 3 routing shards)")
    void ackRunsSendWhatSingleAcksSend()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            final int shards = 1 + (int)(seed % 2) * 2;
            assertThat(sentBytes(run(seed, null, shards, true, true, false))).as("seed " + seed)
                .isEqualTo(sentBytes(run(seed, null, shards, true, true, true)));
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("the same chaos on a store, with restarts: recovery never loses a record or throws, and the store "
        + "holds exactly the sessions routing holds")
    void chaosWithRestarts()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 50); seed++)
        {
            run(seed, io.ringmq.pipeline.persistence.MemoryStore.retaining(), 1, false);
        }
    }

    @Test
    @Timeout(120)
    @DisplayName("the chaos with restarts on 2 routing shards: recovery fills every shard alike")
    void chaosWithRestartsOnRouteShards()
    {
        for (long seed = Long.getLong("chaos.from", 1); seed <= Long.getLong("chaos.to", 20); seed++)
        {
            run(seed, io.ringmq.pipeline.persistence.MemoryStore.retaining(), 2, false);
        }
    }

    @Test
    @Timeout(60)
    @DisplayName("seed 33 with restarts: client 10 resumes its stored session with Session Expiry Interval 0, then "
        + "connects again under an empty client id; its first connection, still open, ends with the run before the "
        + "stored sessions are counted")
    void replacedConnectionUnderAnotherClientIdEndsWithTheRun()
    {
        run(33, io.ringmq.pipeline.persistence.MemoryStore.retaining(), 1, false);
    }

    /**
     * @param timeless no session or message expiry, will delay or assigned client id: what is sent depends on the
     *                 events alone, not on the clock.
     * @return the pipeline after the run.
     */
    private static PipelineHarness run(final long seed, final io.ringmq.pipeline.persistence.MemoryStore store,
        final int routeShards, final boolean timeless)
    {
        return run(seed, store, routeShards, timeless, true);
    }

    /**
     * @param locate whether PUBLISHes go in located, as the I/O agent hands them ({@link PipelineHarness#locatePublishes}).
     */
    private static PipelineHarness run(final long seed, final io.ringmq.pipeline.persistence.MemoryStore store,
        final int routeShards, final boolean timeless, final boolean locate)
    {
        return run(seed, store, routeShards, timeless, locate, false);
    }

    /**
     * @param splitRuns whether a run of acknowledgements goes in one slot per packet instead of one slot for the run,
     *                  as the I/O agent hands those a client sent back to back ({@code AckRun}).
     */
    private static PipelineHarness run(final long seed, final io.ringmq.pipeline.persistence.MemoryStore store,
        final int routeShards, final boolean timeless, final boolean locate, final boolean splitRuns)
    {
        final SplittableRandom random = new SplittableRandom(seed);
        final BrokerContext context = new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
            .ioThreads(2))
            .limits(l -> l.maxInflight(1 + random.nextInt(4)).maxQueued(random.nextInt(9)))
            .observability(o -> o.sysIntervalMs(0))
            .limits(l -> l.maxQueuedBytes(random.nextBoolean() ? 1_024 : 1 << 20)
            .maxSessions(random.nextBoolean() ? 6 : 1_000)
            .maxSubscriptionsPerClient(1 + random.nextInt(4))
            .sharedSubscriptionStrategy(strategy(random, timeless))).threads(t -> t.routeShards(routeShards));
        final Authenticator authenticator = new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);
        PipelineHarness harness = null == store ? new PipelineHarness(context, authenticator) :
            new PipelineHarness(context, authenticator, store);
        harness.locatePublishes = locate;
        if (timeless)
        {
            // what a SUBACK leaves to the parts (a QoS 1 subscription's past a quarter of --max-queued) goes on the
            // clock: never, in runs whose bytes are compared
            harness.pipeline.routing().retainedLine().hold();
        }
        final long[] connection = new long[CLIENTS]; // the live connection id of each client, 0 when none
        final int[] agent = new int[CLIENTS];
        final boolean[] clean = new boolean[CLIENTS];
        final int[] version = new int[CLIENTS];
        // connections a new CONNECT of their client replaced: {agent, connection, version}; one under another client
        // id (an empty one, or a named one after an empty one) took nothing over and is still open
        final java.util.List<long[]> replaced = new java.util.ArrayList<>();
        long nextConnection = 1;
        int assigned = 0; // CONNECTs with an empty client id: each gets a session of its own
        for (int step = 0; step < 2_000; step++)
        {
            final int client = random.nextInt(CLIENTS);
            final int op = random.nextInt(10);
            if (null != store && random.nextInt(200) == 0)
            {
                assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed).isZero();
                harness = new PipelineHarness(context, authenticator, store); // a crash: every connection is gone
                harness.locatePublishes = locate;
                assertThat(harness.pipeline.recovered()).as("seed " + seed).endsWith("nothing lost");
                java.util.Arrays.fill(connection, 0);
                replaced.clear();
                continue;
            }
            if (connection[client] == 0 || op == 0)
            {
                if (connection[client] != 0)
                {
                    replaced.add(new long[]{agent[client], connection[client], version[client]});
                }
                connection[client] = nextConnection++; // a new connection: a takeover when one is live
                agent[client] = random.nextInt(2);
                clean[client] = random.nextInt(3) == 0;
                version[client] = random.nextInt(4) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
                final byte[] connect = connect(random, client, clean[client], version[client], timeless);
                assigned += connect.length == emptyIdLength(connect) ? 1 : 0;
                harness.offer(agent[client], connection[client], true, connect, IngressEvent.PACKET,
                    version[client], 0, IngressEvent.NONE);
                continue;
            }
            final byte[] packet;
            switch (op)
            {
                case 1: case 2: packet = subscribe(random, version[client]); break;
                case 3: packet = unsubscribe(random, version[client]); break;
                case 4: case 5: case 6: packet = publish(random, version[client], timeless); break;
                case 7:
                    packet = ackRun(random, version[client]);
                    if (splitRuns)
                    {
                        offerOneByOne(harness, agent[client], connection[client], packet, version[client]);
                        continue;
                    }
                    break;
                default:
                    final int kind = random.nextBoolean() ? IngressEvent.CONNECTION_LOST : IngressEvent.DISCONNECTED;
                    final long expiry = kind == IngressEvent.DISCONNECTED && random.nextBoolean() && !timeless ?
                        random.nextInt(3) : IngressEvent.NONE;
                    final boolean v5 = version[client] == MqttVersion.V5;
                    harness.offer(agent[client], connection[client], true, new byte[0], kind, version[client],
                        v5 && random.nextBoolean() ? 4 : 0, v5 ? expiry : IngressEvent.NONE);
                    connection[client] = 0;
                    continue;
            }
            harness.offer(agent[client], connection[client], true, packet, IngressEvent.PACKET, version[client], 0,
                IngressEvent.NONE);
        }
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed).isZero();
        for (final long[] old : replaced)
        {
            // every client goes: a replaced connection still open too (one taken over is gone, its end changes nothing)
            harness.offer((int)old[0], old[1], true, new byte[0], IngressEvent.CONNECTION_LOST, (int)old[2], 0,
                IngressEvent.NONE);
        }
        for (int client = 0; client < CLIENTS; client++)
        {
            if (connection[client] != 0)
            {
                harness.offer(agent[client], connection[client], true, new byte[0], IngressEvent.CONNECTION_LOST,
                    version[client], 0, IngressEvent.NONE);
            }
        }
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("seed " + seed).isZero();
        assertThat(harness.pipeline.routing().sessionCount()).as("seed " + seed + ": only sessions that expire later")
            .isLessThanOrEqualTo(Math.min(context.limits().maxSessions(), CLIENTS + assigned));
        for (int shard = 1; shard < routeShards; shard++)
        {
            final RoutingStage replica = harness.pipeline.routing(shard);
            assertThat(new int[]{replica.sessionCount(), replica.persistentSessionCount(), replica.index().size()})
                .as("seed " + seed + ": routing shard " + shard + " holds what shard 0 holds")
                .containsExactly(harness.pipeline.routing().sessionCount(),
                    harness.pipeline.routing().persistentSessionCount(), harness.pipeline.routing().index().size());
            assertThat(sessions(replica)).as("seed " + seed + ": routing shard " + shard + " session by session")
                .isEqualTo(sessions(harness.pipeline.routing()));
        }
        if (null != store)
        {
            final int[] stored = new int[1];
            store.scan((key, keyLength, value, valueLength) ->
            {
                if (key.getByte(0) == io.ringmq.pipeline.persistence.Records.SESSIONS &&
                    io.ringmq.pipeline.persistence.Records.kindOf(key) == io.ringmq.pipeline.persistence.Records.SESSION)
                {
                    stored[0]++;
                }
            });
            assertThat(stored[0]).as("seed " + seed + ": stored sessions").isEqualTo(
                harness.pipeline.routing().persistentSessionCount());
        }
        return harness;
    }

    /**
     * @return what a routing shard holds of each session, a line per session id: its client, delivery shard,
     * connection, expiry and will with their timers, and its subscriptions.
     */
    static java.util.List<String> sessions(final RoutingStage routing)
    {
        final java.util.List<String> lines = new java.util.ArrayList<>();
        for (int id = 0, seen = 0; seen < routing.sessionCount(); id++)
        {
            final io.ringmq.pipeline.session.RoutingSession session = routing.sessions().get(id);
            if (null == session)
            {
                continue;
            }
            seen++;
            final java.util.TreeSet<String> filters = new java.util.TreeSet<>();
            for (final io.ringmq.pipeline.session.Subscription subscription : session.subscriptions())
            {
                filters.add(subscription.filter() + "@" + subscription.options() + "#" +
                    subscription.subscriptionId() + (subscription.readChecked() ? "!" : ""));
            }
            lines.add(id + " " + session.clientId() + " shard=" + session.shard() + " agent=" +
                session.agentIndex() + " connection=" + session.connectionId() + " expiry=" +
                session.expirySeconds() + "/" + session.expiryTimerId() + " will=" + (null != session.will()) + "/" +
                session.willDelaySeconds() + "/" + session.willTimerId() + " " + filters);
        }
        return lines;
    }

    /**
     * @return what was sent, a line per packet ("connection type length"), in order.
     */
    private static java.util.List<String> sent(final PipelineHarness harness)
    {
        final java.util.List<String> sent = new java.util.ArrayList<>();
        for (final Object[] packet : harness.outbound.sent)
        {
            final byte[] bytes = (byte[])packet[1];
            sent.add(packet[0] + " " + ((bytes[0] & 0xFF) >>> 4) + " " + bytes.length);
        }
        return sent;
    }

    /**
     * @return what was sent, a line per packet ("connection bytes in hex"), in order.
     */
    private static java.util.List<String> sentBytes(final PipelineHarness harness)
    {
        final java.util.List<String> sent = new java.util.ArrayList<>();
        for (final Object[] packet : harness.outbound.sent)
        {
            sent.add(packet[0] + " " + java.util.HexFormat.of().formatHex((byte[])packet[1]));
        }
        return sent;
    }

    /**
     * @return a shared subscription strategy drawn at random, or, for a run without timers, the one that chooses by
     * the publisher alone (the same member whichever routing shard chooses).
     */
    private static String strategy(final SplittableRandom random, final boolean timeless)
    {
        final String drawn = LimitSettings.SHARED_STRATEGIES.get(random.nextInt(6));
        return timeless ? "hash-client" : drawn;
    }

    /**
     * @return the CONNECT's length when its client id is empty, else -1.
     */
    private static int emptyIdLength(final byte[] connect)
    {
        final io.ringmq.protocol.ConnectFlyweight flyweight = new io.ringmq.protocol.ConnectFlyweight();
        flyweight.wrap(new UnsafeBuffer(connect), 0, connect.length);
        return flyweight.clientId().length() == 0 ? connect.length : -1;
    }

    static byte[] connect(final SplittableRandom random, final int client, final boolean clean,
        final int version, final boolean timeless)
    {
        if (version != MqttVersion.V5)
        {
            final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean).keepAlive(60);
            if (random.nextBoolean())
            {
                encoder.will(random.nextInt(3), random.nextBoolean(), null);
                encoder.willTopic().wrap(TOPICS[random.nextInt(TOPICS.length)]);
                encoder.willPayload().wrap("gone");
            }
            encoder.clientId().wrap(clean && random.nextInt(20) == 0 && !timeless ? "" : "c" + client);
            return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
        }
        final MqttProperties properties = new MqttProperties();
        final int expiry = random.nextInt(4);
        if (expiry > 0 && !timeless)
        {
            properties.setInt(PropertyId.SESSION_EXPIRY_INTERVAL, expiry == 3 ? -1 : expiry * 60);
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.RECEIVE_MAXIMUM, 1 + random.nextInt(5));
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.MAXIMUM_PACKET_SIZE, 20 + random.nextInt(200));
        }
        if (random.nextBoolean())
        {
            properties.setInt(PropertyId.TOPIC_ALIAS_MAXIMUM, random.nextInt(4));
        }
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(clean)
            .keepAlive(60).properties(properties);
        if (random.nextBoolean())
        {
            final MqttProperties will = timeless ? new MqttProperties().addUserProperty("w", "1") :
                new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, random.nextInt(2))
                    .setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, random.nextInt(100)).addUserProperty("w", "1");
            encoder.will(random.nextInt(3), random.nextBoolean(), will);
            encoder.willTopic().wrap(TOPICS[random.nextInt(TOPICS.length)]);
            encoder.willPayload().wrap("gone");
        }
        encoder.clientId().wrap(random.nextInt(20) == 0 && !timeless ? "" : "c" + client);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] subscribe(final SplittableRandom random, final int version)
    {
        final boolean v5 = version == MqttVersion.V5;
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(version)
            .packetId(1 + random.nextInt(65_535));
        if (v5 && random.nextBoolean())
        {
            encoder.properties(new MqttProperties().setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 1 + random.nextInt(268_435_455)));
        }
        for (int i = 1 + random.nextInt(3); i > 0; i--)
        {
            final String filter = FILTERS[random.nextInt(FILTERS.length)];
            final boolean shared = filter.startsWith("$share/");
            encoder.filters().add(filter, v5 ? SubscriptionOptions.of(random.nextInt(3),
                !shared && random.nextBoolean(), random.nextBoolean(), random.nextInt(3)) : random.nextInt(3));
        }
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] unsubscribe(final SplittableRandom random, final int version)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).version(version)
            .packetId(1 + random.nextInt(65_535));
        encoder.filters().add(FILTERS[random.nextInt(FILTERS.length)], 0);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] publish(final SplittableRandom random, final int version, final boolean timeless)
    {
        final int qos = random.nextInt(3);
        final MqttProperties properties = new MqttProperties();
        if (random.nextBoolean() && !timeless)
        {
            properties.setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, random.nextInt(3));
        }
        if (random.nextBoolean())
        {
            properties.addUserProperty("k", "v").set(PropertyId.CONTENT_TYPE, "text/plain");
        }
        final PublishEncoder encoder = new PublishEncoder().reset().version(version).qos(qos)
            .packetId(1 + random.nextInt(65_535)).retain(random.nextInt(4) == 0)
            .topic(TOPICS[random.nextInt(TOPICS.length)]).payload(new byte[random.nextInt(300)])
            .properties(version == MqttVersion.V5 ? properties : null);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] ack(final SplittableRandom random)
    {
        final int type = PacketType.PUBACK + random.nextInt(4);
        return encode(4, buffer -> AckEncoder.encode(buffer, 0, type, 1 + random.nextInt(8)));
    }

    /**
     * @return 1 to 4 acknowledgements of one type back to back, as the I/O agent hands a run (a PUBREL alone); on 5.0
     * some PUBACKs and PUBRECs carry a reason code, a PUBREC's 0x80 refusing its message.
     */
    static byte[] ackRun(final SplittableRandom random, final int version)
    {
        final int type = PacketType.PUBACK + random.nextInt(4);
        final int count = type == PacketType.PUBREL ? 1 : 1 + random.nextInt(4);
        final java.io.ByteArrayOutputStream run = new java.io.ByteArrayOutputStream();
        for (int i = 0; i < count; i++)
        {
            final int packetId = 1 + random.nextInt(8);
            final int reason = version == MqttVersion.V5 && type != PacketType.PUBREL && type != PacketType.PUBCOMP &&
                random.nextInt(3) == 0 ? (random.nextBoolean() ? ReasonCode.UNSPECIFIED_ERROR :
                ReasonCode.NO_MATCHING_SUBSCRIBERS) : ReasonCode.SUCCESS;
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[5]);
            run.write(buffer.byteArray(), 0, AckEncoder.encode(buffer, 0, type, packetId, version, reason, null));
        }
        return run.toByteArray();
    }

    /**
     * Offers a run's acknowledgements one slot each.
     */
    private static void offerOneByOne(final PipelineHarness harness, final int agent, final long connection,
        final byte[] run, final int version)
    {
        for (int offset = 0; offset < run.length; )
        {
            final int length = 2 + run[offset + 1];
            harness.offer(agent, connection, true, java.util.Arrays.copyOfRange(run, offset, offset + length),
                IngressEvent.PACKET, version, 0, IngressEvent.NONE);
            offset += length;
        }
    }

    private interface Writer
    {
        int write(UnsafeBuffer buffer);
    }

    private static byte[] encode(final int length, final Writer writer)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[length]);
        writer.write(buffer);
        return buffer.byteArray();
    }
}
