package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CONNACK, PINGREQ, PINGRESP, DISCONNECT and AUTH.
 */
class ControlPacketsTest
{
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[128]);
    private final ConnackFlyweight connack = new ConnackFlyweight();
    private final DisconnectFlyweight disconnect = new DisconnectFlyweight();
    private final AuthFlyweight auth = new AuthFlyweight();

    @Test
    void connack311()
    {
        final int length = ConnackEncoder.encode(out, 0, MqttVersion.V3_1_1, true, 0, null);
        assertThat(Bytes.hexOf(Bytes.copy(out, length))).isEqualTo("20020100");
        assertThat(connack.wrap(out, 0, length, MqttVersion.V3_1_1)).isEqualTo(4);
        assertThat(connack.isSessionPresent()).isTrue();
        assertThat(connack.wrap(Bytes.buffer("20 02 00 06"), 0, 4, MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.INVALID_REASON_CODE);
    }

    @Test
    @DisplayName("MQTT-3.2.2-1: CONNACK acknowledge flags bits 7..1 are reserved")
    void connackReservedFlags()
    {
        assertThat(connack.wrap(Bytes.buffer("20 02 02 00"), 0, 4, MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.RESERVED_ACK_FLAGS);
    }

    @Test
    void connack5WithServerProperties()
    {
        final MqttProperties properties = new MqttProperties()
            .setInt(PropertyId.RECEIVE_MAXIMUM, 100)
            .setInt(PropertyId.MAXIMUM_QOS, 1)
            .set(PropertyId.ASSIGNED_CLIENT_IDENTIFIER, "auto-1")
            .setInt(PropertyId.MAXIMUM_PACKET_SIZE, 1 << 20);
        final int length = ConnackEncoder.encode(out, 0, MqttVersion.V5, false, 0, properties);
        assertThat(length).isEqualTo(ConnackEncoder.encodedLength(MqttVersion.V5, properties));
        assertThat(connack.wrap(out, 0, length, MqttVersion.V5)).isEqualTo(length);
        assertThat(connack.properties().intValue(PropertyId.RECEIVE_MAXIMUM, 0)).isEqualTo(100);
        assertThat(connack.properties().slice(PropertyId.ASSIGNED_CLIENT_IDENTIFIER).asString()).isEqualTo("auto-1");
        assertThat(connack.properties().longValue(PropertyId.MAXIMUM_PACKET_SIZE, 0)).isEqualTo(1 << 20);
    }

    @Test
    void pings()
    {
        assertThat(PingCodec.encode(out, 0, PacketType.PINGREQ)).isEqualTo(2);
        assertThat(Bytes.hexOf(Bytes.copy(out, 2))).isEqualTo("C000");
        assertThat(PingCodec.decode(out, 0, 2, PacketType.PINGREQ)).isEqualTo(2);
        assertThat(PingCodec.decode(Bytes.buffer("D0 01 00"), 0, 3, PacketType.PINGRESP))
            .isEqualTo(DecodeError.REMAINING_LENGTH_INVALID);
    }

    @Test
    void disconnect311IsTwoBytes()
    {
        assertThat(DisconnectEncoder.encode(out, 0, PacketType.DISCONNECT, MqttVersion.V3_1_1, 0, null)).isEqualTo(2);
        assertThat(disconnect.wrap(out, 0, 2, MqttVersion.V3_1_1)).isEqualTo(2);
        assertThat(disconnect.wrap(Bytes.buffer("E0 01 00"), 0, 3, MqttVersion.V3_1_1))
            .isEqualTo(DecodeError.REMAINING_LENGTH_INVALID);
    }

    @Test
    void disconnect5Forms()
    {
        assertThat(disconnect.wrap(Bytes.buffer("E0 00"), 0, 2, MqttVersion.V5)).isEqualTo(2);
        assertThat(disconnect.reasonCode()).isZero();
        assertThat(disconnect.wrap(Bytes.buffer("E0 01 04"), 0, 3, MqttVersion.V5)).isEqualTo(3);
        assertThat(disconnect.reasonCode()).isEqualTo(ReasonCode.DISCONNECT_WITH_WILL_MESSAGE);
        final UnsafeBuffer withProps = Bytes.buffer(Bytes.packet("E0", "00", Bytes.props("11 00000000")));
        assertThat(disconnect.wrap(withProps, 0, withProps.capacity(), MqttVersion.V5)).isEqualTo(withProps.capacity());
        assertThat(disconnect.properties().has(PropertyId.SESSION_EXPIRY_INTERVAL)).isTrue();
        assertThat(disconnect.wrap(Bytes.buffer("E0 01 18"), 0, 3, MqttVersion.V5))
            .isEqualTo(DecodeError.INVALID_REASON_CODE);
    }

    @Test
    void disconnect5Encoding()
    {
        final int length = DisconnectEncoder.encode(
            out, 0, PacketType.DISCONNECT, MqttVersion.V5, ReasonCode.SESSION_TAKEN_OVER, null);
        assertThat(Bytes.hexOf(Bytes.copy(out, length))).isEqualTo("E0018E");
    }

    @Test
    void authIsMqtt5Only()
    {
        assertThat(auth.wrap(Bytes.buffer("F0 00"), 0, 2, MqttVersion.V3_1_1)).isEqualTo(DecodeError.RESERVED_PACKET_TYPE);
        final MqttProperties properties = new MqttProperties()
            .set(PropertyId.AUTHENTICATION_METHOD, "SCRAM-SHA-1")
            .set(PropertyId.AUTHENTICATION_DATA, new byte[]{1, 2, 3});
        final int length = DisconnectEncoder.encode(
            out, 0, PacketType.AUTH, MqttVersion.V5, ReasonCode.CONTINUE_AUTHENTICATION, properties);
        assertThat(auth.wrap(out, 0, length, MqttVersion.V5)).isEqualTo(length);
        assertThat(auth.reasonCode()).isEqualTo(ReasonCode.CONTINUE_AUTHENTICATION);
        assertThat(auth.properties().slice(PropertyId.AUTHENTICATION_METHOD).asString()).isEqualTo("SCRAM-SHA-1");
        assertThat(auth.properties().slice(PropertyId.AUTHENTICATION_DATA).toByteArray()).containsExactly(1, 2, 3);
    }
}
