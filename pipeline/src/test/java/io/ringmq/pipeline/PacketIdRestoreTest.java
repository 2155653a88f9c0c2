package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.publish;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Packet identifiers across a restart once a persistent session's identifiers have wrapped past 65,535: QoS 1
 * messages in flight come back with new identifiers (the store keeps none for them), QoS 2 exchanges with the
 * identifiers they had. A crash is a new harness on the same {@link MemoryStore#retaining()} store.
 */
@Timeout(120)
class PacketIdRestoreTest
{
    private static final long SUB = 1;
    private static final long PUB = 2;
    private static final long SUB_AGAIN = 3;

    private final MemoryStore store = MemoryStore.retaining();
    private PipelineHarness broker = start();

    private PipelineHarness start()
    {
        return new PipelineHarness(new BrokerContext(),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
    }

    @Test
    @DisplayName("[MQTT-4.3.3] [MQTT-4.4.0-1] after a crash, QoS 1 messages restored before a PUBRECed QoS 2 message "
        + "do not take its wrapped packet id: it gets its PUBREL with that id, never a new PUBLISH")
    void restoredQos1MessagesLeaveAQos2ExchangesIdFree()
    {
        broker.packet(SUB, connect("sub", false));
        broker.packet(SUB, subscribe("t", 2));
        broker.packet(PUB, connect("pub", true));
        broker.outbound.sent.clear();
        // 65,533 QoS 1 messages delivered and acknowledged: the subscriber's next identifiers are 65,534, 65,535, 1
        for (int id = 1; id <= 65_533; id++)
        {
            broker.packet(PUB, publish("t", 1, 1, false));
            broker.packet(SUB, ack(PacketType.PUBACK, id));
            broker.outbound.sent.clear();
        }
        broker.packet(PUB, publish("t", 1, 1, false));
        broker.packet(PUB, publish("t", 1, 1, false));
        broker.packet(PUB, publish("t", 2, 2, false));
        final List<byte[]> delivered = broker.outbound.takePackets(SUB);
        assertThat(delivered).extracting(PacketIdRestoreTest::qosAndPacketId)
            .as("two QoS 1 messages unacknowledged, then a QoS 2 one on the wrapped identifier 1")
            .containsExactly(new int[]{1, 65_534}, new int[]{1, 65_535}, new int[]{2, 1});
        broker.packet(SUB, ack(PacketType.PUBREC, 1)); // the client has it: only PUBREL/PUBCOMP are left
        assertThat(broker.outbound.takeTypes(SUB)).containsExactly(PacketType.PUBREL);

        broker = start(); // a crash
        broker.packet(SUB_AGAIN, connect("sub", false));
        final List<byte[]> resent = broker.outbound.takePackets(SUB_AGAIN);
        assertThat(resent).extracting(packet -> (packet[0] & 0xFF) >>> 4).as("CONNACK, the QoS 1 messages, the PUBREL")
            .containsExactly(PacketType.CONNACK, PacketType.PUBLISH, PacketType.PUBLISH, PacketType.PUBREL);
        assertThat(resent.subList(1, 3)).extracting(PacketIdRestoreTest::qosAndPacketId)
            .as("QoS 1 again, on identifiers other than the exchange's")
            .allSatisfy(qosAndId -> assertThat(qosAndId[0]).isEqualTo(1))
            .allSatisfy(qosAndId -> assertThat(qosAndId[1]).isNotEqualTo(1));
        final byte[] pubrel = resent.get(3);
        assertThat(((pubrel[2] & 0xFF) << 8) | (pubrel[3] & 0xFF)).as("the PUBREL's identifier").isEqualTo(1);
        broker.packet(SUB_AGAIN, ack(PacketType.PUBCOMP, 1));
        assertThat(broker.outbound.takeTypes(SUB_AGAIN)).as("nothing more: the QoS 2 message was not sent again")
            .doesNotContain(PacketType.PUBLISH);
    }

    /**
     * @return a PUBLISH's QoS and packet identifier.
     */
    private static int[] qosAndPacketId(final byte[] packet)
    {
        final PublishFlyweight publish = new PublishFlyweight();
        assertThat(publish.wrap(new UnsafeBuffer(packet), 0, packet.length, MqttVersion.V3_1_1)).isPositive();
        return new int[]{publish.qos(), publish.packetId()};
    }
}
