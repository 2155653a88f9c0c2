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
 * (so nothing made on a first connection counts) and again with {@value #MORE} more; the difference per connection
 * must stay within {@value #BUDGET_BYTES} bytes. About 640 of them are the JDK's socket, selection key and selector
 * entries, the rest ringmq's connection, routing and delivery sessions, access-control entry and map slots.
 */
class IdleConnectionHeapTest
{
    /**
     * 1,300 bytes when this test was written (2026-12-05; 1,400 the day before, which it fails): room for a field or
     * two, not for one more object a connection.
     */
    private static final int BUDGET_BYTES = 1_350;
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
        final List<SocketChannel> clients = new ArrayList<>();
        try (ForkedBroker broker = ForkedBroker.start(directory))
        {
            connect(broker.port(), clients, BASE);
            final Histogram before = histogram(jcmd, broker.pid());
            connect(broker.port(), clients, MORE);
            final Histogram after = histogram(jcmd, broker.pid());

            final long perConnection = (after.totalBytes - before.totalBytes) / MORE;
            assertThat(perConnection)
                .withFailMessage(() -> "an idle connection holds " + perConnection + " bytes of live heap, over the " +
                    "budget of " + BUDGET_BYTES + "; per connection, by class:\n" + after.minus(before, MORE) +
                    broker.diagnostics())
                .isLessThanOrEqualTo(BUDGET_BYTES)
                .isPositive();
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
