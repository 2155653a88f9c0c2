package io.ringmq.transport;

import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PropertyId;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a resumed session is sent on its client's return, within the client's Receive Maximum: a QoS 2 message
 * awaiting PUBCOMP is resent as PUBREL and still counts toward it; one held back that the client PUBRECs is
 * PUBRELed, never published again.
 */
@Timeout(60)
class ResendReceiveMaximumTest extends InProcessBrokerTest
{
    private static byte[] resume(final String clientId, final int receiveMaximum)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .keepAlive(60).properties(new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 3_600)
                .setInt(PropertyId.RECEIVE_MAXIMUM, receiveMaximum));
        encoder.clientId().wrap(clientId);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * @return the packets that arrive until nothing more does for half a second: "PUBLISH id", "PUBREL" or the type.
     */
    private static List<String> drain(final RawClient client) throws Exception
    {
        final List<String> packets = new ArrayList<>();
        try
        {
            while (true)
            {
                final int type = client.readPacket(500);
                packets.add(type == PacketType.PUBLISH ? "PUBLISH " + client.decoder().publish().packetId() :
                    type == PacketType.PUBREL ? "PUBREL" : "type " + type);
            }
        }
        catch (final SocketTimeoutException quiet)
        {
            return packets;
        }
    }

    @Test
    @DisplayName("MQTT-3.3.4-9, MQTT-4.4.0-1: one QoS 2 message awaiting PUBCOMP and two QoS 1 unacknowledged, "
        + "resumed with Receive Maximum 2: the PUBREL and one PUBLISH, not a third unfinished")
    void pubrelCountsTowardTheReceiveMaximum() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final RawClient first = closeLater(new RawClient(port).v5());
        assertThat(first.handshake(resume("rm2", 3))).isZero();
        first.send(RawClient.subscribe5(1, "rq/#", 2));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = closeLater(new RawClient(port).v5());
        assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
        publisher.send(RawClient.publish5("rq/a", "m0".getBytes(StandardCharsets.UTF_8), 2, 1, null));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        final int m0 = first.decoder().publish().packetId();
        first.send(RawClient.ack(PacketType.PUBREC, m0));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBREL); // never PUBCOMPed
        for (int i = 1; i <= 3; i++)
        {
            publisher.send(RawClient.publish5("rq/a", ("m" + i).getBytes(StandardCharsets.UTF_8), 1, 1 + i, null));
        }
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH); // m1
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH); // m2: the window of 3 is full
        assertThat(drain(first)).as("nothing past the Receive Maximum").isEmpty();
        first.kill();

        final RawClient back = closeLater(new RawClient(port).v5());
        assertThat(back.handshake(resume("rm2", 2))).isZero();
        assertThat(drain(back)).hasSize(2).contains("PUBREL").anyMatch(packet -> packet.startsWith("PUBLISH"));
        back.send(RawClient.ack(PacketType.PUBCOMP, m0));
        assertThat(back.readPacket(5_000)).as("room for the next once m0 is complete").isEqualTo(PacketType.PUBLISH);
    }

    @Test
    @DisplayName("MQTT-4.3.3: a message held back at a resume that the client PUBRECs (it had it from before) gets "
        + "its PUBREL, and its PUBLISH is never sent again (found by a reviewer: it was, when the window drained)")
    void noPublishAfterPubrel() throws Exception
    {
        final int port = launch(TestBrokers.v5Context());
        final RawClient first = closeLater(new RawClient(port).v5());
        assertThat(first.handshake(resume("held", 2))).isZero();
        first.send(RawClient.subscribe5(1, "h/#", 2));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.SUBACK);
        final RawClient publisher = closeLater(new RawClient(port).v5());
        assertThat(publisher.handshake(RawClient.connect5("pub", null))).isZero();
        publisher.send(RawClient.publish5("h/a", "m1".getBytes(StandardCharsets.UTF_8), 2, 1, null));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        final int m1 = first.decoder().publish().packetId();
        publisher.send(RawClient.publish5("h/a", "m2".getBytes(StandardCharsets.UTF_8), 2, 2, null));
        assertThat(first.readPacket(5_000)).isEqualTo(PacketType.PUBLISH);
        final int m2 = first.decoder().publish().packetId();
        first.kill(); // neither acknowledged

        final RawClient back = closeLater(new RawClient(port).v5());
        assertThat(back.handshake(resume("held", 1))).isZero();
        assertThat(drain(back)).as("m1 resent, m2 held back").containsExactly("PUBLISH " + m1);
        back.send(RawClient.ack(PacketType.PUBREC, m2)); // the client had m2 from its first connection
        assertThat(drain(back)).as("m2's PUBREL").containsExactly("PUBREL");
        back.send(RawClient.ack(PacketType.PUBREC, m1));
        assertThat(drain(back)).as("m1's PUBREL").containsExactly("PUBREL");
        back.send(RawClient.ack(PacketType.PUBCOMP, m1)); // m1 done; m2 still awaits its PUBCOMP
        assertThat(drain(back)).as("nothing: m2 was PUBRELed, its PUBLISH must not come again").isEmpty();
    }
}
