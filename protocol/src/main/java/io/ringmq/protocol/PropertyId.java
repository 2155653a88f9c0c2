package io.ringmq.protocol;

/**
 * MQTT 5.0 property identifiers (section 2.2.2.2), their value types, and which packets may carry each.
 */
public final class PropertyId
{
    public static final int PAYLOAD_FORMAT_INDICATOR = 0x01;
    public static final int MESSAGE_EXPIRY_INTERVAL = 0x02;
    public static final int CONTENT_TYPE = 0x03;
    public static final int RESPONSE_TOPIC = 0x08;
    public static final int CORRELATION_DATA = 0x09;
    public static final int SUBSCRIPTION_IDENTIFIER = 0x0B;
    public static final int SESSION_EXPIRY_INTERVAL = 0x11;
    public static final int ASSIGNED_CLIENT_IDENTIFIER = 0x12;
    public static final int SERVER_KEEP_ALIVE = 0x13;
    public static final int AUTHENTICATION_METHOD = 0x15;
    public static final int AUTHENTICATION_DATA = 0x16;
    public static final int REQUEST_PROBLEM_INFORMATION = 0x17;
    public static final int WILL_DELAY_INTERVAL = 0x18;
    public static final int REQUEST_RESPONSE_INFORMATION = 0x19;
    public static final int RESPONSE_INFORMATION = 0x1A;
    public static final int SERVER_REFERENCE = 0x1C;
    public static final int REASON_STRING = 0x1F;
    public static final int RECEIVE_MAXIMUM = 0x21;
    public static final int TOPIC_ALIAS_MAXIMUM = 0x22;
    public static final int TOPIC_ALIAS = 0x23;
    public static final int MAXIMUM_QOS = 0x24;
    public static final int RETAIN_AVAILABLE = 0x25;
    public static final int USER_PROPERTY = 0x26;
    public static final int MAXIMUM_PACKET_SIZE = 0x27;
    public static final int WILDCARD_SUBSCRIPTION_AVAILABLE = 0x28;
    public static final int SUBSCRIPTION_IDENTIFIER_AVAILABLE = 0x29;
    public static final int SHARED_SUBSCRIPTION_AVAILABLE = 0x2A;

    /** Property context index for the will properties of CONNECT; packet types use their own number. */
    public static final int WILL_CONTEXT = PacketType.RESERVED;

    static final int MAX_ID = 0x2A;

    static final byte BYTE = 1;
    static final byte TWO_BYTE_INTEGER = 2;
    static final byte FOUR_BYTE_INTEGER = 3;
    static final byte VARIABLE_BYTE_INTEGER = 4;
    static final byte UTF8_STRING = 5;
    static final byte BINARY_DATA = 6;
    static final byte UTF8_STRING_PAIR = 7;

    static final byte[] TYPES = new byte[MAX_ID + 1];
    static final long[] ALLOWED = new long[16];
    /** Byte properties whose only values are 0 and 1. */
    static final long BOOLEAN_IDS = bits(PAYLOAD_FORMAT_INDICATOR, REQUEST_PROBLEM_INFORMATION,
        REQUEST_RESPONSE_INFORMATION, MAXIMUM_QOS, RETAIN_AVAILABLE, WILDCARD_SUBSCRIPTION_AVAILABLE,
        SUBSCRIPTION_IDENTIFIER_AVAILABLE, SHARED_SUBSCRIPTION_AVAILABLE);
    /** Integer properties for which 0 is a protocol error. */
    static final long NON_ZERO_IDS = bits(RECEIVE_MAXIMUM, MAXIMUM_PACKET_SIZE, TOPIC_ALIAS,
        SUBSCRIPTION_IDENTIFIER);

