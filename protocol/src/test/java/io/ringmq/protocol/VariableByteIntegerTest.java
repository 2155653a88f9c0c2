package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

class VariableByteIntegerTest
{
    @ParameterizedTest(name = "{0} <-> {1}")
    @CsvSource({
        "0, 00",
        "127, 7F",
        "128, 8001",
        "16383, FF7F",
        "16384, 808001",
        "2097151, FFFF7F",
        "2097152, 80808001",
        "268435455, FFFFFF7F"})
    @DisplayName("the boundaries of section 1.5.5 encode and decode as the specification's table")
    void specTable(final int value, final String hex)
    {
        final UnsafeBuffer decoded = Bytes.buffer(hex);
        final int packed = VariableByteInteger.decode(decoded, 0, decoded.capacity());
        assertThat(VariableByteInteger.value(packed)).isEqualTo(value);
        assertThat(VariableByteInteger.byteCount(packed)).isEqualTo(hex.length() / 2);

        final UnsafeBuffer encoded = new UnsafeBuffer(new byte[4]);
        final int written = VariableByteInteger.encode(encoded, 0, value);
        assertThat(written).isEqualTo(VariableByteInteger.encodedLength(value)).isEqualTo(hex.length() / 2);
        assertThat(Bytes.hexOf(Bytes.copy(encoded, written))).isEqualTo(hex);
    }

    @Test
    @DisplayName("MQTT-1.5.5-1: a fifth byte is malformed")
    void fiveBytesAreMalformed()
    {
        final UnsafeBuffer buffer = Bytes.buffer("FFFFFFFF01");
        assertThat(VariableByteInteger.decode(buffer, 0, 5)).isEqualTo(DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER);
        assertThat(DecodeError.reasonCode(DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER))
            .isEqualTo(ReasonCode.MALFORMED_PACKET);
    }

    @ParameterizedTest
    @CsvSource({"8000", "808000", "80808000", "FF8000"})
    @DisplayName("MQTT-1.5.5-1: a non-minimal encoding is malformed")
    void nonMinimalIsMalformed(final String hex)
    {
        final UnsafeBuffer buffer = Bytes.buffer(hex);
        assertThat(VariableByteInteger.decode(buffer, 0, buffer.capacity()))
            .isEqualTo(DecodeError.NON_MINIMAL_VARIABLE_BYTE_INTEGER);
    }

    @Test
    void truncatedNeedsMore()
    {
        final UnsafeBuffer buffer = Bytes.buffer("FFFFFF7F");
        for (int limit = 0; limit < 4; limit++)
        {
            assertThat(VariableByteInteger.decode(buffer, 0, limit)).isEqualTo(DecodeError.NEED_MORE);
        }
    }

    @Test
    void roundTrips()
    {
        final int[] edges = {0, 1, 127, 128, 16_383, 16_384, 2_097_151, 2_097_152, VariableByteInteger.MAX_VALUE - 1,
            VariableByteInteger.MAX_VALUE};
        SeededCases.run(0x5EED_0601L, 1000, random ->
        {
            // one case in four an edge of a byte count, the rest spread evenly over each of the four lengths
            final int value = random.nextInt(4) == 0 ? edges[random.nextInt(edges.length)] :
                random.nextInt(1 << (7 * random.nextInt(1, 5)));
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
            final int written = VariableByteInteger.encode(buffer, 0, value);
            final int packed = VariableByteInteger.decode(buffer, 0, written);
            assertThat(VariableByteInteger.value(packed)).as("value %d", value).isEqualTo(value);
            assertThat(VariableByteInteger.byteCount(packed)).as("value %d", value).isEqualTo(written);
        });
    }

    @Test
    void neverThrowsOnAnyFourBytes()
    {
        SeededCases.run(0x5EED_0701L, 1000, random ->
        {
            final int bits = random.nextInt();
            final int limit = random.nextInt(5);
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
            buffer.putInt(0, bits);
            final int packed = VariableByteInteger.decode(buffer, 0, limit);
            if (packed > 0)
            {
                assertThat(VariableByteInteger.value(packed)).as("bits %08X limit %d", bits, limit)
                    .isBetween(0, VariableByteInteger.MAX_VALUE);
                assertThat(VariableByteInteger.byteCount(packed)).as("bits %08X limit %d", bits, limit)
                    .isBetween(1, limit);
            }
        });
    }
}
