package io.ringmq.protocol;

/**
 * MQTT control packet types, the high nibble of the first byte of every packet.
 */
public final class PacketType
{
    /** Reserved in both versions; index 0 of property tables is reused for will properties. */
    public static final int RESERVED = 0;
    public static final int CONNECT = 1;
    public static final int CONNACK = 2;
    public static final int PUBLISH = 3;
    public static final int PUBACK = 4;
    public static final int PUBREC = 5;
    public static final int PUBREL = 6;
    public static final int PUBCOMP = 7;
    public static final int SUBSCRIBE = 8;
    public static final int SUBACK = 9;
    public static final int UNSUBSCRIBE = 10;
    public static final int UNSUBACK = 11;
    public static final int PINGREQ = 12;
    public static final int PINGRESP = 13;
    public static final int DISCONNECT = 14;
    /** MQTT 5.0 only; reserved in 3.1.1. */
    public static final int AUTH = 15;

    private static final String[] NAMES =
    {
        "RESERVED", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP",
        "SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "AUTH"
    };

    /**
     * Fixed header flag bits required for each type other than PUBLISH [MQTT-2.2.2-1].
     * PUBREL, SUBSCRIBE and UNSUBSCRIBE carry 0b0010; all others 0.
     */
    private static final int[] REQUIRED_FLAGS = {0, 0, 0, -1, 0, 0, 2, 0, 2, 0, 2, 0, 0, 0, 0, 0};

    private PacketType()
    {
    }

    /**
     * @param type a packet type 0..15.
     * @return its name, for logs.
     */
    public static String name(final int type)
    {
        return type >= 0 && type < NAMES.length ? NAMES[type] : "UNKNOWN(" + type + ")";
    }

    /**
     * @param type a packet type 1..15 other than PUBLISH.
     * @return the value its four flag bits must have.
     */
    public static int requiredFlags(final int type)
    {
        return REQUIRED_FLAGS[type];
    }

    /**
     * @param type    a packet type.
     * @param version the connection's protocol level.
     * @return true when the type exists in that version.
     */
    public static boolean isDefined(final int type, final int version)
    {
        return type >= CONNECT && (type < AUTH || (type == AUTH && version == MqttVersion.V5));
    }
}
