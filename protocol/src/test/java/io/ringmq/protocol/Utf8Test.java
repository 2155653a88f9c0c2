package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class Utf8Test
{
    @ParameterizedTest
    @ValueSource(strings = {"", "a/b/c", "\u00e9t\u00e9", "\u6c34", "\ud83d\ude00 emoji", "\uffff", "\u007f"})
    void wellFormedStringsAreAccepted(final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        assertThat(Utf8.validate(new UnsafeBuffer(bytes), 0, bytes.length)).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "C0 80",       // overlong NUL
        "C1 BF",       // overlong
        "E0 80 80",    // overlong three-byte
        "F0 80 80 80", // overlong four-byte
        "F4 90 80 80", // above U+10FFFF
        "F5 80 80 80", // invalid lead
        "80",          // lone continuation
        "C3",          // truncated two-byte
        "E6 B0",       // truncated three-byte
        "E6 41 B4",    // bad continuation
        "FF"})
    @DisplayName("MQTT-1.5.4-1: ill-formed UTF-8 is malformed")
    void illFormedIsRejected(final String hex)
    {
        final UnsafeBuffer buffer = Bytes.buffer(hex);
        assertThat(Utf8.validate(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.INVALID_UTF8);
    }

    @ParameterizedTest
    @ValueSource(strings = {"ED A0 80", "ED BF BF", "ED B0 80"})
    @DisplayName("MQTT-1.5.4-1: encoded surrogates U+D800..U+DFFF are malformed")
    void surrogatesAreRejected(final String hex)
    {
        final UnsafeBuffer buffer = Bytes.buffer(hex);
        assertThat(Utf8.validate(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.INVALID_UTF8);
    }

    @Test
    @DisplayName("MQTT-1.5.4-2: U+0000 is rejected")
    void nullCharacterIsRejected()
    {
        final UnsafeBuffer buffer = Bytes.buffer("61 00 62");
        assertThat(Utf8.validate(buffer, 0, 3)).isEqualTo(DecodeError.UTF8_NULL_CHARACTER);
    }

    @Test
    @DisplayName("MQTT-1.5.4-3: a byte order mark is data, accepted and kept")
    void byteOrderMarkIsKept()
    {
        final UnsafeBuffer buffer = Bytes.buffer("EF BB BF 61");
        assertThat(Utf8.validate(buffer, 0, 4)).isZero();
        assertThat(buffer.getStringWithoutLengthUtf8(0, 4)).isEqualTo("\ufeffa");
    }

    @Test
    void encodingMatchesTheJdk()
    {
        SeededCases.run(0x5EED_0401L, 1000, random ->
        {
            final String text = wellFormed(random);
            final byte[] expected = text.getBytes(StandardCharsets.UTF_8);
            final UnsafeBuffer buffer = new UnsafeBuffer(new byte[expected.length + 8]);
            assertThat(Utf8.encodedLength(text)).as(text).isEqualTo(expected.length);
            assertThat(Utf8.encode(buffer, 0, text)).as(text).isEqualTo(expected.length);
            assertThat(Bytes.copy(buffer, expected.length)).as(text).isEqualTo(expected);
            assertThat(Utf8.validate(buffer, 0, expected.length)).as(text).isZero();
        });
    }

    @Test
    void validationAgreesWithAStrictJdkDecoder()
    {
        SeededCases.run(0x5EED_0501L, 2000, random ->
        {
            final byte[] bytes = SeededCases.bytes(random, 12, 1, 1, (byte)0x00, (byte)0x41, (byte)0x80, (byte)0xBF,
                (byte)0xC2, (byte)0xE0, (byte)0xED, (byte)0xA0, (byte)0xF0, (byte)0xF4, (byte)0x90, (byte)0xFF);
            final boolean valid = Utf8.validate(new UnsafeBuffer(bytes), 0, bytes.length) == 0;
            assertThat(valid).as(() -> HexFormat.of().formatHex(bytes)).isEqualTo(referenceValid(bytes));
        });
    }

    /**
     * Up to 40 characters from U+0001..U+D7FF and U+E000..U+FFFF, spread over the one-, two- and three-byte
     * encodings (the edges of each included), then an emoji so that every string holds a surrogate pair too.
     */
    private static String wellFormed(final SplittableRandom random)
    {
        final int[][] ranges = {{0x0001, 0x007F}, {0x0080, 0x07FF}, {0x0800, 0xD7FF}, {0xE000, 0xFFFF}};
        final StringBuilder text = new StringBuilder();
        final int length = SeededCases.length(random, 40);
        for (int i = 0; i < length; i++)
        {
            final int[] range = ranges[random.nextInt(ranges.length)];
            final int edge = random.nextInt(8);
            text.append((char)(edge == 0 ? range[0] : edge == 1 ? range[1] : random.nextInt(range[0], range[1] + 1)));
        }
        return text.append("\ud83d\ude00").toString();
    }

    private static boolean referenceValid(final byte[] bytes)
    {
        try
        {
            final String decoded = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT)
                .decode(ByteBuffer.wrap(bytes))
                .toString();
            return decoded.indexOf('\u0000') < 0;
        }
        catch (final CharacterCodingException ex)
        {
            return false;
        }
    }
}
