package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A clean stop (SIGTERM) keeps everything acknowledged: QoS 1 messages PUBACKed to an offline persistent session
 * are all delivered after a restart on the same data directory, in every {@code --durability} mode, and the stop
 * is recorded as clean and bounded in time.
 */
class ShutdownFlushTest
{
    private static final int COUNT = 300;
    /** A clean stop takes well under this; ForkedBroker kills the process at 20 s. */
    private static final long STOP_BOUND_MS = 15_000;

    @TempDir
    Path directory;

    @ParameterizedTest(name = "--durability {0}")
    @ValueSource(strings = {"sync", "periodic", "none"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    @DisplayName("SIGTERM keeps every PUBACKed QoS 1 message of an offline persistent session [MQTT-4.3.2-2] and "
        + "the session itself [MQTT-3.1.2-4]: all delivered after the restart")
    void sigtermKeepsAcknowledgedMessages(final String durability) throws Exception
    {
        final String[] options = options(durability, "--max-queued", "10000");
        final ForkedBroker first = ForkedBroker.start(directory, options);
        try
        {
            subscribeOffline(first.port(), "flush/#");
            final Paho publisher = Paho.connect(first.port(), "pub");
            for (int i = 0; i < COUNT; i++)
            {
                publisher.publish("flush/" + (i % 7), "m" + i, 1, false); // returns once PUBACKed
            }
            publisher.close();
        }
        finally
        {
            final long startNs = System.nanoTime();
            first.close(); // SIGTERM
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs)).as("a bounded stop")
                .isLessThan(STOP_BOUND_MS);
        }

        final Set<String> published = new HashSet<>();
        for (int i = 0; i < COUNT; i++)
        {
            published.add("m" + i);
        }
        assertDeliveredAfterRestart(options, published);
    }

    @ParameterizedTest(name = "--durability {0}")
    @ValueSource(strings = {"sync", "periodic", "none"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    @DisplayName("hostile: SIGTERM while a publisher is mid-stream keeps every QoS 1 message PUBACKed before the "
        + "stop for the offline persistent session [MQTT-4.3.2-2]")
    void sigtermMidStreamKeepsAcknowledgedMessages(final String durability) throws Exception
    {
        final String[] options = options(durability, "--max-queued", "100000", "--max-inflight", "65535");
        final Set<String> acked = ConcurrentHashMap.newKeySet();
        final ForkedBroker first = ForkedBroker.start(directory, options);
        final Thread publishing;
        try
        {
            subscribeOffline(first.port(), "flight/#");
            final Paho publisher = Paho.connect(first.port(), "pub");
            publishing = new Thread(() ->
            {
                try
                {
                    for (int i = 0; ; i++)
                    {
                        publisher.publish("flight/" + (i % 5), "m" + i, 1, false); // returns once PUBACKed
                        acked.add("m" + i);
                    }
                }
                catch (final Exception ex)
                {
                    // the broker stopped under it: what was acknowledged is in `acked`
                }
                finally
                {
                    try
                    {
                        publisher.close();
                    }
                    catch (final Exception ignored)
                    {
                        // closed by the stop already
                    }
                }
            }, "mid-stream-publisher");
            publishing.setDaemon(true);
            publishing.start();
            final long untilNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (acked.size() < 200 && System.nanoTime() < untilNs)
            {
                Thread.onSpinWait();
            }
            assertThat(acked.size()).as("the stream was under way").isGreaterThanOrEqualTo(200);
        }
        finally
        {
            first.close(); // SIGTERM mid-stream
        }
        publishing.join(20_000);
        assertDeliveredAfterRestart(options, new HashSet<>(acked));
    }

    private String[] options(final String durability, final String... more)
    {
        final List<String> options = new ArrayList<>(List.of("--sys-interval", "0", "--persistence", "rocksdb",
            "--data-dir", directory.resolve("data").toString(), "--durability", durability));
        options.addAll(List.of(more));
        return options.toArray(new String[0]);
    }

    /**
     * A persistent session subscribes to {@code filter} and goes offline.
     */
    private static void subscribeOffline(final int port, final String filter) throws Exception
    {
        final Paho subscriber = Paho.connect(port, "offline-sub", Paho.options(false));
        subscriber.client.subscribe(filter, 1);
        subscriber.client.disconnect();
        subscriber.close();
    }

    /**
     * Starts the broker again on the same data directory: the stop was recorded clean, and the offline session is
     * there with every one of {@code expected} (and perhaps more).
     */
    private void assertDeliveredAfterRestart(final String[] options, final Set<String> expected) throws Exception
    {
        final ForkedBroker second = ForkedBroker.start(directory, options);
        try
        {
            final String recovered = second.awaitLine("ringmq recovered", 10_000).orElseThrow();
            assertThat(recovered).as("a clean stop, not a crash").doesNotContain("after a crash");
            final Paho again = Paho.connect(second.port(), "offline-sub", Paho.options(false));
            try
            {
                assertThat(again.sessionPresent()).isTrue();
                final Set<String> payloads = new HashSet<>();
                while (!payloads.containsAll(expected))
                {
                    final Paho.Received message = again.next();
                    assertThat(message).as("received %d of %d", payloads.size(), expected.size()).isNotNull();
                    payloads.add(message.payload());
                }
            }
            finally
            {
                again.close();
            }
        }
        finally
        {
            second.close();
        }
    }
}
