package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes SUBSCRIBE (fixed header flags 0010 [MQTT-3.8.1-1]) and UNSUBSCRIBE (0010 [MQTT-3.10.1-1]): a non-zero
 * packet identifier, properties on 5.0, then at least one topic filter [MQTT-3.8.3-3] [MQTT-3.10.3-2], with an
 * options byte each for SUBSCRIBE.
 */
public final class SubscribeFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private final TopicFilterList filters = new TopicFilterList();
    private int packetType;
    private int packetId;

    /**
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        filters.clear();
        properties.clear();
        packetType = length > 0 ? (buffer.getByte(offset) & 0xFF) >>> 4 : 0;
        if (packetType != PacketType.SUBSCRIBE && packetType != PacketType.UNSUBSCRIBE)
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        int pos = Fields.checkFixedHeader(buffer, offset, length, packetType);
        if (pos < 0)
        {
            return pos;
        }
        final int end = offset + length;
        packetId = Fields.readPacketId(buffer, pos, end);
        if (packetId < 0)
        {
            return packetId;
        }
        pos += 2;
        if (version == MqttVersion.V5)
        {
            final int consumed = properties.decode(buffer, pos, end, packetType);
            if (consumed < 0)
            {
                return consumed;
            }
            pos += consumed;
        }
        final boolean subscribe = packetType == PacketType.SUBSCRIBE;
        final int decoded = filters.decode(buffer, pos, end, version, subscribe);
        if (decoded < 0)
        {
            return decoded;
        }
        if (filters.count() == 0)
        {
            return subscribe ? DecodeError.SUBSCRIBE_EMPTY : DecodeError.UNSUBSCRIBE_EMPTY;
        }
        return length;
    }

    /**
     * @return SUBSCRIBE or UNSUBSCRIBE.
     */
    public int packetType()
    {
        return packetType;
    }

    public int packetId()
    {
        return packetId;
    }

    public MqttProperties properties()
    {
        return properties;
    }

    /**
     * @return the filters, with their options for SUBSCRIBE.
     */
    public TopicFilterList filters()
    {
        return filters;
    }
}
