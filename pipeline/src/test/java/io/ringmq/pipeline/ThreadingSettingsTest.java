package io.ringmq.pipeline;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static io.ringmq.pipeline.BrokerContext.Threading.DEDICATED;
import static io.ringmq.pipeline.BrokerContext.Threading.SHARED;
import static io.ringmq.pipeline.BrokerContext.Threading.SHARED_NETWORK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ThreadingSettingsTest
{
    /**
     * Half the cores up to 4, then a quarter, at most 16, in both threadings with several agents (measured on 16
     * cores: one agent fanned out about 3.5 M deliveries/s, 2 agents 7.6-8.0 M on 4 cores; 2 agents on their own
     * threads held QoS 0 ingest on 8 cores to 2.7 M msg/s, 4 reached 4.2-4.9 M); one agent where everything shares a
     * thread.
     */
    @ParameterizedTest(name = "{0} on {1} cores: {2} I/O agents")
    @CsvSource({
        "SHARED_NETWORK, 2, 1", "SHARED_NETWORK, 3, 1", "SHARED_NETWORK, 4, 2", "SHARED_NETWORK, 6, 3",
        "SHARED_NETWORK, 8, 4", "DEDICATED, 28, 7", "DEDICATED, 128, 16",
        "DEDICATED, 8, 4", "DEDICATED, 12, 4", "DEDICATED, 16, 4", "DEDICATED, 20, 5",
        "DEDICATED, 7, 3", "DEDICATED, 4, 2", "DEDICATED, 1, 1",
        "SHARED, 64, 1", "INVOKER, 64, 1"})
    void defaultIoAgentsByThreadingAndCores(final BrokerContext.Threading threading, final int cores,
        final int expected)
    {
        assertThat(ThreadingSettings.defaultIoThreads(threading, cores)).isEqualTo(expected);
    }

    /** One thread on 2 cores or fewer, {@code shared-network} on 3 to 7, {@code dedicated} from 8. */
    @ParameterizedTest(name = "{0} cores: {1}")
    @CsvSource({"1, SHARED", "2, SHARED", "3, SHARED_NETWORK", "7, SHARED_NETWORK", "8, DEDICATED", "28, DEDICATED"})
    void defaultThreadingByCores(final int cores, final BrokerContext.Threading expected)
    {
        assertThat(ThreadingSettings.defaultThreading(cores)).isEqualTo(expected);
    }

    @Test
    void oneIoAgentWhereEverythingSharesAThreadWhateverIsAsked()
    {
        assertThat(new ThreadingSettings().threading(SHARED).ioThreads(6).conclude().ioThreads()).isEqualTo(1);
    }

    @Test
    void theDefaultFollowsTheThreadingChosenAfterIt()
    {
        final ThreadingSettings settings = new ThreadingSettings().threading(DEDICATED);
        final int cores = Runtime.getRuntime().availableProcessors();

        assertThat(settings.ioThreads()).isEqualTo(ThreadingSettings.defaultIoThreads(DEDICATED, cores));
        assertThat(settings.threading(SHARED_NETWORK).conclude().ioThreads())
            .isEqualTo(ThreadingSettings.defaultIoThreads(SHARED_NETWORK, cores));
    }

    @Test
    void anExplicitCountIsKeptAndZeroIsRefused()
    {
        assertThat(new ThreadingSettings().threading(DEDICATED).ioThreads(3).conclude().ioThreads()).isEqualTo(3);
        assertThatThrownBy(() -> new ThreadingSettings().threading(DEDICATED).ioThreads(0).conclude())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--io-threads must be 1..256");
    }

    /**
     * In shared threading a stage's turn drains what the one I/O agent could hand on in its own, the ring, up to four
     * batches; elsewhere one batch.
     */
    @ParameterizedTest(name = "{0}, a ring of {1}, batches of {2}: {3} events per turn")
    @CsvSource({"SHARED, 2048, 1024, 2048", "SHARED, 16384, 1024, 4096", "SHARED, 64, 1024, 1024",
        "SHARED, 2048, 2, 8", "SHARED_NETWORK, 2048, 1024, 1024", "DEDICATED, 16384, 1024, 1024",
        "INVOKER, 2048, 1024, 1024"})
    void stageTurnLimitByThreadingAndRing(final BrokerContext.Threading threading, final int ringSize,
        final int batchLimit, final int expected)
    {
        assertThat(new ThreadingSettings().threading(threading).stageBatchLimit(batchLimit).stageTurnLimit(ringSize))
            .isEqualTo(expected);
    }
}
