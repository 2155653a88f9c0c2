package io.ringmq.protocol;

/**
 * Typed decode failures, returned as negative {@code int}s so that malformed input is a value, never an
 * exception. Each code packs a detail (which rule was broken) with the MQTT 5.0 reason code the broker should
 * answer with: {@code code == -((detail << 8) | reasonCode)}. On an MQTT 3.1.1 connection every failure
 * closes the connection; on MQTT 5.0 the broker sends {@link #reasonCode(int)} in a DISCONNECT (or CONNACK)
 * first.
 */
public final class DecodeError
{
    /** Not an error: more bytes are needed before the packet can be decoded. Nothing was consumed. */
    public static final int NEED_MORE = 0;

    private static final String[] DESCRIPTIONS = new String[64];

    public static final int MALFORMED_VARIABLE_BYTE_INTEGER =
        define(1, ReasonCode.MALFORMED_PACKET, "variable byte integer longer than 4 bytes [MQTT-1.5.5-1]");
    public static final int NON_MINIMAL_VARIABLE_BYTE_INTEGER =
        define(2, ReasonCode.MALFORMED_PACKET, "variable byte integer not in its shortest form [MQTT-1.5.5-1]");
    public static final int PACKET_TOO_LARGE =
        define(3, ReasonCode.PACKET_TOO_LARGE, "packet larger than the maximum packet size");
    public static final int RESERVED_PACKET_TYPE =
        define(4, ReasonCode.MALFORMED_PACKET, "reserved packet type");
    public static final int INVALID_FIXED_HEADER_FLAGS =
        define(5, ReasonCode.MALFORMED_PACKET, "reserved fixed header flag bits set [MQTT-2.2.2-1]");
    public static final int INVALID_QOS =
        define(6, ReasonCode.MALFORMED_PACKET, "QoS 3 [MQTT-3.3.1-4]");
    public static final int DUP_WITH_QOS_0 =
        define(7, ReasonCode.MALFORMED_PACKET, "DUP flag set on a QoS 0 PUBLISH [MQTT-3.3.1-2]");
    public static final int FIELD_OVERRUNS_PACKET =
        define(8, ReasonCode.MALFORMED_PACKET, "a field runs past the remaining length");
    public static final int TRAILING_BYTES =
        define(9, ReasonCode.MALFORMED_PACKET, "bytes left over after the last field");
    public static final int INVALID_UTF8 =
        define(10, ReasonCode.MALFORMED_PACKET, "ill-formed UTF-8 or a surrogate code point [MQTT-1.5.4-1]");
    public static final int UTF8_NULL_CHARACTER =
        define(11, ReasonCode.MALFORMED_PACKET, "U+0000 in a UTF-8 string [MQTT-1.5.4-2]");
    public static final int PACKET_ID_ZERO =
        define(12, ReasonCode.PROTOCOL_ERROR, "packet identifier 0 where one is required [MQTT-2.3.1-1]");
    public static final int TOPIC_NAME_EMPTY =
        define(13, ReasonCode.PROTOCOL_ERROR, "empty topic name [MQTT-4.7.3-1]");
    public static final int TOPIC_NAME_WILDCARD =
        define(14, ReasonCode.TOPIC_NAME_INVALID, "wildcard in a topic name [MQTT-3.3.2-2]");
    public static final int TOPIC_FILTER_EMPTY =
        define(15, ReasonCode.TOPIC_FILTER_INVALID, "empty topic filter [MQTT-4.7.3-1]");
    public static final int TOPIC_FILTER_HASH_MISPLACED =
        define(16, ReasonCode.TOPIC_FILTER_INVALID, "'#' not alone in the last level [MQTT-4.7.1-2]");
    public static final int TOPIC_FILTER_PLUS_MISPLACED =
        define(17, ReasonCode.TOPIC_FILTER_INVALID, "'+' not alone in its level [MQTT-4.7.1-3]");
    public static final int SHARED_FILTER_INVALID =
        define(18, ReasonCode.TOPIC_FILTER_INVALID, "malformed $share/{ShareName}/{filter}");
    public static final int SUBSCRIBE_EMPTY =
        define(19, ReasonCode.PROTOCOL_ERROR, "SUBSCRIBE without a topic filter [MQTT-3.8.3-3]");
    public static final int UNSUBSCRIBE_EMPTY =
        define(20, ReasonCode.PROTOCOL_ERROR, "UNSUBSCRIBE without a topic filter [MQTT-3.10.3-2]");
    public static final int SUBSCRIPTION_OPTIONS_RESERVED =
        define(21, ReasonCode.MALFORMED_PACKET, "reserved subscription option bits set [MQTT-3.8.3-4]");
    public static final int RETAIN_HANDLING_INVALID =
        define(22, ReasonCode.PROTOCOL_ERROR, "retain handling 3");
    public static final int NO_LOCAL_ON_SHARED =
        define(23, ReasonCode.PROTOCOL_ERROR, "No Local on a shared subscription");
    public static final int UNKNOWN_PROPERTY =
        define(24, ReasonCode.MALFORMED_PACKET, "unknown property identifier");
    public static final int PROPERTY_NOT_ALLOWED =
        define(25, ReasonCode.MALFORMED_PACKET, "property not allowed in this packet");
    public static final int DUPLICATE_PROPERTY =
        define(26, ReasonCode.PROTOCOL_ERROR, "property included more than once");
    public static final int INVALID_PROPERTY_VALUE =
        define(27, ReasonCode.PROTOCOL_ERROR, "property value out of range");
    public static final int PROTOCOL_NAME_INVALID =
        define(28, ReasonCode.UNSUPPORTED_PROTOCOL_VERSION, "protocol name is not \"MQTT\" [MQTT-3.1.2-1]");
    public static final int UNSUPPORTED_PROTOCOL_VERSION =
        define(29, ReasonCode.UNSUPPORTED_PROTOCOL_VERSION, "unsupported protocol level [MQTT-3.1.2-2]");
    public static final int CONNECT_RESERVED_FLAG =
        define(30, ReasonCode.MALFORMED_PACKET, "CONNECT reserved flag set [MQTT-3.1.2-3]");
    public static final int WILL_FLAGS_WITHOUT_WILL =
        define(31, ReasonCode.MALFORMED_PACKET, "will QoS or retain without the will flag [MQTT-3.1.2-13]");
    public static final int WILL_QOS_INVALID =
        define(32, ReasonCode.MALFORMED_PACKET, "will QoS 3 [MQTT-3.1.2-14]");
    public static final int PASSWORD_WITHOUT_USERNAME =
        define(33, ReasonCode.MALFORMED_PACKET, "password flag without user name flag [MQTT-3.1.2-22]");
    public static final int INVALID_REASON_CODE =
        define(34, ReasonCode.MALFORMED_PACKET, "reason code not defined for this packet");
    public static final int RESERVED_ACK_FLAGS =
        define(35, ReasonCode.MALFORMED_PACKET, "reserved CONNACK acknowledge flags set [MQTT-3.2.2-1]");
    public static final int REASON_CODES_EMPTY =
        define(36, ReasonCode.PROTOCOL_ERROR, "acknowledgement without a reason code");
    public static final int REMAINING_LENGTH_INVALID =
        define(37, ReasonCode.MALFORMED_PACKET, "remaining length wrong for this packet type");
    public static final int TOPIC_ALIAS_ZERO =
        define(38, ReasonCode.TOPIC_ALIAS_INVALID, "Topic Alias 0 [MQTT-3.3.2-8]");

    private DecodeError()
    {
    }

    /**
     * @param result a decoder's return value.
     * @return true when it is an error (negative).
     */
    public static boolean isError(final int result)
    {
        return result < 0;
    }

    /**
     * @param error a negative result from a decoder.
     * @return the MQTT 5.0 reason code to answer with.
     */
    public static int reasonCode(final int error)
    {
        return (-error) & 0xFF;
    }

    /**
     * @param error a negative result from a decoder.
     * @return a stable one-line description for logs, with the spec id where there is one.
     */
    public static String describe(final int error)
    {
        final int detail = (-error) >>> 8;
        final String text = detail > 0 && detail < DESCRIPTIONS.length ? DESCRIPTIONS[detail] : null;
        return null != text ? text : "undefined decode error " + error;
    }

    private static int define(final int detail, final int reasonCode, final String description)
    {
        DESCRIPTIONS[detail] = description;
        return -((detail << 8) | reasonCode);
    }
}
