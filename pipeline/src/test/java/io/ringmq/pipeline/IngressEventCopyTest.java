package io.ringmq.pipeline;

import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a routing shard's replay copy of a slot carries: the I/O agent's inputs, so every shard judges a packet alike.
 */
class IngressEventCopyTest
{
    @Test
    @DisplayName("a SUBSCRIBE's address key reaches every routing shard's copy: each shares one address's retained "
        + "walks as shard 0 does (review of 56a9e7c)")
    void theAddressKeyIsCopied()
    {
        final IngressEvent event = new IngressEvent(64);
        final byte[] subscribe = {(byte)0x82, 6, 0, 1, 0, 1, 't', 0};
        event.packet(0, 7, MqttVersion.V3_1_1, false, PacketType.SUBSCRIBE, new UnsafeBuffer(subscribe),
            subscribe.length, null, -1);
        event.addressKey = 0x0A00_0001L;
        final IngressEvent copy = new IngressEvent(64);
        event.copyInputsTo(copy);
        assertThat(copy.addressKey).isEqualTo(0x0A00_0001L);
        assertThat(copy.connectionId).isEqualTo(7);
        assertThat(copy.packetType).isEqualTo(PacketType.SUBSCRIBE);
    }
}
