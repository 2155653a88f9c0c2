package io.ringmq.protocol;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
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

    @Property
    void roundTrips(@ForAll @IntRange(min = 0, max = VariableByteInteger.MAX_VALUE) final int value)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
        final int written = VariableByteInteger.encode(buffer, 0, value);
        final int packed = VariableByteInteger.decode(buffer, 0, written);
        assertThat(VariableByteInteger.value(packed)).isEqualTo(value);
        assertThat(VariableByteInteger.byteCount(packed)).isEqualTo(written);
    }

    @Property
    void neverThrowsOnAnyFourBytes(@ForAll final int bits, @ForAll @IntRange(min = 0, max = 4) final int limit)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[4]);
        buffer.putInt(0, bits);
        final int packed = VariableByteInteger.decode(buffer, 0, limit);
        if (packed > 0)
        {
            assertThat(VariableByteInteger.value(packed)).isBetween(0, VariableByteInteger.MAX_VALUE);
            assertThat(VariableByteInteger.byteCount(packed)).isBetween(1, limit);
        }
    }
}
