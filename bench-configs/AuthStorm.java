import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bench behind bench-configs/auth-storm.sh, MQTT 3.1.1 by hand over plain sockets to 127.0.0.1 only, no
 * dependencies: {@code java AuthStorm.java PORT publish SECONDS BAD_PER_S USER}: a good (anonymous) client's QoS 1
 * PUBLISH to PUBACK latency at 500/s, open loop (from the intended send time), with BAD_PER_S CONNECTs a second
 * carrying USER and a wrong password beside it; prints one line. {@code java AuthStorm.java PORT connect COUNT
 * USER}: CONNECT to CONNACK time of an unknown user and of USER with a wrong password, interleaved; prints one
 * line each. Bounded: every phase ends after its SECONDS or COUNT, every socket read has a timeout.
 */
public final class AuthStorm
{
    private static final int RATE = 500;

    public static void main(final String[] args) throws Exception
    {
        final int port = Integer.parseInt(args[0]);
        if ("publish".equals(args[1]))
        {
            publish(port, Integer.parseInt(args[2]), Integer.parseInt(args[3]), args[4]);
        }
        else
        {
            connectTimes(port, Integer.parseInt(args[2]), args[3]);
        }
    }

    private static void publish(final int port, final int seconds, final int badPerSecond, final String user)
        throws Exception
    {
        final AtomicBoolean running = new AtomicBoolean(true);
        final AtomicLong bad = new AtomicLong();
        final AtomicLong badNs = new AtomicLong();
        final int badThreads = badPerSecond == 0 ? 0 : 16;
        final Thread[] storm = new Thread[badThreads];
        for (int t = 0; t < badThreads; t++)
        {
            final int index = t;
            storm[t] = new Thread(() ->
            {
                final long periodNs = 1_000_000_000L * badThreads / badPerSecond;
                long next = System.nanoTime() + index * (periodNs / badThreads);
                int n = 0;
                while (running.get())
                {
                    sleepUntil(next); // parked, not spinning: 16 spinning threads would starve a 2-core box
                    next += periodNs;
                    try
                    {
                        final long start = System.nanoTime();
                        connack(port, "bad-" + index + "-" + n++, user, "wrong-password");
                        badNs.addAndGet(System.nanoTime() - start);
                        bad.incrementAndGet();
                    }
                    catch (final IOException ex)
                    {
                        // counted as not done
                    }
                }
            }, "storm-" + t);
            storm[t].start();
        }
        final long[] latencyNs = new long[seconds * RATE];
        try (Socket socket = open(port))
        {
            final OutputStream out = socket.getOutputStream();
            final DataInputStream in = new DataInputStream(socket.getInputStream());
            out.write(connect("good-publisher", null, null));
            out.flush();
            if (readConnack(in) != 0)
            {
                throw new IOException("good client refused");
            }
            final long[] intended = new long[latencyNs.length];
            final Thread reader = new Thread(() ->
            {
                try
                {
                    for (int i = 0; i < latencyNs.length; i++)
                    {
                        final byte[] ack = new byte[4];
                        in.readFully(ack);
                        // one connection acknowledges QoS 1 in order: the i-th PUBACK answers the i-th PUBLISH
                        latencyNs[i] = System.nanoTime() - intended[i];
                    }
                }
                catch (final IOException ex)
                {
                    // short: reported by the count
                }
            }, "acks");
            reader.start();
            final long start = System.nanoTime();
            final byte[] payload = new byte[64];
            for (int i = 0; i < latencyNs.length; i++)
            {
                intended[i] = start + i * (1_000_000_000L / RATE);
                sleepUntil(intended[i]); // latency counts from the intended time: a late wake-up is measured too
                out.write(publish("bench/good", payload, (i % 65_535) + 1));
                out.flush();
            }
            reader.join(10_000);
        }
        running.set(false);
        for (final Thread thread : storm)
        {
            thread.join(10_000);
        }
        final long[] sorted = Arrays.stream(latencyNs).filter(v -> v > 0).sorted().toArray();
        System.out.printf("publish bad_connects_per_s=%d good_acks=%d/%d p50_us=%d p99_us=%d max_us=%d " +
            "bad_done=%d bad_mean_ms=%.2f%n", badPerSecond, sorted.length, latencyNs.length,
            percentile(sorted, 0.50) / 1_000, percentile(sorted, 0.99) / 1_000,
            sorted.length == 0 ? 0 : sorted[sorted.length - 1] / 1_000, bad.get(),
            bad.get() == 0 ? 0.0 : badNs.get() / 1e6 / bad.get());
    }

