package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The broker sizes {@code bin/ringmq} passes below 512m (README, "Memory: bin/ringmq and its flags"): the smaller
 * rings and ingress ring that keep 5,000 idle connections within 64 MB at 256m, each only when not given.
 */
@Timeout(60)
class LauncherSizesTest extends LauncherDryRunTest
{
    @Test
    @DisplayName("below 512m: 2,048 ingress slots of 128 inline bytes, 50,000 sessions, a 1 MiB message log (4 MiB in " +
        "shared threading), a 2 MiB outbound ring and a young generation starting at 4 MiB")
    void smallerSizesBelow512m() throws Exception
    {
        final String command = dryRun("--memory-limit", "256m", "--threading", "shared");
        assertThat(command).contains(" --ring-size 2048 ", " --max-sessions 50000 ", " --message-log-bytes 4194304 ",
            " --outbound-ring-bytes 2097152 ", " --slot-inline-bytes 128 ", " -XX:NewSize=4m ");
        assertThat(dryRun("--memory-limit", "256m", "--threading", "shared-network"))
            .contains(" --message-log-bytes 1048576 ");
        assertThat(dryRun("--memory-limit", "511m")).contains(" --ring-size 2048 ", " --slot-inline-bytes 128 ");
        assertThat(dryRun("--memory-limit", "512m")).doesNotContain("--ring-size", "--max-sessions",
            "--slot-inline-bytes", "NewSize");
    }

    @Test
    @DisplayName("a size given on the command line or in --config wins: the launcher adds none of its own")
    void aGivenSizeWins() throws Exception
    {
        final String command = dryRun("--ring-size", "8192");
        assertThat(command).contains(" --ring-size 8192").doesNotContain("--ring-size 2048");
        assertThat(command.split("--ring-size", -1)).hasSize(2);

        final Path config = Files.writeString(directory.resolve("ringmq.conf"), "ring-size 1024\n");
        assertThat(dryRun("--config", config.toString())).doesNotContain("--ring-size");

        assertThat(dryRun("--slot-inline-bytes=512")).contains(" --slot-inline-bytes=512")
            .doesNotContain("--slot-inline-bytes 128");
        final Path inline = Files.writeString(directory.resolve("inline.conf"), "slot-inline-bytes 64\n");
        assertThat(dryRun("--config", inline.toString())).doesNotContain("--slot-inline-bytes");
    }

    @Test
    @DisplayName("memory for the I/O agents the broker will start: half the cores up to 4, then a quarter")
    void ioAgentsAsTheBrokerPicksThem() throws Exception
    {
        // RINGMQ_CORES: the launcher sizes for that many cores, and passes the agents it sized for
        assertThat(budget(12)).as("dedicated by default from 8 cores: 4 agents").isEqualTo(budget(12, "--io-threads",
            "4")).isNotEqualTo(budget(12, "--io-threads", "3"));
        assertThat(budget(8, "--threading", "dedicated")).isEqualTo(budget(8, "--io-threads", "4"));
        assertThat(budget(8, "--threading", "DEDICATED")).as("any case, as the broker reads it")
            .isEqualTo(budget(8, "--io-threads", "4"));
        assertThat(budget(8)).as("dedicated on 8 cores: 4 agents").isEqualTo(budget(8, "--io-threads", "4"));
        assertThat(budget(4)).as("shared-network on 4 cores: half").isEqualTo(budget(4, "--io-threads", "2"))
            .isNotEqualTo(budget(4, "--io-threads", "1"));
        assertThat(budget(8, "--threading", "shared-network")).isEqualTo(budget(8, "--io-threads", "4"));
        assertThat(budget(28)).isEqualTo(budget(28, "--io-threads", "7"));
        assertThat(launch(12)).contains(" --io-threads 4");
        assertThat(launch(12, "--io-threads", "3")).contains(" --io-threads 3").doesNotContain("--io-threads 4");
        assertThat(launch(2)).as("shared on 2 cores: one agent, nothing to pass").doesNotContain("--io-threads");
    }

    @Test
    @DisplayName("256m holds the rings of the 7 I/O agents of a 28-core box, with the store: a 1 MiB log each")
    void theDefaultLimitFitsTheReferenceBox() throws Exception
    {
        final String command = LauncherDryRun.run(List.of(), Map.of("RINGMQ_JAR", jar.toString(), "RINGMQ_CORES",
            "28", "RINGMQ_CACHE_DIR", directory.resolve("cache").toString()), 0, "--memory-limit", "256m");
        assertThat(command).contains(" --io-threads 7", " --threading dedicated", " --message-log-bytes 1048576")
            .contains("-Xmx64m");
    }

    @Test
    @DisplayName("the threading sized for is passed on (a CPU quota or RINGMQ_CORES cannot split the two); one " +
        "given is kept")
    void theThreadingSizedForIsPassedOn() throws Exception
    {
        assertThat(launch(2)).contains(" --threading shared ");
        assertThat(launch(7)).contains(" --threading shared-network ");
        assertThat(launch(8)).contains(" --threading dedicated ");
        assertThat(launch(12)).contains(" --threading dedicated ");
        assertThat(launch(12, "--threading", "shared").split("--threading", -1)).hasSize(2);
        final Path config = Files.writeString(directory.resolve("threading.conf"), "threading shared\n");
        assertThat(launch(12, "--config", config.toString())).doesNotContain("--threading ");
    }

    @Test
    @DisplayName("a config file's keys count written with _ as with -, as the broker reads them")
    void configKeysWithUnderscores() throws Exception
    {
        final Path config = Files.writeString(directory.resolve("underscores.conf"),
            "threading shared-network\nio_threads 3\nmax_packet_size 262080\nring_size 1024\n" +
                "message_log_bytes 2097152\n");
        final String command = dryRun("--memory-limit", "384m", "--config", config.toString());
        assertThat(command).doesNotContain("--io-threads", "--max-packet-size", "--ring-size", "--message-log-bytes",
            "--threading ");
        final Path hyphens = Files.writeString(directory.resolve("hyphens.conf"),
            "threading shared-network\nio-threads 3\nmax-packet-size 262080\nring-size 1024\n" +
                "message-log-bytes 2097152\n");
        assertThat(command.replace(config.toString(), "CONFIG")).as("sized as the same keys with -")
            .isEqualTo(dryRun("--memory-limit", "384m", "--config", hyphens.toString())
                .replace(hyphens.toString(), "CONFIG"));
    }

    /**
     * @return the --memory-budget the launcher gives at 1g on {@code cores} cores with {@code args}.
     */
    private String budget(final int cores, final String... args) throws Exception
    {
        final String command = launch(cores, args);
        final Matcher budget = Pattern.compile("--memory-budget (\\d+)").matcher(command);
        assertThat(budget.find()).as(command).isTrue();
        return budget.group(1);
    }

    /**
     * @return the launcher's command at 1g, sized for {@code cores} cores, with {@code args}.
     */
    private String launch(final int cores, final String... args) throws Exception
    {
        final List<String> launcherArgs = new ArrayList<>(List.of("--persistence", "memory", "--memory-limit", "1g"));
        launcherArgs.addAll(List.of(args));
        return LauncherDryRun.run(List.of(), Map.of("RINGMQ_JAR", jar.toString(), "RINGMQ_CORES",
            Integer.toString(cores)), 0, launcherArgs.toArray(new String[0])) + " ";
    }

    private String dryRun(final String... args) throws Exception
    {
        return dryRun("", 0, args) + " ";
    }
}
