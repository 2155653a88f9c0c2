package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review helpers for the bridge attack tests: brokers from config lines, raw 3.1.1 packets, bounded waits.
 */
final class BridgeReviewSupport
{
    private BridgeReviewSupport()
    {
    }

    static Broker remote() throws Exception
    {
        return Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .observability(o -> o.sysIntervalMs(0)));
    }

    /**
     * A broker from a config file: these lines, after {@code head} (the listener and anonymous policy).
     */
    static Broker fromConfig(final Path directory, final String head, final String... lines) throws Exception
    {
        final Path conf = Files.createTempFile(directory, "bridge", ".conf");
        Files.writeString(conf, head + "\n" + String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        return Broker.launch(Main.rereadContext(new String[]{"-c", conf.toString(),
            "--sys-interval", "0", "--persistence", "memory", "--warmup", "0"}));
    }

    static void await(final String what, final long seconds, final BooleanSupplier condition)
        throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() < deadline).as("timed out (" + seconds + " s) waiting for " + what)
                .isTrue();
            Thread.sleep(5);
        }
    }

    /** @return whether the thread of that name is now in a socket write or a socket connect. */
    static boolean threadIn(final String threadName, final String... methods)
    {
        for (final var entry : Thread.getAllStackTraces().entrySet())
        {
            if (entry.getKey().getName().equals(threadName))
            {
                for (final StackTraceElement frame : entry.getValue())
                {
                    for (final String method : methods)
                    {
                        if (frame.getMethodName().equals(method))
                        {
                            return true;
                        }
                    }
                }
            }
        }
        return false;
    }

    /**
     * Runs {@code action} on its own daemon thread and waits at most {@code millis} for it.
     *
     * @return how long it took, or -1 when it had not ended by then.
     */
    static long timed(final long millis, final ThrowingRunnable action) throws InterruptedException
    {
        final long start = System.nanoTime();
        final Thread thread = new Thread(() ->
        {
            try
            {
                action.run();
            }
            catch (final Exception ex)
            {
                // timing only
            }
        }, "review-timed");
        thread.setDaemon(true);
        thread.start();
        thread.join(millis);
        return thread.isAlive() ? -1 : TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    }

    interface ThrowingRunnable
    {
        void run() throws Exception;
    }

    static byte[] connect311(final String clientId, final boolean clean, final int keepAlive)
    {
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        writeString(body, "MQTT");
        body.write(4);
        body.write(clean ? 0x02 : 0x00);
        body.write(keepAlive >>> 8);
        body.write(keepAlive & 0xFF);
        writeString(body, clientId);
        return packet(0x10, body.toByteArray());
    }

    static byte[] publish(final String topic, final byte[] payload, final int qos, final int packetId)
    {
        final ByteArrayOutputStream body = new ByteArrayOutputStream();
        writeString(body, topic);
        if (qos > 0)
        {
            body.write(packetId >>> 8);
            body.write(packetId & 0xFF);
        }
        body.writeBytes(payload);
        return packet(0x30 | qos << 1, body.toByteArray());
    }

    static byte[] packet(final int header, final byte[] body)
    {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(header);
        int length = body.length;
        do
        {
            int digit = length % 128;
            length /= 128;
            if (length > 0)
            {
                digit |= 0x80;
            }
            out.write(digit);
        }
        while (length > 0);
        out.writeBytes(body);
        return out.toByteArray();
    }

    static void writeString(final ByteArrayOutputStream out, final String text)
    {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        out.write(bytes.length >>> 8);
        out.write(bytes.length & 0xFF);
        out.writeBytes(bytes);
    }

    /** @return one whole packet: [0] the first byte, then the rest of the frame after the remaining length. */
    static byte[][] readPacket(final InputStream in) throws IOException
    {
        final int first = in.read();
        if (first < 0)
        {
            return null;
        }
        int length = 0;
        int multiplier = 1;
        int digit;
        do
        {
            digit = in.read();
            if (digit < 0)
            {
                return null;
            }
            length += (digit & 0x7F) * multiplier;
            multiplier *= 128;
        }
        while ((digit & 0x80) != 0);
        final byte[] body = in.readNBytes(length);
        if (body.length < length)
        {
            return null;
        }
        return new byte[][]{{(byte)first}, body};
    }

    static byte[] frame(final byte[][] packet)
    {
        return packet(packet[0][0] & 0xFF, packet[1]);
    }

    static void write(final OutputStream out, final byte[] bytes) throws IOException
    {
        out.write(bytes);
        out.flush();
    }
}
