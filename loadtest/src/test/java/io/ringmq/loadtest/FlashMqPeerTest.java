package io.ringmq.loadtest;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * FlashMQ as an optional peer of the matrix runner: where its binary is looked for, the configuration it is started
 * with, and a matrix that names it on a machine without it (skipped, with a note; no FlashMQ needed here).
 */
class FlashMqPeerTest
{
    @TempDir
    Path dir;

    private Path executable(final Path file) throws IOException
    {
        Files.createDirectories(file.getParent());
        Files.writeString(file, "#!/bin/sh\n");
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
        return file;
    }

    @Test
    void flashmqBinWinsOverThePath() throws IOException
    {
        final Path bin = executable(dir.resolve("custom/my-flashmq"));
        final Path onPath = executable(dir.resolve("bin/flashmq"));
        assertThat(BrokerProcess.findFlashMq(Map.of("FLASHMQ_BIN", bin.toString(), "PATH", onPath.getParent().toString())))
            .contains(bin);
    }

    @Test
    void aFlashmqBinThatIsNotThereIsNotReplacedByThePath() throws IOException
    {
        final Path onPath = executable(dir.resolve("bin/flashmq"));
        final Map<String, String> env = Map.of("FLASHMQ_BIN", dir.resolve("nothing").toString(),
            "PATH", onPath.getParent().toString());
        assertThat(BrokerProcess.findFlashMq(env)).isEmpty();
        assertThat(BrokerProcess.unavailable("flashmq", Map.of(), env)).get().asString()
            .contains("FLASHMQ_BIN=" + dir.resolve("nothing")).contains("not an executable file");
    }

    @Test
    void thePathIsSearchedInOrderForAnExecutableFile() throws IOException
    {
        Files.createDirectories(dir.resolve("empty"));
        Files.createDirectories(dir.resolve("plain"));
        Files.writeString(dir.resolve("plain/flashmq"), "not executable");
        Files.createDirectories(dir.resolve("folder/flashmq")); // a folder of that name
        final Path first = executable(dir.resolve("first/flashmq"));
        executable(dir.resolve("second/flashmq"));
        final String path = String.join(File.pathSeparator, "", dir.resolve("empty").toString(),
            dir.resolve("plain").toString(), dir.resolve("folder").toString(), first.getParent().toString(),
            dir.resolve("second").toString());
        assertThat(BrokerProcess.findFlashMq(Map.of("PATH", path))).contains(first);
        assertThat(BrokerProcess.findFlashMq(Map.of("PATH", "", "FLASHMQ_BIN", " "))).isEmpty();
        assertThat(BrokerProcess.findFlashMq(Map.of())).isEmpty();
    }

    @Test
    void onlyAMissingFlashmqWithoutACommandIsUnavailable()
    {
        final Map<String, String> noFlashMq = Map.of("PATH", dir.toString());
        assertThat(BrokerProcess.unavailable("flashmq", Map.of(), noFlashMq)).get().asString()
            .contains("flashmq not found").contains("FLASHMQ_BIN").contains("build-flashmq.sh");
        assertThat(BrokerProcess.unavailable("flashmq", Map.of("flashmq", "/opt/fmq/flashmq -c x.conf"), noFlashMq))
            .as("a command given in the matrix is tried as it is").isEmpty();
        assertThat(BrokerProcess.unavailable("mosquitto", Map.of(), noFlashMq)).isEmpty();
        assertThat(BrokerProcess.unavailable("ringmq", Map.of(), noFlashMq)).isEmpty();
    }

    @Test
    void theConfigurationListensOnLoopbackAnonymousWithMosquittosQueueAndNoStorage()
    {
        final String config = BrokerProcess.flashMqConfig(18830, 2, null, BrokerProcess.FLASHMQ_QUEUED_MESSAGES, 20000,
            "");
        assertThat(config.lines()).containsSubsequence("listen {", "  protocol mqtt", "  inet_protocol ip4",
            "  inet4_bind_address 127.0.0.1", "  port 18830", "  tcp_nodelay true", "}");
        assertThat(config.lines()).contains("allow_anonymous true", "thread_count 2",
            "max_qos_msg_pending_per_client 1000", "max_qos_bytes_pending_per_client 1073741824", "log_level notice",
            "rlimit_nofile 20000");
        assertThat(config).doesNotContain("storage_dir").doesNotContain("log_file").endsWith("\n");
        // every directive is one FlashMQ 1.26 knows (its parser refuses unknown ones)
        assertThat(config.lines().filter(l -> !l.startsWith("#") && !l.equals("}") && !l.equals("listen {"))
            .map(l -> l.strip().split(" ")[0])).allMatch(key -> List.of("protocol", "inet_protocol",
            "inet4_bind_address", "port", "tcp_nodelay", "allow_anonymous", "thread_count",
            "max_qos_msg_pending_per_client", "max_qos_bytes_pending_per_client", "log_level", "rlimit_nofile")
            .contains(key));
    }

    @Test
    void persistenceAndExtraLinesWhenAsked()
    {
        final Path storage = dir.resolve("flashmq-data");
        final String config = BrokerProcess.flashMqConfig(1883, 4, storage, 65535, 0,
            "  max_qos_msg_pending_per_client 65535\nwills_enabled false  ");
        assertThat(config.lines()).contains("storage_dir " + storage, "thread_count 4");
        assertThat(config).as("no open files limit known: FlashMQ's default").doesNotContain("rlimit_nofile");
        assertThat(config).endsWith("max_qos_msg_pending_per_client 65535\nwills_enabled false\n");
    }

    @Test
    void theOpenFilesLimitIsTheHardLimitOfProcLimits()
    {
        final String header = "Limit                     Soft Limit           Hard Limit           Units     ";
        assertThat(BrokerProcess.openFilesLimit(List.of(header,
            "Max processes             63432                63432                processes ",
            "Max open files            1024                 20000                files     "))).isEqualTo(20000);
        assertThat(BrokerProcess.openFilesLimit(List.of(header,
            "Max open files            1024                 unlimited            files     "))).isZero();
        assertThat(BrokerProcess.openFilesLimit(List.of(header))).isZero();
        assertThat(BrokerProcess.openFilesLimit()).isGreaterThanOrEqualTo(0);
    }

    @Test
    void aMatrixNamingFlashmqWhereItIsNotInstalledSkipsItWithANote() throws Exception
    {
        final Matrix matrix = MatrixTableTest.withoutPeers(dir, "{\"name\": \"peer\", \"brokers\": [\"flashmq\"], " +
            "\"scenarios\": [{\"name\": \"one\", \"args\": \"-mode pub -pubs 1 -qos 0 -duration 1s\"}]}");
        assertThat(MatrixTableTest.runAndRead(matrix)).contains("## one")
            .contains("- skipped: flashmq (flashmq not found: set FLASHMQ_BIN or put flashmq on the PATH")
            .doesNotContain("failed");
    }
}
