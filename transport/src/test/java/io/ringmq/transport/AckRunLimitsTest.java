package io.ringmq.transport;

import io.ringmq.protocol.PacketType;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What may join a run of acknowledgements, on its own: one type, never PUBREL, within the slot's inline bytes and
 * {@link AckRun#MAX_PACKETS}.
 */
class AckRunLimitsTest
{
    @Test
    @DisplayName("a run holds at most 64 acknowledgements however large the slot's inline room")
    void atMostMaxPackets()
    {
        final AckRun run = new AckRun(64 * 1024);
        for (int i = 0; i < AckRun.MAX_PACKETS; i++)
        {
            assertThat(run.fits(PacketType.PUBACK, 4)).as("packet " + i).isTrue();
            run.add(4 * i, PacketType.PUBACK, 4);
        }
        assertThat(run.fits(PacketType.PUBACK, 4)).isFalse();
        assertThat(run.count()).isEqualTo(64);
        assertThat(run.length()).isEqualTo(256);
        run.clear();
        assertThat(run.fits(PacketType.PUBACK, 4)).as("the next run").isTrue();
    }

    @Test
    @DisplayName("one type to a run; PUBREL and non-acknowledgements never join; the inline room bounds the bytes")
    void typesAndRoom()
    {
        final AckRun run = new AckRun(10);
        assertThat(run.fits(PacketType.PUBREL, 4)).isFalse();
        assertThat(run.fits(PacketType.PUBLISH, 4)).isFalse();
        assertThat(run.fits(PacketType.SUBSCRIBE, 4)).isFalse();
        assertThat(run.fits(PacketType.PUBREC, 11)).as("larger than a slot holds: alone, through the log").isFalse();
        assertThat(run.fits(PacketType.PUBREC, 5)).isTrue();
        run.add(100, PacketType.PUBREC, 5);
        assertThat(run.fits(PacketType.PUBCOMP, 4)).as("another type").isFalse();
        assertThat(run.fits(PacketType.PUBREC, 6)).as("past the room").isFalse();
        assertThat(run.fits(PacketType.PUBREC, 5)).isTrue();
        run.add(105, PacketType.PUBREC, 5);
        assertThat(new int[]{run.start(), run.length(), run.count(), run.packetType()})
            .containsExactly(100, 10, 2, PacketType.PUBREC);
    }
}
