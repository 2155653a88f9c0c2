package io.ringmq.transport;

import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.DecodeError;
import io.ringmq.protocol.DisconnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketDecoder;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.SubscribeEncoder;
import org.agrona.concurrent.UnsafeBuffer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.Arrays;

/**
 * A bare MQTT 3.1.1 (or, after {@link #v5()} or {@link #version(int)}, 5.0) client on a blocking socket, built on ringmq's codec, for
 * what real clients will not do: send malformed bytes, stop reading, vanish without DISCONNECT, skip an
 * acknowledgement, or show the bytes of a property (a topic alias and its empty topic).
 */
final class RawClient implements AutoCloseable
{
    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final PacketDecoder decoder = new PacketDecoder();
    private byte[] buffer = new byte[64 * 1024];
    private int filled;
    private byte[] lastPacket;
    /** The protocol level the broker's packets are decoded in. */
    private int version = MqttVersion.V3_1_1;

    RawClient(final int port) throws IOException
    {
        this(port, 0);
    }

    /**
     * @param receiveBuffer SO_RCVBUF, or 0 for the default (small makes a slow reader).
     */
    RawClient(final int port, final int receiveBuffer) throws IOException
    {
        this(port, receiveBuffer, null);
    }

    /**
     * @param source the local address to connect from (a loopback address other than 127.0.0.1 makes another host
     *               under {@code --limit-loopback}), or null for any.
     */
    RawClient(final int port, final int receiveBuffer, final String source) throws IOException
    {
        socket = new Socket();
        if (receiveBuffer > 0)
        {
            socket.setReceiveBufferSize(receiveBuffer);
        }
        if (null != source)
        {
            socket.bind(new java.net.InetSocketAddress(source, 0));
        }
        socket.connect(new java.net.InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setTcpNoDelay(true);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /**
     * The server's side of a connection a test accepted (a fake remote broker for a bridge): it reads the client's
     * packets and sends the server's.
     */
    RawClient(final Socket accepted) throws IOException
    {
        socket = accepted;
        socket.setTcpNoDelay(true);
        in = socket.getInputStream();
        out = socket.getOutputStream();
    }

    /**
     * Reads the broker's packets as MQTT 5.0 from now on.
     *
     * @return this.
     */
    RawClient v5()
    {
        version = MqttVersion.V5;
        return this;
    }

    /**
     * Decodes what the broker sends as {@code version} ({@link MqttVersion#V5} after a 5.0 CONNECT).
     *
     * @return this.
     */
    RawClient version(final int version)
    {
        this.version = version;
        return this;
    }

    /**
     * @param properties the CONNECT's properties, or null for none.
     */
    static byte[] connect5(final String clientId, final int keepAlive, final MqttProperties properties)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(true)
            .keepAlive(keepAlive).properties(properties);
        encoder.clientId().wrap(clientId);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * An MQTT 5.0 CONNECT with clean start and keep alive 60 s.
     *
     * @param properties the CONNECT properties, or null for none.
     */
    static byte[] connect5(final String clientId, final io.ringmq.protocol.MqttProperties properties)
    {
        return connect5(clientId, 60, properties);
    }

    /**
     * @param properties the PUBLISH's properties (a Topic Alias among them), or null for none.
     */
    static byte[] publish5(final String topic, final byte[] payload, final int qos, final int packetId,
        final MqttProperties properties)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().version(MqttVersion.V5).qos(qos).packetId(packetId)
            .topic(topic).payload(payload).properties(properties);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * An MQTT 5.0 CONNECT with clean start 0 and a QoS 1 will.
     *
     * @param properties     the CONNECT properties (its Session Expiry Interval), or null for none.
     * @param willProperties the will's properties (its Will Delay Interval), or null for none.
     */
    static byte[] connect5WithWill(final String clientId, final io.ringmq.protocol.MqttProperties properties,
        final String willTopic, final String willPayload, final io.ringmq.protocol.MqttProperties willProperties)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(false)
            .keepAlive(60).properties(properties).will(1, false, willProperties);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap(willPayload);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * @return SCRAM-SHA-256's Authentication Method, with {@code data} as Authentication Data when not null.
     */
    static MqttProperties scram(final byte[] data)
    {
        final MqttProperties properties = new MqttProperties().set(io.ringmq.protocol.PropertyId.AUTHENTICATION_METHOD,
            io.ringmq.pipeline.auth.ScramSha256.NAME);
        if (null != data)
        {
            properties.set(io.ringmq.protocol.PropertyId.AUTHENTICATION_DATA, data);
        }
        return properties;
    }

    /**
     * Ends a SCRAM-SHA-256 exchange whose CONNECT (with {@code scram.first()}) was sent: takes the server's first
     * message from its AUTH, answers with the client's last, and reads the CONNACK.
     *
     * @return the CONNACK's reason code (its properties are in {@link #decoder()}).
     */
    int finishScram(final io.ringmq.pipeline.auth.ScramClient scram) throws IOException
    {
        if (readPacket(5_000) != PacketType.AUTH)
        {
            throw new IOException("expected AUTH after a SCRAM CONNECT");
        }
        final byte[] serverFirst = decoder().auth().properties()
            .slice(io.ringmq.protocol.PropertyId.AUTHENTICATION_DATA).toByteArray();
        send(reasonPacket5(PacketType.AUTH, io.ringmq.protocol.ReasonCode.CONTINUE_AUTHENTICATION,
            scram(scram.last(serverFirst))));
        if (readPacket(5_000) != PacketType.CONNACK)
        {
            throw new IOException("expected CONNACK at the end of a SCRAM exchange");
        }
        return decoder().connack().reasonCode();
    }

    /**
     * @return an MQTT 5.0 DISCONNECT (or AUTH) with a reason code and properties (null for none).
     */
    static byte[] reasonPacket5(final int packetType, final int reasonCode, final MqttProperties properties)
    {
        return encode(DisconnectEncoder.encodedLength(packetType, MqttVersion.V5, reasonCode, properties),
            buffer -> DisconnectEncoder.encode(buffer, 0, packetType, MqttVersion.V5, reasonCode, properties));
    }

    /**
     * An MQTT 5.0 SUBSCRIBE of one filter with no options beyond the QoS.
     */
    static byte[] subscribe5(final int packetId, final String filter, final int qos)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).version(MqttVersion.V5)
            .packetId(packetId);
        encoder.filters().add(filter, qos);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * An MQTT 5.0 UNSUBSCRIBE of one filter.
     */
    static byte[] unsubscribe5(final int packetId, final String filter)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.UNSUBSCRIBE).version(MqttVersion.V5)
            .packetId(packetId);
        encoder.filters().add(filter, 0);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] connect(final String clientId, final boolean clean, final int keepAlive)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(clean).keepAlive(keepAlive);
        encoder.clientId().wrap(clientId);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] connectWithWill(final String clientId, final String willTopic, final String willPayload,
        final int willQos)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().keepAlive(60).will(willQos, false, null);
        encoder.clientId().wrap(clientId);
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap(willPayload);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] subscribe(final int packetId, final String filter, final int qos)
    {
        final SubscribeEncoder encoder = new SubscribeEncoder().reset(PacketType.SUBSCRIBE).packetId(packetId);
        encoder.filters().add(filter, qos);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    /**
     * A SUBSCRIBE of many filters written out as in the spec (3.8), however many they are: fixed header 0x82, the
     * remaining length, the packet id, then per filter a two-byte length, its UTF-8 bytes and the requested QoS.
     */
    static byte[] subscribe(final int packetId, final java.util.List<String> filters, final int qos)
    {
        final java.io.ByteArrayOutputStream body = new java.io.ByteArrayOutputStream(filters.size() * 12);
        body.write(packetId >>> 8);
        body.write(packetId & 0xFF);
        for (final String filter : filters)
        {
            final byte[] bytes = filter.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            body.write(bytes.length >>> 8);
            body.write(bytes.length & 0xFF);
            body.write(bytes, 0, bytes.length);
            body.write(qos);
        }
        final java.io.ByteArrayOutputStream packet = new java.io.ByteArrayOutputStream(body.size() + 5);
        packet.write(0x82);
        int remaining = body.size();
        do
        {
            final int digit = remaining % 128;
            remaining /= 128;
            packet.write(remaining > 0 ? digit | 0x80 : digit);
        }
        while (remaining > 0);
        packet.writeBytes(body.toByteArray());
        return packet.toByteArray();
    }

    static byte[] connect(final String clientId, final String userName, final String password)
    {
        final ConnectEncoder encoder = new ConnectEncoder().reset().cleanStart(true).keepAlive(60);
        encoder.clientId().wrap(clientId);
        encoder.userName().wrap(userName);
        encoder.password().wrap(password);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] publish(final String topic, final byte[] payload, final int qos, final int packetId,
        final boolean retain)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).retain(retain)
            .topic(topic).payload(payload);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] publish(final String topic, final byte[] payload, final int qos, final int packetId)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId).topic(topic)
            .payload(payload);
        return encode(encoder.encodedLength(), buffer -> encoder.encode(buffer, 0));
    }

    static byte[] ping()
    {
        return new byte[]{(byte)0xC0, 0x00};
    }

    /**
     * @return whether bytes are waiting to be read (buffered here or in the socket), without blocking.
     */
    boolean hasBytes() throws IOException
    {
        return filled > 0 || in.available() > 0;
    }

    /**
     * Reads and throws away what the broker has sent so far, without blocking.
     *
     * @return false when the broker closed the connection.
     */
    boolean discardAvailable() throws IOException
    {
        filled = 0;
        final byte[] sink = new byte[8192];
        try
        {
            while (in.available() > 0)
            {
                if (in.read(sink) < 0)
                {
                    return false;
                }
            }
            return !socket.isClosed();
        }
        catch (final java.net.SocketException reset)
        {
            return false;
        }
    }

    static byte[] ack(final int packetType, final int packetId)
    {
        return encode(4, buffer -> io.ringmq.protocol.AckEncoder.encode(buffer, 0, packetType, packetId));
    }

    interface Writer
    {
        int write(UnsafeBuffer buffer);
    }

    static byte[] encode(final int length, final Writer writer)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[length]);
        writer.write(buffer);
        return buffer.byteArray();
    }

    void send(final byte[] bytes) throws IOException
    {
        out.write(bytes);
        out.flush();
    }

    /**
     * Connects and waits for the CONNACK.
     *
     * @return the CONNACK return code.
     */
    int handshake(final byte[] connect) throws IOException
    {
        send(connect);
        final int type = readPacket(5_000);
        if (type != PacketType.CONNACK)
        {
            throw new IOException("expected CONNACK, got " + PacketType.name(type));
        }
        return decoder.connack().reasonCode();
    }

    /**
     * Reads the next packet.
     *
     * @return its type, or -1 at end of stream.
     * @throws SocketTimeoutException when nothing complete arrives in time.
     */
    int readPacket(final int timeoutMs) throws IOException
    {
        socket.setSoTimeout(timeoutMs);
        while (true)
        {
            final UnsafeBuffer view = new UnsafeBuffer(buffer, 0, Math.max(1, filled));
            final int length = filled == 0 ? DecodeError.NEED_MORE :
                decoder.decode(view, 0, filled, version, 1 << 24);
            if (length > 0)
            {
                lastPacket = Arrays.copyOf(buffer, length);
                System.arraycopy(buffer, length, buffer, 0, filled - length);
                filled -= length;
                final int type = decoder.packetType();
                // re-decode the kept copy so the flyweights point at bytes that stay put
                decoder.decode(new UnsafeBuffer(lastPacket), 0, lastPacket.length, version, 1 << 24);
                return type;
            }
            if (length < 0)
            {
                throw new IOException("bad packet from broker: " + DecodeError.describe(length));
            }
            if (filled == buffer.length)
            {
                buffer = Arrays.copyOf(buffer, buffer.length * 2);
            }
            final int read = in.read(buffer, filled, buffer.length - filled);
            if (read < 0)
            {
                return -1;
            }
            filled += read;
        }
    }

    /**
     * @return the bytes of the last packet read.
     */
    byte[] lastPacket()
    {
        return lastPacket;
    }

    PacketDecoder decoder()
    {
        return decoder;
    }

    /**
     * Reads the next packet, or sees that the broker closed the connection.
     *
     * @return its type, or -1 when the broker closed the connection (end of stream or reset).
     * @throws SocketTimeoutException when neither happens in time.
     */
    int readPacketOrClosed(final int timeoutMs) throws IOException
    {
        try
        {
            return readPacket(timeoutMs);
        }
        catch (final java.net.SocketException reset)
        {
            return -1;
        }
    }

    /**
     * Reads packets until one of {@code type} comes, skipping others.
     *
     * @return false when the broker closed the connection first, or none came in time.
     */
    boolean readPacketsUntil(final int type, final int timeoutMs) throws IOException
    {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        while (true)
        {
            final long left = deadline - System.currentTimeMillis();
            if (left <= 0)
            {
                return false;
            }
            final int read;
            try
            {
                read = readPacketOrClosed((int)left);
            }
            catch (final SocketTimeoutException ex)
            {
                return false;
            }
            if (read == type)
            {
                return true;
            }
            if (read < 0)
            {
                return false;
            }
        }
    }

    /**
     * @return true when the broker closes the connection within the time (reading and discarding until then).
     */
    boolean closedWithin(final int timeoutMs) throws IOException
    {
        final long deadline = System.currentTimeMillis() + timeoutMs;
        final byte[] sink = new byte[4096];
        while (System.currentTimeMillis() < deadline)
        {
            socket.setSoTimeout((int)Math.max(1, deadline - System.currentTimeMillis()));
            try
            {
                if (in.read(sink) < 0)
                {
                    return true;
                }
            }
            catch (final SocketTimeoutException ex)
            {
                return false;
            }
            catch (final IOException ex)
            {
                return true; // reset by the broker
            }
        }
        return false;
    }

    /**
     * Drops the connection without DISCONNECT (a reset, as a crashed client would).
     */
    void kill() throws IOException
    {
        socket.setSoLinger(true, 0);
        socket.close();
    }

    public void close() throws IOException
    {
        socket.close();
    }
}
