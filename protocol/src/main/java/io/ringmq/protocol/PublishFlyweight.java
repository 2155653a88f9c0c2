package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes a PUBLISH in place: topic, packet identifier, properties and payload stay views into the caller's
 * buffer. Nothing is allocated per message.
 * <pre>
 *   byte 0      : 0011 | DUP | QoS(2) | RETAIN
 *   bytes 1..4  : remaining length (variable byte integer)
 *   topic name  : UTF-8 string, no wildcards
 *   packet id   : two bytes, only when QoS &gt; 0, never 0
 *   properties  : MQTT 5.0 only
 *   payload     : the rest
 * </pre>
 */
public final class PublishFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private final Slice topic = new Slice();
    private final Slice payload = new Slice();
    private DirectBuffer buffer;
    private int offset;
    private int length;
    private int flags;
    private int packetId;
    private int propertiesOffset;
    private int propertiesLength;

    /**
     * @param buffer  holding one complete PUBLISH.
     * @param offset  of its first byte.
     * @param length  of the whole packet, as framed by {@link FrameDecoder}.
     * @param version the connection's protocol level.
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        final int pos = Fields.checkFixedHeader(buffer, offset, length, PacketType.PUBLISH);
        if (pos < 0)
        {
            return pos;
        }
        return wrapFramed(buffer, offset, length, pos - offset, version);
    }

    /**
     * {@link #wrap} of a PUBLISH that {@link FrameDecoder} has framed: its type and remaining length are known
     * to agree with {@code length}, so they are not read again.
     *
     * @param headerLength the fixed header's length, {@link FrameDecoder#headerLength()}: trusted, so only the
     *                     package's {@link PacketDecoder} calls this.
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    int wrapFramed(
        final DirectBuffer buffer, final int offset, final int length, final int headerLength, final int version)
    {
        int pos = offset + headerLength;
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        flags = buffer.getByte(offset) & 0x0F;
        final int qos = qos();
        if (qos == 3)
        {
            return DecodeError.INVALID_QOS; // [MQTT-3.3.1-4]
        }
        if (qos == 0 && isDup())
        {
            return DecodeError.DUP_WITH_QOS_0; // [MQTT-3.3.1-2]
        }
        final int end = offset + length;
        final int topicEnd = Fields.skipBinary(buffer, pos, end); // [MQTT-3.3.2-1], validated below
        if (topicEnd < 0)
        {
            return topicEnd;
        }
        topic.wrap(buffer, pos + 2, topicEnd - pos - 2);
        pos = topicEnd;
        if (qos > 0)
        {
            packetId = Fields.readPacketId(buffer, pos, end);
            if (packetId < 0)
            {
                return packetId;
            }
            pos += 2;
        }
        else
        {
            packetId = 0;
        }
        if (version == MqttVersion.V5)
        {
            final int consumed = properties.decode(buffer, pos, end, PacketType.PUBLISH);
            if (consumed < 0)
            {
                return consumed;
            }
            propertiesOffset = pos;
            propertiesLength = consumed;
            pos += consumed;
        }
        else
        {
            properties.clear();
            propertiesOffset = pos;
            propertiesLength = 0;
        }
        if (topic.length() > 0 || !properties.has(PropertyId.TOPIC_ALIAS))
        {
            // an empty topic is only allowed with a Topic Alias (MQTT 5.0) [MQTT-4.7.3-1]
            final int valid = Topics.validateNameUtf8(buffer, topic.offset(), topic.length());
            if (valid < 0)
            {
                return valid;
            }
        }
        payload.wrap(buffer, pos, end - pos);
        return length;
    }

    /**
     * Wraps a PUBLISH that {@link #wrap} has validated already (the broker's I/O agent did, before handing it to the
     * stages): finds the topic, packet identifier, property section and payload without checking them again, so a
     * packet is validated once. {@link #properties()} is not decoded: use {@link #propertiesOffset()} and
     * {@link #propertiesLength()}.
     *
     * @return {@code length}.
     */
    public int wrapValidated(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        this.buffer = buffer;
        this.offset = offset;
        this.length = length;
        flags = buffer.getByte(offset) & 0x0F;
        int pos = offset + 1;
        while ((buffer.getByte(pos) & 0x80) != 0) // the remaining length
        {
            pos++;
        }
        pos++;
        final int topicLength = buffer.getShort(pos, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
        topic.wrap(buffer, pos + 2, topicLength);
        pos += 2 + topicLength;
        if (qos() > 0)
        {
            packetId = buffer.getShort(pos, java.nio.ByteOrder.BIG_ENDIAN) & 0xFFFF;
            pos += 2;
        }
        else
        {
            packetId = 0;
        }
        properties.clear();
        propertiesOffset = pos;
        propertiesLength = 0;
        if (version == MqttVersion.V5)
        {
            final int packed = VariableByteInteger.decode(buffer, pos, offset + length);
            propertiesLength = VariableByteInteger.byteCount(packed) + VariableByteInteger.value(packed);
            pos += propertiesLength;
        }
        payload.wrap(buffer, pos, offset + length - pos);
        return length;
    }

    public boolean isDup()
    {
        return (flags & 0x08) != 0;
    }

    public int qos()
    {
        return qosOf(flags);
    }

    /**
     * @return the QoS a PUBLISH's first byte (or its four flag bits) carries.
     */
    public static int qosOf(final int firstByte)
    {
        return (firstByte >>> 1) & 0x03;
    }

    /**
     * @return the RETAIN flag a PUBLISH's first byte (or its four flag bits) carries.
     */
    public static boolean isRetainOf(final int firstByte)
    {
        return (firstByte & 0x01) != 0;
    }

    public boolean isRetain()
    {
        return isRetainOf(flags);
    }

    /**
     * @return the fixed header's four flag bits (DUP, QoS, RETAIN).
     */
    public int flags()
    {
        return flags;
    }

    /**
     * @return the packet identifier, 0 for QoS 0.
     */
    public int packetId()
    {
        return packetId;
    }

    /**
     * @return the topic name (may be empty on MQTT 5.0 when a Topic Alias stands for it).
     */
    public Slice topic()
    {
        return topic;
    }

    /**
     * @return the application message.
     */
    public Slice payload()
    {
        return payload;
    }

    /**
     * @return the decoded MQTT 5.0 properties (empty on 3.1.1).
     */
    public MqttProperties properties()
    {
        return properties;
    }

    /**
     * @return the offset of the raw property section (length prefix included), to forward it without re-encoding.
     */
    public int propertiesOffset()
    {
        return propertiesOffset;
    }

    /**
     * @return the length of the raw property section, 0 on 3.1.1.
     */
    public int propertiesLength()
    {
        return propertiesLength;
    }

    public DirectBuffer buffer()
    {
        return buffer;
    }

    public int offset()
    {
        return offset;
    }

    public int length()
    {
        return length;
    }
}
