package io.ringmq.pipeline;

import io.ringmq.protocol.ConnectFlyweight;
import io.ringmq.protocol.MessageProperties;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PropertyId;
import org.agrona.ExpandableArrayBuffer;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A CONNECT's will as the routing stage keeps it: topic, payload, QoS, RETAIN, the 5.0 properties that travel with
 * it (Will Delay Interval is the broker's, not the message's), and its Message Expiry Interval, which counts from
 * publication: kept relative (as a negative {@link Message#expiresAtMs()}) until {@link #toPublish}.
 */
final class Wills
{
    private static final byte[] NO_BYTES = new byte[0];

    private Wills()
    {
    }

    /**
     * @param scratch a buffer the will's properties are encoded through.
     */
    static Message fromConnect(final ConnectFlyweight connect, final ExpandableArrayBuffer scratch)
    {
        byte[] properties = NO_BYTES;
        long expirySeconds = -1;
        if (connect.protocolLevel() == MqttVersion.V5 && !connect.willProperties().isEmpty())
        {
            final MqttProperties will = connect.willProperties();
            expirySeconds = will.longValue(PropertyId.MESSAGE_EXPIRY_INTERVAL, -1);
            scratch.checkLimit(will.sectionLength());
            will.encode(scratch, 0);
            final int start = MessageProperties.sectionStart(scratch, 0);
            final int length = MessageProperties.sectionLength(scratch, 0);
            properties = new byte[MessageProperties.forwardableLength(scratch, start, length)];
            MessageProperties.copyForwardable(scratch, start, length, new UnsafeBuffer(properties), 0);
        }
        return new Message(connect.willTopic().toByteArray(), connect.willPayload().toByteArray(),
            connect.willQos(), connect.isWillRetain(), properties,
            expirySeconds < 0 ? Message.NEVER : -expirySeconds - 1);
    }

    /**
     * @return the CONNECT's Will Delay Interval in seconds (0: published as soon as the connection is lost).
     */
    static long delaySeconds(final ConnectFlyweight connect)
    {
        return connect.protocolLevel() == MqttVersion.V5 ?
            connect.willProperties().longValue(PropertyId.WILL_DELAY_INTERVAL, 0) : 0;
    }

    /**
     * @return the will as it is published now: its expiry interval starts counting [MQTT-3.3.2-5].
     */
    static Message toPublish(final Message will)
    {
        if (will.expiresAtMs() >= 0)
        {
            return will;
        }
        final long seconds = -will.expiresAtMs() - 1;
        return new Message(will.topic(), will.payload(), will.qos(), will.retain(), will.properties(),
            System.currentTimeMillis() + seconds * 1000);
    }
}
