package io.ringmq.transport;

import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole path of a limit change, as an operator makes it: edit mosquitto.conf, {@code ringmq reload} (SIGHUP),
 * the broker reads the file again and applies what reloads live, names what needs a restart.
 */
class ReloadSighupLimitsTest
{
    @TempDir
    Path directory;

    @Test
    @Timeout(60)
    @DisplayName("SIGHUP: a lowered message_size_limit closes a connected 3.1.1 client's bigger PUBLISH; a changed "
        + "persistent_client_expiration is logged as needing a restart; log_level warn silences the next reloads' "
        + "info line")
    void configFileLimitsOnSighup() throws Exception
    {
        final Path config = directory.resolve("mosquitto.conf");
        Files.writeString(config, "message_size_limit 60000\npersistent_client_expiration 7d\n",
            StandardCharsets.UTF_8);
        try (ForkedBroker forked = ForkedBroker.start(directory, "-c", config.toString());
            RawClient client = new RawClient(forked.port()))
        {
            assertThat(client.handshake(RawClient.connect("big", true, 60))).isZero();
            client.send(RawClient.publish("sighup/p", new byte[4_000], 1, 1));
            assertThat(client.readPacket(5_000)).as("a PUBACK under the old limit")
                .isEqualTo(io.ringmq.protocol.PacketType.PUBACK);

            Files.writeString(config, "message_size_limit 1000\npersistent_client_expiration 1d\n",
                StandardCharsets.UTF_8);
            reload(forked);
            assertThat(forked.awaitLine("limits: max-packet-size", 20_000)).as(forked.output()).isPresent();
            assertThat(forked.awaitLine("needs a restart: persistent-client-expiration", 0)).isPresent();

            client.send(RawClient.publish("sighup/p", new byte[4_000], 1, 2));
            assertThat(client.closedWithin(5_000)).as("over the new limit: closed").isTrue();
            try (RawClient small = new RawClient(forked.port()))
            {
                assertThat(small.handshake(RawClient.connect("small", true, 60))).isZero();
                small.send(RawClient.publish("sighup/p", new byte[500], 1, 1));
                assertThat(small.readPacket(5_000)).isEqualTo(io.ringmq.protocol.PacketType.PUBACK);
            }

            // log_level warn: this reload's own line is the last info line; later reloads say only what needs a
            // restart. Each reload waits for the one before to be seen: signals sent together may be merged
            Files.writeString(config, "message_size_limit 1000\npersistent_client_expiration 7d\nlog_level warn\n",
                StandardCharsets.UTF_8);
            reload(forked);
            awaitCount(forked, "reload: reloaded", 2);
            Files.writeString(config, "message_size_limit 60000\npersistent_client_expiration 2d\nlog_level warn\n",
                StandardCharsets.UTF_8);
            reload(forked);
            awaitCount(forked, "needs a restart: persistent-client-expiration", 2);
            Files.writeString(config, "message_size_limit 60000\npersistent_client_expiration 3d\nlog_level warn\n",
                StandardCharsets.UTF_8);
            reload(forked);
            awaitCount(forked, "needs a restart: persistent-client-expiration", 3); // after reload 3's info line
            assertThat(count(forked, "reload: reloaded")).as("reloads 3 and 4 said nothing at info level:%n%s",
                forked.output()).isEqualTo(2);
            try (RawClient big = new RawClient(forked.port()))
            {
                assertThat(big.handshake(RawClient.connect("big-again", true, 60))).isZero();
                big.send(RawClient.publish("sighup/p", new byte[4_000], 1, 1));
                assertThat(big.readPacket(5_000)).as("the limit raised again by the third reload")
                    .isEqualTo(io.ringmq.protocol.PacketType.PUBACK);
            }
        }
    }

    private static int count(final ForkedBroker forked, final String fragment)
    {
        return forked.output().split(java.util.regex.Pattern.quote(fragment), -1).length - 1;
    }

    private static void awaitCount(final ForkedBroker forked, final String fragment, final int count)
        throws InterruptedException
    {
        final long deadline = System.nanoTime() + 20_000_000_000L;
        while (count(forked, fragment) < count && System.nanoTime() < deadline)
        {
            Thread.sleep(10); // polling the condition
        }
        assertThat(count(forked, fragment)).as("'%s' %d times:%n%s", fragment, count, forked.output())
            .isEqualTo(count);
    }

    private void reload(final ForkedBroker forked) throws Exception
    {
        assertThat(Main.run("reload", "--pid", Long.toString(forked.pid()), "--counters-dir",
            directory.resolve("counters").toString())).isZero();
    }
}
