package io.ringmq.pipeline;

/**
 * An application message kept beyond the packet that carried it: a retained message or a will. Immutable, so one
 * instance is shared by every subscriber it goes to.
 *
 * @param topic       the topic name (UTF-8 bytes).
 * @param payload     the application message.
 * @param qos         the QoS it was published with.
 * @param retain      the RETAIN flag it was published with.
 * @param properties  the MQTT 5.0 properties that travel with it, raw (see
 *                    {@link io.ringmq.protocol.MessageProperties}); empty for a 3.1.1 publisher.
 * @param expiresAtMs when its Message Expiry Interval runs out ({@link System#currentTimeMillis()}), or
 *                    {@link #NEVER}.
 * @param source      who published it, kept with a retained message under {@code --check-retain-source} (null:
 *                    the broker, a publisher not known, or not kept).
 */
public record Message(byte[] topic, byte[] payload, int qos, boolean retain, byte[] properties, long expiresAtMs,
    MessageSource source)
{
    /** No Message Expiry Interval. */
    public static final long NEVER = 0;
    private static final byte[] NONE = new byte[0];

    /**
     * A message without properties that never expires.
     */
    public Message(final byte[] topic, final byte[] payload, final int qos, final boolean retain)
    {
        this(topic, payload, qos, retain, NONE, NEVER);
    }

    /**
     * A message with no source kept.
     */
    public Message(final byte[] topic, final byte[] payload, final int qos, final boolean retain,
        final byte[] properties, final long expiresAtMs)
    {
        this(topic, payload, qos, retain, properties, expiresAtMs, null);
    }

    /**
     * @return this message from {@code from} (itself when that is its source already).
     */
    public Message withSource(final MessageSource from)
    {
        return from == source ? this : new Message(topic, payload, qos, retain, properties, expiresAtMs, from);
    }

    /**
     * @return whether its expiry interval has run out at {@code nowMs} [MQTT-3.3.2-5].
     */
    public boolean isExpired(final long nowMs)
    {
        return expiresAtMs != NEVER && nowMs >= expiresAtMs;
    }

    /**
     * @return the seconds of its expiry interval left at {@code nowMs}, rounded up, or -1 when it has none.
     */
    public long remainingExpirySeconds(final long nowMs)
    {
        return remainingSeconds(expiresAtMs, nowMs);
    }

    /**
     * @return the seconds left until {@code expiresAtMs}, rounded up (at least 1 while it has not run out), or -1
     * for {@link #NEVER}.
     */
    public static long remainingSeconds(final long expiresAtMs, final long nowMs)
    {
        return expiresAtMs == NEVER ? -1 : Math.max(1, (expiresAtMs - nowMs + 999) / 1000);
    }
}