    private static void sleepUntil(final long deadlineNs)
    {
        long left;
        while ((left = deadlineNs - System.nanoTime()) > 0)
        {
            java.util.concurrent.locks.LockSupport.parkNanos(left);
        }
    }

    private static void connectTimes(final int port, final int count, final String user) throws Exception
    {
        final long[] unknown = new long[count];
        final long[] wrong = new long[count];
        final int[] codes = new int[2];
        for (int i = 0; i < count; i++)
        {
            long start = System.nanoTime();
            codes[0] = connack(port, "u" + i, "nobody-" + i, "wrong-password");
            unknown[i] = System.nanoTime() - start;
            start = System.nanoTime();
            codes[1] = connack(port, "w" + i, user, "wrong-password");
            wrong[i] = System.nanoTime() - start;
        }
        Arrays.sort(unknown);
        Arrays.sort(wrong);
        System.out.printf("connect unknown_user p50_us=%d p90_us=%d p99_us=%d code=%d%n",
            percentile(unknown, 0.5) / 1_000, percentile(unknown, 0.9) / 1_000, percentile(unknown, 0.99) / 1_000,
            codes[0]);
        System.out.printf("connect wrong_password p50_us=%d p90_us=%d p99_us=%d code=%d%n",
            percentile(wrong, 0.5) / 1_000, percentile(wrong, 0.9) / 1_000, percentile(wrong, 0.99) / 1_000,
            codes[1]);
    }

    private static long percentile(final long[] sorted, final double q)
    {
        return sorted.length == 0 ? 0 : sorted[Math.min(sorted.length - 1, (int)(q * sorted.length))];
    }

    private static Socket open(final int port) throws IOException
    {
        final Socket socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
        socket.setSoTimeout(10_000);
        socket.setTcpNoDelay(true);
        return socket;
    }

    private static int connack(final int port, final String clientId, final String user, final String password)
        throws IOException
    {
        try (Socket socket = open(port))
        {
            socket.getOutputStream().write(connect(clientId, user, password));
            socket.getOutputStream().flush();
            return readConnack(new DataInputStream(socket.getInputStream()));
        }
    }

    private static int readConnack(final DataInputStream in) throws IOException
    {
        final byte[] connack = new byte[4];
        in.readFully(connack);
        return connack[3];
    }

    private static byte[] connect(final String clientId, final String user, final String password)
    {
        final byte[] body = concat(new byte[]{0, 4, 'M', 'Q', 'T', 'T', 4,
            (byte)(0x02 | (null == user ? 0 : 0xC0)), 0, 60}, string(clientId),
            null == user ? new byte[0] : string(user), null == password ? new byte[0] : string(password));
        return concat(new byte[]{0x10}, remainingLength(body.length), body);
    }

    private static byte[] publish(final String topic, final byte[] payload, final int packetId)
    {
        final byte[] body = concat(string(topic), new byte[]{(byte)(packetId >> 8), (byte)packetId}, payload);
        return concat(new byte[]{0x32}, remainingLength(body.length), body);
    }

    private static byte[] string(final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        return concat(new byte[]{(byte)(bytes.length >> 8), (byte)bytes.length}, bytes);
    }

    private static byte[] remainingLength(final int length)
    {
        return length < 128 ? new byte[]{(byte)length} : new byte[]{(byte)(0x80 | (length & 0x7F)), (byte)(length >> 7)};
    }

    private static byte[] concat(final byte[]... parts)
    {
        int length = 0;
        for (final byte[] part : parts)
        {
            length += part.length;
        }
        final byte[] result = new byte[length];
        int offset = 0;
        for (final byte[] part : parts)
        {
            System.arraycopy(part, 0, result, offset, part.length);
            offset += part.length;
        }
        return result;
    }
}
