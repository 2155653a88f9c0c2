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
public final class PublishEncoder
{
    private final Slice topic = new Slice();
    private final Slice payload = new Slice();
    private MqttProperties properties;
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
     * @return the remaining length the packet will have.
     */
    public int remainingLength()
    {
        return 2 + topic.length() + (qos > 0 ? 2 : 0) + Fields.sectionLength(version, properties) + payload.length();
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
        pos = Fields.putProperties(buffer, pos, version, properties);
        final int payloadLength = payload.length();
        if (payloadLength > 0)
        {
            buffer.putBytes(pos, payload.buffer(), payload.offset(), payloadLength);
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
