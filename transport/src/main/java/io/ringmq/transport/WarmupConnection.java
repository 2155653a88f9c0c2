package io.ringmq.transport;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * One connection of the {@link Warmup}, its steps and its bytes: CONNECT (3.1.1 or 5.0, clean, an empty client id),
 * then SUBSCRIBE, PUBLISH at QoS 0 and 1 and PINGREQ in one write, then UNSUBSCRIBE, then DISCONNECT; replies are
 * framed by their fixed header only, and anything it did not ask for, or larger than its buffer, fails it. Every
 * packet it sends is shorter than 128 bytes (one length byte). Owned by the warm-up's thread.
 */
final class WarmupConnection
{
    private static final int BUFFER_LENGTH = 512;
    private static final int MAX_WRITE_SPINS = 10_000;
    private static final int CONNACK = 2;
    private static final int PUBLISH = 3;
    private static final int PUBACK = 4;
    private static final int SUBACK = 9;
    private static final int UNSUBACK = 11;
    private static final int PINGRESP = 13;
    /** SUBACK, PUBACK and PINGRESP: the acknowledgements the first round owes. */
    static final int ROUND_ACKS = 3;
    /** Both PUBLISHes back, when the SUBSCRIBE was granted. */
    private static final int ROUND_DELIVERIES = 2;
    /**
     * How long after its acknowledgements a connection waits for its own messages: an ACL may grant the SUBSCRIBE
     * and refuse the PUBLISHes, and nothing then comes.
     */
    private static final long DELIVERY_GRACE_NS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final byte[] PAYLOAD = "ringmq warm-up..".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DISCONNECT = {(byte)0xE0, 0};

    final int index;
    final boolean mqtt5;
    final SocketChannel channel;
    final ByteBuffer in = ByteBuffer.allocate(BUFFER_LENGTH);
    final ByteBuffer out = ByteBuffer.allocate(BUFFER_LENGTH);
    final byte[] topic;
    /** 0: waiting for CONNACK; 1: waiting for the first round's replies; 2: for UNSUBACK. */
    int step;
    int acks;
    int deliveries;
    /** PUBLISHes to wait for: none when the SUBSCRIBE was refused (an ACL). */
    int expectedDeliveries = ROUND_DELIVERIES;
    long acknowledgedNs;

