package io.ringmq.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Guards what an idle connection costs in heap, the largest part of the goal of 5,000 idle connections in 64 MB of
 * peak RSS: it regressed unnoticed by 150 bytes a connection in a day of small additions, enough to tip the connect
 * storm into a full collection (docs/perf/2026-12-04-idle-rss-regression.md). A forked broker's live heap, as
 * {@code jcmd GC.class_histogram} counts it after a full collection, is read with {@value #BASE} connections open
 * (so nothing made on a first connection counts) and again with {@value #MORE} more. Per connection, ringmq's own
 * objects (its connection, routing and delivery sessions, access-control entry, socket layer) must stay within
 * {@value #OWN_BUDGET_BYTES} bytes, and everything within {@value #BUDGET_BYTES}: besides ringmq's objects, the JDK's
 * socket, selection key and selector entries (about 650 bytes, a little more on newer JDKs), the client id and the
 * map slots.
 */
class IdleConnectionHeapTest
{
    /**
     * ringmq's own objects: 480 bytes when this test was written (2026-12-05; 512 the day before, which it fails):
     * room for a field or two, not for one more object a connection.
     */
    private static final int OWN_BUDGET_BYTES = 500;
    /** Everything: 1,307 bytes on Java 17 and 1,339 on Java 25 when this test was written (1,403 the day before). */
    private static final int BUDGET_BYTES = 1_400;
    /** Open files each process needs: the test's sockets, and the broker's. */
    private static final int FILES_NEEDED = 2_600;
    private static final int BASE = 200;
    private static final int MORE = 2_000;
    private static final Pattern ROW = Pattern.compile("^\\s*\\d+:\\s+(\\d+)\\s+(\\d+)\\s+(\\S+)");
    private static final Pattern TOTAL = Pattern.compile("^Total\\s+(\\d+)\\s+(\\d+)");

    @TempDir
    Path directory;

    @Test
    void anIdleConnectionHoldsAtMostItsBudgetOfHeap() throws Exception
    {
        final Path jcmd = Path.of(ProcessHandle.current().info().command().orElse("java")).resolveSibling("jcmd");
        assumeTrue(Files.isExecutable(jcmd), "jcmd is not beside the JVM running the tests (a JRE)");
        assumeTrue(maxOpenFiles() >= FILES_NEEDED, "fewer than " + FILES_NEEDED + " open files allowed (ulimit -Hn)");
        final List<SocketChannel> clients = new ArrayList<>();
        try (ForkedBroker broker = ForkedBroker.start(directory))
        {
            connect(broker.port(), clients, BASE);
            final Histogram before = histogram(jcmd, broker.pid());
            connect(broker.port(), clients, MORE);
            final Histogram after = histogram(jcmd, broker.pid());

            final long perConnection = (after.totalBytes - before.totalBytes) / MORE;
            final long ownPerConnection = (after.ownBytes() - before.ownBytes()) / MORE;
            final String byClass = "; per connection, by class:\n" + after.minus(before, MORE) + broker.diagnostics();
            assertThat(ownPerConnection)
                .withFailMessage(() -> "an idle connection holds " + ownPerConnection + " bytes in ringmq's objects, " +
                    "over the budget of " + OWN_BUDGET_BYTES + byClass)
                .isLessThanOrEqualTo(OWN_BUDGET_BYTES)
                .isPositive();
            assertThat(perConnection)
                .withFailMessage(() -> "an idle connection holds " + perConnection + " bytes of live heap, over the " +
                    "budget of " + BUDGET_BYTES + byClass)
                .isLessThanOrEqualTo(BUDGET_BYTES);
        }
        finally
        {
            for (final SocketChannel client : clients)
            {
                client.close();
            }
        }
    }

    /**
     * Opens {@code count} MQTT 3.1.1 connections, each admitted (CONNACK 0) before the next, idle for 10 minutes.
     */
    private static void connect(final int port, final List<SocketChannel> clients, final int count) throws IOException
    {
        final ByteBuffer connack = ByteBuffer.allocate(4);
        for (int i = 0; i < count; i++)
        {
            final SocketChannel client = SocketChannel.open(new InetSocketAddress("127.0.0.1", port));
            clients.add(client);
            client.write(ByteBuffer.wrap(RawClient.connect(String.format("idle-client-%06d", clients.size()),
                true, 600)));
            connack.clear();
            while (connack.hasRemaining())
            {
                if (client.read(connack) < 0)
                {
                    throw new IOException("connection " + clients.size() + " closed before its CONNACK");
                }
            }
            assertThat(connack.array()).as("CONNACK, accepted").containsExactly(0x20, 2, 0, 0);
        }
    }

    /**
     * @return the hard limit on open files of this process (the JVM raises its soft limit to it), or the largest int
     * where {@code /proc} does not say.
     */
    private static long maxOpenFiles() throws IOException
    {
        final Path limits = Path.of("/proc/self/limits");
        if (!Files.isReadable(limits))
        {
            return Integer.MAX_VALUE;
        }
        for (final String line : Files.readAllLines(limits))
        {
            if (line.startsWith("Max open files"))
            {
                final String[] fields = line.substring("Max open files".length()).trim().split("\\s+");
                return "unlimited".equals(fields[1]) ? Integer.MAX_VALUE : Long.parseLong(fields[1]);
            }
        }
        return Integer.MAX_VALUE;
    }

    private static Histogram histogram(final Path jcmd, final long pid) throws IOException, InterruptedException
    {
        final Process process = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "GC.class_histogram")
            .redirectErrorStream(true).start();
        final String output;
        try (InputStream in = process.getInputStream())
        {
            output = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("jcmd ended").isTrue();
        final Histogram histogram = new Histogram();
        for (final String line : output.split("\n"))
        {
            final Matcher row = ROW.matcher(line);
            final Matcher total = TOTAL.matcher(line);
            if (row.find())
            {
                histogram.bytesByClass.put(row.group(3), Long.parseLong(row.group(2)));
            }
            else if (total.find())
            {
                histogram.totalBytes = Long.parseLong(total.group(2));
            }
        }
        assertThat(histogram.totalBytes).as("jcmd GC.class_histogram total; its output:\n%s", output).isPositive();
        return histogram;
    }

    private static final class Histogram
    {
        final Map<String, Long> bytesByClass = new HashMap<>();
        long totalBytes;

        /**
         * @return the bytes in ringmq's own classes.
         */
        long ownBytes()
        {
            return bytesByClass.entrySet().stream().filter(e -> e.getKey().startsWith("io.ringmq."))
                .mapToLong(Map.Entry::getValue).sum();
        }

        /**
         * @return the classes that grew most, in bytes per connection, a line each.
         */
        String minus(final Histogram before, final int connections)
        {
            final StringBuilder sb = new StringBuilder();
            bytesByClass.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue() - before.bytesByClass.getOrDefault(e.getKey(), 0L)))
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .limit(20)
                .forEach(e -> sb.append(String.format("%8.1f  %s%n", (double)e.getValue() / connections, e.getKey())));
            return sb.toString();
        }
    }
}
