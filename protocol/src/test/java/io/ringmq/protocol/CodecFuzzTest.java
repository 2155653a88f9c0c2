package io.ringmq.protocol;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.agrona.concurrent.UnsafeBuffer;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Coverage-guided fuzz targets (Jazzer) for the codec's building blocks: variable byte integers and UTF-8 against
 * reference implementations, the frame decoder's contract over every prefix of its input, and the property parser
 * with a re-encode round trip. Every buffer is wrapped exactly around the bytes under test, so a read one byte past
 * its limit is an {@link IndexOutOfBoundsException}, a finding.
 * <p>
 * Under {@code mvn test} each target replays its corpus in {@code src/test/resources/io/ringmq/protocol/
 * CodecFuzzTestInputs/<method>/}; with {@code JAZZER_FUZZ=1} it fuzzes (see docs/fuzz/README.md).
 */
class CodecFuzzTest
{
    /** Every context a property section is decoded in: the packet types and the will properties. */
    static final int[] PROPERTY_CONTEXTS = {
        PacketType.CONNECT, PacketType.CONNACK, PacketType.PUBLISH, PacketType.PUBACK, PacketType.PUBREC,
        PacketType.PUBREL, PacketType.PUBCOMP, PacketType.SUBSCRIBE, PacketType.SUBACK, PacketType.UNSUBSCRIBE,
        PacketType.UNSUBACK, PacketType.DISCONNECT, PacketType.AUTH, PropertyId.WILL_CONTEXT};