    /**
     * @param topicPrefix its run's first topic level and separator ({@link Warmup#topicPrefix()}).
     */
    WarmupConnection(final int index, final SocketChannel channel, final String topicPrefix)
    {
        this.index = index;
        this.mqtt5 = (index & 1) == 1;
        this.channel = channel;
        this.topic = (topicPrefix + index).getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * @return 0 while under way, 1 when done, -1 when it failed.
     */
    static int step(final SelectionKey key, final WarmupConnection client)
    {
        try
        {
            if (key.isConnectable())
            {
                client.channel.finishConnect();
                key.interestOps(SelectionKey.OP_READ);
                connect(client);
                return 0;
            }
            if (client.channel.read(client.in) < 0)
            {
                return -1;
            }
            return readPackets(client);
        }
        catch (final IOException | RuntimeException ex)
        {
            return -1;
        }
    }

    private static int readPackets(final WarmupConnection client) throws IOException
    {
        final ByteBuffer in = client.in;
        in.flip();
        try
        {
            while (in.remaining() >= 2)
            {
                final int start = in.position();
                int remaining = 0;
                int shift = 0;
                int at = start + 1;
                int digit;
                do
                {
                    if (at >= in.limit())
                    {
                        return 0; // the length is not all here yet
                    }
                    digit = in.get(at++) & 0xFF;
                    remaining |= (digit & 0x7F) << shift;
                    shift += 7;
                }
                while ((digit & 0x80) != 0 && shift < 28);
                if (at + remaining > in.limit())
                {
                    if (at + remaining - start > BUFFER_LENGTH)
                    {
                        return -1; // larger than anything the warm-up is sent
                    }
                    return 0;
                }
                final int outcome = onPacket(client, (in.get(start) & 0xFF) >> 4, in.get(start) & 0x0F, at, remaining);
                in.position(at + remaining);
                if (0 != outcome)
                {
                    return outcome;
                }
            }
            return 0;
        }
        finally
        {
            in.compact();
        }
    }

    private static int onPacket(final WarmupConnection client, final int type, final int flags, final int body,
        final int length) throws IOException
    {
        final ByteBuffer in = client.in;
        switch (type)
        {
            case CONNACK:
                if (0 != client.step || length < 2 || 0 != in.get(body + 1))
                {
                    return -1; // refused (a listener or ACL that does not let it in): nothing more to warm
                }
                client.step = 1;
                firstRound(client);
                return 0;

            case PUBLISH:
                if (0 == client.step)
                {
                    return -1;
                }
                if (((flags >> 1) & 3) == 1) // QoS 1: acknowledge it with its packet id
                {
                    final int topicLength = ((in.get(body) & 0xFF) << 8) | (in.get(body + 1) & 0xFF);
                    final int id = body + 2 + topicLength;
                    write(client, new byte[]{0x40, 2, in.get(id), in.get(id + 1)}, 4);
                }
                client.deliveries++;
                return roundDone(client, System.nanoTime());

            case SUBACK:
                if (length >= 3 && (in.get(body + length - 1) & 0xFF) >= 0x80) // its one filter refused
                {
                    client.expectedDeliveries = 0;
                }
                return acknowledged(client);

            case PUBACK:
            case PINGRESP:
                return acknowledged(client);

            case UNSUBACK:
                if (2 != client.step)
                {
                    return -1;
                }
                write(client, DISCONNECT, DISCONNECT.length);
                return 1;

            default:
                return -1;
        }
    }

    private static int acknowledged(final WarmupConnection client) throws IOException
    {
        if (1 != client.step)
        {
            return -1;
        }
        final long nowNs = System.nanoTime();
        if (++client.acks == ROUND_ACKS)
        {
            client.acknowledgedNs = nowNs;
        }
        return roundDone(client, nowNs);
    }

    /**
     * Ends the first round once it is acknowledged and its messages are back, or their grace is over: UNSUBSCRIBE.
     */
    static int roundDone(final WarmupConnection client, final long nowNs) throws IOException
    {
        if (1 == client.step && client.acks >= ROUND_ACKS && (client.deliveries >= client.expectedDeliveries ||
            nowNs - client.acknowledgedNs - DELIVERY_GRACE_NS >= 0))
        {
            client.step = 2;
            final ByteBuffer out = start(client, 0xA2);
            out.putShort((short)3);
            properties(client);
            filter(client);
            send(client);
        }
        return 0;
    }

    /**
     * CONNECT: clean, keep-alive 60 s, an empty client id (assigned by the broker).
     */
    static void connect(final WarmupConnection client) throws IOException
    {
        final ByteBuffer out = start(client, 0x10);
        out.putShort((short)4).put((byte)'M').put((byte)'Q').put((byte)'T').put((byte)'T');
        out.put((byte)(client.mqtt5 ? 5 : 4)).put((byte)0x02).putShort((short)60);
        properties(client);
        out.putShort((short)0);
        send(client);
    }

    /**
     * SUBSCRIBE (QoS 1), PUBLISH at QoS 0 and QoS 1 to the same topic, PINGREQ: one write.
     */
    private static void firstRound(final WarmupConnection client) throws IOException
    {
        ByteBuffer out = start(client, 0x82);
        out.putShort((short)1);
        properties(client);
        filter(client);
        out.put((byte)1);
        end(client);
        for (int qos = 0; qos <= 1; qos++)
        {
            out = client.out;
            final int headerAt = out.position();
            out.put((byte)(0x30 | qos << 1)).put((byte)0);
            final int bodyAt = out.position();
            filter(client);
            if (1 == qos)
            {
                out.putShort((short)2);
            }
            properties(client);
            out.put(PAYLOAD);
            out.put(headerAt + 1, (byte)(out.position() - bodyAt));
        }
        client.out.put((byte)0xC0).put((byte)0);
        flush(client);
    }

    private static ByteBuffer start(final WarmupConnection client, final int header)
    {
        final ByteBuffer out = client.out;
        out.clear();
        out.put((byte)header).put((byte)0); // every packet here is shorter than 128 bytes: one length byte
        return out;
    }

    /**
     * Writes the remaining length of the packet {@link #start} began at the front of the buffer.
     */
    private static void end(final WarmupConnection client)
    {
        final ByteBuffer out = client.out;
        out.put(1, (byte)(out.position() - 2));
    }

    private static void send(final WarmupConnection client) throws IOException
    {
        end(client);
        flush(client);
    }

    private static void flush(final WarmupConnection client) throws IOException
    {
        final ByteBuffer out = client.out;
        out.flip();
        int spins = 0;
        while (out.hasRemaining())
        {
            // a few dozen bytes to a loopback socket just opened: it takes them, or the broker is not reading
            if (0 == client.channel.write(out) && ++spins > MAX_WRITE_SPINS)
            {
                throw new IOException("the broker does not read");
            }
        }
        out.clear();
    }

    private static void write(final WarmupConnection client, final byte[] packet, final int length) throws IOException
    {
        client.out.clear();
        client.out.put(packet, 0, length);
        flush(client);
    }

    private static void properties(final WarmupConnection client)
    {
        if (client.mqtt5)
        {
            client.out.put((byte)0);
        }
    }

    private static void filter(final WarmupConnection client)
    {
        client.out.putShort((short)client.topic.length).put(client.topic);
    }
}
