package io.ringmq.pipeline;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttVersion;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import com.lmax.disruptor.RingBuffer;

import java.util.concurrent.atomic.AtomicReference;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of the routing stage's failed connection ends (SessionEnds.onFailedEnd, reached from
 * RoutingStage.onFailed / SlotRouter.abandon): a connection lost without DISCONNECT must have its will published
 * [MQTT-3.1.2-8], even when an earlier stage failed on the slot that tells routing of the end. A failed slot carries
 * no output, but routing has a way to publish on its own clock: a {@link IngressEvent#TICK} (RoutingTicks.willDue),
 * as a delayed will does. Today the will of a clean session is dropped with it, and the will of a persistent
 * session stays attached to the offline session with no timer: it goes out only when the session expires (days
 * later), or never when the client resumes.
 * <p>
 * The routing stage is stepped alone (shard 0, with a ring for its ticks), as the stage agent would step it when
 * the auth stage threw on the CONNECTION_LOST slot.
 */
class FailedEndWillReviewTest
{
    private final BrokerContext context = new BrokerContext().conclude();
    private final BrokerCounters counters = new BrokerCounters();
    private final RingBuffer<IngressEvent> ring = RingBuffer.createSingleProducer(() -> new IngressEvent(256), 8);
    private final MessageLog log = new MessageLog(1 << 20);
    private final RoutingStage routing = new RoutingStage(context, counters, log, ring, new SessionWindows(16),
        new SharedRedispatch(), new FailedCommits(), new AtomicReference<>(AccessRules.OPEN), ConnectionControl.NONE,
        new RouteShards(1, context), 0);

    @Test
    @DisplayName("MQTT-3.1.2-8: a clean session's connection lost, its slot failed before routing: the will still "
        + "goes out (on a tick), not dropped with the session")
    void cleanSessionsWillAfterAFailedEnd()
    {
        final int watcher = watch();
        assertThat(routing.onEvent(admitted(connectWithWill("mortal", true), 2))).isTrue();

        routing.onFailed(failedLoss(2));
        assertThat(routing.sessions().find("mortal")).as("the clean session ends with its connection").isNull();

        assertWillOnATick(watcher);
    }

    @Test
    @DisplayName("MQTT-3.1.2-8: a persistent session's connection lost, its slot failed before routing: the will "
        + "goes out now (on a tick), not left on the offline session until it expires")
    void persistentSessionsWillAfterAFailedEnd()
    {
        final int watcher = watch();
        assertThat(routing.onEvent(admitted(connectWithWill("mortal", false), 2))).isTrue();

        routing.onFailed(failedLoss(2));
        assertThat(routing.sessions().find("mortal").isOnline()).as("unbound from the dead connection").isFalse();
        assertThat(routing.sessions().find("mortal").will())
            .as("no will left on the offline session: published only at its expiry (7 days), dropped on resume")
            .isNull();

        assertWillOnATick(watcher);
    }

    @Test
    @DisplayName("MQTT-3.14.2-2: a DISCONNECT whose slot failed before routing still changes its persistent session's "
        + "Session Expiry Interval, and a reason 0x00 still discards the will [MQTT-3.14.4-3]")
    void failedDisconnectKeepsItsExpiryAndReason()
    {
        assertThat(routing.onEvent(admitted(connectWithWill("kept", false), 2))).isTrue();
        final IngressEvent disconnect = new IngressEvent(256);
        disconnect.end(IngressEvent.DISCONNECTED, 0, 2, MqttVersion.V5, 0, 30);
        disconnect.failed = true;
        routing.onFailed(disconnect);
        assertThat(routing.sessions().find("kept").expirySeconds()).isEqualTo(30);
        assertThat(routing.sessions().find("kept").will()).as("discarded by reason 0x00").isNull();
        routing.doDutyCycle();
        assertThat(ring.getCursor()).as("no tick: no will to publish").isEqualTo(-1L);
    }

    @Test
    @DisplayName("MQTT-3.1.2-8: routing throws while it ends a connection (here in publishing its will): the "
        + "session is unbound all the same, not left bound to a dead connection that no later slot names, and the "
        + "will goes out on a tick")
    void aThrowWhileEndingStillUnbinds() throws Exception
    {
        final int watcher = watch();
        assertThat(routing.onEvent(admitted(connectWithWill("kept", false), 2))).isTrue();
        assertThat(routing.onEvent(admitted(connectWithWill("mortal", true), 3))).isTrue();
        breakWills(); // a defect anywhere under the will's publication, made to order

        for (final long connectionId : new long[]{2, 3})
        {
            final IngressEvent lost = new IngressEvent(256);
            lost.end(IngressEvent.CONNECTION_LOST, 0, connectionId, MqttVersion.V3_1_1);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> routing.onEvent(lost))
                .isInstanceOf(NullPointerException.class);
            lost.failed = true; // as StageAgent marks it, then hands it to onFailed
            routing.onFailed(lost);
        }
        assertThat(routing.sessions().find("kept").isOnline()).as("the persistent session is offline").isFalse();
        assertThat(routing.sessions().find("mortal")).as("the clean session ended").isNull();
        assertThat(routing.sessions().find("kept").will()).as("its will handed to a tick, not kept").isNull();
        assertWillOnATick(watcher); // the first of the two wills; the other follows on the next tick
        assertThat(routing.onEvent(admitted(connectWithWill("kept", false), 4))).as("its client resumes").isTrue();
        assertThat(routing.sessions().find("kept").connectionId()).isEqualTo(4L);
    }

    /**
     * Makes the routing stage's session ends throw when they publish a will (their fan-out taken away).
     */
    private void breakWills() throws ReflectiveOperationException
    {
        final Object slots = field(RoutingStage.class, "slots").get(routing);
        final Object ends = field(SlotRouter.class, "ends").get(slots);
        field(SessionEnds.class, "publishes").set(ends, null);
    }

    private static java.lang.reflect.Field field(final Class<?> type, final String name)
        throws NoSuchFieldException
    {
        final java.lang.reflect.Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field;
    }

    /**
     * @return the session id of a clean session subscribed to "will/#" on connection 1.
     */
    private int watch()
    {
        final IngressEvent connect = admitted(connect("watcher", true), 1);
        assertThat(routing.onEvent(connect)).isTrue();
        assertThat(routing.onEvent(packet(subscribe("will/#", 0), 1))).isTrue();
        return connect.sessionId;
    }

    /**
     * Steps the routing stage's duty cycle: a tick must be on the ring, and routing it publishes the will to the
     * watcher.
     */
    private void assertWillOnATick(final int watcher)
    {
        routing.doDutyCycle();
        assertThat(ring.getCursor()).as("a tick put on the ring for the will").isEqualTo(0L);
        final IngressEvent tick = ring.get(0);
        assertThat(tick.kind).isEqualTo(IngressEvent.TICK);
        assertThat(routing.onEvent(tick)).isTrue();
        assertThat(tick.routed).as("the will routed").isTrue();
        assertThat(tick.targetCount).isEqualTo(1);
        assertThat(new RouteOutput().wrap(log, tick).targetSession(0)).isEqualTo(watcher);
    }

    private static IngressEvent failedLoss(final long connectionId)
    {
        final IngressEvent gone = new IngressEvent(256);
        gone.end(IngressEvent.CONNECTION_LOST, 0, connectionId, MqttVersion.V3_1_1);
        gone.failed = true; // as StageAgent marks it when an earlier stage threw on it
        return gone;
    }

    private static byte[] connectWithWill(final String clientId, final boolean clean)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean).will(0, false, null);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap("will/" + clientId);
        encoder.willPayload().wrap("bye");
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private static IngressEvent packet(final byte[] bytes, final long connectionId)
    {
        final IngressEvent event = new IngressEvent(256);
        event.packet(0, connectionId, MqttVersion.V3_1_1, true, (bytes[0] & 0xFF) >>> 4, new UnsafeBuffer(bytes),
            bytes.length, null, -1);
        event.aclVerdict = IngressEvent.ACL_ALLOWED; // as the auth stage grants it without an ACL file
        return event;
    }

    private static IngressEvent admitted(final byte[] connect, final long connectionId)
    {
        final IngressEvent event = packet(connect, connectionId);
        event.authCode = IngressEvent.AUTH_ACCEPTED;
        return event;
    }
}