    /**
     * [MQTT-1.5.5-1] decoding arbitrary bytes agrees with a naive reference decoder, and whatever decodes
     * re-encodes to the same bytes.
     */
    @FuzzTest(maxDuration = "10s")
    void variableByteIntegerDecode(final byte[] data)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(data);
        final int packed = VariableByteInteger.decode(buffer, 0, data.length);
        final long expected = referenceVbi(data);
        assertThat(packed).as("decode vs reference").isEqualTo((int)expected);
        if (packed > 0)
        {
            final int value = VariableByteInteger.value(packed);
            final int count = VariableByteInteger.byteCount(packed);
            assertThat(VariableByteInteger.encodedLength(value)).isEqualTo(count);
            final UnsafeBuffer out = new UnsafeBuffer(new byte[count]);
            assertThat(VariableByteInteger.encode(out, 0, value)).isEqualTo(count);
            assertThat(out.byteArray()).isEqualTo(Arrays.copyOf(data, count));
        }
    }

    /**
     * [MQTT-1.5.5-1] every value 0..268,435,455 encodes minimally and decodes back, from any offset.
     */
    @FuzzTest(maxDuration = "10s")
    void variableByteIntegerRoundTrip(final FuzzedDataProvider data)
    {
        final int value = data.consumeInt(0, VariableByteInteger.MAX_VALUE);
        final int offset = data.consumeInt(0, 3);
        final int length = VariableByteInteger.encodedLength(value);
        final UnsafeBuffer out = new UnsafeBuffer(new byte[offset + length]);
        assertThat(VariableByteInteger.encode(out, offset, value)).isEqualTo(length);
        final int packed = VariableByteInteger.decode(out, offset, offset + length);
        assertThat(VariableByteInteger.value(packed)).isEqualTo(value);
        assertThat(VariableByteInteger.byteCount(packed)).isEqualTo(length);
        assertThat(VariableByteInteger.decode(out, offset, offset + length - 1)).as("one byte short")
            .isEqualTo(DecodeError.NEED_MORE);
    }

    /**
     * [MQTT-1.5.4-1] [MQTT-1.5.4-2] validation agrees with the JDK's strict UTF-8 decoder plus the rule against
     * U+0000, over arbitrary bytes at any offset.
     */
    @FuzzTest(maxDuration = "10s")
    void utf8Validate(final byte[] data)
    {
        final int skip = data.length > 0 ? (data[0] & 0x03) : 0;
        final int length = Math.max(0, data.length - 1 - skip);
        final UnsafeBuffer buffer = new UnsafeBuffer(data, data.length - length, length);
        final int valid = Utf8.validate(buffer, 0, length);
        final String strict = strictUtf8(data, data.length - length, length);
        if (null == strict)
        {
            // the first fault found is reported: a U+0000 before the ill-formed bytes is reported as such
            assertThat(valid).as("ill-formed UTF-8 is refused").isIn(DecodeError.INVALID_UTF8,
                hasZeroByte(data, data.length - length, length) ? DecodeError.UTF8_NULL_CHARACTER : DecodeError.INVALID_UTF8);
        }
        else if (strict.indexOf('\0') >= 0)
        {
            assertThat(valid).as("U+0000 is refused").isEqualTo(DecodeError.UTF8_NULL_CHARACTER);
        }
        else
        {
            assertThat(valid).as("well-formed UTF-8 is accepted").isZero();
        }
    }

    /**
     * [MQTT-1.5.4-1] any Java string encodes to the JDK's bytes (an unpaired surrogate as '?'), its length is
     * predicted exactly, and the bytes validate.
     */
    @FuzzTest(maxDuration = "10s")
    void utf8RoundTrip(final FuzzedDataProvider data)
    {
        final String text = data.consumeRemainingAsString();
        final byte[] expected = text.getBytes(StandardCharsets.UTF_8);
        final int length = Utf8.encodedLength(text);
        assertThat(length).isEqualTo(expected.length);
        final UnsafeBuffer out = new UnsafeBuffer(new byte[length]);
        assertThat(Utf8.encode(out, 0, text)).isEqualTo(length);
        assertThat(out.byteArray()).isEqualTo(expected);
        assertThat(Utf8.validate(out, 0, length))
            .isEqualTo(text.indexOf('\0') >= 0 ? DecodeError.UTF8_NULL_CHARACTER : 0);
    }

    /**
     * [MQTT-2.2.2-1] [MQTT-3.3.1-4] the frame decoder returns NEED_MORE, an error or the frame's length, never more
     * than was offered nor more than the maximum; a prefix of the input gives NEED_MORE or the same verdict; the
     * verdict does not depend on where in the buffer the bytes sit.
     */
    @FuzzTest(maxDuration = "10s")
    void frameDecoder(final byte[] data)
    {
        if (data.length < 2)
        {
            return;
        }
        final int version = (data[0] & 1) == 0 ? MqttVersion.V3_1_1 : MqttVersion.V5;
        final int maxPacketLength = (data[0] & 2) == 0 ? 268_435_460 : 2 + ((data[0] & 0xFC) << 2);
        final int length = data.length - 1;
        final UnsafeBuffer buffer = new UnsafeBuffer(data, 1, length);
        final FrameDecoder frame = new FrameDecoder();
        final int result = frame.decode(buffer, 0, length, version, maxPacketLength);
        if (result > 0)
        {
            assertThat(result).isLessThanOrEqualTo(length).isLessThanOrEqualTo(maxPacketLength);
            assertThat(frame.frameLength()).isEqualTo(result);
            assertThat(frame.headerLength()).isBetween(2, 5);
            assertThat(PacketType.isDefined(frame.packetType(), version)).isTrue();
        }
        else if (result < 0)
        {
            assertThat(DecodeError.isError(result)).as("a known error: %d", result).isTrue();
        }
        for (int prefix = 0; prefix <= Math.min(length, 8); prefix++)
        {
            final int partial = frame.decode(buffer, 0, prefix, version, maxPacketLength);
            assertThat(partial).as("prefix %d of %d", prefix, length).isIn(DecodeError.NEED_MORE, result);
        }
        if (result > 0)
        {
            assertThat(frame.decode(buffer, 0, result - 1, version, maxPacketLength)).isEqualTo(DecodeError.NEED_MORE);
            assertThat(frame.decode(buffer, 0, result, version, maxPacketLength)).isEqualTo(result);
        }
        final UnsafeBuffer shifted = new UnsafeBuffer(new byte[length + 7]);
        shifted.putBytes(7, data, 1, length);
        assertThat(frame.decode(shifted, 7, length, version, maxPacketLength)).as("at an offset").isEqualTo(result);
    }

    /**
     * A property section in any context decodes to a count of bytes within its limit or an error; what decodes
     * re-encodes to a section that decodes to the same properties, as long as the original.
     */
    @FuzzTest(maxDuration = "10s")
    void properties(final byte[] data)
    {
        if (data.length < 1)
        {
            return;
        }
        final int context = PROPERTY_CONTEXTS[(data[0] & 0xFF) % PROPERTY_CONTEXTS.length];
        final int length = data.length - 1;
        final UnsafeBuffer buffer = new UnsafeBuffer(data, 1, length);
        final MqttProperties properties = new MqttProperties();
        final int consumed = properties.decode(buffer, 0, length, context);
        if (consumed < 0)
        {
            assertThat(DecodeError.isError(consumed)).as("a known error: %d", consumed).isTrue();
            return;
        }
        assertThat(consumed).isBetween(1, length);
        final int sectionLength = properties.sectionLength();
        final UnsafeBuffer out = new UnsafeBuffer(new byte[sectionLength]);
        assertThat(properties.encode(out, 0)).isEqualTo(sectionLength);
        final MqttProperties again = new MqttProperties();
        assertThat(again.decode(out, 0, sectionLength, context)).isEqualTo(sectionLength);
        assertThat(again.toString()).isEqualTo(properties.toString());
        assertThat(sectionLength).as("a minimal section re-encodes to its own length").isEqualTo(consumed);
    }

    /**
     * @return what {@link VariableByteInteger#decode} should return for these bytes, worked out the naive way.
     */
    static long referenceVbi(final byte[] data)
    {
        long value = 0;
        for (int i = 0; i < 4; i++)
        {
            if (i >= data.length)
            {
                return DecodeError.NEED_MORE;
            }
            final int b = data[i] & 0xFF;
            value += (long)(b & 0x7F) * (1L << (7 * i));
            if (b < 0x80)
            {
                if (i > 0 && b == 0)
                {
                    return DecodeError.NON_MINIMAL_VARIABLE_BYTE_INTEGER;
                }
                return value * 8 + i + 1;
            }
        }
        return DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER;
    }

    private static boolean hasZeroByte(final byte[] data, final int offset, final int length)
    {
        for (int i = offset; i < offset + length; i++)
        {
            if (data[i] == 0)
            {
                return true;
            }
        }
        return false;
    }

    /**
     * @return the string when the bytes are well-formed UTF-8 to the JDK's strict decoder, else null.
     */
    static String strictUtf8(final byte[] data, final int offset, final int length)
    {
        try
        {
            return StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(data, offset, length))
                .toString();
        }
        catch (final CharacterCodingException ex)
        {
            return null;
        }
    }
}
