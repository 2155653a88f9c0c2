package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;

class PropertiesTest
{
    private final MqttProperties properties = new MqttProperties();

    @ParameterizedTest(name = "{0}: {1}")
    @CsvSource({
        "an unknown identifier is malformed, 00, UNKNOWN_PROPERTY",
        "0x2B is past the last identifier, 2B 00, UNKNOWN_PROPERTY",
        "Payload Format Indicator 2, 01 02, INVALID_PROPERTY_VALUE",
        "duplicate Content Type, 03 0000 03 0000, DUPLICATE_PROPERTY",
        "Topic Alias 0 is its own error (answered with 0x94), 23 0000, TOPIC_ALIAS_ZERO",
        "Subscription Identifier 0, 0B 00, INVALID_PROPERTY_VALUE",
        "a non-minimal Subscription Identifier, 0B 8000, NON_MINIMAL_VARIABLE_BYTE_INTEGER",
        "a truncated four-byte integer, 02 0000, FIELD_OVERRUNS_PACKET",
        "a truncated string, 03 0005 6162, FIELD_OVERRUNS_PACKET",
        "a surrogate in a Content Type, 03 0003 EDA080, INVALID_UTF8",
        "a user property missing its value, 26 0001 61, FIELD_OVERRUNS_PACKET",
        "Session Expiry Interval is not for PUBLISH, 11 00000001, PROPERTY_NOT_ALLOWED"})
    void rejectsInPublish(final String why, final String hex, final String error) throws Exception
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props(hex));
        final int expected = DecodeError.class.getField(error).getInt(null);
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PacketType.PUBLISH)).as(why).isEqualTo(expected);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "Receive Maximum 0, 21 0000",
        "Maximum Packet Size 0, 27 00000000",
        "Request Problem Information 2, 17 02",
        "Request Response Information 2, 19 02"})
    @DisplayName("MQTT 5.0 3.1.2.11: out-of-range CONNECT properties are protocol errors")
    void rejectsOutOfRangeConnectValues(final String why, final String hex)
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props(hex));
        final int result = properties.decode(buffer, 0, buffer.capacity(), PacketType.CONNECT);
        assertThat(result).as(why).isEqualTo(DecodeError.INVALID_PROPERTY_VALUE);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    @DisplayName("MQTT-3.3.2-8: Topic Alias 0 decodes to an error answered with Topic Alias invalid (0x94)")
    void topicAliasZeroIsTopicAliasInvalid()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props("23 0000"));
        final int result = properties.decode(buffer, 0, buffer.capacity(), PacketType.PUBLISH);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.TOPIC_ALIAS_INVALID);
    }

    @Test
    @DisplayName("remove drops one property and keeps the others, user properties in their order")
    void removeKeepsTheRest()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props("23 0007", "26", Bytes.str("a"), Bytes.str("1"), "26",
            Bytes.str("b"), Bytes.str("2"), "02 0000003C"));
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PacketType.PUBLISH)).isEqualTo(buffer.capacity());
        final MqttProperties copy = new MqttProperties().copyFrom(properties).remove(PropertyId.TOPIC_ALIAS);
        assertThat(copy.has(PropertyId.TOPIC_ALIAS)).isFalse();
        assertThat(copy.longValue(PropertyId.MESSAGE_EXPIRY_INTERVAL, 0)).isEqualTo(60);
        assertThat(copy.userPropertyCount()).isEqualTo(2);
        assertThat(copy.userPropertyKey(0).asString()).isEqualTo("a");
        assertThat(copy.userPropertyValue(1).asString()).isEqualTo("2");
        assertThat(copy.length()).isEqualTo(properties.length() - 3);
        assertThat(copy.remove(PropertyId.USER_PROPERTY).userPropertyCount()).isZero();
        assertThat(copy.has(PropertyId.USER_PROPERTY)).isFalse();
    }

    @Test
    @DisplayName("MQTT 5.0 3.1.2.11.10: Authentication Data without an Authentication Method is a protocol error")
    void authenticationDataNeedsAMethod()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props("16 0001 FF"));
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PacketType.CONNECT))
            .isEqualTo(DecodeError.INVALID_PROPERTY_VALUE);
        final UnsafeBuffer both = Bytes.buffer(Bytes.props("15", Bytes.str("m"), "16 0001 FF"));
        assertThat(properties.decode(both, 0, both.capacity(), PacketType.AUTH)).isEqualTo(both.capacity());
    }

    @Test
    void aLengthPastTheLimitOverruns()
    {
        final UnsafeBuffer buffer = Bytes.buffer("05 01 01");
        assertThat(properties.decode(buffer, 0, 3, PacketType.PUBLISH)).isEqualTo(DecodeError.FIELD_OVERRUNS_PACKET);
    }

    @Test
    void willPropertiesHaveTheirOwnContext()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props("18 0000003C"));
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PropertyId.WILL_CONTEXT)).isEqualTo(6);
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PacketType.PUBLISH))
            .isEqualTo(DecodeError.PROPERTY_NOT_ALLOWED);
    }

    @Test
    void fourByteIntegersAreUnsigned()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.props("02 FFFFFFFF"));
        assertThat(properties.decode(buffer, 0, buffer.capacity(), PacketType.PUBLISH)).isEqualTo(6);
        assertThat(properties.longValue(PropertyId.MESSAGE_EXPIRY_INTERVAL, 0)).isEqualTo(0xFFFF_FFFFL);
    }

    @Test
    void encodesInAscendingIdentifierOrder()
    {
        properties.clear()
            .addUserProperty("k", "v")
            .set(PropertyId.CONTENT_TYPE, "t")
            .setInt(PropertyId.PAYLOAD_FORMAT_INDICATOR, 1)
            .setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 300);
        final UnsafeBuffer out = new UnsafeBuffer(new byte[properties.sectionLength()]);
        assertThat(properties.encode(out, 0)).isEqualTo(out.capacity());
        assertThat(Bytes.hexOf(out.byteArray()))
            .isEqualTo(Bytes.props("0101", "03", Bytes.str("t"), "0B AC02", "26", Bytes.str("k"), Bytes.str("v")));
    }

    @Test
    void theAllowedTableFollowsTheSpecification()
    {
        assertThat(PropertyId.isAllowed(PacketType.CONNECT, PropertyId.SESSION_EXPIRY_INTERVAL)).isTrue();
        assertThat(PropertyId.isAllowed(PacketType.PUBLISH, PropertyId.SESSION_EXPIRY_INTERVAL)).isFalse();
        assertThat(PropertyId.isAllowed(PacketType.UNSUBSCRIBE, PropertyId.SUBSCRIPTION_IDENTIFIER)).isFalse();
        assertThat(PropertyId.isAllowed(PacketType.AUTH, PropertyId.AUTHENTICATION_DATA)).isTrue();
        for (int type = PacketType.CONNECT; type <= PacketType.AUTH; type++)
        {
            final boolean carriesProperties = type != PacketType.PINGREQ && type != PacketType.PINGRESP;
            assertThat(PropertyId.isAllowed(type, PropertyId.USER_PROPERTY)).as(PacketType.name(type))
                .isEqualTo(carriesProperties);
        }
    }
}
