package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class PublishTest
{
    private final PublishFlyweight publish = new PublishFlyweight();

    @Test
    void decodesQos0Without311PacketId()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("31", Bytes.str("a/b") + "6869"));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(9);
        assertThat(publish.qos()).isZero();
        assertThat(publish.isRetain()).isTrue();
        assertThat(publish.isDup()).isFalse();
        assertThat(publish.packetId()).isZero();
        assertThat(publish.topic().asString()).isEqualTo("a/b");
        assertThat(publish.payload().asString()).isEqualTo("hi");
    }

    @Test
    void decodesQos2WithPacketIdAndMqtt5Properties()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("3C", Bytes.str("a/b") + "0102" +
            Bytes.props("01 01 0B 05 0B 81 01") + "7878"));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5)).isEqualTo(buffer.capacity());
        assertThat(publish.qos()).isEqualTo(2);
        assertThat(publish.isDup()).isTrue();
        assertThat(publish.packetId()).isEqualTo(0x0102);
        assertThat(publish.properties().intValue(PropertyId.PAYLOAD_FORMAT_INDICATOR, 0)).isEqualTo(1);
        assertThat(publish.properties().subscriptionIdentifierCount()).isEqualTo(2);
        assertThat(publish.properties().subscriptionIdentifier(0)).isEqualTo(5);
        assertThat(publish.properties().subscriptionIdentifier(1)).isEqualTo(129);
        assertThat(publish.payload().asString()).isEqualTo("xx");
        assertThat(publish.propertiesLength()).isEqualTo(8);
    }

    @Test
    void anEmptyPayloadIsAllowed()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a")));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(5);
        assertThat(publish.payload().length()).isZero();
    }

    @Test
    @DisplayName("MQTT-2.3.1-1: a QoS 1 PUBLISH with packet identifier 0 is refused")
    void packetIdZero()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("32", Bytes.str("a") + "0000"));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.PACKET_ID_ZERO);
    }

    @Test
    @DisplayName("MQTT-3.3.1-2: DUP must be 0 at QoS 0")
    void dupAtQos0()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("38", Bytes.str("a")));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.DUP_WITH_QOS_0);
    }

    @Test
    @DisplayName("MQTT-3.3.1-4: QoS 3 is malformed")
    void qos3()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("36", Bytes.str("a") + "0001"));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.INVALID_QOS);
    }

    @Test
    @DisplayName("MQTT-3.3.2-2: a topic name with a wildcard is refused with 0x90")
    void wildcardTopic()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a/+")));
        final int result = publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5 - 1);
        assertThat(result).isEqualTo(DecodeError.TOPIC_NAME_WILDCARD);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.TOPIC_NAME_INVALID);
    }

    @Test
    @DisplayName("MQTT-4.7.3-1: an empty topic is refused, unless a 5.0 Topic Alias stands for it")
    void emptyTopic()
    {
        final UnsafeBuffer v3 = Bytes.buffer("30 02 0000");
        assertThat(publish.wrap(v3, 0, v3.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.TOPIC_NAME_EMPTY);
        final UnsafeBuffer v5NoAlias = Bytes.buffer("30 03 0000 00");
        assertThat(publish.wrap(v5NoAlias, 0, v5NoAlias.capacity(), MqttVersion.V5))
            .isEqualTo(DecodeError.TOPIC_NAME_EMPTY);
        final UnsafeBuffer v5Alias = Bytes.buffer("30 06 0000 03 23 0007");
        assertThat(publish.wrap(v5Alias, 0, v5Alias.capacity(), MqttVersion.V5)).isEqualTo(v5Alias.capacity());
        assertThat(publish.properties().intValue(PropertyId.TOPIC_ALIAS, 0)).isEqualTo(7);
    }

    @Test
    @DisplayName("MQTT-3.3.2-8: Topic Alias 0 is refused, to be answered with Topic Alias invalid (0x94)")
    void topicAliasZeroIsTopicAliasInvalid()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a") + "03 23 0000"));
        final int result = publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5);
        assertThat(result).isEqualTo(DecodeError.TOPIC_ALIAS_ZERO);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.TOPIC_ALIAS_INVALID);
    }

    @Test
    @DisplayName("MQTT-3.3.2-14: a Response Topic with a wildcard is refused")
    void responseTopicWildcard()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a"), Bytes.props("08", Bytes.str("r/#"))));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5))
            .isEqualTo(DecodeError.INVALID_PROPERTY_VALUE);
    }

    @Test
    void duplicatePropertiesAreAProtocolError()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a") + "04 01 00 01 01"));
        final int result = publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5);
        assertThat(result).isEqualTo(DecodeError.DUPLICATE_PROPERTY);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    void repeatedUserPropertiesAreKeptInOrder()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("30", Bytes.str("a"), Bytes.props("26", Bytes.str("k"), Bytes.str("1"),
            "26", Bytes.str("k"), Bytes.str("2"), "26", Bytes.str(""), Bytes.str(""))));
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5)).isEqualTo(buffer.capacity());
        final MqttProperties properties = publish.properties();
        assertThat(properties.userPropertyCount()).isEqualTo(3);
        assertThat(properties.userPropertyValue(0).asString()).isEqualTo("1");
        assertThat(properties.userPropertyValue(1).asString()).isEqualTo("2");
        assertThat(properties.userPropertyKey(2).length()).isZero();
    }

    @Test
    void encoderPatchesPacketIdAndDupInPlace()
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(1).topic("t").payload(new byte[]{7});
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        PublishEncoder.putPacketId(buffer, encoder.packetIdOffset(), 0xBEEF);
        PublishEncoder.putDup(buffer, 0, true);
        assertThat(Bytes.hexOf(buffer.byteArray())).isEqualTo("3A06" + Bytes.str("t") + "BEEF07");
        assertThat(publish.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(buffer.capacity());
        assertThat(publish.packetId()).isEqualTo(0xBEEF);
        assertThat(publish.isDup()).isTrue();
    }
}
