package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The runner reads the drivers' histograms and counts only once their threads have ended: a driver still running
 * after the stop fails the run instead of being read while it writes.
 */
@Timeout(30)
class ScenarioRunnerStopTest
{
    @Test
    @DisplayName("threads that end within the time: the runner goes on")
    void endedThreadsPass() throws Exception
    {
        final Thread quick = new Thread(() -> { }, "loadtest-io-0");
        final Thread sleeper = new Thread(() -> sleep(50), "loadtest-io-1");
        quick.start();
        sleeper.start();

        ScenarioRunner.awaitStopped(new Thread[] {quick, sleeper}, 5_000);

        assertThat(quick.isAlive()).isFalse();
        assertThat(sleeper.isAlive()).isFalse();
    }

    @Test
    @DisplayName("a thread still running after the time: the run fails, naming it, and the threads are interrupted")
    void aStuckThreadFailsTheRun() throws Exception
    {
        final CountDownLatch interrupted = new CountDownLatch(1);
        final Thread stuck = new Thread(() ->
        {
            try
            {
                Thread.sleep(TimeUnit.MINUTES.toMillis(5));
            }
            catch (final InterruptedException ex)
            {
                interrupted.countDown();
            }
        }, "loadtest-io-3");
        stuck.setDaemon(true);
        stuck.start();

        assertThatThrownBy(() -> ScenarioRunner.awaitStopped(new Thread[] {stuck}, 200))
            .isInstanceOf(IOException.class)
            .hasMessageContaining("loadtest-io-3")
            .hasMessageContaining("200 ms");
        assertThat(interrupted.await(10, TimeUnit.SECONDS)).isTrue();
    }

    private static void sleep(final long ms)
    {
        try
        {
            Thread.sleep(ms);
        }
        catch (final InterruptedException ex)
        {
            Thread.currentThread().interrupt();
        }
    }
}
