package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What in-process broker tests do after each test: close their clients, then the broker.
 */
final class TestBrokers
{
    private TestBrokers()
    {
    }

    /**
     * A broker for MQTT 5.0 tests on an ephemeral loopback port, with no $SYS messages to count around; topic
     * aliases as by default (Paho and the HiveMQ client use them by themselves when the CONNACK allows them).
     */
    static BrokerContext v5Context()
    {
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0));
    }

    /**
     * @return a port free on this machine now (a listener that must keep its port across a reload is given one),
     * below the kernel's ephemeral range: no socket bound to port 0 meanwhile (a warm-up's 500 clients, a client of
     * another test) can take it before the test binds it.
     */
    static int freePort() throws java.io.IOException
    {
        final int below = ephemeralLow();
        final java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 200; attempt++)
        {
            final int port = random.nextInt(Math.min(10_000, below / 2), below);
            try (java.net.ServerSocket probe = new java.net.ServerSocket())
            {
                probe.bind(new java.net.InetSocketAddress(port));
                return port;
            }
            catch (final java.io.IOException taken)
            {
                // another one
            }
        }
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0))
        {
            return probe.getLocalPort();
        }
    }

    private static int ephemeralLow()
    {
        try
        {
            // readAllLines, not readString: a /proc file has no size, and readString read one byte of it here
            final String range = java.nio.file.Files.readAllLines(java.nio.file.Path.of(
                "/proc/sys/net/ipv4/ip_local_port_range")).get(0).trim();
            final int low = Integer.parseInt(range.split("\\s+")[0]);
            return low > 11_000 ? low : 32_768;
        }
        catch (final java.io.IOException | RuntimeException ex)
        {
            return 32_768; // Linux's default
        }
    }

    /**
     * Waits for a condition, for 10 s at most.
     */
    static void await(final String what, final BooleanSupplier condition) throws InterruptedException
    {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean())
        {
            assertThat(System.nanoTime() < deadline).as("timed out waiting for " + what).isTrue();
            Thread.sleep(1);
        }
    }

    /**
     * Closes the clients, then the broker (when there is one).
     *
     * @param expectNoErrors whether to assert that the broker counted no unexpected error.
     */
    static void closeAll(final List<AutoCloseable> closeables, final Broker broker, final boolean expectNoErrors)
        throws Exception
    {
        for (final AutoCloseable closeable : closeables)
        {
            closeable.close();
        }
        if (null != broker)
        {
            broker.close();
            if (expectNoErrors)
            {
                final StringBuilder seen = new StringBuilder();
                org.agrona.concurrent.errors.ErrorLogReader.read(broker.counters().file().errorLogBuffer(),
                    (count, first, last, text) -> seen.append(count).append(" x ").append(text).append('\n'));
                assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS))
                    .as("unexpected errors in the broker:%n%s", seen).isZero();
            }
        }
    }
}
