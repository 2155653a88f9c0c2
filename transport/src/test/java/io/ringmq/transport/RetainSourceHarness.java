package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the tests of {@code --check-retain-source} share: a broker with a password file (alice, bob, reader) and an
 * ACL file that a test rewrites and reloads, Paho 3.1.1 clients, and the retained messages a new subscription of
 * reader's brings, told apart from what comes later by a marker published after its SUBSCRIBE (the broker keeps the
 * order, so anything the SUBSCRIBE brought has arrived when the marker does).
 */
abstract class RetainSourceHarness extends InProcessBrokerTest
{
    @TempDir
    Path directory;
    Path aclFile;

    /**
     * Anonymous clients write test/# when {@code anonWrites}; alice writes alice/# when {@code aliceWrites}; bob
     * always writes alice/# and bob/#; reader reads everything; every client writes devices/%c/# when
     * {@code pattern}.
     */
    static String acl(final boolean anonWrites, final boolean aliceWrites, final boolean pattern)
    {
        return String.join("\n",
            "topic " + (anonWrites ? "readwrite" : "read") + " test/#",
            "topic readwrite marker/#",
            "user alice",
            "topic " + (aliceWrites ? "readwrite" : "read") + " alice/#",
            "topic readwrite marker/#",
            "user bob",
            "topic readwrite alice/#",
            "topic readwrite bob/#",
            "topic readwrite marker/#",
            "user reader",
            "topic read #",
            "topic readwrite marker/#",
            pattern ? "pattern readwrite devices/%c/#" : "");
    }

    static final String WRITABLE = acl(true, true, true);
    static final String READ_ONLY = acl(false, false, true);

    BrokerContext context(final String acl) throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        if (!Files.exists(passwords))
        {
            for (final String user : List.of("alice", "bob", "reader"))
            {
                assertThat(Main.run("passwd", passwords.toString(), user, "--password", "pw", "--iterations",
                    "1000")).isZero();
            }
        }
        aclFile = directory.resolve("acl");
        Files.writeString(aclFile, acl, StandardCharsets.UTF_8);
        return new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.LOOPBACK).passwordFile(passwords).aclFile(aclFile));
    }

    BrokerContext persistent(final String acl) throws Exception
    {
        return context(acl).persistence(p -> p.persistent(true).dataDir(directory.resolve("data")));
    }

    Paho paho(final String clientId, final String user, final boolean clean) throws Exception
    {
        final MqttConnectOptions options = Paho.options(clean);
        if (null != user)
        {
            options.setUserName(user);
            options.setPassword("pw".toCharArray());
        }
        return closeLater(Paho.connect(broker.port(), clientId, options));
    }

    Paho paho(final String clientId, final String user) throws Exception
    {
        return paho(clientId, user, true);
    }

    void reload(final String acl) throws Exception
    {
        Files.writeString(aclFile, acl, StandardCharsets.UTF_8);
        assertThat(broker.reload()).contains("reloaded");
    }

    /**
     * @return the payloads of the retained messages a new subscription of reader's to {@code filter} brings.
     */
    List<String> retainedOnSubscribe(final String filter, final String clientId) throws Exception
    {
        final Paho subscriber = paho(clientId, "reader");
        subscriber.client.subscribe("marker/" + clientId, 1);
        subscriber.client.subscribe(filter, 1);
        final List<String> payloads = subscriber.drainUntilMarker(subscriber, "marker/" + clientId).stream()
            .peek(received -> assertThat(received.retained()).as(received.toString()).isTrue())
            .map(Paho.Received::payload).toList();
        subscriber.close();
        return payloads;
    }

    long refused()
    {
        return broker.counters().get(BrokerCounters.RETAINED_SOURCE_REFUSED);
    }
}
