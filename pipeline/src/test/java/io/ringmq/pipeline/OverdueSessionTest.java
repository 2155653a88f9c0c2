package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A CONNECT that comes after a session's expiry (or its will's delay) has passed, but before the routing stage's
 * expiry poll has reached that timer: a poll ends at most 1,024 sessions, so with more due the rest wait for the
 * next duty cycle (with routing shards, the poll a CONNECT's slot runs first), and the CONNECT may be routed first.
 * Each test sets that up with 1,024 sessions that went away first, so the one it reconnects is the 1,025th timer due.
 */
class OverdueSessionTest
{
    private static final int POLL_LIMIT = 1_024;
    /** Every session's expiry, and the wills' delay (seconds). */
    private static final int EXPIRY_S = 2;
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    @ParameterizedTest(name = "route shards: {0}")
    @ValueSource(ints = {1, 2})
    @DisplayName("[MQTT-4.1.0-2] [MQTT-3.1.3-9] a CONNECT the expiry poll has not reached yet does not resume a "
        + "session whose time is up: no session present, the session it had is gone, and its will (due too) goes "
        + "out once")
    void anOverdueSessionIsNotResumed(final int routeShards) throws Exception
    {
        final PipelineHarness harness = harness(routeShards);
        final long watcher = watch(harness);
        final long late = 10_000;
        final List<byte[]> sent = backWhenOverdue(harness, connect5("late", EXPIRY_S, EXPIRY_S),
            connect5("late", EXPIRY_S, 0), late);
        assertThat((sent.get(0)[0] & 0xFF) >>> 4).isEqualTo(PacketType.CONNACK);
        assertThat(sent.get(0)[2] & 1).as("session present").isZero();
        assertThat(sent).as("nothing of the old session's subscription").hasSize(1);
        harness.step(); // the rest expire at the next poll
        assertThat(harness.outbound.takeTypes(watcher)).as("its will, once").containsExactly(PacketType.PUBLISH);
        assertThat(harness.counters.get(BrokerCounters.SESSIONS_EXPIRED)).isEqualTo(POLL_LIMIT + 1);
        assertThat(harness.pipeline.routing().sessionCount()).as("the watcher's and the new one").isEqualTo(2);
    }

    @ParameterizedTest(name = "route shards: {0}")
    @ValueSource(ints = {1, 2})
    @DisplayName("[MQTT-3.1.3-9] a client back after its will's delay, before the poll reached the will's timer, "
        + "resumes its session and its will goes out, once")
    void aWillPastItsDelayGoesOutWhenItsClientIsBackLate(final int routeShards) throws Exception
    {
        final PipelineHarness harness = harness(routeShards);
        final long watcher = watch(harness);
        final byte[] willing = connect5("willing", 3_600, EXPIRY_S); // its will is the 1,025th timer due
        final List<byte[]> sent = backWhenOverdue(harness, willing, willing, 10_000);
        assertThat(sent.get(0)[2] & 1).as("session present").isOne();
        harness.step();
        assertThat(harness.outbound.takeTypes(watcher)).as("the will, once").containsExactly(PacketType.PUBLISH);
    }

    private static PipelineHarness harness(final int routeShards)
    {
        return new PipelineHarness(new BrokerContext().threads(t -> t.routeShards(routeShards)), ANONYMOUS);
    }

    /**
     * @return the connection of a client subscribed to every will.
     */
    private static long watch(final PipelineHarness harness)
    {
        final long watcher = 20_000;
        harness.packet(watcher, PipelineTest.connect("watcher", true));
        harness.packet(watcher, PipelineTest.subscribe("will/#", 0));
        harness.outbound.takePackets(watcher);
        return watcher;
    }

    /**
     * 1,024 sessions that go away first, then the one under test ({@code away}); once all their timers are due, its
     * client comes back ({@code back}) on connection {@code connectionId}, routed in the same duty cycle as the poll
     * that reaches the first 1,024, after it.
     *
     * @return what the client was sent.
     */
    private static List<byte[]> backWhenOverdue(final PipelineHarness harness, final byte[] away, final byte[] back,
        final long connectionId) throws InterruptedException
    {
        final long firstGoneMs = System.currentTimeMillis();
        goAway(harness, 1, POLL_LIMIT, i -> connect5("s" + i, EXPIRY_S, 0));
        final long lastGoneMs = goAway(harness, POLL_LIMIT + 1, 1, i -> away);
        assumeSetUpInTime(firstGoneMs, lastGoneMs);
        waitPast(lastGoneMs + EXPIRY_S * 1_000);
        harness.put(0, connectionId, true, back, IngressEvent.PACKET, MqttVersion.V5, 0, IngressEvent.NONE);
        harness.step();
        return harness.outbound.takePackets(connectionId);
    }

    /**
     * The 1,024 sessions set up first must not expire while the rest are set up (a slow machine's duty cycles would
     * poll them away, and the poll alone would then reach the session under test).
     */
    private static void assumeSetUpInTime(final long firstGoneMs, final long lastGoneMs)
    {
        assumeTrue(lastGoneMs - firstGoneMs < EXPIRY_S * 1_000 * 3 / 4, "set-up took " +
            (lastGoneMs - firstGoneMs) + " ms");
    }

    /**
     * Connects {@code count} 5.0 clients on connections {@code first} up and loses their connections.
     *
     * @return when the last went away.
     */
    private static long goAway(final PipelineHarness harness, final long first, final int count,
        final IntFunction<byte[]> connect)
    {
        for (int i = 0; i < count; i++)
        {
            final long connectionId = first + i;
            harness.offer(0, connectionId, true, connect.apply(i), IngressEvent.PACKET, MqttVersion.V5, 0,
                IngressEvent.NONE);
            harness.offer(0, connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST, MqttVersion.V5, 0,
                IngressEvent.NONE);
            harness.outbound.takePackets(connectionId);
        }
        return System.currentTimeMillis();
    }

    private static void waitPast(final long deadlineMs) throws InterruptedException
    {
        while (System.currentTimeMillis() <= deadlineMs + 50)
        {
            Thread.sleep(20); // no stage runs meanwhile: every timer is due and none is polled
        }
    }

    /**
     * A 5.0 CONNECT without Clean Start; with a will delayed by {@code willDelay} seconds unless it is 0.
     */
    private static byte[] connect5(final String clientId, final int expiry, final int willDelay)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .properties(new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, expiry));
        if (willDelay > 0)
        {
            encoder.will(0, false, new MqttProperties().setInt(PropertyId.WILL_DELAY_INTERVAL, willDelay));
            encoder.willTopic().wrap("will/" + clientId);
            encoder.willPayload().wrap("gone");
        }
        encoder.clientId().wrap(clientId);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }
}
