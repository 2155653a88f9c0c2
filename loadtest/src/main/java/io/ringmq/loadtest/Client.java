package io.ringmq.loadtest;

import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;

/**
 * One MQTT connection of the generator, on a non-blocking socket, with its own buffers. A publisher stamps each
 * payload with its id, a sequence number and the intended send time; a subscriber reads the stamp back to record
 * latency and to check for loss, duplicates and reordering per publisher.
 */
final class Client
{
    static final int STAMP_LENGTH = 16;

    enum State
    {
        DIALING, CONNECTING, CONNECTED, SUBSCRIBING, READY, CLOSED
    }

    final int id;
    final boolean publisher;
    final SocketChannel channel;
    SelectionKey key;
    State state = State.DIALING;
    ByteBuffer in = ByteBuffer.allocateDirect(64 * 1024);
    ByteBuffer out = ByteBuffer.allocateDirect(64 * 1024);
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer outView = new UnsafeBuffer(0, 0);
    private final PacketDecoder decoder = new PacketDecoder();
    private final int version;
    long dialStartNs;
    long connectedNs = -1;
    int pingsOutstanding;
    long pingsAnswered;

    // publisher
    final UnsafeBuffer payload;
    final byte[] topic;
    private final PublishEncoder publishEncoder = new PublishEncoder();
    long nextSendNs;
    long intervalNs;
    int sequence;
    int inflight;
    int nextPacketId = 1;
    long acknowledged;
    /** Messages sent since the last PINGREQ (QoS 0 floods pace on PINGRESP). */
    int sinceLastPing;

    // subscriber
    SequenceTracker[] trackers;
    long received;

    Client(final int id, final boolean publisher, final SocketChannel channel, final Settings settings)
    {
        this.id = id;
        this.publisher = publisher;
        this.channel = channel;
        this.version = settings.version;
        this.payload = new UnsafeBuffer(new byte[Math.max(STAMP_LENGTH, settings.payload)]);
        this.topic = (settings.topicPrefix + "/" + id).getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A persistent subscriber coming back: its session, with the subscription, should still be there. */
    boolean resuming;
    boolean sessionPresent;

    void queueConnect(final String clientId, final Settings settings)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(settings.version)
            .cleanStart(!settings.persistent()).keepAlive(settings.keepAlive);
        if (settings.persistent() && settings.version == 5)
        {
            encoder.properties(new io.ringmq.protocol.MqttProperties()
                .setInt(io.ringmq.protocol.PropertyId.SESSION_EXPIRY_INTERVAL, 3600));
        }
        encoder.clientId().wrap(clientId);
        if (null != settings.user)
        {
            encoder.userName().wrap(settings.user);
            encoder.password().wrap(null == settings.pass ? "" : settings.pass);
        }
        ensure(encoder.encodedLength());
        out.position(out.position() + encoder.encode(outView(), 0));
        state = State.CONNECTING;
    }

