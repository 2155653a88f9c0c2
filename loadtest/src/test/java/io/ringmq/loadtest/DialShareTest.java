package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.ringmq.loadtest.LoadTestTest.jsonNumber;
import static io.ringmq.loadtest.LoadTestTest.run;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code -dial-concurrency} is the scenario's, shared among the drivers it runs: pub mode runs its publishers on one
 * driver whatever {@code -threads} says, so that driver dials with the whole concurrency, not a {@code -threads}th
 * of it. Against a {@link ScriptedBroker} that holds each CONNACK 200 ms, counting the CONNECTs it holds at once.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DialShareTest
{
    @Test
    @DisplayName("pub mode with -threads 4 dials with all of -dial-concurrency")
    void onePublisherDriverDialsWithTheWholeConcurrency() throws IOException
    {
        final AtomicInteger holding = new AtomicInteger();
        final AtomicInteger most = new AtomicInteger();
        try (ScriptedBroker broker = new ScriptedBroker()
        {
            void beforeConnack(final Connection connection)
            {
                most.accumulateAndGet(holding.incrementAndGet(), Math::max);
                try
                {
                    Thread.sleep(200);
                }
                catch (final InterruptedException ex)
                {
                    Thread.currentThread().interrupt();
                }
                holding.decrementAndGet();
            }
        })
        {
            final String output = run(0, "-addr", "127.0.0.1:" + broker.port(), "-mode", "pub", "-pubs", "8",
                "-threads", "4", "-dial-concurrency", "8", "-rate", "10", "-duration", "200ms", "-quiet");
            assertThat(jsonNumber(output, "failed")).as(output).isZero();
            // a quarter of the concurrency (2) held at most two CONNECTs at once
            assertThat(most.get()).as(output).isGreaterThan(2).isLessThanOrEqualTo(8);
        }
    }
}
