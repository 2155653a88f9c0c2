package io.ringmq.pipeline;

import org.junit.jupiter.api.Test;

import static io.ringmq.pipeline.BrokerContext.Threading.DEDICATED;
import static io.ringmq.pipeline.BrokerContext.Threading.INVOKER;
import static io.ringmq.pipeline.BrokerContext.Threading.SHARED;
import static io.ringmq.pipeline.BrokerContext.Threading.SHARED_NETWORK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ThreadingSettingsTest
{
    @Test
    void ioAgentsByDefaultAreAQuarterOfTheCores()
    {
        assertThat(ThreadingSettings.defaultIoThreads(SHARED_NETWORK, 2)).isEqualTo(1);
        assertThat(ThreadingSettings.defaultIoThreads(SHARED_NETWORK, 8)).isEqualTo(2);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 28)).isEqualTo(7);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 128)).isEqualTo(16);
    }

    @Test
    void dedicatedThreadingGetsAtLeastFourIoAgentsFromEightCores()
    {
        // measured on 16 cores: 2 agents on their own threads held QoS 0 ingest to 2.7 M msg/s, 4 reached 4.2-4.9 M
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 8)).isEqualTo(4);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 12)).isEqualTo(4);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 16)).isEqualTo(4);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 20)).isEqualTo(5);
        // fewer cores (not measured): a quarter of them, as in the other modes
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 7)).isEqualTo(1);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 4)).isEqualTo(1);
        assertThat(ThreadingSettings.defaultIoThreads(DEDICATED, 1)).isEqualTo(1);
    }

    @Test
    void oneIoAgentWhereEverythingSharesAThread()
    {
        assertThat(ThreadingSettings.defaultIoThreads(SHARED, 64)).isEqualTo(1);
        assertThat(ThreadingSettings.defaultIoThreads(INVOKER, 64)).isEqualTo(1);
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
}
