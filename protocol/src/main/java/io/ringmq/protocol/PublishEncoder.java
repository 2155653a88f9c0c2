package io.ringmq.protocol;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * Encodes a PUBLISH straight into a caller's buffer. Reusable: set the fields, ask {@link #encodedLength()},
 * then {@link #encode(MutableDirectBuffer, int)}. Fields are views, so encoding allocates nothing.
 * <p>
 * For fan-out, encode once per (version, QoS, retain) variant and patch each subscriber's packet identifier with
 * {@link #putPacketId(MutableDirectBuffer, int, int)} at {@link #packetIdOffset()}.
 */
public final class PublishEncoder implements PacketEncoder
{
    private final Slice topic = new Slice();
    private final Slice payload = new Slice();
    private MqttProperties properties;
    private final Slice forwarded = new Slice();
    private long messageExpiry = -1;
    private int[] subscriptionIds;
    private int subscriptionIdCount;
    private int topicAlias;
    private int version = MqttVersion.V3_1_1;
    private boolean dup;
    private int qos;
    private boolean retain;
    private int packetId;
    private int packetIdOffset = -1;

    /**
     * Clears every field back to a QoS 0 MQTT 3.1.1 PUBLISH with no topic and no payload.
     *
     * @return this.
     */
    public PublishEncoder reset()
    {
        topic.reset();
        payload.reset();
        properties = null;
        forwarded.reset();
        messageExpiry = -1;
        subscriptionIds = null;
        subscriptionIdCount = 0;
        topicAlias = 0;
        version = MqttVersion.V3_1_1;
        dup = false;
        qos = 0;
        retain = false;
        packetId = 0;
        return this;
    }

    public PublishEncoder version(final int version)
    {
        this.version = version;
        return this;
    }

    public PublishEncoder dup(final boolean dup)
    {
        this.dup = dup;
        return this;
    }

    public PublishEncoder qos(final int qos)
    {
        if (qos < 0 || qos > 2)
        {
            throw new IllegalArgumentException("QoS must be 0, 1 or 2: " + qos);
        }
        this.qos = qos;
        return this;
    }

    public PublishEncoder retain(final boolean retain)
    {
        this.retain = retain;
        return this;
    }

    /**
     * @param packetId 1..65535; ignored at QoS 0.
     * @return this.
     */
    public PublishEncoder packetId(final int packetId)
    {
        this.packetId = packetId;
        return this;
    }

    public PublishEncoder topic(final DirectBuffer buffer, final int offset, final int length)
    {
        topic.wrap(buffer, offset, length);
        return this;
    }

    /**
     * Sets the topic from a string (allocates; for set-up paths).
     *
     * @return this.
     */
    public PublishEncoder topic(final String topic)
    {
        this.topic.wrap(topic);
        return this;
    }

    public PublishEncoder payload(final DirectBuffer buffer, final int offset, final int length)
    {
        payload.wrap(buffer, offset, length);
        return this;
    }

    public PublishEncoder payload(final byte[] payload)
    {
        this.payload.wrap(payload);
        return this;
    }

    /**
     * @param properties MQTT 5.0 properties, or null for none; ignored on 3.1.1.
     * @return this.
     */
    public PublishEncoder properties(final MqttProperties properties)
    {
        this.properties = properties;
        return this;
    }

    /**
     * Properties a broker forwards as the publisher sent them: raw property bytes (no length prefix), written after
     * {@link #properties(MqttProperties)}'s and before the ones set below. See {@link MessageProperties}.
     *
     * @return this.
     */
    public PublishEncoder forwardedProperties(final DirectBuffer buffer, final int offset, final int length)
    {
        forwarded.wrap(buffer, offset, length);
        return this;
    }

    /**
     * @param seconds the Message Expiry Interval to send (what remains of the publisher's), or -1 for none.
     * @return this.
     */
    public PublishEncoder messageExpiry(final long seconds)
    {
        this.messageExpiry = seconds;
        return this;
    }

    /**
     * @param ids   the Subscription Identifiers of the receiver's matching subscriptions [MQTT-3.3.4-3]; the first
     *              {@code count} are written (a view: the array is read at encode time).
     * @return this.
     */
    public PublishEncoder subscriptionIds(final int[] ids, final int count)
    {
        this.subscriptionIds = ids;
        this.subscriptionIdCount = count;
        return this;
    }

    /**
     * @param alias the Topic Alias to send, 0 for none; with an empty topic it stands for the topic.
     * @return this.
     */
    public PublishEncoder topicAlias(final int alias)
    {
        this.topicAlias = alias;
        return this;
    }

    /**
     * @return the remaining length the packet will have.
     */
    public int remainingLength()
    {
        return 2 + topic.length() + (qos > 0 ? 2 : 0) + propertySectionLength() + payload.length();
    }

    private boolean hasExtraProperties()
    {
        return forwarded.length() > 0 || messageExpiry >= 0 || subscriptionIdCount > 0 || topicAlias > 0;
    }

    private int propertiesLength()
    {
        int length = (null == properties ? 0 : properties.length()) + forwarded.length();
        if (messageExpiry >= 0)
        {
            length += 5;
        }
        for (int i = 0; i < subscriptionIdCount; i++)
        {
            length += 1 + VariableByteInteger.encodedLength(subscriptionIds[i]);
        }
        if (topicAlias > 0)
        {
            length += 3;
        }
        return length;
    }

    private int propertySectionLength()
    {
        if (version != MqttVersion.V5 || !hasExtraProperties())
        {
            return Fields.sectionLength(version, properties);
        }
        final int length = propertiesLength();
        return VariableByteInteger.encodedLength(length) + length;
    }

    private int putPropertySection(final MutableDirectBuffer buffer, final int offset)
    {
        if (version != MqttVersion.V5 || !hasExtraProperties())
        {
            return Fields.putProperties(buffer, offset, version, properties);
        }
        final int length = propertiesLength();
        int pos = offset + VariableByteInteger.encode(buffer, offset, length);
        if (null != properties)
        {
            final int own = properties.sectionLength();
            final int ownPrefix = VariableByteInteger.encodedLength(properties.length());
            properties.encode(buffer, pos - ownPrefix); // its own prefix lands on ours, then is overwritten below
            VariableByteInteger.encode(buffer, offset, length);
            pos += own - ownPrefix;
        }
        if (forwarded.length() > 0)
        {
            SmallCopy.copy(buffer, pos, forwarded.buffer(), forwarded.offset(), forwarded.length());
            pos += forwarded.length();
        }
        if (messageExpiry >= 0)
        {
            buffer.putByte(pos, (byte)PropertyId.MESSAGE_EXPIRY_INTERVAL);
            buffer.putInt(pos + 1, (int)messageExpiry, java.nio.ByteOrder.BIG_ENDIAN);
            pos += 5;
        }
        for (int i = 0; i < subscriptionIdCount; i++)
        {
            buffer.putByte(pos++, (byte)PropertyId.SUBSCRIPTION_IDENTIFIER);
            pos += VariableByteInteger.encode(buffer, pos, subscriptionIds[i]);
        }
        if (topicAlias > 0)
        {
            buffer.putByte(pos, (byte)PropertyId.TOPIC_ALIAS);
            Fields.putUnsignedShort(buffer, pos + 1, topicAlias);
            pos += 3;
        }
        return pos;
    }

    /**
     * @return the whole packet's length.
     */
    public int encodedLength()
    {
        return Fields.packetLength(remainingLength());
    }

    /**
     * @return bytes written, equal to {@link #encodedLength()}.
     */
    public int encode(final MutableDirectBuffer buffer, final int offset)
    {
        if (qos > 0)
        {
            Fields.checkPacketId(packetId);
        }
        final int flags = (dup ? 0x08 : 0) | (qos << 1) | (retain ? 0x01 : 0);
        int pos = Fields.putFixedHeader(buffer, offset, PacketType.PUBLISH, flags, remainingLength());
        pos = Fields.putSlice(buffer, pos, topic);
        if (qos > 0)
        {
            packetIdOffset = pos - offset;
            pos = Fields.putUnsignedShort(buffer, pos, packetId);
        }
        else
        {
            packetIdOffset = -1;
        }
        pos = putPropertySection(buffer, pos);
        final int payloadLength = payload.length();
        if (payloadLength > 0)
        {
            SmallCopy.copy(buffer, pos, payload.buffer(), payload.offset(), payloadLength);
        }
        return pos + payloadLength - offset;
    }

    /**
     * @return where the packet identifier sits, relative to the start of the last encoded packet; -1 at QoS 0.
     */
    public int packetIdOffset()
    {
        return packetIdOffset;
    }

    /**
     * Rewrites the packet identifier of an encoded QoS &gt; 0 PUBLISH.
     */
    public static void putPacketId(final MutableDirectBuffer buffer, final int absoluteOffset, final int packetId)
    {
        Fields.checkPacketId(packetId);
        Fields.putUnsignedShort(buffer, absoluteOffset, packetId);
    }

    /**
     * Sets or clears the DUP flag of an encoded PUBLISH in place (for a resend).
     */
    public static void putDup(final MutableDirectBuffer buffer, final int packetOffset, final boolean dup)
    {
        final byte first = buffer.getByte(packetOffset);
        buffer.putByte(packetOffset, (byte)(dup ? first | 0x08 : first & ~0x08));
    }
}
