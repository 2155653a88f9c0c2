package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class ConnectTest
{
    private final ConnectFlyweight connect = new ConnectFlyweight();

    /** A 3.1.1 CONNECT: clean session, will QoS 1 retained, user name and password, keep alive 10. */
    private static final String V311 = Bytes.packet("10", Bytes.str("MQTT") + "04 EE 00 0A" + Bytes.str("client-1") +
        Bytes.str("will/t") + "0002 6279" + Bytes.str("user") + "0003 707764");

    @Test
    void decodesEveryField311()
    {
        final UnsafeBuffer buffer = Bytes.buffer(V311);
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(buffer.capacity());
        assertThat(connect.protocolLevel()).isEqualTo(MqttVersion.V3_1_1);
        assertThat(connect.isCleanStart()).isTrue();
        assertThat(connect.keepAlive()).isEqualTo(10);
        assertThat(connect.clientId().asString()).isEqualTo("client-1");
        assertThat(connect.hasWill()).isTrue();
        assertThat(connect.willQos()).isEqualTo(1);
        assertThat(connect.isWillRetain()).isTrue();
        assertThat(connect.willTopic().asString()).isEqualTo("will/t");
        assertThat(connect.willPayload().asString()).isEqualTo("by");
        assertThat(connect.userName().asString()).isEqualTo("user");
        assertThat(connect.password().asString()).isEqualTo("pwd");
        assertThat(connect.properties().isEmpty()).isTrue();
    }

    @Test
    void encoderWritesTheSameBytes311()
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().keepAlive(10).will(1, true, null);
        encoder.clientId().wrap("client-1");
        encoder.willTopic().wrap("will/t");
        encoder.willPayload().wrap("by");
        encoder.userName().wrap("user");
        encoder.password().wrap("pwd");
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        assertThat(encoder.encode(buffer, 0)).isEqualTo(buffer.capacity());
        assertThat(Bytes.hexOf(buffer.byteArray())).isEqualTo(V311.replace(" ", ""));
    }

    @Test
    void decodesMqtt5PropertiesAndWillProperties()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "05 06 00 3C" +
            "08 11 0000012C 21 0014 2200" + // session expiry 300, receive max 20, then a truncated...
            ""));
        // the properties claim 8 bytes but topic alias maximum is cut short: malformed
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isNegative();

        final UnsafeBuffer good = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "05 06 00 3C" +
            Bytes.props("11 0000012C 21 0014 22 0005") + Bytes.str("c") + Bytes.props("18 0000000A") + Bytes.str("w") + "0001 78"));
        assertThat(connect.wrap(good, 0, good.capacity())).isEqualTo(good.capacity());
        assertThat(connect.protocolLevel()).isEqualTo(MqttVersion.V5);
        assertThat(connect.properties().longValue(PropertyId.SESSION_EXPIRY_INTERVAL, 0)).isEqualTo(300);
        assertThat(connect.properties().intValue(PropertyId.RECEIVE_MAXIMUM, 65_535)).isEqualTo(20);
        assertThat(connect.properties().intValue(PropertyId.TOPIC_ALIAS_MAXIMUM, 0)).isEqualTo(5);
        assertThat(connect.willProperties().longValue(PropertyId.WILL_DELAY_INTERVAL, 0)).isEqualTo(10);
        assertThat(connect.willTopic().asString()).isEqualTo("w");
        assertThat(connect.willPayload().asString()).isEqualTo("x");
    }

    @Test
    @DisplayName("MQTT-3.1.2-1: a protocol name other than MQTT is refused")
    void wrongProtocolName()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTX") + "04 02 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.PROTOCOL_NAME_INVALID);
    }

    @Test
    @DisplayName("level 0x84 (Mosquitto's try_private bridge) is 3.1.1 from a bridge; 0x85 and 0x83 are refused")
    void bridgeLevel()
    {
        final UnsafeBuffer bridge = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "84 02 00 3C" + Bytes.str("b")));
        assertThat(connect.wrap(bridge, 0, bridge.capacity())).isEqualTo(bridge.capacity());
        assertThat(connect.protocolLevel()).isEqualTo(MqttVersion.V3_1_1);
        assertThat(connect.isBridge()).isTrue();
        assertThat(connect.clientId().asString()).isEqualTo("b");

        final UnsafeBuffer plain = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 02 00 3C" + Bytes.str("p")));
        assertThat(connect.wrap(plain, 0, plain.capacity())).isEqualTo(plain.capacity());
        assertThat(connect.isBridge()).as("reset by the next wrap").isFalse();

        for (final String level : new String[]{"85", "83"})
        {
            final UnsafeBuffer other = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + level + " 02 00 3C" +
                Bytes.str("")));
            assertThat(connect.wrap(other, 0, other.capacity())).isEqualTo(DecodeError.UNSUPPORTED_PROTOCOL_VERSION);
            assertThat(connect.isBridge()).isFalse();
        }
    }

    @Test
    @DisplayName("MQTT-3.1.2-2: an unsupported protocol level is reported with the level asked for")
    void unsupportedLevel()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "06 02 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.UNSUPPORTED_PROTOCOL_VERSION);
        assertThat(connect.protocolLevel()).isEqualTo(6);
        assertThat(DecodeError.reasonCode(DecodeError.UNSUPPORTED_PROTOCOL_VERSION))
            .isEqualTo(ReasonCode.UNSUPPORTED_PROTOCOL_VERSION);

        final UnsafeBuffer v31 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQIsdp") + "04 02 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(v31, 0, v31.capacity())).as("MQIsdp names level 3 only")
            .isEqualTo(DecodeError.UNSUPPORTED_PROTOCOL_VERSION);
        final UnsafeBuffer mqtt3 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "03 02 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(mqtt3, 0, mqtt3.capacity())).as("level 3 is MQIsdp's")
            .isEqualTo(DecodeError.UNSUPPORTED_PROTOCOL_VERSION);
    }

    @Test
    @DisplayName("an MQTT 3.1 CONNECT (\"MQIsdp\", level 3) reads as 3.1.1, marked as 3.1; with bit 7 of its level "
        + "it is another broker's 3.1 bridge")
    void mqtt31ReadsAs311()
    {
        final UnsafeBuffer v31 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQIsdp") + "03 02 00 3C" +
            Bytes.str("old-device")));
        assertThat(connect.wrap(v31, 0, v31.capacity())).isEqualTo(v31.capacity());
        assertThat(connect.protocolLevel()).isEqualTo(MqttVersion.V3_1_1);
        assertThat(connect.isV31()).isTrue();
        assertThat(connect.isBridge()).isFalse();
        assertThat(connect.clientId().asString()).isEqualTo("old-device");

        final UnsafeBuffer bridge = Bytes.buffer(Bytes.packet("10", Bytes.str("MQIsdp") + "83 02 00 3C" +
            Bytes.str("b")));
        assertThat(connect.wrap(bridge, 0, bridge.capacity())).isEqualTo(bridge.capacity());
        assertThat(connect.isV31()).isTrue();
        assertThat(connect.isBridge()).isTrue();

        final UnsafeBuffer v311 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 02 00 3C" + Bytes.str("n")));
        assertThat(connect.wrap(v311, 0, v311.capacity())).isEqualTo(v311.capacity());
        assertThat(connect.isV31()).as("cleared by the next wrap").isFalse();
    }

    @Test
    @DisplayName("MQTT-3.1.2-3: the reserved connect flag must be 0")
    void reservedFlag()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 03 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.CONNECT_RESERVED_FLAG);
    }

    @Test
    @DisplayName("MQTT-3.1.2-13, MQTT-3.1.2-15: will QoS and will retain need the will flag")
    void willFlagsWithoutWill()
    {
        final UnsafeBuffer qos = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 0A 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(qos, 0, qos.capacity())).isEqualTo(DecodeError.WILL_FLAGS_WITHOUT_WILL);
        final UnsafeBuffer retain = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 22 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(retain, 0, retain.capacity())).isEqualTo(DecodeError.WILL_FLAGS_WITHOUT_WILL);
    }

    @Test
    @DisplayName("MQTT-3.1.2-14: will QoS 3 is malformed")
    void willQos3()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 1E 00 3C" + Bytes.str("") +
            Bytes.str("t") + "0000"));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.WILL_QOS_INVALID);
    }

    @Test
    @DisplayName("MQTT-3.1.2-22: in 3.1.1 a password needs a user name; 5.0 allows it alone")
    void passwordWithoutUserName()
    {
        final UnsafeBuffer v3 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 42 00 3C" + Bytes.str("") + "0002 7070"));
        assertThat(connect.wrap(v3, 0, v3.capacity())).isEqualTo(DecodeError.PASSWORD_WITHOUT_USERNAME);
        final UnsafeBuffer v5 = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "05 42 00 3C 00" + Bytes.str("") +
            "0002 7070"));
        assertThat(connect.wrap(v5, 0, v5.capacity())).isEqualTo(v5.capacity());
        assertThat(connect.password().asString()).isEqualTo("pp");
    }

    @Test
    @DisplayName("MQTT-3.3.2-2: a will topic with a wildcard is refused")
    void willTopicWildcard()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 06 00 3C" + Bytes.str("") +
            Bytes.str("#") + "0000"));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.TOPIC_NAME_WILDCARD);
    }

    @Test
    @DisplayName("MQTT-1.5.4-2: a client identifier holding U+0000 is malformed")
    void nullInClientId()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 02 00 3C 0001 00"));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.UTF8_NULL_CHARACTER);
    }

    @Test
    void bytesAfterTheLastFieldAreMalformed()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 02 00 3C" + Bytes.str("") + "FF"));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.TRAILING_BYTES);
    }

    @Test
    void aMissingFieldOverrunsThePacket()
    {
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "04 82 00 3C" + Bytes.str("")));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.FIELD_OVERRUNS_PACKET);
    }

    @Test
    void aPropertyOfAnotherPacketIsMalformed()
    {
        // Topic Alias (0x23) belongs to PUBLISH, not CONNECT
        final UnsafeBuffer buffer = Bytes.buffer(Bytes.packet("10", Bytes.str("MQTT") + "05 02 00 3C 03 23 0001" +
            Bytes.str("")));
        assertThat(connect.wrap(buffer, 0, buffer.capacity())).isEqualTo(DecodeError.PROPERTY_NOT_ALLOWED);
    }
}