    void queueSubscribe(final String filter, final int qos)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(version)
            .packetId(1);
        encoder.filters().add(filter, qos);
        ensure(encoder.encodedLength());
        out.position(out.position() + encoder.encode(outView(), 0));
        state = State.SUBSCRIBING;
    }

    void queueDisconnect()
    {
        ensure(2);
        out.put((byte)0xE0).put((byte)0x00);
    }

    /**
     * @return a new connection for the same subscriber, keeping what it has received so far.
     */
    Client reconnect(final Settings settings) throws IOException
    {
        final Client next = new Client(id, publisher, SocketChannel.open(), settings);
        next.trackers = trackers;
        next.received = received;
        next.resuming = true;
        return next;
    }

    void queuePing()
    {
        ensure(PingCodec.LENGTH);
        out.position(out.position() + PingCodec.encode(outView(), 0, PacketType.PINGREQ));
        pingsOutstanding++;
        sinceLastPing = 0;
    }

    /**
     * Queues the next message, stamped with {@code stampNs} (see {@link StampClock}). The stamp is the payload's
     * first 16 bytes, little-endian: publisher id (int), sequence (int), stamp (long).
     */
    void queuePublish(final int qos, final long stampNs)
    {
        payload.putInt(0, id);
        payload.putInt(4, sequence++);
        payload.putLong(8, stampNs);
        publishEncoder.reset().version(version).qos(qos).topic(topicBuffer(), 0, topic.length)
            .payload(payload, 0, payload.capacity());
        if (qos > 0)
        {
            publishEncoder.packetId(nextPacketId);
            nextPacketId = nextPacketId == 65_535 ? 1 : nextPacketId + 1;
            inflight++;
        }
        ensure(publishEncoder.encodedLength());
        out.position(out.position() + publishEncoder.encode(outView(), 0));
        sinceLastPing++;
    }

    private UnsafeBuffer topicBuffer;

    private UnsafeBuffer topicBuffer()
    {
        if (null == topicBuffer)
        {
            topicBuffer = new UnsafeBuffer(topic);
        }
        return topicBuffer;
    }

    private UnsafeBuffer outView()
    {
        outView.wrap(out, out.position(), out.remaining());
        return outView;
    }

    private void ensure(final int length)
    {
        if (out.remaining() < length)
        {
            final ByteBuffer bigger = ByteBuffer.allocateDirect(Math.max(out.capacity() * 2, out.position() + length));
            out.flip();
            bigger.put(out);
            out = bigger;
        }
    }

    int pendingOut()
    {
        return out.position();
    }

    /**
     * @return false when the socket is closed.
     */
    boolean flush() throws IOException
    {
        if (out.position() == 0)
        {
            return true;
        }
        out.flip();
        try
        {
            channel.write(out);
        }
        finally
        {
            out.compact();
        }
        return true;
    }

    /**
     * Reads what arrived and handles every complete packet.
     *
     * @return false at end of stream or on a malformed packet.
     */
    boolean read(final Handler handler) throws IOException
    {
        final int read = channel.read(in);
        if (read < 0)
        {
            return false;
        }
        int offset = 0;
        final int limit = in.position();
        while (offset < limit)
        {
            inView.wrap(in, offset, limit - offset);
            final int length = decoder.decode(inView, 0, limit - offset, version, Integer.MAX_VALUE);
            if (length == DecodeError.NEED_MORE)
            {
                if (decoder.frame().frameLength() > in.capacity())
                {
                    final ByteBuffer bigger = ByteBuffer.allocateDirect(decoder.frame().frameLength() * 2);
                    in.flip();
                    bigger.put(in);
                    in = bigger;
                    return true;
                }
                break;
            }
            if (length < 0)
            {
                return false;
            }
            onPacket(handler);
            offset += length;
        }
        in.limit(limit);
        in.position(offset);
        in.compact();
        return true;
    }

    private void onPacket(final Handler handler)
    {
        switch (decoder.packetType())
        {
            case PacketType.CONNACK:
                sessionPresent = decoder.connack().isSessionPresent();
                handler.onConnack(this, decoder.connack().reasonCode());
                break;
            case PacketType.SUBACK:
                handler.onSuback(this);
                break;
            case PacketType.PINGRESP:
                pingsOutstanding--;
                pingsAnswered++;
                break;
            case PacketType.PUBACK:
            case PacketType.PUBCOMP:
                inflight--;
                acknowledged++;
                break;
            case PacketType.PUBREC:
                ensure(4);
                out.position(out.position() + AckEncoder.encode(outView(), 0, PacketType.PUBREL,
                    decoder.ack().packetId()));
                break;
            case PacketType.PUBREL:
                ensure(4);
                out.position(out.position() + AckEncoder.encode(outView(), 0, PacketType.PUBCOMP,
                    decoder.ack().packetId()));
                break;
            case PacketType.PUBLISH:
                onPublish(handler, decoder.publish());
                break;
            default:
                break;
        }
    }

    private void onPublish(final Handler handler, final PublishFlyweight publish)
    {
        received++;
        if (publish.qos() == 1)
        {
            ensure(4);
            out.position(out.position() + AckEncoder.encode(outView(), 0, PacketType.PUBACK, publish.packetId()));
        }
        else if (publish.qos() == 2)
        {
            ensure(4);
            out.position(out.position() + AckEncoder.encode(outView(), 0, PacketType.PUBREC, publish.packetId()));
        }
        if (publish.payload().length() >= STAMP_LENGTH)
        {
            final int offset = publish.payload().offset();
            handler.onMessage(this, publish.payload().buffer().getInt(offset), publish.payload().buffer()
                .getInt(offset + 4), publish.payload().buffer().getLong(offset + 8));
        }
    }

    /**
     * What the driver does with what a client received.
     */
    interface Handler
    {
        void onConnack(Client client, int code);

        void onSuback(Client client);

        void onMessage(Client client, int publisherId, int sequence, long stampNs);
    }
}
