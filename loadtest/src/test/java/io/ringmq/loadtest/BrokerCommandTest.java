package io.ringmq.loadtest;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A broker's command line from a matrix's {@code "commands"}: the port it gets, and its run's own folder.
 */
class BrokerCommandTest
{
    @TempDir
    Path dir;

    @Test
    @DisplayName("{port} and {dir} are filled in, each word split on whitespace: a run's store is its own")
    void portAndFolderFilledIn()
    {
        final Path run = dir.resolve("fan-out/ringmq");
        assertThat(BrokerProcess.expand("bin/ringmq --bind 127.0.0.1  --port {port} --data-dir {dir}/ringmq-data",
            18830, run)).containsExactly("bin/ringmq", "--bind", "127.0.0.1", "--port", "18830", "--data-dir",
            run.toAbsolutePath() + "/ringmq-data");
        assertThat(BrokerProcess.expand("mosquitto -c {dir}/m.conf -p {port}{port}", 1, run))
            .containsExactly("mosquitto", "-c", run.toAbsolutePath() + "/m.conf", "-p", "11");
    }
}
