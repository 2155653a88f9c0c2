package io.ringmq.protocol;

import java.util.SplittableRandom;
import java.util.function.Consumer;

/**
 * Plain JUnit property checks: a property runs over a fixed number of generated cases, each drawn from its own
 * {@link SplittableRandom} seeded with {@code baseSeed + case}, so every run sees the same cases and a failure names
 * the one seed that reproduces it. The generators here are the few shapes the protocol properties share.
 */
final class SeededCases
{
    private SeededCases()
    {
    }

    /**
     * Checks a property on {@code count} cases; an assertion failure is rethrown with the case number and its seed.
     *
     * @param baseSeed the seed of case 0; case {@code i} is seeded with {@code baseSeed + i}.
     * @param count    how many cases to generate.
     * @param property the check, given the random source of one case.
     */
    static void run(final long baseSeed, final int count, final Consumer<SplittableRandom> property)
    {
        for (int i = 0; i < count; i++)
        {
            final long seed = baseSeed + i;
            try
            {
                property.accept(new SplittableRandom(seed));
            }
            catch (final AssertionError ex)
            {
                throw new AssertionError("case " + i + " of " + count + ", seed 0x" + Long.toHexString(seed) +
                    "L (replay: new SplittableRandom(0x" + Long.toHexString(seed) + "L)): " + ex.getMessage(), ex);
            }
        }
    }

    /**
     * @return a length from 0 to {@code maxLength}, with the edges 0 and {@code maxLength} each at least one case in
     * sixteen, as an edge-case-seeking generator would try them.
     */
    static int length(final SplittableRandom random, final int maxLength)
    {
        final int choice = random.nextInt(16);
        return choice == 0 ? 0 : choice == 1 ? maxLength : random.nextInt(maxLength + 1);
    }

    /**
     * @return an array of {@link #length} bytes, each with probability {@code anyWeight / (anyWeight +
     * pickedWeight)} any byte at all, otherwise one of {@code picked}.
     */
    static byte[] bytes(
        final SplittableRandom random, final int maxLength, final int anyWeight, final int pickedWeight,
        final byte... picked)
    {
        final byte[] bytes = new byte[length(random, maxLength)];
        for (int i = 0; i < bytes.length; i++)
        {
            bytes[i] = random.nextInt(anyWeight + pickedWeight) < anyWeight ?
                (byte)random.nextInt(256) : picked[random.nextInt(picked.length)];
        }
        return bytes;
    }
}
