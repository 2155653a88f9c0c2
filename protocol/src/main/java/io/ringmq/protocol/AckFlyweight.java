package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Decodes the four QoS acknowledgements, PUBACK, PUBREC, PUBREL and PUBCOMP, which share one layout: a packet
 * identifier, then on MQTT 5.0 an optional reason code and optional properties. PUBREL's fixed header flags must
 * be 0010 [MQTT-3.6.1-1]; the others 0000.
 */
public final class AckFlyweight
{
    private final MqttProperties properties = new MqttProperties();
    private int packetType;
    private int packetId;
    private int reasonCode;

    /**
     * @param buffer  holding one complete acknowledgement.
     * @param offset  of its first byte.
     * @param length  of the whole packet.
     * @param version the connection's protocol level.
     * @return {@code length}, or a negative {@link DecodeError}.
     */
    public int wrap(final DirectBuffer buffer, final int offset, final int length, final int version)
    {
        packetType = length > 0 ? (buffer.getByte(offset) & 0xFF) >>> 4 : 0;
        if (packetType < PacketType.PUBACK || packetType > PacketType.PUBCOMP)
        {
            return DecodeError.RESERVED_PACKET_TYPE;
        }
        final int pos = Fields.checkFixedHeader(buffer, offset, length, packetType);
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
        if (version != MqttVersion.V5)
        {
            properties.clear();
            reasonCode = ReasonCode.SUCCESS;
            return pos + 2 == end ? length : DecodeError.REMAINING_LENGTH_INVALID;
        }
        reasonCode = ReasonTail.decode(buffer, pos + 2, end, packetType, properties);
        return reasonCode < 0 ? reasonCode : length;
    }

    /**
     * Decodes the acknowledgement that starts at {@code offset} among several laid end to end (a run the I/O agent
     * handed on in one slot): its length is its own fixed header's.
     *
     * @param limit one past the last byte of the run.
     * @return the length of this acknowledgement (where the next one starts), or a negative {@link DecodeError}.
     */
    public int wrapNext(final DirectBuffer buffer, final int offset, final int limit, final int version)
    {
        if (limit - offset < 2)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        final int packed = VariableByteInteger.decode(buffer, offset + 1, limit);
        if (packed <= 0)
        {
            return packed == 0 ? DecodeError.FIELD_OVERRUNS_PACKET : packed;
        }
        final long length = 1L + VariableByteInteger.byteCount(packed) + VariableByteInteger.value(packed);
        if (length > limit - offset)
        {
            return DecodeError.FIELD_OVERRUNS_PACKET;
        }
        return wrap(buffer, offset, (int)length, version);
    }

    /**
     * @return PUBACK, PUBREC, PUBREL or PUBCOMP.
     */
    public int packetType()
    {
        return packetType;
    }

    public int packetId()
    {
        return packetId;
    }

    /**
     * @return the reason code; 0x00 on MQTT 3.1.1 and when omitted.
     */
    public int reasonCode()
    {
        return reasonCode;
    }

    public MqttProperties properties()
    {
        return properties;
    }
}
