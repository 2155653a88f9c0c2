package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A flooding QoS 0 publisher ({@code -rate 0}) sends batches of 64 PUBLISHes, each followed by a PINGREQ, and with no
 * subscribers keeps about {@link Publishers#FLOOD_WINDOW_BYTES} of them unanswered (at least two batches): against a
 * {@link ScriptedBroker} that holds its PINGRESPs until the client pauses, it sends exactly that window and then
 * waits, and every message it counts was read.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class FloodWindowTest
{
    private static ScriptedBroker holdingPings() throws IOException
    {
        return new ScriptedBroker()
        {
            boolean holdPings()
            {
                return true;
            }
        };
    }

    @ParameterizedTest(name = "{0}-byte payload: {1} batches of 64 unanswered")
    @CsvSource({"64, 9", "256, 2", "1024, 2"})
    @DisplayName("a flooding publisher sends its window, no more, before a PINGRESP answers")
    void aFloodKeepsItsWindowUnanswered(final int payload, final int batches) throws IOException
    {
        try (ScriptedBroker broker = holdingPings())
        {
            final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "1",
                "-qos", "0", "-payload", Integer.toString(payload), "-duration", "1s", "-quiet");
            assertThat(broker.maxUnansweredPublishes.get()).as(output).isEqualTo(batches * 64);
            assertThat(jsonNumber(output, "published")).isPositive().isEqualTo(jsonNumber(output, "acknowledged"));
            assertThat(output).doesNotContain("problems:");
        }
    }

    @Test
    @DisplayName("QoS 0 messages whose PINGREQ went unanswered are not counted as read by the broker")
    void unansweredPingsLeaveMessagesUnproven() throws Exception
    {
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            boolean dropPings()
            {
                return true;
            }
        })
        {
            final LoadTest flags = new LoadTest();
            new picocli.CommandLine(flags).parseArgs("-addr", "127.0.0.1:" + broker.port(), "-mode", "pub",
                "-pubs", "1", "-qos", "0", "-payload", "64", "-duration", "200ms", "-quiet");
            final Settings settings = flags.settings();
            settings.drainNs = TimeUnit.MILLISECONDS.toNanos(200);
            settings.lateGraceNs = 0;
            final Report report = new ScenarioRunner(settings, null, "").runMessages(-1);
            assertThat(report.published).as(report.json()).isEqualTo(9 * 64); // the window, then nothing answered
            assertThat(report.acknowledged).isZero();
            assertThat(report.problems()).contains("576 messages of 1 publisher not known to be read");
        }
    }

    @Test
    @DisplayName("with subscribers (a fan-out) a flooding publisher keeps two batches unanswered, whatever the size")
    void aFanOutKeepsTwoBatches() throws IOException
    {
        try (ScriptedBroker broker = holdingPings())
        {
            final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "pubsub", "-subs", "1",
                "-pubs", "1", "-qos", "0", "-payload", "64", "-duration", "1s", "-quiet");
            assertThat(broker.maxUnansweredPublishes.get()).as(output).isEqualTo(2 * 64);
            assertThat(jsonNumber(output, "delivered")).isPositive();
        }
    }

    @Test
    @DisplayName("the window is 48 KiB of PUBLISHes in batches of 64, never fewer than two batches")
    void windowInBatches()
    {
        // "loadtest/0" and 64 bytes: 1 + 1 + 2 + 10 + 64 = 78 bytes, 4,992 a batch
        assertThat(Publishers.floodBatches(78)).isEqualTo(9);
        assertThat(Publishers.floodBatches(Publishers.FLOOD_WINDOW_BYTES / 64)).isEqualTo(2); // one batch fills it
        assertThat(Publishers.floodBatches(Publishers.FLOOD_WINDOW_BYTES / 64 / 5)).isEqualTo(5);
        assertThat(Publishers.floodBatches(1_040)).isEqualTo(2);
        assertThat(Publishers.floodBatches(268_435_460)).isEqualTo(2); // the largest packet: no overflow
    }
}
