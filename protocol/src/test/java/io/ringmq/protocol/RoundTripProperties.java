package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every packet type in both versions: encode then decode gives the same values, and decode then encode gives the
 * same bytes.
 */
class RoundTripProperties
{
    private static final int MAX_PACKET = 1 << 20;
    private final PacketDecoder decoder = new PacketDecoder();

    @Test
    void encodeDecodeEncode()
    {
        final List<int[]> combinations = combinations();
        SeededCases.run(0x5EED_0001L, 4000, random ->
        {
            final int[] combination = combinations.get(random.nextInt(combinations.size()));
            assertRoundTrip(Samples.of(new Random(random.nextLong()), combination[0], combination[1]));
        });
    }

    @Test
    void everyPacketTypeInBothVersions()
    {
        for (final int[] combination : combinations())
        {
            final Random random = new Random(combination[0] * 31L + combination[1]);
            for (int i = 0; i < 200; i++)
            {
                assertRoundTrip(Samples.of(random, combination[0], combination[1]));
            }
        }
    }

    private void assertRoundTrip(final Samples.Sample sample)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(sample.bytes());
        final int length = decoder.decode(buffer, 0, buffer.capacity(), sample.version(), MAX_PACKET);
        assertThat(length).as(() -> sample + " -> " + DecodeError.describe(length)).isEqualTo(sample.bytes().length);
        assertThat(Samples.render(decoder, sample.version())).isEqualTo(sample.expected());
        assertThat(Bytes.hexOf(Reencode.of(decoder, sample.version()))).as(sample::toString)
            .isEqualTo(Bytes.hexOf(sample.bytes()));
    }

    static List<int[]> combinations()
    {
        final List<int[]> combinations = new ArrayList<>();
        for (final int version : new int[]{MqttVersion.V3_1_1, MqttVersion.V5})
        {
            for (int type = PacketType.CONNECT; type <= PacketType.AUTH; type++)
            {
                if (PacketType.isDefined(type, version))
                {
                    combinations.add(new int[]{version, type});
                }
            }
        }
        return combinations;
    }
}
