package io.ringmq.transport;

import org.agrona.CloseHelper;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.concurrent.TimeUnit;

/**
 * Drives the broker's real paths before it takes its first client: a fixed number of loopback MQTT connections
 * through its own accept, I/O agent, pipeline and delivery code, so that the classes are loaded and the JIT has
 * compiled them when the first connect storm comes (on a cold JVM the first thousand CONNECTs of a storm run in the
 * interpreter, behind class loading; see docs/perf/README.md for the figures).
 * <p>
 * Each connection, MQTT 3.1.1 and 5.0 in turn, clean and with an empty client id (the broker assigns one, so no
 * session the store recovered can be taken over): CONNECT, CONNACK; SUBSCRIBE at QoS 1 to a topic of its own under
 * {@code $ringmq/warmup/} (a {@code $} topic: no recovered wildcard subscription matches it [MQTT-4.7.2-1]);
 * PUBLISH at QoS 0 and QoS 1 to it, PINGREQ; SUBACK, PUBACK, both PUBLISHes back (the QoS 1 one acknowledged),
 * PINGRESP; UNSUBSCRIBE, UNSUBACK; DISCONNECT. Nothing is retained and no will is set: a clean session leaves
 * nothing behind. Runs on the caller's thread with a selector of its own, at most {@link #PARALLEL} connections at a
 * time (fewer under a low {@code --max-connections}: none is refused, so no limit is reported),
 * and gives up at its deadline: a broker that cannot warm up still starts.
 */
final class Warmup
{
    /** What the command line drives by default: every per-connection method past C1's compile threshold (200 calls). */
    static final int DEFAULT_CONNECTIONS = 500;
    /** Connections in progress at once. */
    static final int PARALLEL = 32;
    /** The most a warm-up may take, whatever its count: the broker starts then, warm or not. */
    static final long DEADLINE_NS = TimeUnit.SECONDS.toNanos(5);
    /** The most the broker waits after it for the warm-up's last sessions to be gone. */
    static final long SETTLE_NS = TimeUnit.SECONDS.toNanos(2);
    /** The topic prefix of the warm-up's own messages. */
    static final String TOPIC_PREFIX = "$ringmq/warmup/";

