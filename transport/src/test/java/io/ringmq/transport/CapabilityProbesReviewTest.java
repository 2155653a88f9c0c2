package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.ReasonCode;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review probes of 1e12245 and 17b7615 (reload, bypass paths).
 */
@Timeout(60)
class CapabilityProbesReviewTest extends InProcessBrokerTest
{
    private static BrokerContext settings()
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0));
    }

    private int connect(final boolean v5, final String clientId) throws Exception
    {
        try (RawClient client = v5 ? new RawClient(broker.port()).v5() : new RawClient(broker.port()))
        {
            return client.handshake(v5 ? RawClient.connect5(clientId, null) : RawClient.connect(clientId, true, 60));
        }
    }

    private String reload(final UnaryOperator<BrokerContext> change) throws Exception
    {
        return broker.reload(change.apply(settings()).conclude());
    }

    @Test
    @DisplayName("client id rules live on reload, both ways")
    void clientIdRulesReload() throws Exception
    {
        launch(settings());
        assertThat(connect(false, "")).isZero();
        reload(c -> c.limits(l -> l.allowZeroLengthClientId(false).clientIdPrefix("secure-")));
        assertThat(connect(false, "")).isEqualTo(ReasonCode.V3_IDENTIFIER_REJECTED);
        assertThat(connect(true, "mqtt")).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(connect(true, "secure-\u00e9")).isZero();
        reload(c -> c);
        assertThat(connect(false, "")).isZero();
        assertThat(connect(true, "mqtt")).isZero();
    }

    @Test
    @DisplayName("max-qos and retain-available are restart-only: a reload keeps the running values at the edge too")
    void maxQosReloadIsRestartOnly() throws Exception
    {
        launch(settings().limits(l -> l.maxQos(1).retainAvailable(false)));
        final String line = reload(c -> c.limits(l -> l.maxQos(2).retainAvailable(true)));
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("p5", null))).isZero();
            assertThat(v5.decoder().connack().properties().has(PropertyId.MAXIMUM_QOS)).as(line).isTrue();
            v5.send(publish(2, false, false, null));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
        }
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("r5", null))).isZero();
            v5.send(publish(0, true, false, null));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.RETAIN_NOT_SUPPORTED);
        }
    }

    private static byte[] publish(final int qos, final boolean retain, final boolean dup, final MqttProperties p)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V5).qos(qos).retain(retain)
            .dup(dup).packetId(qos == 0 ? 0 : 7).topic("cap/t").payload(retain ? new byte[0] : "m".getBytes());
        if (null != p)
        {
            encoder.properties(p);
        }
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    @Test
    @DisplayName("bypasses: an empty retained PUBLISH (a delete) under retain-available false, a QoS 2 DUP with a "
        + "topic alias under max-qos 1; a $share subscription is granted the maximum")
    void bypasses() throws Exception
    {
        launch(settings().limits(l -> l.maxQos(1).retainAvailable(false)));
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("del", null))).isZero();
            v5.send(publish(0, true, false, null));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.RETAIN_NOT_SUPPORTED);
        }
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("dup", null))).isZero();
            v5.send(publish(2, false, true, new MqttProperties().setInt(PropertyId.TOPIC_ALIAS, 1)));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.DISCONNECT);
            assertThat(v5.decoder().disconnect().reasonCode()).isEqualTo(ReasonCode.QOS_NOT_SUPPORTED);
        }
        try (RawClient v5 = new RawClient(broker.port()).v5())
        {
            assertThat(v5.handshake(RawClient.connect5("shared", null))).isZero();
            v5.send(RawClient.subscribe5(1, "$share/g/cap/#", 2));
            assertThat(v5.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
            assertThat(v5.decoder().suback().reasonCode(0)).isEqualTo(1);
        }
    }
}
