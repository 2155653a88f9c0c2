package io.ringmq.protocol;

import org.agrona.DirectBuffer;

/**
 * Frames and decodes one packet of any type: {@link FrameDecoder} first, then the flyweight for that type. One
 * instance per connection-owning thread; after a positive result, {@link #packetType()} says which flyweight
 * holds the packet. Before CONNECT is accepted pass {@link MqttVersion#V5} (every packet type is then defined)
 * and expect the caller to accept only CONNECT.
 */
public final class PacketDecoder
{
    private final FrameDecoder frame = new FrameDecoder();
    private final ConnectFlyweight connect = new ConnectFlyweight();
    private final ConnackFlyweight connack = new ConnackFlyweight();
    private final PublishFlyweight publish = new PublishFlyweight();
    private final AckFlyweight ack = new AckFlyweight();
    private final SubscribeFlyweight subscribe = new SubscribeFlyweight();
    private final SubackFlyweight suback = new SubackFlyweight();
    private final DisconnectFlyweight disconnect = new DisconnectFlyweight();
    private final AuthFlyweight auth = new AuthFlyweight();

    /**
     * @param buffer          holding received bytes.
     * @param offset          of the first unconsumed byte.
     * @param available       bytes from {@code offset}.
     * @param version         the connection's protocol level.
     * @param maxPacketLength the largest packet accepted.
     * @return the length of the decoded packet (consume that many bytes), {@link DecodeError#NEED_MORE}, or a
     * negative {@link DecodeError}.
     */
    public int decode(
        final DirectBuffer buffer, final int offset, final int available, final int version, final int maxPacketLength)
    {
        final int length = frame.decode(buffer, offset, available, version, maxPacketLength);
        if (length <= 0)
        {
            return length;
        }
        switch (frame.packetType())
        {
            case PacketType.CONNECT: return connect.wrap(buffer, offset, length);
            case PacketType.CONNACK: return connack.wrap(buffer, offset, length, version);
            case PacketType.PUBLISH:
                return publish.wrapFramed(buffer, offset, length, frame.headerLength(), version); // framed above
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP: return ack.wrap(buffer, offset, length, version);
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE: return subscribe.wrap(buffer, offset, length, version);
            case PacketType.SUBACK:
            case PacketType.UNSUBACK: return suback.wrap(buffer, offset, length, version);
            case PacketType.PINGREQ:
            case PacketType.PINGRESP: return PingCodec.decode(buffer, offset, length, frame.packetType());
            case PacketType.DISCONNECT: return disconnect.wrap(buffer, offset, length, version);
            default: return auth.wrap(buffer, offset, length, version);
        }
    }

    /**
     * @return the type of the last packet framed.
     */
    public int packetType()
    {
        return frame.packetType();
    }

    /**
     * @return the framing state, e.g. the pending packet's length while its body is still arriving.
     */
    public FrameDecoder frame()
    {
        return frame;
    }

    public ConnectFlyweight connect()
    {
        return connect;
    }

    public ConnackFlyweight connack()
    {
        return connack;
    }

    public PublishFlyweight publish()
    {
        return publish;
    }

    /**
     * @return PUBACK, PUBREC, PUBREL and PUBCOMP.
     */
    public AckFlyweight ack()
    {
        return ack;
    }

    /**
     * @return SUBSCRIBE and UNSUBSCRIBE.
     */
    public SubscribeFlyweight subscribe()
    {
        return subscribe;
    }

    /**
     * @return SUBACK and UNSUBACK.
     */
    public SubackFlyweight suback()
    {
        return suback;
    }

    public DisconnectFlyweight disconnect()
    {
        return disconnect;
    }

    public AuthFlyweight auth()
    {
        return auth;
    }
}