    private static final int BUFFER_LENGTH = 512;
    private static final int MAX_WRITE_SPINS = 10_000;
    private static final int CONNACK = 2;
    private static final int PUBLISH = 3;
    private static final int PUBACK = 4;
    private static final int SUBACK = 9;
    private static final int UNSUBACK = 11;
    private static final int PINGRESP = 13;
    /** SUBACK, PUBACK and PINGRESP: the acknowledgements the first round owes. */
    private static final int ROUND_ACKS = 3;
    /** Both PUBLISHes back, when the SUBSCRIBE was granted. */
    private static final int ROUND_DELIVERIES = 2;
    /**
     * How long after its acknowledgements a connection waits for its own messages: an ACL may grant the SUBSCRIBE
     * and refuse the PUBLISHes, and nothing then comes.
     */
    private static final long DELIVERY_GRACE_NS = TimeUnit.MILLISECONDS.toNanos(100);
    private static final byte[] PAYLOAD = "ringmq warm-up..".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] DISCONNECT = {(byte)0xE0, 0};

    /**
     * What a warm-up did.
     *
     * @param completed connections that went through every step.
     * @param failed    connections refused, dropped or cut short by the deadline.
     * @param elapsedNs how long it took.
     */
    record Result(int completed, int failed, long elapsedNs)
    {
        @Override
        public String toString()
        {
            return "warm-up " + completed + " connections" + (failed > 0 ? " (" + failed + " failed)" : "") + " in " +
                TimeUnit.NANOSECONDS.toMillis(elapsedNs) + " ms";
        }
    }

    /**
     * One connection's steps.
     */
    private static final class Client
    {
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

        Client(final int index, final SocketChannel channel)
        {
            this.index = index;
            this.mqtt5 = (index & 1) == 1;
            this.channel = channel;
            this.topic = (TOPIC_PREFIX + index).getBytes(StandardCharsets.US_ASCII);
        }
    }

    private Warmup()
    {
    }

    /**
     * Runs {@code connections} connections against {@code port} on the loopback address.
     *
     * @param deadlineNs how long it may take at most.
     */
    static Result run(final int port, final int connections, final long deadlineNs)
    {
        return run(port, connections, PARALLEL, deadlineNs);
    }

    /**
     * @param parallel connections in progress at once.
     */
    static Result run(final int port, final int connections, final int parallel, final long deadlineNs)
    {
        final long startNs = System.nanoTime();
        final long endNs = startNs + deadlineNs;
        final InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
        int started = 0;
        int completed = 0;
        int failed = 0;
        int open = 0;
        try (Selector selector = Selector.open())
        {
            try
            {
                while ((started < connections || open > 0) && endNs - System.nanoTime() > 0)
                {
                    while (started < connections && open < parallel)
                    {
                        try
                        {
                            open(selector, address, started);
                            open++;
                        }
                        catch (final IOException ex)
                        {
                            failed++;
                        }
                        started++;
                    }
                    selector.select(10);
                    final Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
                    while (keys.hasNext())
                    {
                        final SelectionKey key = keys.next();
                        keys.remove();
                        final Client client = (Client)key.attachment();
                        final int outcome = step(key, client);
                        if (0 != outcome)
                        {
                            CloseHelper.quietClose(client.channel);
                            open--;
                            if (outcome > 0)
                            {
                                completed++;
                            }
                            else
                            {
                                failed++;
                            }
                        }
                    }
                    final int stalled = endRoundsPastGrace(selector, System.nanoTime());
                    open -= stalled;
                    failed += stalled;
                }
            }
            finally
            {
                for (final SelectionKey key : selector.keys())
                {
                    CloseHelper.quietClose(key.channel()); // cut short by the deadline or a failed select
                }
            }
        }
        catch (final IOException ex)
        {
            // no selector, or it failed: what was open is closed, and counted as failed below
        }
        return new Result(completed, failed + open + (connections - started), System.nanoTime() - startNs);
    }

    /**
     * Ends the first round of every connection acknowledged and past its grace: its messages will not come (an ACL).
     *
     * @return the connections that failed doing so (closed).
     */
    private static int endRoundsPastGrace(final Selector selector, final long nowNs)
    {
        int failed = 0;
        for (final SelectionKey key : selector.keys())
        {
            final Client client = (Client)key.attachment();
            if (key.isValid() && 1 == client.step && client.acks >= ROUND_ACKS)
            {
                try
                {
                    roundDone(client, nowNs);
                }
                catch (final IOException ex)
                {
                    CloseHelper.quietClose(client.channel);
                    failed++;
                }
            }
        }
        return failed;
    }

    private static void open(final Selector selector, final InetSocketAddress address, final int index)
        throws IOException
    {
        final SocketChannel channel = SocketChannel.open();
        try
        {
            channel.configureBlocking(false);
            final Client client = new Client(index, channel);
            final int interest = channel.connect(address) ? SelectionKey.OP_READ : SelectionKey.OP_CONNECT;
            channel.register(selector, interest, client);
            if (SelectionKey.OP_READ == interest)
            {
                connect(client);
            }
        }
        catch (final IOException | RuntimeException ex)
        {
            CloseHelper.quietClose(channel);
            throw ex;
        }
    }

    /**
     * @return 0 while under way, 1 when done, -1 when it failed.
     */
    private static int step(final SelectionKey key, final Client client)
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

    private static int readPackets(final Client client) throws IOException
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

    private static int onPacket(final Client client, final int type, final int flags, final int body,
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

    private static int acknowledged(final Client client) throws IOException
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
    private static int roundDone(final Client client, final long nowNs) throws IOException
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
    private static void connect(final Client client) throws IOException
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
    private static void firstRound(final Client client) throws IOException
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

    private static ByteBuffer start(final Client client, final int header)
    {
        final ByteBuffer out = client.out;
        out.clear();
        out.put((byte)header).put((byte)0); // every packet here is shorter than 128 bytes: one length byte
        return out;
    }

    /**
     * Writes the remaining length of the packet {@link #start} began at the front of the buffer.
     */
    private static void end(final Client client)
    {
        final ByteBuffer out = client.out;
        out.put(1, (byte)(out.position() - 2));
    }

    private static void send(final Client client) throws IOException
    {
        end(client);
        flush(client);
    }

    private static void flush(final Client client) throws IOException
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

    private static void write(final Client client, final byte[] packet, final int length) throws IOException
    {
        client.out.clear();
        client.out.put(packet, 0, length);
        flush(client);
    }

    private static void properties(final Client client)
    {
        if (client.mqtt5)
        {
            client.out.put((byte)0);
        }
    }

    private static void filter(final Client client)
    {
        client.out.putShort((short)client.topic.length).put(client.topic);
    }
}