    static
    {
        type(BYTE, PAYLOAD_FORMAT_INDICATOR, REQUEST_PROBLEM_INFORMATION, REQUEST_RESPONSE_INFORMATION, MAXIMUM_QOS,
            RETAIN_AVAILABLE, WILDCARD_SUBSCRIPTION_AVAILABLE, SUBSCRIPTION_IDENTIFIER_AVAILABLE,
            SHARED_SUBSCRIPTION_AVAILABLE);
        type(TWO_BYTE_INTEGER, SERVER_KEEP_ALIVE, RECEIVE_MAXIMUM, TOPIC_ALIAS_MAXIMUM, TOPIC_ALIAS);
        type(FOUR_BYTE_INTEGER, MESSAGE_EXPIRY_INTERVAL, SESSION_EXPIRY_INTERVAL, WILL_DELAY_INTERVAL,
            MAXIMUM_PACKET_SIZE);
        type(VARIABLE_BYTE_INTEGER, SUBSCRIPTION_IDENTIFIER);
        type(UTF8_STRING, CONTENT_TYPE, RESPONSE_TOPIC, ASSIGNED_CLIENT_IDENTIFIER, AUTHENTICATION_METHOD,
            RESPONSE_INFORMATION, SERVER_REFERENCE, REASON_STRING);
        type(BINARY_DATA, CORRELATION_DATA, AUTHENTICATION_DATA);
        type(UTF8_STRING_PAIR, USER_PROPERTY);

        final long message = bits(PAYLOAD_FORMAT_INDICATOR, MESSAGE_EXPIRY_INTERVAL, CONTENT_TYPE, RESPONSE_TOPIC,
            CORRELATION_DATA, USER_PROPERTY);
        final long reasonOnly = bits(REASON_STRING, USER_PROPERTY);
        ALLOWED[WILL_CONTEXT] = message | bits(WILL_DELAY_INTERVAL);
        ALLOWED[PacketType.CONNECT] = bits(SESSION_EXPIRY_INTERVAL, AUTHENTICATION_METHOD, AUTHENTICATION_DATA,
            REQUEST_PROBLEM_INFORMATION, REQUEST_RESPONSE_INFORMATION, RECEIVE_MAXIMUM, TOPIC_ALIAS_MAXIMUM,
            USER_PROPERTY, MAXIMUM_PACKET_SIZE);
        ALLOWED[PacketType.CONNACK] = bits(SESSION_EXPIRY_INTERVAL, ASSIGNED_CLIENT_IDENTIFIER, SERVER_KEEP_ALIVE,
            AUTHENTICATION_METHOD, AUTHENTICATION_DATA, RESPONSE_INFORMATION, SERVER_REFERENCE, REASON_STRING,
            RECEIVE_MAXIMUM, TOPIC_ALIAS_MAXIMUM, MAXIMUM_QOS, RETAIN_AVAILABLE, USER_PROPERTY, MAXIMUM_PACKET_SIZE,
            WILDCARD_SUBSCRIPTION_AVAILABLE, SUBSCRIPTION_IDENTIFIER_AVAILABLE, SHARED_SUBSCRIPTION_AVAILABLE);
        ALLOWED[PacketType.PUBLISH] = message | bits(SUBSCRIPTION_IDENTIFIER, TOPIC_ALIAS);
        ALLOWED[PacketType.PUBACK] = reasonOnly;
        ALLOWED[PacketType.PUBREC] = reasonOnly;
        ALLOWED[PacketType.PUBREL] = reasonOnly;
        ALLOWED[PacketType.PUBCOMP] = reasonOnly;
        ALLOWED[PacketType.SUBSCRIBE] = bits(SUBSCRIPTION_IDENTIFIER, USER_PROPERTY);
        ALLOWED[PacketType.SUBACK] = reasonOnly;
        ALLOWED[PacketType.UNSUBSCRIBE] = bits(USER_PROPERTY);
        ALLOWED[PacketType.UNSUBACK] = reasonOnly;
        ALLOWED[PacketType.DISCONNECT] = bits(SESSION_EXPIRY_INTERVAL, SERVER_REFERENCE, REASON_STRING, USER_PROPERTY);
        ALLOWED[PacketType.AUTH] = bits(AUTHENTICATION_METHOD, AUTHENTICATION_DATA, REASON_STRING, USER_PROPERTY);
    }

    private PropertyId()
    {
    }

    /**
     * @param context a packet type or {@link #WILL_CONTEXT}.
     * @param id      a property identifier.
     * @return true when the specification allows that property in that packet.
     */
    public static boolean isAllowed(final int context, final int id)
    {
        return id >= 0 && id <= MAX_ID && (ALLOWED[context] & (1L << id)) != 0;
    }

    static byte typeOf(final int id)
    {
        return id >= 0 && id <= MAX_ID ? TYPES[id] : 0;
    }

    private static void type(final byte type, final int... ids)
    {
        for (final int id : ids)
        {
            TYPES[id] = type;
        }
    }

    private static long bits(final int... ids)
    {
        long bits = 0;
        for (final int id : ids)
        {
            bits |= 1L << id;
        }
        return bits;
    }
}
