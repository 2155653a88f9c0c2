package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

class AckTest
{
    private final AckFlyweight ack = new AckFlyweight();
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[64]);

    @ParameterizedTest
    @ValueSource(ints = {PacketType.PUBACK, PacketType.PUBREC, PacketType.PUBREL, PacketType.PUBCOMP})
    void everyAckIsFourBytesIn311(final int type)
    {
        final int length = AckEncoder.encode(out, 0, type, 0x1234);
        assertThat(length).isEqualTo(4);
        final String first = String.format("%X%X", type, PacketType.requiredFlags(type));
        assertThat(Bytes.hexOf(Bytes.copy(out, 4))).isEqualTo(first + "021234");
        assertThat(ack.wrap(out, 0, length, MqttVersion.V3_1_1)).isEqualTo(4);
        assertThat(ack.packetType()).isEqualTo(type);
        assertThat(ack.packetId()).isEqualTo(0x1234);
        assertThat(ack.reasonCode()).isZero();
    }

    @Test
    @DisplayName("MQTT-3.6.1-1: PUBREL's fixed header flags are 0010")
    void pubrelFlags()
    {
        final UnsafeBuffer wrong = Bytes.buffer("60 02 00 01");
        assertThat(ack.wrap(wrong, 0, 4, MqttVersion.V3_1_1)).isEqualTo(DecodeError.INVALID_FIXED_HEADER_FLAGS);
    }

    @Test
    void mqtt5ShortFormsMeanSuccessWithoutProperties()
    {
        final UnsafeBuffer two = Bytes.buffer("40 02 00 07");
        assertThat(ack.wrap(two, 0, 4, MqttVersion.V5)).isEqualTo(4);
        assertThat(ack.reasonCode()).isZero();
        final UnsafeBuffer three = Bytes.buffer("40 03 00 07 10");
        assertThat(ack.wrap(three, 0, 5, MqttVersion.V5)).isEqualTo(5);
        assertThat(ack.reasonCode()).isEqualTo(ReasonCode.NO_MATCHING_SUBSCRIBERS);
        assertThat(ack.properties().isEmpty()).isTrue();
    }

    @Test
    void mqtt5ReasonStringAndUserProperty()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("50", "0009 87",
            Bytes.props("1F", Bytes.str("no"), "26", Bytes.str("a"), Bytes.str("b"))));
        assertThat(ack.wrap(buffer, 0, buffer.capacity(), MqttVersion.V5)).isEqualTo(buffer.capacity());
        assertThat(ack.packetType()).isEqualTo(PacketType.PUBREC);
        assertThat(ack.reasonCode()).isEqualTo(ReasonCode.NOT_AUTHORIZED);
        assertThat(ack.properties().slice(PropertyId.REASON_STRING).asString()).isEqualTo("no");
        assertThat(ack.properties().userPropertyKey(0).asString()).isEqualTo("a");
    }

    @Test
    void shortestFormIsEncoded()
    {
        assertThat(AckEncoder.encode(out, 0, PacketType.PUBACK, 1, MqttVersion.V5, 0, new MqttProperties()))
            .isEqualTo(4);
        assertThat(AckEncoder.encode(out, 0, PacketType.PUBACK, 1, MqttVersion.V5, 0x10, null)).isEqualTo(5);
        final MqttProperties properties = new MqttProperties().set(PropertyId.REASON_STRING, "x");
        final int length = AckEncoder.encode(out, 0, PacketType.PUBCOMP, 1, MqttVersion.V5, 0x92, properties);
        assertThat(Bytes.hexOf(Bytes.copy(out, length))).isEqualTo("70080001920" + "41F00017" + "8");
    }

    @Test
    void aReasonCodeOfAnotherPacketIsRejected()
    {
        final UnsafeBuffer buffer = Bytes.buffer("62 03 00 01 10"); // 0x10 is for PUBACK/PUBREC, not PUBREL
        assertThat(ack.wrap(buffer, 0, 5, MqttVersion.V5)).isEqualTo(DecodeError.INVALID_REASON_CODE);
    }

    @Test
    @DisplayName("MQTT-2.3.1-1: packet identifier 0 is refused")
    void packetIdZero()
    {
        assertThat(ack.wrap(Bytes.buffer("40 02 00 00"), 0, 4, MqttVersion.V3_1_1)).isEqualTo(DecodeError.PACKET_ID_ZERO);
    }

    @Test
    void extraBytesIn311AreRejected()
    {
        assertThat(ack.wrap(Bytes.buffer("40 03 00 01 00"), 0, 5, MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.REMAINING_LENGTH_INVALID);
    }

    @Test
    void truncatedIsRejected()
    {
        assertThat(ack.wrap(Bytes.buffer("40 01 00"), 0, 3, MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.FIELD_OVERRUNS_PACKET);
    }

    @Test
    void aRunOfAcknowledgementsIsWalkedOneAtATime()
    {
        // as the I/O agent hands consecutive acknowledgements of one read: 3.1.1 short, 5.0 with reason, properties
        final UnsafeBuffer run = Bytes.buffer("40 02 00 01 40 03 00 02 10 40 08 00 03 80 04 1F 00 01 78 40 02 00 04");
        final int[] ids = new int[4];
        final int[] reasons = new int[4];
        int count = 0;
        for (int offset = 0; offset < run.capacity(); count++)
        {
            final int length = ack.wrapNext(run, offset, run.capacity(), MqttVersion.V5);
            assertThat(length).isPositive();
            ids[count] = ack.packetId();
            reasons[count] = ack.reasonCode();
            offset += length;
        }
        assertThat(count).isEqualTo(4);
        assertThat(ids).containsExactly(1, 2, 3, 4);
        assertThat(reasons).containsExactly(0, ReasonCode.NO_MATCHING_SUBSCRIBERS, ReasonCode.UNSPECIFIED_ERROR, 0);
        assertThat(ack.wrapNext(run, 4, 9, MqttVersion.V3_1_1)).isEqualTo(DecodeError.REMAINING_LENGTH_INVALID);
    }

    @Test
    void aRunCutShortOrMalformedIsRejected()
    {
        final UnsafeBuffer run = Bytes.buffer("40 02 00 01 40 02 00");
        assertThat(ack.wrapNext(run, 0, run.capacity(), MqttVersion.V3_1_1)).isEqualTo(4);
        final int overruns = DecodeError.FIELD_OVERRUNS_PACKET;
        assertThat(ack.wrapNext(run, 4, run.capacity(), MqttVersion.V3_1_1)).isEqualTo(overruns);
        assertThat(ack.wrapNext(run, 6, run.capacity(), MqttVersion.V3_1_1)).isEqualTo(overruns);
        assertThat(ack.wrapNext(Bytes.buffer("40 80"), 0, 2, MqttVersion.V5)).isEqualTo(overruns);
        assertThat(ack.wrapNext(Bytes.buffer("40 FF FF FF FF 01"), 0, 6, MqttVersion.V5))
            .isEqualTo(DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER);
        assertThat(ack.wrapNext(Bytes.buffer("40 FF FF FF 7F 00 01"), 0, 7, MqttVersion.V5)).isEqualTo(overruns);
        assertThat(ack.wrapNext(Bytes.buffer("30 02 00 01"), 0, 4, MqttVersion.V5))
            .isEqualTo(DecodeError.RESERVED_PACKET_TYPE);
    }

    @Test
    void aRunWalksAnAcknowledgementWithATwoByteRemainingLength()
    {
        // PUBACK 1, 0x80, a 122-character Reason String: remaining length 129, two bytes (81 01); then PUBACK 2
        final UnsafeBuffer run = Bytes.buffer("40 81 01 00 01 80 7D 1F 00 7A" + " 61".repeat(122) + " 40 02 00 02");
        assertThat(ack.wrapNext(run, 0, run.capacity(), MqttVersion.V5)).isEqualTo(132);
        assertThat(ack.reasonCode()).isEqualTo(ReasonCode.UNSPECIFIED_ERROR);
        assertThat(ack.properties().slice(PropertyId.REASON_STRING).length()).isEqualTo(122);
        assertThat(ack.wrapNext(run, 132, run.capacity(), MqttVersion.V5)).isEqualTo(4);
        assertThat(ack.packetId()).isEqualTo(2);
    }
}
