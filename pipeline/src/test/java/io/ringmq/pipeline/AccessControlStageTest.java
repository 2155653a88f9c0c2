package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.AclFile;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.ClientAcl;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.ReasonCode;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicReference;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The auth stage's ACL verdicts in the slot, stepped by hand: what it grants, what it refuses, that anything it did
 * not decide is refused (by routing too), hostile SUBSCRIBEs, and a reload taken on its own thread.
 */
class AccessControlStageTest
{
    private final BrokerCounters counters = new BrokerCounters();
    private final AtomicReference<AccessRules> rules = new AtomicReference<>(AccessRules.of(AclFile.parse("acl",
        "topic readwrite open/#\ntopic read ro/#\ntopic deny open/secret\npattern write c/%c/#")));
    private final AuthStage auth = new AuthStage(
        new Authenticator(Authenticator.AnonymousPolicy.ALL, null, null, null), counters, 1024,
        ConnectionControl.NONE, new AccessControl(rules, false, counters));

    private static IngressEvent packet(final byte[] bytes, final long connectionId)
    {
        final IngressEvent event = new IngressEvent(Math.max(256, bytes.length)); // inline, however large
        event.packet(0, connectionId, MqttVersion.V3_1_1, true, (bytes[0] & 0xFF) >>> 4, new UnsafeBuffer(bytes),
            bytes.length, null, -1);
        return event;
    }

    private IngressEvent judge(final byte[] bytes, final long connectionId)
    {
        final IngressEvent event = packet(bytes, connectionId);
        auth.onEvent(event);
        return event;
    }

    @Test
    @DisplayName("PUBLISH: granted, refused, and refused for a connection the stage never admitted (fail closed)")
    void publishVerdicts()
    {
        final IngressEvent admitted = judge(connect("dev1", true), 1);
        assertThat(admitted.authCode).isEqualTo(IngressEvent.AUTH_ACCEPTED);
        assertThat(admitted.aclVerdict).isEqualTo(IngressEvent.ACL_ALLOWED);
        assertThat(admitted.aclUser).as("admitted as no user: anonymous").isNull();
        assertThat(judge(publish("open/x", 1, 1, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_ALLOWED);
        assertThat(judge(publish("c/dev1/x", 1, 1, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_ALLOWED);
        assertThat(judge(publish("c/dev2/x", 1, 1, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_DENIED);
        assertThat(judge(publish("open/secret", 0, 0, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_DENIED);
        assertThat(judge(publish("ro/x", 2, 3, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_DENIED);
        assertThat(judge(publish("open/x", 1, 1, false), 99).aclVerdict).as("never admitted")
            .isEqualTo(IngressEvent.ACL_DENIED);
        final IngressEvent end = new IngressEvent(256);
        end.end(IngressEvent.CONNECTION_LOST, 0, 1, MqttVersion.V3_1_1);
        auth.onEvent(end);
        assertThat(judge(publish("open/x", 1, 1, false), 1).aclVerdict).as("forgotten with its connection")
            .isEqualTo(IngressEvent.ACL_DENIED);
        assertThat(counters.get(BrokerCounters.ACL_PUBLISH_DENIED)).as("the rules' refusals, not the strangers'")
            .isEqualTo(3);
    }

    @Test
    @DisplayName("[MQTT-3.9.3-1] SUBSCRIBE: a verdict per filter, for a hostile 20,000 filters too; none for a "
        + "connection never admitted, which refuses every filter")
    void subscribeVerdicts()
    {
        judge(connect("dev1", true), 1);
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(1);
        for (int i = 0; i < 20_000; i++)
        {
            encoder.filters().add(i % 3 == 0 ? "open/" + i : i % 3 == 1 ? "#" : "nope/" + i, 1);
        }
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        final IngressEvent many = judge(buffer.byteArray(), 1);
        assertThat(many.aclVerdict).isEqualTo(IngressEvent.ACL_PER_FILTER);
        assertThat(many.aclFilterCount).isEqualTo(20_000);
        assertThat(many.aclFilter(0)).isEqualTo(ClientAcl.FULL);
        assertThat(many.aclFilter(1)).isEqualTo(ClientAcl.PARTIAL);
        assertThat(many.aclFilter(19_999)).isEqualTo(ClientAcl.PARTIAL);
        assertThat(many.aclFilter(2)).isEqualTo(ClientAcl.DENIED);
        assertThat(many.aclFilter(20_000)).as("past the filters: refused").isEqualTo(ClientAcl.DENIED);

        final IngressEvent stranger = judge(subscribe("open/x", 1), 99);
        assertThat(stranger.aclVerdict).isEqualTo(IngressEvent.ACL_UNDECIDED);
        assertThat(stranger.aclFilter(0)).isEqualTo(ClientAcl.DENIED);
    }

    @Test
    @DisplayName("routing alone refuses what the auth stage did not grant: a PUBLISH is not routed, every filter of "
        + "an undecided SUBSCRIBE gets 0x80")
    void routingFailsClosed()
    {
        final MessageLog log = new MessageLog(1 << 20);
        final RoutingStage routing = new RoutingStage(new BrokerContext().conclude(), counters, log);
        final IngressEvent connect = packet(connect("x", true), 1);
        connect.authCode = IngressEvent.AUTH_ACCEPTED;
        routing.onEvent(connect);
        final IngressEvent message = packet(publish("t", 1, 5, false), 1);
        routing.onEvent(message);
        assertThat(message.routed).isFalse();
        assertThat(message.packetId).as("still acknowledged").isEqualTo(5);
        final IngressEvent subscribe = packet(subscribe("t", 1), 1);
        routing.onEvent(subscribe);
        assertThat(new RouteOutput().wrap(log, subscribe).granted(0)).isEqualTo(ReasonCode.V3_SUBACK_FAILURE);
    }

    @Test
    @DisplayName("a reload is taken on the stage's thread: later verdicts use the new rules, with their generation")
    void reload()
    {
        judge(connect("dev1", true), 1);
        assertThat(judge(publish("ro/x", 1, 1, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_DENIED);
        auth.reload(AclFile.parse("acl2", "topic readwrite ro/#"));
        assertThat(auth.hasPendingWork()).isTrue();
        assertThat(auth.doDutyCycle()).isPositive();
        assertThat(rules.get().generation()).isEqualTo(1);
        final IngressEvent after = judge(publish("ro/x", 1, 1, false), 1);
        assertThat(after.aclVerdict).isEqualTo(IngressEvent.ACL_ALLOWED);
        assertThat(after.aclGeneration).isEqualTo(1);
        assertThat(judge(publish("open/x", 1, 1, false), 1).aclVerdict).isEqualTo(IngressEvent.ACL_DENIED);
    }
}
