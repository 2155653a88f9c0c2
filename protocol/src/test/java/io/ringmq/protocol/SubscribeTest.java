package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SubscribeTest
{
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final SubackFlyweight suback = new SubackFlyweight();

    @Test
    void decodesFiltersAndQos311()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "000A", Bytes.str("a/b"), "01",
            Bytes.str("c/#"), "02"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(buffer.capacity());
        assertThat(subscribe.packetId()).isEqualTo(10);
        assertThat(subscribe.filters().count()).isEqualTo(2);
        assertThat(subscribe.filters().filter(1).asString()).isEqualTo("c/#");
        assertThat(SubscriptionOptions.qos(subscribe.filters().options(0))).isEqualTo(1);
        assertThat(SubscriptionOptions.qos(subscribe.filters().options(1))).isEqualTo(2);
    }

    @Test
    void decodesMqtt5OptionsAndSubscriptionIdentifier()
    {
        final int options = SubscriptionOptions.of(1, true, true, SubscriptionOptions.DO_NOT_SEND_RETAINED);
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001", Bytes.props("0B 2A"), Bytes.str("x"),
            String.format("%02X", options)));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5)).isEqualTo(buffer.capacity());
        final int decoded = subscribe.filters().options(0);
        assertThat(SubscriptionOptions.noLocal(decoded)).isTrue();
        assertThat(SubscriptionOptions.retainAsPublished(decoded)).isTrue();
        assertThat(SubscriptionOptions.retainHandling(decoded)).isEqualTo(2);
        assertThat(subscribe.properties().subscriptionIdentifier(0)).isEqualTo(42);
    }

    @Test
    @DisplayName("MQTT-3.8.1-1: SUBSCRIBE's fixed header flags are 0010")
    void subscribeFlags()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("80", "0001", Bytes.str("a"), "00"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.INVALID_FIXED_HEADER_FLAGS);
    }

    @Test
    @DisplayName("MQTT-3.8.3-3: a SUBSCRIBE without any filter is a protocol violation")
    void emptySubscribe()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.SUBSCRIBE_EMPTY);
        final UnsafeBuffer v5 = Bytes.buffer(Bytes.packet("82", "0001 00"));
        assertThat(subscribe.wrap(v5, 0, v5.capacity(), MqttVersion.V5)).isEqualTo(DecodeError.SUBSCRIBE_EMPTY);
    }

    @Test
    @DisplayName("MQTT-3.10.3-2: an UNSUBSCRIBE without any filter is a protocol violation")
    void emptyUnsubscribe()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("A2", "0001"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.UNSUBSCRIBE_EMPTY);
    }

    @Test
    @DisplayName("MQTT-3.8.3-4: reserved bits of the 3.1.1 requested QoS byte are malformed")
    void reservedOptionBits311()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001", Bytes.str("a"), "04"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.SUBSCRIPTION_OPTIONS_RESERVED);
        final UnsafeBuffer qos3 = Bytes.buffer(Bytes.packet("82", "0001", Bytes.str("a"), "03"));
        assertThat(subscribe.wrap(qos3, 0, qos3.capacity(), MqttVersion.V3_1_1)).isEqualTo(DecodeError.INVALID_QOS);
    }

    @Test
    @DisplayName("MQTT 5.0 MQTT-3.8.3-5: reserved subscription option bits 6 and 7 are malformed")
    void reservedOptionBits5()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001 00", Bytes.str("a"), "40"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5))
            .isEqualTo(DecodeError.SUBSCRIPTION_OPTIONS_RESERVED);
        final UnsafeBuffer retainHandling3 = Bytes.buffer(Bytes.packet("82", "0001 00", Bytes.str("a"), "30"));
        assertThat(subscribe.wrap(retainHandling3, 0, retainHandling3.capacity(), MqttVersion.V5))
            .isEqualTo(DecodeError.RETAIN_HANDLING_INVALID);
    }

    @Test
    @DisplayName("MQTT 5.0 MQTT-3.8.3-4: No Local on a shared subscription is a protocol error")
    void noLocalOnShared()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001 00", Bytes.str("$share/g/a"), "04"));
        final int result = subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5);
        assertThat(result).isEqualTo(DecodeError.NO_LOCAL_ON_SHARED);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.PROTOCOL_ERROR);
    }

    @Test
    @DisplayName("MQTT-4.7.1-2: a misplaced '#' in SUBSCRIBE answers 0x8F")
    void invalidFilter()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001 00", Bytes.str("a/#/b"), "00"));
        final int result = subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5);
        assertThat(DecodeError.reasonCode(result)).isEqualTo(ReasonCode.TOPIC_FILTER_INVALID);
    }

    @Test
    void aSubscriptionIdentifierMayNotRepeatInSubscribe()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001", Bytes.props("0B 01 0B 02"),
            Bytes.str("a"), "00"));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5)).isEqualTo(DecodeError.DUPLICATE_PROPERTY);
    }

    @Test
    void aMissingOptionsByteOverrunsThePacket()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("82", "0001", Bytes.str("a")));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.FIELD_OVERRUNS_PACKET);
    }

    @Test
    void unsubscribeRoundTrip()
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).packetId(3);
        encoder.filters().add("a/+", 0).add("#", 0);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        assertThat(Bytes.hexOf(buffer.byteArray())).isEqualTo(Bytes.packet("A2", "0003", Bytes.str("a/+"),
            Bytes.str("#")));
        assertThat(subscribe.wrap(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1)).isEqualTo(buffer.capacity());
        assertThat(subscribe.packetType()).isEqualTo(PacketType.UNSUBSCRIBE);
        assertThat(subscribe.filters().count()).isEqualTo(2);
    }

    @Test
    void subackCodes311()
    {
        final UnsafeBuffer buffer = Bytes.buffer("90 05 00 0A 00 02 80");
        assertThat(suback.wrap(buffer, 0, 7, MqttVersion.V3_1_1)).isEqualTo(7);
        assertThat(suback.reasonCodeCount()).isEqualTo(3);
        assertThat(suback.reasonCode(2)).isEqualTo(ReasonCode.V3_SUBACK_FAILURE);
        final UnsafeBuffer bad = Bytes.buffer("90 03 00 0A 03");
        assertThat(suback.wrap(bad, 0, 5, MqttVersion.V3_1_1)).isEqualTo(DecodeError.INVALID_REASON_CODE);
        final UnsafeBuffer none = Bytes.buffer("90 02 00 0A");
        assertThat(suback.wrap(none, 0, 4, MqttVersion.V3_1_1)).isEqualTo(DecodeError.REASON_CODES_EMPTY);
    }

    @Test
    void unsuback311IsFourBytesAnd5CarriesCodes()
    {
        final UnsafeBuffer out = new UnsafeBuffer(new byte[16]);
        final int[] codes = {ReasonCode.SUCCESS, ReasonCode.NO_SUBSCRIPTION_EXISTED};
        assertThat(SubackEncoder.encode(out, 0, PacketType.UNSUBACK, MqttVersion.V3_1_1, 9, null, codes, 2))
            .isEqualTo(4);
        assertThat(suback.wrap(out, 0, 4, MqttVersion.V3_1_1)).isEqualTo(4);
        assertThat(suback.reasonCodeCount()).isZero();
        final int length = SubackEncoder.encode(out, 0, PacketType.UNSUBACK, MqttVersion.V5, 9, null, codes, 2);
        assertThat(Bytes.hexOf(Bytes.copy(out, length))).isEqualTo("B00500090000" + "11");
        assertThat(suback.wrap(out, 0, length, MqttVersion.V5)).isEqualTo(length);
        assertThat(suback.reasonCode(1)).isEqualTo(ReasonCode.NO_SUBSCRIPTION_EXISTED);
    }
}
