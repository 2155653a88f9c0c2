package io.ringmq.protocol;

/**
 * Protocol levels, as carried in the CONNECT packet. The level is negotiated once per connection and then
 * passed to every decoder and encoder explicitly; no codec object remembers it.
 */
public final class MqttVersion
{
    /**
     * MQTT 3.1, protocol level 3 under the name "MQIsdp": decoded and answered as 3.1.1, which keeps its packets, as
     * Mosquitto serves it; {@code ConnectFlyweight#isV31} says a client spoke it.
     */
    public static final int V3_1 = 3;
    /** MQTT 3.1.1, protocol level 4. */
    public static final int V3_1_1 = 4;
    /** MQTT 5.0, protocol level 5. */
    public static final int V5 = 5;

    private MqttVersion()
    {
    }

    /**
     * @param level a protocol level byte.
     * @return true when this codec speaks that level.
     */
    public static boolean isSupported(final int level)
    {
        return level == V3_1_1 || level == V5;
    }

    /**
     * @param level a protocol level byte.
     * @return a human name for logs, e.g. "3.1.1".
     */
    public static String name(final int level)
    {
        switch (level)
        {
            case 3: return "3.1";
            case V3_1_1: return "3.1.1";
            case V5: return "5.0";
            default: return "level " + level;
        }
    }
}
