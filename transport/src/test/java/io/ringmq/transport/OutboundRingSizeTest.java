package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code --outbound-ring-bytes}: each I/O agent's outbound ring, sized for the box, validated once against the
 * largest packet it must carry (Agrona's ring takes a message of at most an eighth of its capacity).
 */
class OutboundRingSizeTest
{
    private static final int MIB = 1024 * 1024;

    @Test
    @DisplayName("--outbound-ring-bytes reaches the context; by default 16 MiB, or what --max-packet-size needs")
    void flagAndDefaults()
    {
        final Main main = new Main();
        new picocli.CommandLine(main).parseArgs("--outbound-ring-bytes", "2097152", "--max-packet-size", "262080");
        final BrokerContext context = main.context().conclude();
        assertThat(context.memory().outboundRingBytes()).isEqualTo(2 * MIB);
        assertThat(context.toString()).contains("outbound-ring-bytes=2097152");
        assertThat(new BrokerContext().conclude().memory().outboundRingBytes()).isEqualTo(16 * MIB);
        assertThat(new BrokerContext().limits(l -> l.maxPacketSize(4 * MIB)).conclude().memory().outboundRingBytes())
            .isEqualTo(64 * MIB);
        assertThat(new BrokerContext().limits(l -> l.maxPacketSize(262_144)).conclude().memory().outboundRingBytes())
            .as("the default stays 16 MiB for smaller packets").isEqualTo(16 * MIB);
        assertThat(io.ringmq.pipeline.MemorySettings.outboundRingBytesFor(262_080)).isEqualTo(2 * MIB);
        assertThat(io.ringmq.pipeline.MemorySettings.outboundRingBytesFor(262_144)).isEqualTo(4 * MIB);
        assertThat(io.ringmq.pipeline.MemorySettings.outboundRingBytesFor(1024 * 1024)).isEqualTo(16 * MIB);
    }

    @Test
    @DisplayName("bad input: an outbound ring that is no power of two, negative, or too small for the largest packet "
        + "is refused with one clear message")
    void badSizes()
    {
        assertThatThrownBy(() -> new BrokerContext().memory(m -> m.outboundRingBytes(3 * MIB)).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--outbound-ring-bytes must be a power of two");
        assertThatThrownBy(() -> new BrokerContext().memory(m -> m.outboundRingBytes(-MIB)).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--outbound-ring-bytes");
        assertThatThrownBy(() -> new BrokerContext().memory(m -> m.outboundRingBytes(8 * MIB)).conclude())
            .as("1 MiB packets need 16 MiB").isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("at least 16777216");
        assertThatThrownBy(() -> new BrokerContext().memory(m -> m.outboundRingBytes(Integer.MIN_VALUE)).conclude())
            .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    @Timeout(60)
    @DisplayName("a 1 MiB outbound ring carries the largest packet its --max-packet-size allows, to a 3.1.1 and a 5.0 "
        + "subscriber (with a subscription identifier added), QoS 0 and 1")
    void smallRingCarriesTheLargestPacket() throws Exception
    {
        final int maxPacketSize = 131_008; // the largest 8 x (size + 64) <= 1 MiB allows
        final Broker broker = Broker.launch(TestBrokers.v5Context().limits(l -> l.maxPacketSize(maxPacketSize))
            .memory(m -> m.outboundRingBytes(MIB).messageLogBytes(MIB)));
        final List<AutoCloseable> clients = new ArrayList<>();
        try
        {
            final Paho subscriber = Paho.connect(broker.port(), "sub3");
            clients.add(subscriber);
            subscriber.client.subscribe("big/#", 1);
            final Paho5 subscriber5 = Paho5.connect(broker.port(), "sub5");
            clients.add(subscriber5);
            // a subscription identifier: the 5.0 copy is a few bytes longer than the packet that came in
            subscriber5.subscribe(new org.eclipse.paho.mqttv5.common.MqttSubscription("big/#", 1), 7);
            final Paho publisher = Paho.connect(broker.port(), "pub");
            clients.add(publisher);
            // a 3.1.1 PUBLISH near the limit (topic 5 + 2, packet id 2, fixed header 4), room left for the 5.0 copy's
            // subscription identifier and property length: the broker sends no copy larger than --max-packet-size
            final String payload = "x".repeat(maxPacketSize - 4 - 7 - 2 - 16);
            for (int qos = 0; qos <= 1; qos++)
            {
                publisher.publish("big/a", payload, qos, false);
                final Paho.Received received = subscriber.next();
                assertThat(received.payload()).hasSize(payload.length());
                assertThat(subscriber5.next().message().getPayload()).hasSize(payload.length());
            }
        }
        finally
        {
            TestBrokers.closeAll(clients, broker, true);
        }
    }
}
