package io.ringmq.loadtest;

import io.ringmq.protocol.AckEncoder;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PingCodec;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PropertyId;
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
    /** MQTT 5.0 without clean start: how long the broker keeps a session after its connection ends (by default). */
    static final int SESSION_EXPIRY_S = 3600;

    enum State
    {
        DIALING, CONNECTING, CONNECTED, SUBSCRIBING, READY, CLOSED
    }

    final int id;
    final boolean publisher;
    final SocketChannel channel;
    /** The TLS record layer between {@link #in}/{@link #out} and the socket; null over plain TCP. */
    final TlsConnection tls;
    SelectionKey key;
    State state = State.DIALING;
    /** A message mode's socket buffers, each way: room to batch a burst of messages into one read or write. */
    static final int BUFFER_BYTES = 64 * 1024;
    /**
     * A held connection's (plain conn modes): CONNECT, CONNACK and PINGs only. 64 KiB each way was 2.3 GB of direct
     * memory, zeroed, at 18,000 connections; both buffers still grow when a packet needs more.
     */
    static final int HELD_BUFFER_BYTES = 1024;
    ByteBuffer in;
    ByteBuffer out;
    private final UnsafeBuffer inView = new UnsafeBuffer(0, 0);
    private final UnsafeBuffer outView = new UnsafeBuffer(0, 0);
    /**
     * One decoder per thread, shared by its clients: a client decodes only on its driver's thread, one read at a
     * time, and its handlers read the packet before the next is decoded. One per client cost 8 KB of heap each (its
     * flyweights' property tables): 150 MB at 18,000 connections, whose young collections stalled the held
     * connections' PINGREQs by tens of milliseconds.
     */
    private static final ThreadLocal<PacketDecoder> DECODERS = ThreadLocal.withInitial(PacketDecoder::new);
    private PacketDecoder decoder;
    private final int version;
    long dialStartNs;
    long connectedNs = -1;
    int pingsOutstanding;
    /** -rate 0, QoS 0: batches this publisher may have unanswered ({@link Publishers}); 0 until first asked. */
    int floodBatches;
    long pingsAnswered;
    /** When the oldest PINGREQ not answered yet was queued (PINGRESPs come back in order). */
    long pingQueuedNs;

    // publisher
    final UnsafeBuffer payload;
    final byte[] topic;
    private final PublishEncoder publishEncoder = new PublishEncoder();
    /** -rate: the messages this publisher owes and when each is due; null when it floods (or is a subscriber). */
    final FixedRateSchedule schedule;
    /** Whether this publisher has stopped publishing for the run and queued its last PINGREQ ({@link Publishers}). */
    boolean finished;
    /** This publisher's index among its driver's publishers. */
    int publisherIndex;
    /** Whether this publisher waits in its driver's {@link DueQueue}. */
    boolean dueListed;
    /** Whether this client is on its driver's {@link FlushList}. */
    boolean flushListed;
    int sequence;
    int inflight;
    /**
     * QoS 1/2 messages this publisher may have unacknowledged: {@code -inflight}, lowered to the server's Receive
     * Maximum on MQTT 5.0 [MQTT-3.3.4-7].
     */
    int window;
    int nextPacketId = 1;
    long acknowledged;
    /** QoS 1/2 messages the broker refused: a 5.0 PUBACK or PUBREC with a reason code of 0x80 or more. */
    long rejected;
    /** Messages sent since the last PINGREQ (QoS 0 floods pace on PINGRESP). */
    int sinceLastPing;

    // subscriber
    SequenceTracker[] trackers;
    /** fanin: the highest sequence this member of the share group received from each publisher, for its order. */
    int[] highest;
    long reordered;
    long received;

    Client(final int id, final boolean publisher, final SocketChannel channel, final Settings settings)
        throws IOException
    {
        this.id = id;
        this.publisher = publisher;
        this.channel = channel;
        // TLS unwraps whole records into in: a held TLS connection keeps the message modes' room
        final int bufferBytes = settings.connectionsOnly() && null == settings.tls ? HELD_BUFFER_BYTES : BUFFER_BYTES;
        this.in = ByteBuffer.allocateDirect(bufferBytes);
        this.out = ByteBuffer.allocateDirect(bufferBytes);
        this.tls = null == settings.tls ? null : new TlsConnection(publisher ?
            settings.tls.newEngine(settings.host, settings.port) : settings.tls.newEngine(settings.subHost,
            settings.subPort));
        this.version = settings.version;
        this.window = settings.inflight;
        this.payload = new UnsafeBuffer(new byte[Math.max(STAMP_LENGTH, settings.payload)]);
        this.topic = (settings.topicPrefix + "/" + id).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        this.schedule = publisher && settings.rate > 0 ? new FixedRateSchedule(settings.rate, settings.durationNs) :
            null;
    }

    /** A persistent subscriber coming back: its session, with the subscription, should still be there. */
    boolean resuming;
    boolean sessionPresent;

    void queueConnect(final String clientId, final Settings settings)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(settings.version)
            .cleanStart(settings.cleanSession).keepAlive(settings.keepAlive);
        if (!settings.cleanSession && settings.version == 5)
        {
            // 0 (the default) would end the session with the connection [MQTT-3.1.2-23]
            encoder.properties(new MqttProperties().setInt(PropertyId.SESSION_EXPIRY_INTERVAL,
                settings.sessionExpiryS));
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
        if (null != tls)
        {
            tls.closeAfterPending();
        }
    }

    /**
     * @return a new connection for the same subscriber, keeping what it has received so far.
     */
    Client reconnect(final Settings settings) throws IOException
    {
        final Client next = new Client(id, publisher, SocketChannel.open(), settings);
        next.trackers = trackers;
        next.highest = highest;
        next.reordered = reordered;
        next.received = received;
        next.resuming = true;
        return next;
    }

    void queuePing()
    {
        ensure(PingCodec.LENGTH);
        out.position(out.position() + PingCodec.encode(outView(), 0, PacketType.PINGREQ));
        if (0 == pingsOutstanding)
        {
            pingQueuedNs = System.nanoTime();
        }
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
        publish(qos);
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

    /**
     * @return the length of one of this client's QoS 0 PUBLISH packets, as {@link #queuePublish} encodes them.
     */
    int qos0PublishLength()
    {
        return publish(0).encodedLength();
    }

    /**
     * @return the encoder, set for this client's next PUBLISH at {@code qos} (its packet id still to set).
     */
    private PublishEncoder publish(final int qos)
    {
        return publishEncoder.reset().version(version).qos(qos).topic(topicBuffer(), 0, topic.length)
            .payload(payload, 0, payload.capacity());
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

    /**
     * @return bytes queued for the socket: plaintext, and over TLS ciphertext and handshake steps too.
     */
    int pendingOut()
    {
        if (null == tls)
        {
            return out.position();
        }
        // the ClientHello waits for the TCP connection (a non-blocking connect still under way)
        return channel.isConnected() ? out.position() + tls.pendingOut() : 0;
    }

    /**
     * @return false when the socket is closed.
     */
    boolean flush() throws IOException
    {
        if (null != tls)
        {
            if (channel.isConnected())
            {
                tls.flush(channel, out); // plaintext waits in out until the handshake is done
            }
            return true;
        }
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
        if (null != tls)
        {
            return readTls(handler);
        }
        final int read = channel.read(in);
        if (read < 0)
        {
            return false;
        }
        return decode(handler);
    }

    /**
     * Reads ciphertext, and unwraps and handles records until none is whole; a handshake failure throws the
     * engine's {@link javax.net.ssl.SSLException} (an unknown CA, a name mismatch).
     */
    private boolean readTls(final Handler handler) throws IOException
    {
        if (!tls.fill(channel))
        {
            if (tls.isHandshaking())
            {
                throw new javax.net.ssl.SSLHandshakeException("the server closed the connection during the TLS " +
                    "handshake (is it a TLS listener?)");
            }
            return false;
        }
        while (true)
        {
            if (in.remaining() < tls.applicationBufferSize())
            {
                growIn(tls.applicationBufferSize()); // a partial packet larger than the buffer's slack: rare
            }
            final int produced = tls.unwrap(in);
            if (produced == TlsConnection.CLOSED)
            {
                return false;
            }
            if (produced == TlsConnection.NEED_ROOM)
            {
                growIn(2 * tls.applicationBufferSize());
                continue;
            }
            if (!decode(handler))
            {
                return false;
            }
            if (tls.needsWrap())
            {
                // the handshake speaks before the records already read can be unwrapped (TLS 1.3's compatibility
                // change_cipher_spec after ServerHello, say): answer now, or they would wait for the next read
                tls.flush(channel, out);
                if (tls.hasBufferedInput() && !tls.needsWrap())
                {
                    continue;
                }
                return true;
            }
            if (produced == 0 || !tls.hasBufferedInput())
            {
                return true;
            }
        }
    }

    private void growIn(final int room)
    {
        final ByteBuffer bigger = ByteBuffer.allocateDirect(Math.max(in.capacity() * 2, in.position() + room));
        in.flip();
        bigger.put(in);
        in = bigger;
    }

    /**
     * Handles every complete packet in {@link #in} (write mode) and keeps the rest.
     *
     * @return false on a malformed packet.
     */
    private boolean decode(final Handler handler)
    {
        decoder = DECODERS.get();
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
                    in.limit(limit);
                    in.position(offset);
                    in.compact(); // the packets already handled go first, or they would be handled twice
                    growIn(decoder.frame().frameLength() * 2);
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
                if (version == 5)
                {
                    // absent: 65,535 [MQTT-3.2.2-17]; never more in flight than the server allows [MQTT-3.3.4-7]
                    window = Math.min(window, decoder.connack().properties().intValue(PropertyId.RECEIVE_MAXIMUM,
                        65_535));
                }
                handler.onConnack(this, decoder.connack().reasonCode());
                break;
            case PacketType.SUBACK:
                handler.onSuback(this, decoder.suback().reasonCodeCount() > 0 ? decoder.suback().reasonCode(0) :
                    0x80);
                break;
            case PacketType.PINGRESP:
                pingsOutstanding--;
                pingsAnswered++;
                handler.onPingResponse(this, System.nanoTime() - pingQueuedNs);
                if (pingsOutstanding > 0)
                {
                    pingQueuedNs = System.nanoTime(); // the next one's time is not known: count it from here
                }
                break;
            case PacketType.PUBACK:
            case PacketType.PUBCOMP:
                inflight--;
                if (decoder.ack().reasonCode() >= 0x80) // 5.0: refused (quota, not authorised, ...), not delivered
                {
                    rejected++;
                }
                else
                {
                    acknowledged++;
                }
                handler.onAck(this, decoder.ack().packetId(), decoder.ack().reasonCode());
                break;
            case PacketType.PUBREC:
                if (decoder.ack().reasonCode() >= 0x80)
                {
                    inflight--; // 5.0: a refusing PUBREC ends the exchange, no PUBREL [MQTT-4.3.3-4]
                    rejected++;
                    break;
                }
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
            case PacketType.DISCONNECT:
                handler.onDisconnect(this, decoder.disconnect().reasonCode()); // 5.0 only; the socket closes next
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

        /**
         * @param code the SUBACK's first reason code: the granted QoS, or 0x80 and above when refused.
         */
        void onSuback(Client client, int code);

        /**
         * A 5.0 server's DISCONNECT, with its reason code (0x8B: shutting down, 0x93: receive maximum exceeded...).
         */
        void onDisconnect(Client client, int reasonCode);

        void onMessage(Client client, int publisherId, int sequence, long stampNs);

        /**
         * The end of one of this publisher's QoS 1/2 exchanges (PUBACK or PUBCOMP), with its packet id and reason
         * code (0x80 and above: refused by a 5.0 broker); {@link CrashLoss} records which sequence it confirmed.
         */
        default void onAck(Client client, int packetId, int reasonCode)
        {
        }

        /**
         * A PINGRESP came back {@code roundTripNs} after its PINGREQ was queued (the connection mode's check of
         * held connections).
         */
        default void onPingResponse(Client client, long roundTripNs)
        {
        }
    }
}
