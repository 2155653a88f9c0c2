package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;

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

    @net.jqwik.api.Property(tries = 3000)
    void theWordAtATimeNameCheckAgreesWithTheByteByByteOne(
        @net.jqwik.api.ForAll("nameBytes") final byte[] bytes)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(bytes);
        int expected = Utf8.validate(buffer, 0, bytes.length);
        if (expected == 0)
        {
            expected = Topics.validateName(buffer, 0, bytes.length);
        }
        assertThat(Topics.validateNameUtf8(buffer, 0, bytes.length) == 0).isEqualTo(expected == 0);
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<byte[]> nameBytes()
    {
        final net.jqwik.api.Arbitrary<Byte> ascii = net.jqwik.api.Arbitraries.bytes().between((byte)0x20, (byte)0x7E);
        final net.jqwik.api.Arbitrary<Byte> special = net.jqwik.api.Arbitraries.of(
            (byte)'+', (byte)'#', (byte)0, (byte)0xC3, (byte)0xA9, (byte)0xED, (byte)0xA0, (byte)0x80, (byte)'/');
        return net.jqwik.api.Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(30, ascii), net.jqwik.api.Tuple.of(1, special))
            .array(byte[].class).ofMaxSize(40);
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
