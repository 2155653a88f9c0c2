package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rings' mappings (RingMemory: outbound rings, message logs, routing logs) end with the broker that made them, not
 * at some later garbage collection: a JVM that starts many brokers (the tests) kept every closed one's mappings.
 */
class BrokerRingMemoryTest
{
    private static final BrokerContext.Threading[] THREADED = {
        BrokerContext.Threading.DEDICATED, BrokerContext.Threading.SHARED_NETWORK, BrokerContext.Threading.SHARED};

    @Test
    void closedBrokersLeaveNoRingMappingsInEveryThreadingMode() throws Exception
    {
        final long before = ringMappings();
        for (int i = 0; i < 48; i++)
        {
            final BrokerContext.Threading threading = THREADED[i % THREADED.length];
            final Broker broker = Broker.launch(TestBrokers.v5Context().threads(t -> t.threading(threading)));
            // other tests' unclosed rings may be collected (unmapped) at any time: counts only fall by themselves,
            // so each is compared with one taken while this broker ran, never with an earlier baseline
            final long running = ringMappings();
            if (i < THREADED.length)
            {
                try (Paho subscriber = Paho.connect(broker.port(), "sub-" + i);
                    Paho publisher = Paho.connect(broker.port(), "pub-" + i))
                {
                    subscriber.client.subscribe("rings/#", 1); // the rings and logs written before the close
                    publisher.publish("rings/" + i, "written", 1, false);
                    assertThat(subscriber.next()).as("delivered through the rings").isNotNull();
                }
            }
            broker.close();
            assertThat(ringMappings()).as("a closed broker unmaps its rings at once").isLessThan(running);
        }
        final Broker invoker = Broker.launch(TestBrokers.v5Context()
            .threads(t -> t.threading(BrokerContext.Threading.INVOKER)));
        invoker.invoke();
        invoker.close();
        assertThat(invoker.invoke()).as("a closed invoker broker does nothing (its rings are unmapped)").isZero();
        assertThat(ringMappings()).as("ring mappings left by 49 closed brokers").isLessThanOrEqualTo(before);
    }

    private static long ringMappings() throws IOException
    {
        try (var lines = Files.lines(Path.of("/proc/self/maps")))
        {
            return lines.filter(line -> line.contains("ringmq-ring-")).count();
        }
    }
}
