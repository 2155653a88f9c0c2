package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

class FrameDecoderTest
{
    private static final int MAX = 1024;
    private final FrameDecoder frame = new FrameDecoder();

    @Test
    @DisplayName("a packet offered one byte at a time needs more until its last byte, then frames whole")
    void oneByteAtATime()
    {
        final UnsafeBuffer buffer = Bytes.buffer("30 0D" + Bytes.str("a/b") + "68 65 6C 6C 6F 21 21 21");
        for (int available = 0; available < buffer.capacity(); available++)
        {
            assertThat(frame.decode(buffer, 0, available, MqttVersion.V3_1_1, MAX)).isEqualTo(DecodeError.NEED_MORE);
        }
        assertThat(frame.decode(buffer, 0, buffer.capacity(), MqttVersion.V3_1_1, MAX)).isEqualTo(15);
        assertThat(frame.packetType()).isEqualTo(PacketType.PUBLISH);
        assertThat(frame.headerLength()).isEqualTo(2);
    }

    @Test
    @DisplayName("the maximum packet size is enforced as soon as the remaining length is known")
    void packetTooLargeBeforeBody()
    {
        final UnsafeBuffer buffer = Bytes.buffer("30 FF FF 7F");
        assertThat(frame.decode(buffer, 0, 3, MqttVersion.V5, MAX)).isEqualTo(DecodeError.NEED_MORE);
        assertThat(frame.decode(buffer, 0, 4, MqttVersion.V5, MAX)).isEqualTo(DecodeError.PACKET_TOO_LARGE);
        assertThat(DecodeError.reasonCode(DecodeError.PACKET_TOO_LARGE)).isEqualTo(ReasonCode.PACKET_TOO_LARGE);
    }

    @Test
    void theLimitIsInclusiveOfTheFixedHeader()
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX]);
        buffer.putByte(0, (byte)0x30);
        VariableByteInteger.encode(buffer, 1, MAX - 3);
        assertThat(frame.decode(buffer, 0, MAX, MqttVersion.V5, MAX)).isEqualTo(MAX);
        VariableByteInteger.encode(buffer, 1, MAX - 2);
        assertThat(frame.decode(buffer, 0, MAX, MqttVersion.V5, MAX)).isEqualTo(DecodeError.PACKET_TOO_LARGE);
    }

    @Test
    void hugeRemainingLengthNeverOverflows()
    {
        final UnsafeBuffer buffer = Bytes.buffer("30 FF FF FF 7F");
        assertThat(frame.decode(buffer, 0, 5, MqttVersion.V5, Integer.MAX_VALUE)).isEqualTo(DecodeError.NEED_MORE);
        assertThat(frame.frameLength()).isEqualTo(VariableByteInteger.MAX_VALUE + 5);
    }

    @Test
    @DisplayName("MQTT-1.5.5-1: a five-byte remaining length is malformed")
    void fiveByteRemainingLength()
    {
        final UnsafeBuffer buffer = Bytes.buffer("30 FF FF FF FF 01");
        assertThat(frame.decode(buffer, 0, 6, MqttVersion.V5, MAX)).isEqualTo(DecodeError.MALFORMED_VARIABLE_BYTE_INTEGER);
    }

    @Test
    void reservedPacketTypes()
    {
        assertThat(frame.decode(Bytes.buffer("00 00"), 0, 2, MqttVersion.V5, MAX))
            .isEqualTo(DecodeError.RESERVED_PACKET_TYPE);
        assertThat(frame.decode(Bytes.buffer("F0 00"), 0, 2, MqttVersion.V3_1_1, MAX))
            .isEqualTo(DecodeError.RESERVED_PACKET_TYPE);
        assertThat(frame.decode(Bytes.buffer("F0 00"), 0, 2, MqttVersion.V5, MAX)).isEqualTo(2);
    }

    @ParameterizedTest
    @ValueSource(strings = {"11 00", "21 00", "48 00", "51 00", "60 00", "64 00", "72 00", "80 00", "81 00", "9F 00",
        "A0 00", "B1 00", "C8 00", "D4 00", "E1 00", "F2 00"})
    @DisplayName("MQTT-2.2.2-1, MQTT-2.2.2-2: reserved flag bits must hold their listed values")
    void reservedFlags(final String hex)
    {
        assertThat(frame.decode(Bytes.buffer(hex), 0, 2, MqttVersion.V5, MAX))
            .isEqualTo(DecodeError.INVALID_FIXED_HEADER_FLAGS);
    }

    @Test
    @DisplayName("MQTT-3.3.1-4: a PUBLISH with both QoS bits set is rejected from its first byte")
    void qos3()
    {
        assertThat(frame.decode(Bytes.buffer("36"), 0, 1, MqttVersion.V3_1_1, MAX)).isEqualTo(DecodeError.INVALID_QOS);
    }

    @Test
    void framesConsecutivePacketsInOneBuffer()
    {
        final UnsafeBuffer buffer = Bytes.buffer("C0 00 D0 00 E0 00");
        int offset = 0;
        int count = 0;
        while (offset < buffer.capacity())
        {
            final int length = frame.decode(buffer, offset, buffer.capacity() - offset, MqttVersion.V3_1_1, MAX);
            assertThat(length).isEqualTo(2);
            offset += length;
            count++;
        }
        assertThat(count).isEqualTo(3);
    }
}
