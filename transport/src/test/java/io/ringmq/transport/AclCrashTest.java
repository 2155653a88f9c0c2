package io.ringmq.transport;

import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Access control across a crash: a broker in a process of its own ({@link ForkedBroker}) killed with SIGKILL and
 * started again on its data directory under a changed ACL file. The sessions it restores are judged by their stored
 * users' rules as the new file has them, before their clients come back.
 */
class AclCrashTest
{
    @TempDir
    Path directory;
    private final List<AutoCloseable> clients = new ArrayList<>();
    private ForkedBroker broker;

    @AfterEach
    void stop() throws Exception
    {
        TestBrokers.closeAll(clients, null, false);
        if (null != broker)
        {
            broker.close();
        }
    }

    private ForkedBroker start(final Path passwords, final Path acl) throws Exception
    {
        return ForkedBroker.start(directory, "--sys-interval", "0", "--persistence", "rocksdb",
            "--data-dir", directory.resolve("data").toString(), "--durability", "sync",
            "--password-file", passwords.toString(), "--acl-file", acl.toString());
    }

    private Paho connect(final String clientId, final String user, final String willTopic) throws Exception
    {
        final MqttConnectOptions options = Paho.options(false);
        options.setUserName(user);
        options.setPassword("pw".toCharArray());
        if (null != willTopic)
        {
            options.setWill(willTopic, ("gone " + user).getBytes(StandardCharsets.UTF_8), 1, true);
        }
        final Paho client = Paho.connect(broker.port(), clientId, options);
        clients.add(client);
        return client;
    }

    @Test
    @Timeout(120)
    @DisplayName("a will pending when the broker was killed goes out after the restart only when its stored user may "
        + "still write its topic under the ACL file in force then")
    void willOfASessionRestoredAfterACrashIsJudgedByTheRulesInForce() throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        for (final String user : List.of("alice", "bob", "admin"))
        {
            assertThat(Main.run("passwd", passwords.toString(), user, "--password", "pw", "--iterations", "1000"))
                .isZero();
        }
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, "user alice\ntopic readwrite alice/#\nuser bob\ntopic readwrite bob/#\n" +
            "user admin\ntopic read #\n", StandardCharsets.UTF_8);
        broker = start(passwords, acl);
        connect("a", "alice", "alice/will");
        connect("b", "bob", "bob/will");
        broker.kill(); // both connected: both wills pending after the restart
        TestBrokers.closeAll(clients, null, false);
        clients.clear();

        Files.writeString(acl, "user alice\ntopic readwrite other/#\nuser bob\ntopic readwrite bob/#\n" +
            "user admin\ntopic read #\n", StandardCharsets.UTF_8);
        broker = start(passwords, acl);
        TestBrokers.await("alice's will refused", () -> counter(BrokerCounters.ACL_PUBLISH_DENIED) >= 1);
        final Paho admin = connect("admin", "admin", null);
        admin.client.subscribe(new String[] {"alice/will", "bob/will"}, new int[] {1, 1});
        final Paho.Received first = admin.next();
        assertThat(first.topic() + " " + first.payload()).as("bob's will was retained, alice's was not")
            .isEqualTo("bob/will gone bob");
        assertThat(counter(BrokerCounters.ACL_PUBLISH_DENIED)).isEqualTo(1);
    }

    private long counter(final int id)
    {
        try
        {
            return broker.counter(id);
        }
        catch (final java.io.IOException ex)
        {
            throw new java.io.UncheckedIOException(ex);
        }
    }
}
