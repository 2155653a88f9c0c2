package io.ringmq.protocol;

/**
 * The subscription options byte of SUBSCRIBE. On MQTT 3.1.1 it holds only the requested QoS and bits 2..7 are
 * reserved [MQTT-3.8.3-4]; on 5.0:
 * <pre>
 *   bit  7 6 | 5 4             | 3                   | 2        | 1 0
 *        res | retain handling | retain as published | no local | maximum QoS
 * </pre>
 */
public final class SubscriptionOptions
{
    /** Send retained messages when the subscription is made. */
    public static final int SEND_RETAINED = 0;
    /** Send retained messages only when the subscription did not exist. */
    public static final int SEND_RETAINED_IF_NEW = 1;
    /** Never send retained messages on subscribe. */
    public static final int DO_NOT_SEND_RETAINED = 2;

    private SubscriptionOptions()
    {
    }

    /**
     * @return the options byte for these choices.
     */
    public static int of(
        final int qos, final boolean noLocal, final boolean retainAsPublished, final int retainHandling)
    {
        return (qos & 0x03) | (noLocal ? 0x04 : 0) | (retainAsPublished ? 0x08 : 0) | ((retainHandling & 0x03) << 4);
    }

    public static int qos(final int options)
    {
        return options & 0x03;
    }

    public static boolean noLocal(final int options)
    {
        return (options & 0x04) != 0;
    }

    public static boolean retainAsPublished(final int options)
    {
        return (options & 0x08) != 0;
    }

    public static int retainHandling(final int options)
    {
        return (options >>> 4) & 0x03;
    }

    /**
     * @param shared whether the filter is a {@code $share/} filter (5.0).
     * @return 0, or a negative {@link DecodeError}.
     */
    public static int validate(final int options, final int version, final boolean shared)
    {
        if (qos(options) == 3)
        {
            return DecodeError.INVALID_QOS;
        }
        if (version != MqttVersion.V5)
        {
            return (options & 0xFC) != 0 ? DecodeError.SUBSCRIPTION_OPTIONS_RESERVED : 0; // [MQTT-3.8.3-4]
        }
        if ((options & 0xC0) != 0)
        {
            return DecodeError.SUBSCRIPTION_OPTIONS_RESERVED; // [MQTT-3.8.3-5] in 5.0
        }
        if (retainHandling(options) == 3)
        {
            return DecodeError.RETAIN_HANDLING_INVALID;
        }
        if (shared && noLocal(options))
        {
            return DecodeError.NO_LOCAL_ON_SHARED; // [MQTT-3.8.3-4] in 5.0
        }
        return 0;
    }
}
