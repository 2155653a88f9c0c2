package io.ringmq.protocol;

import org.agrona.MutableDirectBuffer;

/**
 * Encodes SUBSCRIBE or UNSUBSCRIBE. Reusable: {@link #reset(int)}, add filters to {@link #filters()}, encode.
 */
public final class SubscribeEncoder implements PacketEncoder
{
    private final TopicFilterList filters = new TopicFilterList();
    private MqttProperties properties;
    private int packetType = PacketType.SUBSCRIBE;
    private int version = MqttVersion.V3_1_1;
    private int packetId;

    /**
     * @param packetType SUBSCRIBE or UNSUBSCRIBE.
     * @return this, with no filters, no properties, version 3.1.1.
     */
    public SubscribeEncoder reset(final int packetType)
    {
        if (packetType != PacketType.SUBSCRIBE && packetType != PacketType.UNSUBSCRIBE)
        {
            throw new IllegalArgumentException("not SUBSCRIBE or UNSUBSCRIBE: " + PacketType.name(packetType));
        }
        this.packetType = packetType;
        filters.clear();
        properties = null;
        version = MqttVersion.V3_1_1;
        packetId = 0;
        return this;
    }

    public SubscribeEncoder version(final int version)
    {
        this.version = version;
        return this;
    }

    public SubscribeEncoder packetId(final int packetId)
    {
        this.packetId = packetId;
        return this;
    }

    public SubscribeEncoder properties(final MqttProperties properties)
    {
        this.properties = properties;
        return this;
    }

    /**
     * @return the filter list to add to; options are ignored for UNSUBSCRIBE.
     */
    public TopicFilterList filters()
    {
        return filters;
    }

    public int remainingLength()
    {
        return 2 + Fields.sectionLength(version, properties) +
            filters.encodedLength(packetType == PacketType.SUBSCRIBE);
    }

    public int encodedLength()
    {
        return Fields.packetLength(remainingLength());
    }

    /**
     * @return bytes written.
     */
    public int encode(final MutableDirectBuffer buffer, final int offset)
    {
        Fields.checkPacketId(packetId);
        int pos = Fields.putFixedHeader(buffer, offset, packetType, 0x02, remainingLength());
        pos = Fields.putUnsignedShort(buffer, pos, packetId);
        pos = Fields.putProperties(buffer, pos, version, properties);
        pos = filters.encode(buffer, pos, packetType == PacketType.SUBSCRIBE);
        return pos - offset;
    }
}
