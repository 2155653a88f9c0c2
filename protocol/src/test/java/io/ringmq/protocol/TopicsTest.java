package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class TopicsTest
{
    @ParameterizedTest
    @ValueSource(strings = {"a", "/", "a/b/c", "/a/", "$SYS/broker", "sport/tennis/player1", " ", "a//b"})
    void validNames(final String name)
    {
        assertThat(name(name)).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"a/+", "#", "a/#", "+", "a+b", "a#"})
    @DisplayName("MQTT-3.3.2-2: a topic name has no wildcard characters")
    void wildcardsInNames(final String name)
    {
        assertThat(name(name)).isEqualTo(DecodeError.TOPIC_NAME_WILDCARD);
        assertThat(DecodeError.reasonCode(name(name))).isEqualTo(ReasonCode.TOPIC_NAME_INVALID);
    }

    @org.junit.jupiter.api.Test
    @DisplayName("MQTT-4.7.3-1: topic names and filters are at least one character long")
    void emptyIsInvalid()
    {
        assertThat(name("")).isEqualTo(DecodeError.TOPIC_NAME_EMPTY);
        assertThat(filter("", MqttVersion.V3_1_1)).isEqualTo(DecodeError.TOPIC_FILTER_EMPTY);
        assertThat(filter("", MqttVersion.V5)).isEqualTo(DecodeError.TOPIC_FILTER_EMPTY);
    }

    @ParameterizedTest
    @ValueSource(strings = {"#", "a/#", "+", "+/+", "/+", "+/", "a/+/b", "+/tennis/#", "sport/+", "/", "//", "$SYS/#",
        "$share"})
    void validFilters(final String filter)
    {
        assertThat(filter(filter, MqttVersion.V3_1_1)).isZero();
        assertThat(filter(filter, MqttVersion.V5)).isZero();
    }

    @ParameterizedTest
    @ValueSource(strings = {"a#", "a/#/b", "#/", "##", "a/b#", "#a"})
    @DisplayName("MQTT-4.7.1-2: '#' stands alone as the last level")
    void misplacedHash(final String filter)
    {
        assertThat(filter(filter, MqttVersion.V3_1_1)).isEqualTo(DecodeError.TOPIC_FILTER_HASH_MISPLACED);
        assertThat(DecodeError.reasonCode(filter(filter, MqttVersion.V5))).isEqualTo(ReasonCode.TOPIC_FILTER_INVALID);
    }

    @ParameterizedTest
    @ValueSource(strings = {"a+", "+a", "a/b+/c", "++", "sport+"})
    @DisplayName("MQTT-4.7.1-3: '+' occupies a whole level")
    void misplacedPlus(final String filter)
    {
        assertThat(filter(filter, MqttVersion.V3_1_1)).isEqualTo(DecodeError.TOPIC_FILTER_PLUS_MISPLACED);
    }

    @ParameterizedTest
    @ValueSource(strings = {"$share/g/a", "$share/group/#", "$share/g/+/x", "$share/g//"})
    void validSharedFilters(final String filter)
    {
        assertThat(filter(filter, MqttVersion.V5)).isZero();
        assertThat(Topics.isShared(buffer(filter), 0, filter.length())).isTrue();
    }

    @ParameterizedTest
    @ValueSource(strings = {"$share/", "$share//a", "$share/g", "$share/g/", "$share/g+/a", "$share/#/a"})
    @DisplayName("MQTT 5.0 4.8.2: a shared filter is $share/{ShareName}/{filter} with a plain ShareName")
    void invalidSharedFilters(final String filter)
    {
        assertThat(filter(filter, MqttVersion.V5)).isEqualTo(DecodeError.SHARED_FILTER_INVALID);
    }

    @org.junit.jupiter.api.Test
    void sharedPrefixIsAnOrdinaryFilterIn311()
    {
        assertThat(filter("$share/g/a", MqttVersion.V3_1_1)).isZero();
        assertThat(filter("$share/g", MqttVersion.V3_1_1)).isZero();
    }

    @org.junit.jupiter.api.Test
    void theWordAtATimeNameCheckAgreesWithTheByteByByteOne()
    {
        SeededCases.run(0x5EED_0301L, 3000, random ->
        {
            final byte[] bytes = nameBytes(random);
            final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
            int expected = Utf8.validate(buffer, 0, bytes.length);
            if (expected == 0)
            {
                expected = Topics.validateName(buffer, 0, bytes.length);
            }
            assertThat(Topics.validateNameUtf8(buffer, 0, bytes.length) == 0)
                .as(() -> HexFormat.of().formatHex(bytes)).isEqualTo(expected == 0);
        });
    }

    @org.junit.jupiter.api.Test
    void aWildcardNulOrNonAsciiByteInTheLastWordIsFoundWhereverItStands()
    {
        // names of 8 to 17 bytes: the last word overlaps the words before it by 0 to 7 bytes
        final byte[] special = {(byte)'+', (byte)'#', (byte)0, (byte)0xC3, (byte)0x80};
        for (int length = 1; length <= 17; length++)
        {
            for (int at = 0; at < length; at++)
            {
                for (final byte b : special)
                {
                    final byte[] bytes = new byte[length];
                    java.util.Arrays.fill(bytes, (byte)'a');
                    bytes[at] = b;
                    final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
                    assertThat(Topics.validateNameUtf8(buffer, 0, length))
                        .as(() -> HexFormat.of().formatHex(bytes)).isNegative();
                }
            }
            final byte[] plain = new byte[length];
            java.util.Arrays.fill(plain, (byte)'a');
            assertThat(Topics.validateNameUtf8(new UnsafeBuffer(plain), 0, length)).isZero();
        }
    }

    /**
     * Up to 40 bytes of printable ASCII, one in 31 replaced by a wildcard, a separator, NUL or a piece of a
     * multi-byte sequence (well formed, or an encoded surrogate, or cut short).
     */
    private static byte[] nameBytes(final SplittableRandom random)
    {
        final byte[] special = {(byte)'+', (byte)'#', (byte)0, (byte)0xC3, (byte)0xA9, (byte)0xED, (byte)0xA0,
            (byte)0x80, (byte)'/'};
        final byte[] bytes = new byte[SeededCases.length(random, 40)];
        for (int i = 0; i < bytes.length; i++)
        {
            bytes[i] = random.nextInt(31) == 0 ? special[random.nextInt(special.length)] :
                (byte)(0x20 + random.nextInt(0x7E - 0x20 + 1));
        }
        return bytes;
    }

    private static int name(final String name)
    {
        return Topics.validateName(buffer(name), 0, name.getBytes(StandardCharsets.UTF_8).length);
    }

    private static int filter(final String filter, final int version)
    {
        return Topics.validateFilter(buffer(filter), 0, filter.getBytes(StandardCharsets.UTF_8).length, version);
    }

    private static UnsafeBuffer buffer(final String text)
    {
        return new UnsafeBuffer(text.getBytes(StandardCharsets.UTF_8));
    }
}
