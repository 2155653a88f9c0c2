package io.ringmq.pipeline.delivery;

import org.agrona.DirectBuffer;
import org.agrona.ExpandableArrayBuffer;

import java.util.ArrayDeque;

/**
 * A copy of an application message that must outlive its slot (QoS 1 and 2 in flight or queued, for one or
 * more sessions of a shard): topic and payload in one reused buffer, counted references, and a pool, so the
 * QoS 1 and 2 paths allocate nothing per message in steady state. Owned by one delivery shard.
 */
final class SharedMessage
{
    private static final int SHRINK_ABOVE = 4 * 1024; // a pool of 1,024 holds at most 4 MiB after a burst

    private ExpandableArrayBuffer bytes = new ExpandableArrayBuffer(256);
    private int topicLength;
    private int propertiesLength;
    private int payloadLength;
    private long expiresAtMs;
    private int publishedQos;
    private int references;
    /** Its number in the store, when the persistence stage stored it for persistent sessions; else 0. */
    private long messageNumber;

    long messageNumber()
    {
        return messageNumber;
    }

    void messageNumber(final long messageNumber)
    {
        this.messageNumber = messageNumber;
    }

    DirectBuffer buffer()
    {
        return bytes;
    }

    int topicLength()
    {
        return topicLength;
    }

    /**
     * @return where the MQTT 5.0 properties that travel with it start: raw, after the topic.
     */
    int propertiesOffset()
    {
        return topicLength;
    }

    int propertiesLength()
    {
        return propertiesLength;
    }

    int payloadOffset()
    {
        return topicLength + propertiesLength;
    }

    /**
     * @return the QoS it was published with (a subscriber may have it at a lower one).
     */
    int publishedQos()
    {
        return publishedQos;
    }

    /**
     * @return when its Message Expiry Interval runs out, or {@link io.ringmq.pipeline.Message#NEVER}.
     */
    long expiresAtMs()
    {
        return expiresAtMs;
    }

    int payloadLength()
    {
        return payloadLength;
    }

    /**
     * @return topic and payload bytes, what the per-client byte limits count.
     */
    int length()
    {
        return topicLength + propertiesLength + payloadLength;
    }

    void retain()
    {
        references++;
    }

    /**
     * The pool of one shard.
     */
    static final class Pool
    {
        private final ArrayDeque<SharedMessage> free = new ArrayDeque<>();
        private final int maxFree;

        Pool(final int maxFree)
        {
            this.maxFree = maxFree;
        }

        /**
         * @return a copy with no reference yet (the caller {@link SharedMessage#retain()}s it per holder).
         */
        SharedMessage copy(final DirectBuffer topic, final int topicOffset, final int topicLength,
            final DirectBuffer properties, final int propertiesOffset, final int propertiesLength,
            final DirectBuffer payload, final int payloadOffset, final int payloadLength, final long expiresAtMs,
            final int publishedQos)
        {
            final SharedMessage message = free.isEmpty() ? new SharedMessage() : free.pollFirst();
            message.bytes.putBytes(0, topic, topicOffset, topicLength);
            if (propertiesLength > 0)
            {
                message.bytes.putBytes(topicLength, properties, propertiesOffset, propertiesLength);
            }
            message.bytes.putBytes(topicLength + propertiesLength, payload, payloadOffset, payloadLength);
            message.topicLength = topicLength;
            message.propertiesLength = propertiesLength;
            message.payloadLength = payloadLength;
            message.expiresAtMs = expiresAtMs;
            message.publishedQos = publishedQos;
            message.references = 0;
            message.messageNumber = 0;
            return message;
        }

        /**
         * Drops one reference; the last one gives the message back.
         */
        void release(final SharedMessage message)
        {
            if (--message.references == 0)
            {
                recycle(message);
            }
        }

        /**
         * Gives back a copy nobody took a reference to.
         */
        void releaseIfUnused(final SharedMessage message)
        {
            if (null != message && message.references == 0)
            {
                recycle(message);
            }
        }

        private void recycle(final SharedMessage message)
        {
            if (free.size() < maxFree)
            {
                if (message.bytes.capacity() > SHRINK_ABOVE)
                {
                    message.bytes = new ExpandableArrayBuffer(256); // a large message's buffer is not kept
                }
                free.addLast(message);
            }
        }
    }
}
