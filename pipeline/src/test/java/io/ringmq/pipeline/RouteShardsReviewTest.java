package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of routing shards: ways a replica could come to differ from shard 0, each stepped by hand.
 */
class RouteShardsReviewTest
{
    private static final Authenticator ANONYMOUS = new Authenticator(Authenticator.AnonymousPolicy.ALL, null, null,
        null);

    /**
     * @return a topic that routing shard {@code owner} of {@code count} routes.
     */
    static String topicOf(final int owner, final int count)
    {
        return topicOf("m/", owner, count);
    }

    /**
     * @return a topic under {@code prefix} that routing shard {@code owner} of {@code count} routes.
     */
    static String topicOf(final String prefix, final int owner, final int count)
    {
        final RouteShards shards = new RouteShards(count, new BrokerContext());
        for (int i = 0; ; i++)
        {
            final byte[] bytes = (prefix + i).getBytes(StandardCharsets.UTF_8);
            if (shards.ownerOfTopic(new UnsafeBuffer(bytes), 0, bytes.length) == owner)
            {
                return prefix + i;
            }
        }
    }

    @ParameterizedTest(name = "route shards {0}")
    @ValueSource(ints = {1, 2})
    @DisplayName("MQTT-4.4.0-1: a slot that failed in the auth stage after a session moved between delivery shards "
        + "does not undo the move: the moved subscriber still receives")
    void failedSlotDoesNotUndoAnEarlierMove(final int routeShards, @TempDir final Path dir) throws Exception
    {
        final Path file = dir.resolve("passwd");
        Files.writeString(file, "eve:$7$1000$$AAAA\n", StandardCharsets.UTF_8); // malformed: the auth stage throws
        final PipelineHarness harness = new PipelineHarness(new BrokerContext()
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2).routeShards(routeShards)),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, PasswordFile.load(file)));
        final String topic = topicOf(routeShards - 1, routeShards); // routed by the last shard
        harness.offer(1, 10, true, connect("mover", false), IngressEvent.PACKET); // on agent 1: delivery shard 1
        harness.offer(1, 10, true, subscribe(topic, 0), IngressEvent.PACKET);
        harness.offer(1, 10, true, new byte[0], IngressEvent.CONNECTION_LOST);
        harness.offer(0, 30, true, connect("mover", false), IngressEvent.PACKET); // moves to delivery shard 0
        assertThat(harness.outbound.takePackets(30)).hasSize(1);

        harness.offer(0, 40, true, PipelineFaultsTest.connectWithCredentials("eve", "eve", "x"), IngressEvent.PACKET); // fails in auth
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).as("the auth stage threw").isPositive();

        harness.offer(0, 20, true, connect("pub", true), IngressEvent.PACKET);
        harness.offer(0, 20, true, publish(topic, 0, 0, false), IngressEvent.PACKET);
        assertThat(harness.outbound.takeTypes(30)).as("the moved subscriber is sent the PUBLISH")
            .containsExactly(PacketType.PUBLISH);
    }

    @Test
    @DisplayName("an ACL reload that a routing shard above 0 takes before it replays a SUBSCRIBE shard 0 granted "
        + "under the old rules: every shard holds the subscription, and it receives when the rules allow it again")
    void aclReloadTakenAtTheSameSlotOnEveryShard()
    {
        final Shards shards = new Shards(AccessRules.of(AclFile.parse("acl", "topic readwrite t/#")), 1 << 20);
        final AuthStage auth = shards.auth;
        final RoutingStage zero = shards.zero;
        final RoutingStage one = shards.one;

        final IngressEvent connect = packet(connect("sub", true), 1);
        run(connect, auth, zero, one);
        final IngressEvent subscribe = packet(subscribe("t/#", 0), 1);
        auth.onEvent(subscribe);
        zero.onEvent(subscribe); // granted under the rules it was judged by
        assertThat(zero.index().size()).isEqualTo(1);

        shards.access.reload(AclFile.parse("acl", "topic readwrite other/#")); // a reload: t/# refused
        auth.doDutyCycle(); // published
        one.doDutyCycle(); // shard 1's thread happens to look before it reaches the SUBSCRIBE
        one.onEvent(subscribe);
        zero.doDutyCycle();
        assertThat(one.index().size()).as("shard 1 holds the subscription shard 0 holds")
            .isEqualTo(zero.index().size());

        shards.access.reload(AclFile.parse("acl", "topic readwrite t/#")); // allowed again
        auth.doDutyCycle();
        zero.doDutyCycle();
        one.doDutyCycle();
        final IngressEvent publisher = packet(connect("pub", true), 2);
        run(publisher, auth, zero, one);
        final IngressEvent message = packet(publish(topicOf("t/", 1, 2), 0, 0, false), 2);
        run(message, auth, zero, one);
        assertThat(message.routeShard).isEqualTo(1);
        assertThat(message.targetCount).as("shard 1 routes it to the subscriber").isEqualTo(1);
    }

    @Test
    @DisplayName("shard 0 throws part-way through a CONNECT (after its session was made): later CONNECTs get the "
        + "same session ids on every shard that routes their PUBLISHes, so nothing reaches another client")
    void shardZeroThrowingPartWayDoesNotShiftSessionIds()
    {
        // shard 0's log is too small for a 5.0 CONNACK's assigned client id: its output throws, as a bug would
        final Shards shards = new Shards(AccessRules.OPEN, 32);
        final AuthStage auth = shards.auth;
        final RoutingStage zero = shards.zero;
        final RoutingStage one = shards.one;

        final IngressEvent anonymous = new IngressEvent(256);
        final byte[] bytes = connect5WithoutClientId();
        anonymous.packet(0, 1, MqttVersion.V5, true, PacketType.CONNECT, new UnsafeBuffer(bytes), bytes.length,
            null, -1);
        run(anonymous, auth, zero, one);
        assertThat(anonymous.failed).as("shard 0 threw").isTrue();

        final IngressEvent second = packet(connect("second", true), 2);
        run(second, auth, zero, one);
        final IngressEvent subscribe = packet(subscribe("x/#", 0), 2);
        run(subscribe, auth, zero, one);
        final IngressEvent message = packet(publish(topicOf(1, 2), 0, 0, false), 2);
        run(message, auth, zero, one);
        assertThat(message.failed).isFalse();
        assertThat(message.routeShard).as("routed by a shard that holds shard 0's session ids, or by shard 0")
            .satisfiesAnyOf(
                shard -> assertThat(shard).isZero(),
                shard -> assertThat(one.sessionCount()).isEqualTo(zero.sessionCount()));
    }

    @Test
    @DisplayName("a routing shard above 0 that throws replaying a slot shard 0 routed never marks the shared slot "
        + "failed (the later stages would close a connection shard 0 admitted); the PUBLISHes it was given fail "
        + "closed, and shard 0 routes every later one")
    void replicaThrowingLeavesTheSlotAlone()
    {
        final Shards shards = new Shards(AccessRules.OPEN, 1 << 20);
        final AuthStage auth = shards.auth;
        final RoutingStage zero = shards.zero;
        final RoutingStage one = shards.one;
        final IngressEvent connect = packet(connect("sub", true), 1);
        auth.onEvent(connect);
        step(zero, connect);
        final IngressEvent given = packet(publish(topicOf(1, 2), 0, 0, false), 1);
        auth.onEvent(given);
        step(zero, given);
        assertThat(given.routeShard).as("stamped for shard 1").isEqualTo(1);

        connect.routeEpoch = 99; // a stamp shard 1 cannot take (an epoch shard 0 never recorded): it throws
        step(one, connect);
        assertThat(connect.failed).as("shard 0 routed it: the slot stands").isFalse();
        step(one, given);
        assertThat(given.failed).as("shard 1 may hold other session ids now: failed, not routed").isTrue();

        final IngressEvent later = packet(publish(topicOf(1, 2), 0, 0, false), 1);
        run(later, auth, zero, one);
        assertThat(later.routeShard).as("shard 0 routes it").isZero();
        assertThat(later.failed).isFalse();
        assertThat(later.routed).isTrue();
    }

    /**
     * An auth stage and two routing shards as the pipeline wires them, stepped by hand.
     */
    private static final class Shards
    {
        final BrokerContext context = new BrokerContext().threads(t -> t.routeShards(2)).conclude();
        final BrokerCounters counters = new BrokerCounters();
        final AtomicReference<AccessRules> published;
        final AccessControl access;
        final AuthStage auth;
        final RoutingStage zero;
        final RoutingStage one;

        /**
         * @param zeroLogBytes the size of shard 0's routing log.
         */
        Shards(final AccessRules rules, final int zeroLogBytes)
        {
            published = new AtomicReference<>(rules);
            access = new AccessControl(published, false, counters);
            auth = new AuthStage(ANONYMOUS, counters, 1024, ConnectionControl.NONE, access);
            final RouteShards shards = new RouteShards(2, context);
            zero = routing(shards, 0, zeroLogBytes);
            one = routing(shards, 1, 1 << 20);
            zero.replicas(new RoutingStage[]{one});
        }

        private RoutingStage routing(final RouteShards shards, final int shard, final int logBytes)
        {
            return new RoutingStage(context, counters, new MessageLog(logBytes), null,
                new SessionWindows(
                    context.limits().maxSessions()), new SharedRedispatch(), new FailedCommits(), published,
                ConnectionControl.NONE, shards, shard);
        }
    }

    /**
     * The auth stage, then each routing shard in turn, as {@link StageAgent} steps them.
     */
    private static void run(final IngressEvent event, final AuthStage auth, final RoutingStage... shards)
    {
        auth.onEvent(event);
        for (final RoutingStage shard : shards)
        {
            step(shard, event);
        }
    }

    /**
     * What {@link StageAgent.Step#onEvent} does with one slot.
     */
    private static void step(final Stage stage, final IngressEvent event)
    {
        if (!event.failed)
        {
            try
            {
                assertThat(stage.onEvent(event)).isTrue();
                return;
            }
            catch (final RuntimeException ex)
            {
                event.failed = true;
            }
        }
        stage.onFailed(event);
    }

    private static IngressEvent packet(final byte[] bytes, final long connectionId)
    {
        final IngressEvent event = new IngressEvent(256);
        event.packet(0, connectionId, MqttVersion.V3_1_1, true, (bytes[0] & 0xFF) >>> 4, new UnsafeBuffer(bytes),
            bytes.length, null, -1);
        return event;
    }

    private static byte[] connect5WithoutClientId()
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(true);
        encoder.clientId().wrap("");
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
