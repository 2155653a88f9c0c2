package io.ringmq.loadtest;

import io.ringmq.transport.RingMq;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code -sub-addr}: publishers on one broker, subscribers on another that a bridge feeds (here two in-process
 * ringmq brokers, the first bridging {@code bench/#} out to the second), counted end to end as any run is.
 */
@Timeout(60)
class BridgedLoadTest
{
    @Test
    @DisplayName("pubsub across a bridge at QoS 1: every message published on one broker reaches every subscriber on "
        + "the other, once and in order")
    void acrossABridge(@TempDir final Path folder) throws Exception
    {
        try (RingMq remote = RingMq.builder().port(0).option("sys-interval", "0").start())
        {
            final Path conf = folder.resolve("bridge.conf");
            Files.writeString(conf, String.join("\n", "connection bench", "address 127.0.0.1:" + remote.port(),
                "topic bench/# out 1", "restart_timeout 1", "notifications false", ""), StandardCharsets.UTF_8);
            try (RingMq local = RingMq.builder().port(0).option("sys-interval", "0").configFile(conf).start())
            {
                // the subscribers connect before the publishers, and the bridge carries every message from then
                final String output = LoadTestTest.run(0, "-addr", "127.0.0.1:" + local.port(), "-sub-addr",
                    "127.0.0.1:" + remote.port(), "-mode", "pubsub", "-subs", "2", "-pubs", "2", "-qos", "1",
                    "-rate", "50", "-payload", "32", "-duration", "2s", "-topic-prefix", "bench", "-out", folder.resolve("out").toString());
                final long published = LoadTestTest.jsonNumber(output, "published");
                assertThat(published).isEqualTo(200);
                assertThat(LoadTestTest.jsonNumber(output, "delivered")).isEqualTo(published * 2);
                assertThat(LoadTestTest.jsonNumber(output, "lost")).isZero();
                assertThat(LoadTestTest.jsonNumber(output, "duplicates")).isZero();
                assertThat(LoadTestTest.jsonNumber(output, "reordered")).isZero();
                assertThat(Files.readString(folder.resolve("out").resolve("summary.md")))
                    .contains("subscribers on 127.0.0.1:" + remote.port());
            }
        }
    }
}
