package io.ringmq.pipeline;

/**
 * An application message kept beyond the packet that carried it: a retained message, a will, or a QoS 1/2
 * message waiting in a session's in-flight window or queue. Immutable, so one instance is shared by every
 * subscriber it goes to.
 *
 * @param topic   the topic name (UTF-8 bytes).
 * @param payload the application message.
 * @param qos     the QoS it was published with.
 * @param retain  the RETAIN flag it was published with.
 */
public record Message(byte[] topic, byte[] payload, int qos, boolean retain)
{
}
