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
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.function.IntFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A CONNECT that comes after a session's expiry (or its will's delay) has passed, but before the routing stage's
 * expiry poll has reached that timer: a poll ends at most 1,024 sessions, so with more due the rest wait for the
 * next duty cycle, and the CONNECT may be routed first. Each test sets that up with 1,024 sessions that went away
 * first, so the one the test reconnects is the 1,025th timer due.
 */
class OverdueSessionTest
{
    private static final int POLL_LIMIT = 1_024;
    private static final Authenticator ANONYMOUS =
        new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null);

    @Test
    @DisplayName("[MQTT-4.1.0-2] a CONNECT the expiry poll has not reached yet does not resume a session whose "
        + "time is up: no session present, and the session it had is gone")
    void anOverdueSessionIsNotResumed() throws Exception
    {
        final PipelineHarness harness = new PipelineHarness(
            new BrokerContext().limits(l -> l.persistentClientExpirationMs(1_000)), ANONYMOUS);
        final long lastGoneMs = goAway(harness, 1, POLL_LIMIT + 1, i -> PipelineTest.connect("s" + i, false),
            MqttVersion.V3_1_1);
        waitPast(lastGoneMs + 1_000);
        final long late = 10_000;
        harness.put(0, late, true, PipelineTest.connect("s" + POLL_LIMIT, false), IngressEvent.PACKET,
            MqttVersion.V3_1_1, 0, IngressEvent.NONE); // routed in the same duty cycle as the poll, after it
        harness.step();
        final List<byte[]> sent = harness.outbound.takePackets(late);
        assertThat((sent.get(0)[0] & 0xFF) >>> 4).isEqualTo(PacketType.CONNACK);
        assertThat(sent.get(0)[2] & 1).as("session present").isZero();
        assertThat(sent).as("nothing of the old session's subscription").hasSize(1);
        harness.step(); // the rest expire on the next poll
        assertThat(harness.counters.get(BrokerCounters.SESSIONS_EXPIRED)).isEqualTo(POLL_LIMIT + 1);
        assertThat(harness.pipeline.routing().sessionCount()).isOne(); // the new one
    }

    @Test
    @DisplayName("[MQTT-3.1.3-9] a client back after its will's delay, before the poll reached the will's timer, "
        + "resumes its session and its will goes out")
    void aWillPastItsDelayGoesOutWhenItsClientIsBackLate() throws Exception
    {
        final PipelineHarness harness = new PipelineHarness(new BrokerContext(), ANONYMOUS);
        final long watcher = 20_000;
        harness.packet(watcher, PipelineTest.connect("watcher", true));
        harness.packet(watcher, PipelineTest.subscribe("will/#", 0));
        harness.outbound.takePackets(watcher);
        goAway(harness, 1, POLL_LIMIT, i -> connect5("s" + i, 1, 0), MqttVersion.V5); // expire after 1 s
        final long lastGoneMs = goAway(harness, POLL_LIMIT + 1, 1, i -> connect5("willing", 3_600, 1),
            MqttVersion.V5); // its will is due 1 s after it went: the 1,025th timer due
        waitPast(lastGoneMs + 1_000);
        final long back = 10_000;
        harness.put(0, back, true, connect5("willing", 3_600, 1), IngressEvent.PACKET,
            MqttVersion.V5, 0, IngressEvent.NONE);
        harness.step();
        final List<byte[]> sent = harness.outbound.takePackets(back);
        assertThat(sent.get(0)[2] & 1).as("session present").isOne();
        assertThat(harness.outbound.takeTypes(watcher)).as("the will, once").containsExactly(PacketType.PUBLISH);
        harness.step();
        assertThat(harness.outbound.takeTypes(watcher)).isEmpty();
    }

    /**
     * Connects {@code count} clients on connections {@code first} up (3.1.1 ones with a subscription each) and loses
     * their connections.
     *
     * @return when the last went away.
     */
    private static long goAway(final PipelineHarness harness, final long first, final int count,
        final IntFunction<byte[]> connect, final int version)
    {
        for (int i = 0; i < count; i++)
        {
            final long connectionId = first + i;
            harness.offer(0, connectionId, true, connect.apply(i), IngressEvent.PACKET, version, 0,
                IngressEvent.NONE);
            if (version == MqttVersion.V3_1_1)
            {
                harness.packet(connectionId, PipelineTest.subscribe("t/" + i, 1));
            }
            harness.offer(0, connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST, version, 0,
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
