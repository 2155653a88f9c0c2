package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * Encodes a decoded packet again from its flyweight's views, for decode-then-encode property tests.
 */
final class Reencode
{
    private Reencode()
    {
    }

    static byte[] of(final PacketDecoder decoder, final int version)
    {
        final int type = decoder.packetType();
        final MqttProperties none = null;
        switch (type)
        {
            case PacketType.CONNECT:
            {
                final ConnectFlyweight c = decoder.connect();
                final ConnectEncoder e = new ConnectEncoder().reset().version(c.protocolLevel())
                    .cleanStart(c.isCleanStart()).keepAlive(c.keepAlive()).properties(c.properties());
                e.clientId().wrap(c.clientId());
                if (c.hasWill())
                {
                    e.will(c.willQos(), c.isWillRetain(), c.willProperties());
                    e.willTopic().wrap(c.willTopic());
                    e.willPayload().wrap(c.willPayload());
                }
                if (c.hasUserName())
                {
                    e.userName().wrap(c.userName());
                }
                if (c.hasPassword())
                {
                    e.password().wrap(c.password());
                }
                final UnsafeBuffer out = new UnsafeBuffer(new byte[e.encodedLength()]);
                e.encode(out, 0);
                return out.byteArray();
            }
            case PacketType.CONNACK:
            {
                final ConnackFlyweight c = decoder.connack();
                final UnsafeBuffer out = new UnsafeBuffer(new byte[ConnackEncoder.encodedLength(version, c.properties())]);
                ConnackEncoder.encode(out, 0, version, c.isSessionPresent(), c.reasonCode(), c.properties());
                return out.byteArray();
            }
            case PacketType.PUBLISH:
            {
                final PublishFlyweight p = decoder.publish();
                final PublishEncoder e = new PublishEncoder().reset().version(version).dup(p.isDup()).qos(p.qos())
                    .retain(p.isRetain()).packetId(p.packetId()).properties(p.properties())
                    .topic(p.topic().buffer(), p.topic().offset(), p.topic().length())
                    .payload(p.payload().buffer(), p.payload().offset(), p.payload().length());
                final UnsafeBuffer out = new UnsafeBuffer(new byte[e.encodedLength()]);
                e.encode(out, 0);
                return out.byteArray();
            }
            case PacketType.PUBACK:
            case PacketType.PUBREC:
            case PacketType.PUBREL:
            case PacketType.PUBCOMP:
            {
                final AckFlyweight a = decoder.ack();
                final UnsafeBuffer out = new UnsafeBuffer(
                    new byte[AckEncoder.encodedLength(version, a.reasonCode(), a.properties())]);
                AckEncoder.encode(out, 0, type, a.packetId(), version, a.reasonCode(), a.properties());
                return out.byteArray();
            }
            case PacketType.SUBSCRIBE:
            case PacketType.UNSUBSCRIBE:
            {
                final SubscribeFlyweight s = decoder.subscribe();
                final SubscribeEncoder e = new SubscribeEncoder().reset(type).version(version).packetId(s.packetId())
                    .properties(s.properties());
                for (int i = 0; i < s.filters().count(); i++)
                {
                    final Slice f = s.filters().filter(i);
                    e.filters().add(f.buffer(), f.offset(), f.length(), s.filters().options(i));
                }
                final UnsafeBuffer out = new UnsafeBuffer(new byte[e.encodedLength()]);
                e.encode(out, 0);
                return out.byteArray();
            }
            case PacketType.SUBACK:
            case PacketType.UNSUBACK:
            {
                final SubackFlyweight s = decoder.suback();
                final int[] codes = new int[s.reasonCodeCount()];
                for (int i = 0; i < codes.length; i++)
                {
                    codes[i] = s.reasonCode(i);
                }
                final UnsafeBuffer out = new UnsafeBuffer(
                    new byte[SubackEncoder.encodedLength(type, version, s.properties(), codes.length)]);
                SubackEncoder.encode(out, 0, type, version, s.packetId(), s.properties(), codes, codes.length);
                return out.byteArray();
            }
            case PacketType.PINGREQ:
            case PacketType.PINGRESP:
            {
                final UnsafeBuffer out = new UnsafeBuffer(new byte[PingCodec.LENGTH]);
                PingCodec.encode(out, 0, type);
                return out.byteArray();
            }
            default:
            {
                final int code = type == PacketType.AUTH ? decoder.auth().reasonCode() : decoder.disconnect().reasonCode();
                final MqttProperties properties = type == PacketType.AUTH ?
                    decoder.auth().properties() : decoder.disconnect().properties();
                final UnsafeBuffer out = new UnsafeBuffer(
                    new byte[DisconnectEncoder.encodedLength(type, version, code, properties)]);
                DisconnectEncoder.encode(out, 0, type, version, code, null == properties ? none : properties);
                return out.byteArray();
            }
        }
    }
}
