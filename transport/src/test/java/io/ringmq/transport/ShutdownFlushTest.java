package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
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
        final Path data = directory.resolve("data");
        final String[] options = {"--sys-interval", "0", "--persistence", "rocksdb", "--data-dir", data.toString(),
            "--durability", durability, "--max-queued", "10000"};
        final ForkedBroker first = ForkedBroker.start(directory, options);
        try
        {
            final Paho subscriber = Paho.connect(first.port(), "offline-sub", Paho.options(false));
            subscriber.client.subscribe("flush/#", 1);
            subscriber.client.disconnect();
            subscriber.close();
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
                while (payloads.size() < COUNT)
                {
                    final Paho.Received message = again.next();
                    assertThat(message).as("received %d of %d", payloads.size(), COUNT).isNotNull();
                    payloads.add(message.payload());
                }
                assertThat(payloads).hasSize(COUNT);
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
