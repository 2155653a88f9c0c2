package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.status.BrokerCounters;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.logging.Level;
import java.util.logging.LogRecord;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What an operator reads: the per-interval line of limits hit, the JSON log format, and a clean shutdown.
 */
class OperationsLoggingTest
{
    @Test
    @DisplayName("limits hit are logged once per interval, with how many, and only limits and drops")
    void limitReport()
    {
        final BrokerCounters counters = new BrokerCounters();
        final LimitReport report = new LimitReport(counters, 60_000, 0);
        counters.add(BrokerCounters.CONNECTIONS_REFUSED_PER_ADDRESS, 12);
        counters.add(BrokerCounters.QUEUE_FULL_DROPPED, 3);
        counters.add(BrokerCounters.PUBLISH_IN, 1_000);
        assertThat(report.poll(59_999)).as("not yet").isNull();
        assertThat(report.poll(60_000)).isEqualTo("limits hit in the last 60 s: "
            + "messages dropped (max-queued) +3, connections refused (max-connections-per-address) +12");
        assertThat(report.poll(120_000)).as("nothing new").isNull();
        counters.increment(BrokerCounters.QUEUE_FULL_DROPPED);
        assertThat(report.poll(180_000)).endsWith("messages dropped (max-queued) +1");
    }

    @Test
    @DisplayName("--log-format json writes one JSON object per line, escaped; a bad level or format is refused")
    void jsonLogFormat()
    {
        final LogRecord record = new LogRecord(Level.WARNING, "a \"quoted\"\nline\t\u0001");
        record.setLoggerName("io.ringmq");
        record.setMillis(0);
        final String line = new Logging.JsonFormatter().format(record);
        assertThat(line).isEqualTo("{\"time\":\"1970-01-01T00:00:00Z\",\"level\":\"WARN\",\"logger\":\"io.ringmq\","
            + "\"message\":\"a \\\"quoted\\\"\\nline\\t\\u0001\"}" + System.lineSeparator());
        assertThatThrownBy(() -> Logging.level("loud")).hasMessageContaining("--log-level");
        assertThatThrownBy(() -> Logging.configure("info", "xml")).hasMessageContaining("--log-format");
    }

    @Test
    @Timeout(30)
    @DisplayName("a clean shutdown stops accepting and closes every client without publishing a will")
    void cleanShutdownPublishesNoWill() throws Exception
    {
        final Broker broker = Broker.launch(new BrokerContext().bindAddress("127.0.0.1").port(0)
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2))
            .observability(o -> o.sysIntervalMs(0)));
        try (RawClient mortal = new RawClient(broker.port()); Paho watcher = Paho.connect(broker.port(), "watcher"))
        {
            watcher.client.subscribe("will/#", 0);
            assertThat(mortal.handshake(RawClient.connectWithWill("mortal", "will/mortal", "bye", 0)))
                .isZero();
            final long routed = broker.counters().get(BrokerCounters.EVENTS_ROUTE);
            broker.close();
            assertThat(mortal.closedWithin(5_000)).isTrue();
            assertThat(broker.counters().get(BrokerCounters.EVENTS_ROUTE)).as("no end reached routing: no will")
                .isEqualTo(routed);
            assertThat(watcher.received).isEmpty();
            assertThat(broker.counters().get(BrokerCounters.UNEXPECTED_ERRORS)).isZero();
        }
    }
}
