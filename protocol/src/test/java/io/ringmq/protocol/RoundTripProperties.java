package io.ringmq.protocol;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
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

    @Property(tries = 4000)
    void encodeDecodeEncode(@ForAll("samples") final Samples.Sample sample)
    {
        assertRoundTrip(sample);
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

    @Provide
    Arbitrary<Samples.Sample> samples()
    {
        return Combinators.combine(Arbitraries.of(combinations()), Arbitraries.longs())
            .as((combination, seed) -> Samples.of(new Random(seed), combination[0], combination[1]));
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
