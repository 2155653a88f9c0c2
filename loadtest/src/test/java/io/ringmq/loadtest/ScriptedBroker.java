package io.ringmq.loadtest;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A broker of a few hundred lines, written byte by byte from the spec, for what real brokers do rarely or not on
 * demand: a CONNACK with a small Receive Maximum, PUBACKs with refusing reason codes, a DISCONNECT 0x8B, refused
 * subscriptions, a shared subscription that hands one message to two members and another to none. One thread per
 * connection; every hook may be overridden by a test. It routes a PUBLISH, unchanged, to subscribers whose filter
 * is the topic, ends in {@code /#} over it, or (round robin over the group) is a {@code $share/} filter.
 */
class ScriptedBroker implements AutoCloseable
{
    /** One client connection. */
    static final class Connection
    {
        final Socket socket;
        final OutputStream out;
        int version;
        String clientId = "";
        /** The CONNECT's properties (5.0), the bytes after their length. */
        byte[] connectProperties = new byte[0];
        int connectFlags;
        volatile String filter;
        /** QoS 1 packet ids received and not yet acknowledged (when acknowledgements are held). */
        final List<Integer> unacked = new ArrayList<>();
        /** PINGREQs not yet answered (when answers are held), and the PUBLISHes that came since the last answer. */
        int heldPings;
        int publishesUnanswered;

        Connection(final Socket socket) throws IOException
        {
            this.socket = socket;
            this.out = socket.getOutputStream();
        }

        synchronized void send(final int... bytes) throws IOException
        {
            final byte[] raw = new byte[bytes.length];
            for (int i = 0; i < bytes.length; i++)
            {
                raw[i] = (byte)bytes[i];
            }
            send(raw);
        }

        synchronized void send(final byte[] raw) throws IOException
        {
            out.write(raw);
            out.flush();
        }
    }

    final List<Connection> connections = new CopyOnWriteArrayList<>();
    final AtomicInteger maxUnacked = new AtomicInteger();
    /** With {@link #holdPings()}: the most PUBLISHes one connection sent before a PINGRESP answered its PINGREQs. */
    final AtomicInteger maxUnansweredPublishes = new AtomicInteger();
    private final ServerSocket server;
    private final Thread acceptor;
    private final AtomicInteger roundRobin = new AtomicInteger();
    private volatile boolean closed;

    ScriptedBroker() throws IOException
    {
        server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::accept, "scripted-broker-accept");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port()
    {
        return server.getLocalPort();
    }

    /** The CONNACK's 5.0 properties, the bytes after their length. */
    byte[] connackProperties()
    {
        return new byte[0];
    }

    /** The SUBACK reason code for a filter. */
    int subackCode(final Connection connection, final String filter)
    {
        return 1;
    }

    /** The PUBACK reason code for a QoS 1 PUBLISH (5.0; 0 is sent as the short form). */
    int pubackCode(final Connection connection, final int publisherId, final int sequence)
    {
        return 0;
    }

    /** Whether QoS 1 acknowledgements wait until the client has paused for 20 ms (to see its window fill). */
    boolean holdAcks()
    {
        return false;
    }

    /** Whether PINGRESPs wait until the client has paused for 20 ms (to see how much a flooding client sends). */
    boolean holdPings()
    {
        return false;
    }

    /** Whether PINGREQs are never answered. */
    boolean dropPings()
    {
        return false;
    }

    /** Runs on the connection's thread before its CONNACK goes (a delay here keeps its dial in progress). */
    void beforeConnack(final Connection connection)
    {
    }

    void afterSuback(final Connection connection) throws IOException
    {
    }

    /**
     * @return the subscribers a PUBLISH goes to.
     */
    List<Connection> route(final Connection from, final String topic, final int publisherId, final int sequence)
    {
        final List<Connection> targets = new ArrayList<>();
        final List<Connection> group = new ArrayList<>();
        for (final Connection c : connections)
        {
            if (null == c.filter)
            {
                continue;
            }
            if (c.filter.startsWith("$share/"))
            {
                group.add(c);
            }
            else if (c.filter.equals(topic) || (c.filter.endsWith("/#") &&
                topic.startsWith(c.filter.substring(0, c.filter.length() - 1))))
            {
                targets.add(c);
            }
        }
        if (!group.isEmpty())
        {
            targets.add(group.get(Math.floorMod(roundRobin.getAndIncrement(), group.size())));
        }
        return targets;
    }

    private void accept()
    {
        while (!closed)
        {
            try
            {
                final Connection connection = new Connection(server.accept());
                connections.add(connection);
                final Thread reader = new Thread(() -> serve(connection), "scripted-broker-conn");
                reader.setDaemon(true);
                reader.start();
            }
            catch (final IOException ex)
            {
                return;
            }
        }
    }

    private void serve(final Connection connection)
    {
        try (Socket socket = connection.socket)
        {
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            socket.setSoTimeout(20);
            while (!closed && !socket.isClosed())
            {
                final int first;
                try
                {
                    first = in.read();
                }
                catch (final SocketTimeoutException idle)
                {
                    ackHeld(connection);
                    answerHeldPings(connection);
                    continue;
                }
                if (first < 0)
                {
                    return;
                }
                socket.setSoTimeout(0); // the rest of the packet follows
                int length = 0;
                for (int shift = 0; ; shift += 7)
                {
                    final int b = in.readUnsignedByte();
                    length |= (b & 0x7F) << shift;
                    if ((b & 0x80) == 0)
                    {
                        break;
                    }
                }
                final byte[] body = new byte[length];
                in.readFully(body);
                socket.setSoTimeout(20);
                onPacket(connection, first, body);
            }
        }
        catch (final EOFException | java.net.SocketException gone)
        {
            // the client left
        }
        catch (final IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
        finally
        {
            connections.remove(connection);
        }
    }

    private void onPacket(final Connection c, final int first, final byte[] body) throws IOException
    {
        final ByteBuffer b = ByteBuffer.wrap(body);
        switch (first >>> 4)
        {
            case 1: // CONNECT
                b.position(2 + b.getShort(0));
                c.version = b.get();
                c.connectFlags = b.get() & 0xFF;
                b.getShort(); // keep alive
                if (c.version == 5)
                {
                    c.connectProperties = new byte[readVarInt(b)];
                    b.get(c.connectProperties);
                }
                c.clientId = string(b);
                beforeConnack(c);
                if (c.version == 5)
                {
                    final byte[] props = connackProperties();
                    final byte[] connack = new byte[5 + props.length];
                    connack[0] = 0x20;
                    connack[1] = (byte)(3 + props.length);
                    connack[4] = (byte)props.length;
                    System.arraycopy(props, 0, connack, 5, props.length);
                    c.send(connack);
                }
                else
                {
                    c.send(0x20, 2, 0, 0);
                }
                break;
            case 8: // SUBSCRIBE
            {
                final int packetId = b.getShort() & 0xFFFF;
                if (c.version == 5)
                {
                    skipProperties(b);
                }
                final String filter = string(b);
                final int code = subackCode(c, filter);
                if (code < 0x80)
                {
                    c.filter = filter;
                }
                if (c.version == 5)
                {
                    c.send(0x90, 4, packetId >>> 8, packetId & 0xFF, 0, code);
                }
                else
                {
                    c.send(0x90, 3, packetId >>> 8, packetId & 0xFF, code);
                }
                afterSuback(c);
                break;
            }
            case 3: // PUBLISH
                onPublish(c, first, body, b);
                break;
            case 12: // PINGREQ
                ackHeld(c);
                if (dropPings())
                {
                    break;
                }
                if (holdPings())
                {
                    c.heldPings++;
                }
                else
                {
                    c.send(0xD0, 0);
                }
                break;
            case 14: // DISCONNECT
                c.socket.close();
                break;
            default: // PUBACK and the like from subscribers
                break;
        }
    }

    private void onPublish(final Connection c, final int first, final byte[] body, final ByteBuffer b)
        throws IOException
    {
        final int qos = (first >>> 1) & 3;
        final String topic = string(b);
        final int packetId = qos > 0 ? b.getShort() & 0xFFFF : 0;
        if (c.version == 5)
        {
            skipProperties(b);
        }
        final ByteBuffer stamp = b.slice().order(ByteOrder.LITTLE_ENDIAN);
        final int publisherId = stamp.getInt(0);
        final int sequence = stamp.getInt(4);
        final byte[] raw = new byte[body.length + 5];
        raw[0] = (byte)first;
        int pos = 1;
        for (int v = body.length; ; v >>>= 7)
        {
            raw[pos++] = (byte)(v > 0x7F ? (v & 0x7F) | 0x80 : v);
            if (v <= 0x7F)
            {
                break;
            }
        }
        System.arraycopy(body, 0, raw, pos, body.length);
        final byte[] forward = java.util.Arrays.copyOf(raw, pos + body.length);
        for (final Connection target : route(c, topic, publisherId, sequence))
        {
            target.send(forward);
        }
        if (qos == 0)
        {
            if (holdPings())
            {
                maxUnansweredPublishes.accumulateAndGet(++c.publishesUnanswered, Math::max);
            }
            return;
        }
        final int code = pubackCode(c, publisherId, sequence);
        if (holdAcks())
        {
            c.unacked.add(packetId);
            maxUnacked.accumulateAndGet(c.unacked.size(), Math::max);
        }
        else if (code == 0)
        {
            c.send(0x40, 2, packetId >>> 8, packetId & 0xFF);
        }
        else
        {
            c.send(0x40, 3, packetId >>> 8, packetId & 0xFF, code);
        }
    }

    private static void answerHeldPings(final Connection c) throws IOException
    {
        for (; c.heldPings > 0; c.heldPings--)
        {
            c.send(0xD0, 0);
        }
        c.publishesUnanswered = 0;
    }

    private static void ackHeld(final Connection c) throws IOException
    {
        for (final int packetId : c.unacked)
        {
            c.send(0x40, 2, packetId >>> 8, packetId & 0xFF);
        }
        c.unacked.clear();
    }

    private static void skipProperties(final ByteBuffer b)
    {
        final int length = readVarInt(b); // moves the position past the length first
        b.position(b.position() + length);
    }

    private static int readVarInt(final ByteBuffer b)
    {
        int value = 0;
        for (int shift = 0; ; shift += 7)
        {
            final int next = b.get() & 0xFF;
            value |= (next & 0x7F) << shift;
            if ((next & 0x80) == 0)
            {
                return value;
            }
        }
    }

    private static String string(final ByteBuffer b)
    {
        final byte[] bytes = new byte[b.getShort() & 0xFFFF];
        b.get(bytes);
        return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    @Override
    public void close() throws IOException
    {
        closed = true;
        server.close();
        for (final Connection c : connections)
        {
            c.socket.close();
        }
    }
}
