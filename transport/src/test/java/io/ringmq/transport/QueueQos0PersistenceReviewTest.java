package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of {@code --queue-qos0-messages} on RocksDB: a session's QoS 0 copy (a shared subscription's, whose copy
 * number follows its QoS 1 copy's) ends no record of another message, and a restart brings back exactly the QoS 1
 * messages published while its client was away (queued QoS 0 is memory only).
 */
@Timeout(120)
class QueueQos0PersistenceReviewTest
{
    @TempDir
    Path directory;

    private RingMq start() throws IOException
    {
        return RingMq.builder().threading(BrokerContext.Threading.DEDICATED).option("persistence", "rocksdb")
            .option("queue-qos0-messages", "true").option("io-threads", "2")
            .option("data-dir", directory.resolve("data").toString()).option("sys-interval", "0").start();
    }

    private static List<String> until(final Paho client, final String marker) throws Exception
    {
        final List<String> got = new ArrayList<>();
        for (Paho.Received m = client.next(); null != m; m = client.next())
        {
            if (m.payload().equals(marker))
            {
                return got;
            }
            got.add(m.payload() + "@" + m.qos());
        }
        throw new AssertionError("no " + marker + " after " + got);
    }

    @Test
    @DisplayName("review: a restart keeps exactly the QoS 1 messages around queued QoS 0 ones, nothing resurrected")
    void restartKeepsQos1AroundQueuedQos0() throws Exception
    {
        try (RingMq broker = start())
        {
            try (Paho s = Paho.connect(broker.port(), "s", Paho.options(false)))
            {
                s.client.subscribe(new String[]{"p/#", "$share/g/p/#"}, new int[]{1, 0});
            }
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                for (int i = 0; i < 6; i++)
                {
                    publisher.publish("p/x", "m" + i, i % 2, false);
                }
                publisher.publish("barrier", "b", 1, false);
            }
            // the client comes back, takes all and acknowledges (Paho acks QoS 1), then leaves again
            try (Paho s = Paho.connect(broker.port(), "s", Paho.options(false));
                Paho marker = Paho.connect(broker.port(), "marker"))
            {
                marker.publish("p/x", "mk1", 1, false);
                assertThat(until(s, "mk1")).hasSize(12); // each of m0..m5 twice: p/# at 1 and the share at 0
                // drain the marker's second copy (shared) before leaving
                marker.publish("p/x", "mk2", 1, false);
                until(s, "mk2");
                until(s, "mk2");
            }
            try (Paho publisher = Paho.connect(broker.port(), "pub"))
            {
                for (int i = 6; i < 12; i++)
                {
                    publisher.publish("p/x", "m" + i, i % 2, false);
                }
                publisher.publish("barrier", "b", 1, false);
            }
        }
        try (RingMq broker = start();
            Paho s = Paho.connect(broker.port(), "s", Paho.options(false));
            Paho marker = Paho.connect(broker.port(), "marker"))
        {
            assertThat(s.sessionPresent()).isTrue();
            marker.publish("p/x", "mk3", 1, false);
            final List<String> got = until(s, "mk3");
            // only the QoS 1 messages (m7, m9, m11) published while it was away, each once per subscription
            // that takes it at QoS 1 (own p/# at 1: 3 copies; the shared QoS 0 copies are in memory only)
            assertThat(got).containsExactly("m7@1", "m9@1", "m11@1");
        }
    }
}
