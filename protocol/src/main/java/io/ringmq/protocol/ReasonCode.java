package io.ringmq.protocol;

/**
 * MQTT 5.0 reason codes, the MQTT 3.1.1 CONNACK return codes and SUBACK values, and which codes each packet
 * type may carry.
 */
public final class ReasonCode
{
    public static final int SUCCESS = 0x00;
    public static final int NORMAL_DISCONNECTION = 0x00;
    public static final int GRANTED_QOS_0 = 0x00;
    public static final int GRANTED_QOS_1 = 0x01;
    public static final int GRANTED_QOS_2 = 0x02;
    public static final int DISCONNECT_WITH_WILL_MESSAGE = 0x04;
    public static final int NO_MATCHING_SUBSCRIBERS = 0x10;
    public static final int NO_SUBSCRIPTION_EXISTED = 0x11;
    public static final int CONTINUE_AUTHENTICATION = 0x18;
    public static final int RE_AUTHENTICATE = 0x19;
    public static final int UNSPECIFIED_ERROR = 0x80;
    public static final int MALFORMED_PACKET = 0x81;
    public static final int PROTOCOL_ERROR = 0x82;
    public static final int IMPLEMENTATION_SPECIFIC_ERROR = 0x83;
    public static final int UNSUPPORTED_PROTOCOL_VERSION = 0x84;
    public static final int CLIENT_IDENTIFIER_NOT_VALID = 0x85;
    public static final int BAD_USER_NAME_OR_PASSWORD = 0x86;
    public static final int NOT_AUTHORIZED = 0x87;
    public static final int SERVER_UNAVAILABLE = 0x88;
    public static final int SERVER_BUSY = 0x89;
    public static final int BANNED = 0x8A;
    public static final int SERVER_SHUTTING_DOWN = 0x8B;
    public static final int BAD_AUTHENTICATION_METHOD = 0x8C;
    public static final int KEEP_ALIVE_TIMEOUT = 0x8D;
    public static final int SESSION_TAKEN_OVER = 0x8E;
    public static final int TOPIC_FILTER_INVALID = 0x8F;
    public static final int TOPIC_NAME_INVALID = 0x90;
    public static final int PACKET_IDENTIFIER_IN_USE = 0x91;
    public static final int PACKET_IDENTIFIER_NOT_FOUND = 0x92;
    public static final int RECEIVE_MAXIMUM_EXCEEDED = 0x93;
    public static final int TOPIC_ALIAS_INVALID = 0x94;
    public static final int PACKET_TOO_LARGE = 0x95;
    public static final int MESSAGE_RATE_TOO_HIGH = 0x96;
    public static final int QUOTA_EXCEEDED = 0x97;
    public static final int ADMINISTRATIVE_ACTION = 0x98;
    public static final int PAYLOAD_FORMAT_INVALID = 0x99;
    public static final int RETAIN_NOT_SUPPORTED = 0x9A;
    public static final int QOS_NOT_SUPPORTED = 0x9B;
    public static final int USE_ANOTHER_SERVER = 0x9C;
    public static final int SERVER_MOVED = 0x9D;
    public static final int SHARED_SUBSCRIPTIONS_NOT_SUPPORTED = 0x9E;
    public static final int CONNECTION_RATE_EXCEEDED = 0x9F;
    public static final int MAXIMUM_CONNECT_TIME = 0xA0;
    public static final int SUBSCRIPTION_IDENTIFIERS_NOT_SUPPORTED = 0xA1;
    public static final int WILDCARD_SUBSCRIPTIONS_NOT_SUPPORTED = 0xA2;

    /** MQTT 3.1.1 CONNACK return codes (section 3.2.2.3). */
    public static final int V3_CONNECTION_ACCEPTED = 0x00;
    public static final int V3_UNACCEPTABLE_PROTOCOL_VERSION = 0x01;
    public static final int V3_IDENTIFIER_REJECTED = 0x02;
    public static final int V3_SERVER_UNAVAILABLE = 0x03;
    public static final int V3_BAD_USER_NAME_OR_PASSWORD = 0x04;
    public static final int V3_NOT_AUTHORIZED = 0x05;
    /** MQTT 3.1.1 SUBACK failure return code. */
    public static final int V3_SUBACK_FAILURE = 0x80;

    private static final long[][] V5_ALLOWED = new long[16][];
    private static final long[][] V3_ALLOWED = new long[16][];

    static
    {
        V5_ALLOWED[PacketType.CONNACK] = set(0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
            0x8A, 0x8C, 0x90, 0x95, 0x97, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F);
        V5_ALLOWED[PacketType.PUBACK] = set(0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99);
        V5_ALLOWED[PacketType.PUBREC] = V5_ALLOWED[PacketType.PUBACK];
        V5_ALLOWED[PacketType.PUBREL] = set(0x00, 0x92);
        V5_ALLOWED[PacketType.PUBCOMP] = V5_ALLOWED[PacketType.PUBREL];
        V5_ALLOWED[PacketType.SUBACK] = set(0x00, 0x01, 0x02, 0x80, 0x83, 0x87, 0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2);
        V5_ALLOWED[PacketType.UNSUBACK] = set(0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91);
        V5_ALLOWED[PacketType.DISCONNECT] = set(0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D, 0x8E,
            0x8F, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2);
        V5_ALLOWED[PacketType.AUTH] = set(0x00, 0x18, 0x19);

        V3_ALLOWED[PacketType.CONNACK] = set(0x00, 0x01, 0x02, 0x03, 0x04, 0x05);
        V3_ALLOWED[PacketType.SUBACK] = set(0x00, 0x01, 0x02, 0x80);
    }

    private ReasonCode()
    {
    }

    /**
     * @param packetType the packet that carries the code.
     * @param version    the connection's protocol level.
     * @param code       the reason (or 3.1.1 return) code.
     * @return true when the specification lists that code for that packet.
     */
    public static boolean isAllowed(final int packetType, final int version, final int code)
    {
        final long[] set = (version == MqttVersion.V5 ? V5_ALLOWED : V3_ALLOWED)[packetType];
        return null != set && code >= 0 && code < 256 && (set[code >>> 6] & (1L << (code & 63))) != 0;
    }

    /**
     * @param code a reason code.
     * @return true for codes 0x80 and above, which signal failure.
     */
    public static boolean isError(final int code)
    {
        return code >= 0x80;
    }

    private static long[] set(final int... codes)
    {
        final long[] set = new long[4];
        for (final int code : codes)
        {
            set[code >>> 6] |= 1L << (code & 63);
        }
        return set;
    }
}
