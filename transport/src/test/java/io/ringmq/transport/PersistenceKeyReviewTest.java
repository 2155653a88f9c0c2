package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Adversarial review of the store's keys: what a client chooses (a filter, a topic) must never change how another
 * client's records are read back.
 */
@Timeout(120)
class PersistenceKeyReviewTest
{
    @TempDir
    Path directory;

    private RingMq start() throws IOException
    {
        return RingMq.builder().threading(BrokerContext.Threading.SHARED).option("persistence", "rocksdb")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start();
    }

    @Test
    @DisplayName("an 8-byte subscription filter (\"温度/#\") is not read as a message number: sessions made after the "
        + "next restart still come back with their queued messages [MQTT-3.1.2-4] [MQTT-4.1.0-1]")
    void eightByteFilterDoesNotPoisonTheEpoch() throws Exception
    {
        final String filter = "温度/#"; // 3 + 3 + 2 bytes of UTF-8: its key is as long as a message's
        assertThat(filter.getBytes(StandardCharsets.UTF_8)).hasSize(8);
        try (RingMq broker = start())
        {
            try (Paho a = Paho.connect(broker.port(), "a", Paho.options(false)))
            {
                a.client.subscribe(filter, 1);
            }
        }
        try (RingMq broker = start()) // this start's epoch is taken from the filter's first 4 bytes
        {
            try (Paho b = Paho.connect(broker.port(), "b", Paho.options(false)))
            {
                b.client.subscribe("b/#", 1);
            }
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                for (int i = 0; i < 5; i++)
                {
                    publisher.publish("b/x", "m" + i, 1, false);
                }
            }
        }
        try (RingMq broker = start())
        {
            assertThat(broker.sessionCount()).as("a and b").isEqualTo(2);
            try (Paho b = Paho.connect(broker.port(), "b", Paho.options(false)))
            {
                assertThat(b.sessionPresent()).isTrue();
                final List<String> got = new ArrayList<>();
                for (int i = 0; i < 5; i++)
                {
                    final Paho.Received message = b.next();
                    assertThat(message).as("message %d of 5 (got %s)", i, got).isNotNull();
                    got.add(message.payload());
                }
                assertThat(got).containsExactly("m0", "m1", "m2", "m3", "m4");
            }
            assertThat(broker.unexpectedErrors()).isZero();
        }
    }
}
