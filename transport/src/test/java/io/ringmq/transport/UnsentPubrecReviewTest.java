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
 * Found by a reviewer (the test failed before the fix): a QoS 2 message held back (unsent) at a reconnect by a smaller Receive Maximum that the client PUBRECs
 * (it had it from the old connection) goes to AWAIT_PUBCOMP and gets its PUBREL, but keeps its unsent flag: when
 * the window drains, drainQueue's nextUnsent picks it and the broker sends the PUBLISH again after its PUBREL.
 */
@Timeout(60)
class UnsentPubrecReviewTest extends InProcessBrokerTest
{
    private static byte[] resume(final String clientId, final int receiveMaximum)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .keepAlive(60).properties(new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL, 3_600)
                .setInt(PropertyId.RECEIVE_MAXIMUM, receiveMaximum));
        encoder.clientId().wrap(clientId);
        return RawClient.encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

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
    @DisplayName("MQTT-4.3.3: once PUBREL is sent for a message, its PUBLISH is never sent again")
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
