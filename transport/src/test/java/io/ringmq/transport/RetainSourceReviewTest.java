package io.ringmq.transport;

import io.ringmq.persistence.RocksDbSettings;
import io.ringmq.persistence.RocksDbStore;
import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.auth.PasswordFile;
import io.ringmq.pipeline.auth.PasswordHash;
import io.ringmq.pipeline.auth.ScramClient;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ConnectEncoder;
import io.ringmq.protocol.MqttProperties;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.mqttv5.client.MqttConnectionOptions;
import org.eclipse.paho.mqttv5.common.MqttMessage;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 7593b7a (check_retain_source, CVE-2018-12546): attacks on who a retained message keeps as its
 * publisher and when it is judged: routing shards, takeovers by another user, wills on takeover and with a delay,
 * {@code --use-username-as-clientid}, assigned client ids, SCRAM users, the check turned on after messages were kept
 * with it off, and garbled source records at recovery. Each waits on a marker published after the SUBSCRIBE.
 */
@Timeout(90)
class RetainSourceReviewTest extends RetainSourceHarness
{
    private static BrokerContext shards(final BrokerContext context)
    {
        return context.threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(2).routeShards(3));
    }

    // ---------------------------------------------------------------- routing shards

    @Test
    @DisplayName("review: on 3 routing shards, a reload that takes the publisher's write away holds its retained "
        + "message back, a reload that gives it back sends it again, and each refusal is counted once, not per shard")
    void routeShardsReload() throws Exception
    {
        launch(shards(context(WRITABLE)));
        paho("a1", "alice").publish("alice/status", "alice's", 1, true);
        paho("pub", null).publish("test/topic", "anon's", 1, true);
        assertThat(retainedOnSubscribe("#", "s1")).containsExactlyInAnyOrder("alice's", "anon's");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("#", "s2")).isEmpty();
        assertThat(refused()).isEqualTo(2);
        reload(WRITABLE);
        assertThat(retainedOnSubscribe("#", "s3")).containsExactlyInAnyOrder("alice's", "anon's");
        assertThat(refused()).isEqualTo(2);
    }

    @Test
    @DisplayName("review: on 3 routing shards with RocksDB, the source survives a restart: held back under rules "
        + "that took the right away, sent under rules that give it back")
    void routeShardsRestart() throws Exception
    {
        launch(shards(persistent(WRITABLE)));
        paho("a1", "alice").publish("alice/status", "alice's", 1, true);
        paho("d7", null).publish("devices/d7/state", "d7's", 1, true);
        broker.close();

        launch(shards(persistent(READ_ONLY)));
        assertThat(retainedOnSubscribe("#", "s1")).containsExactly("d7's");
        assertThat(refused()).isEqualTo(1);
        broker.close();

        launch(shards(persistent(WRITABLE)));
        assertThat(retainedOnSubscribe("#", "s2")).containsExactlyInAnyOrder("alice's", "d7's");
    }

    // ---------------------------------------------------------------- takeovers and session resumption

    @Test
    @DisplayName("review: bob resumes alice's session (same client id): the message alice retained before keeps "
        + "alice as its source, so a reload that takes alice's right away holds it back though bob may write it")
    void takeoverByAnotherUserKeepsTheOldSource() throws Exception
    {
        launch(context(WRITABLE));
        final Paho alice = paho("shared-id", "alice", false);
        alice.publish("alice/status", "alice's", 1, true);
        final Paho bob = paho("shared-id", "bob", false); // takes over, resumes the session
        assertThat(bob.sessionPresent()).isTrue();
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("alice/#", "s1")).as("alice's right is gone; bob's does not count")
            .isEmpty();
        assertThat(refused()).isEqualTo(1);
    }

    @Test
    @DisplayName("review: no false refusal after a takeover by another user: what bob retains on a session he took "
        + "from alice is judged as bob's, though alice could never write it")
    void takeoverByAnotherUserPublishesAsTheNewOwner() throws Exception
    {
        launch(context(WRITABLE));
        final Paho alice = paho("shared-id", "alice", false);
        alice.publish("alice/status", "alice's", 1, true);
        final Paho bob = paho("shared-id", "bob", false);
        bob.publish("bob/status", "bob's", 1, true);
        assertThat(retainedOnSubscribe("bob/#", "s1")).containsExactly("bob's");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("bob/#", "s2")).containsExactly("bob's");
        assertThat(refused()).isZero();
    }

    @Test
    @DisplayName("review: a retained will published when bob takes over alice's connection keeps alice (its "
        + "client's owner then) as its source: held back once alice may no longer write it")
    void willOnTakeoverKeepsTheOldOwner() throws Exception
    {
        launch(context(WRITABLE));
        final Paho watcher = paho("watch", "reader");
        watcher.client.subscribe("alice/will", 1);
        final MqttConnectOptions options = Paho.options(true);
        options.setUserName("alice");
        options.setPassword("pw".toCharArray());
        options.setWill("alice/will", "alice's will".getBytes(StandardCharsets.UTF_8), 1, true);
        closeLater(Paho.connect(broker.port(), "shared-id", options));
        paho("shared-id", "bob"); // takeover: alice's will goes out
        final Paho.Received will = watcher.next();
        assertThat(will).isNotNull();
        assertThat(will.payload()).isEqualTo("alice's will");
        assertThat(retainedOnSubscribe("alice/will", "s1")).containsExactly("alice's will");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("alice/will", "s2")).isEmpty();
        assertThat(refused()).isEqualTo(1);
    }

    @Test
    @DisplayName("review: a delayed retained will (5.0, Will Delay 1 s) keeps its client's user: retained when the "
        + "delay runs out, held back after a reload takes the right away, sent again when it is given back")
    void delayedWillKeepsItsClient() throws Exception
    {
        launch(context(WRITABLE));
        final Paho watcher = paho("watch", "reader");
        watcher.client.subscribe("alice/will", 1);
        final Paho5 client = closeLater(new Paho5(broker.port(), "w1"));
        final MqttConnectionOptions options = Paho5.options();
        options.setCleanStart(false);
        options.setSessionExpiryInterval(60L);
        options.setUserName("alice");
        options.setPassword("pw".getBytes(StandardCharsets.UTF_8));
        final org.eclipse.paho.mqttv5.common.packet.MqttProperties willProperties =
            new org.eclipse.paho.mqttv5.common.packet.MqttProperties();
        willProperties.setWillDelayInterval(1L);
        options.setWillMessageProperties(willProperties);
        options.setWill("alice/will", new MqttMessage("delayed".getBytes(StandardCharsets.UTF_8), 1, true, null));
        client.client.connect(options).waitForCompletion(10_000);
        client.client.disconnectForcibly(0, 0, false); // no DISCONNECT: the will is due after its delay
        final Paho.Received will = watcher.next();
        assertThat(will).isNotNull();
        assertThat(will.payload()).isEqualTo("delayed");
        assertThat(retainedOnSubscribe("alice/will", "s1")).containsExactly("delayed");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("alice/will", "s2")).isEmpty();
        reload(WRITABLE);
        assertThat(retainedOnSubscribe("alice/will", "s3")).containsExactly("delayed");
    }

    // ---------------------------------------------------------------- client ids

    @Test
    @DisplayName("review: --use-username-as-clientid: alice's message on devices/alice/ (her %c pattern) is no "
        + "false refusal after a restart on RocksDB, and is held back once a reload drops the pattern")
    void useUserNameAsClientIdPattern() throws Exception
    {
        launch(persistent(WRITABLE).auth(a -> a.useUserNameAsClientId(true)));
        paho("ignored", "alice").publish("devices/alice/state", "alice's device", 1, true);
        assertThat(retainedOnSubscribe("devices/#", "s1")).containsExactly("alice's device");
        broker.close();

        launch(persistent(WRITABLE).auth(a -> a.useUserNameAsClientId(true)));
        assertThat(retainedOnSubscribe("devices/#", "s2")).containsExactly("alice's device");
        assertThat(refused()).isZero();
        reload(acl(true, true, false));
        assertThat(retainedOnSubscribe("devices/#", "s3")).isEmpty();
        assertThat(refused()).isEqualTo(1);
    }

    @Test
    @DisplayName("review: a client whose id the broker assigned (3.1.1, empty id) retains under a topic rule: sent, "
        + "then held back after a reload, and again after a restart on RocksDB under those rules")
    void assignedClientId() throws Exception
    {
        launch(persistent(WRITABLE));
        paho("", null).publish("test/assigned", "assigned's", 1, true);
        assertThat(retainedOnSubscribe("test/#", "s1")).containsExactly("assigned's");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("test/#", "s2")).isEmpty();
        broker.close();

        launch(persistent(READ_ONLY));
        assertThat(retainedOnSubscribe("test/#", "s3")).isEmpty();
        broker.close();

        launch(persistent(WRITABLE));
        assertThat(retainedOnSubscribe("test/#", "s4")).containsExactly("assigned's");
    }

    // ---------------------------------------------------------------- SCRAM

    @Test
    @DisplayName("review: a SCRAM client without a User Name retains as the user its exchange proved: held back "
        + "once a reload takes that user's right away")
    void scramUserIsTheSource() throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        PasswordFile.write(passwords, "alice", PasswordHash.createScram("alice-secret", 4096));
        PasswordFile.write(passwords, "reader", PasswordHash.create("pw", 1000));
        aclFile = directory.resolve("acl");
        Files.writeString(aclFile, WRITABLE, StandardCharsets.UTF_8);
        launch(new BrokerContext().bindAddress("127.0.0.1").port(0).observability(o -> o.sysIntervalMs(0))
            .auth(a -> a.anonymous(Authenticator.AnonymousPolicy.NONE).passwordFile(passwords).aclFile(aclFile)));
        try (RawClient alice = new RawClient(broker.port()).v5())
        {
            final ScramClient scram = new ScramClient("alice", "alice-secret", "fyko+d2lbbFgONRv9qkxdawL");
            final ConnectEncoder connect = new ConnectEncoder().reset().version(MqttVersion.V5).cleanStart(true)
                .keepAlive(60).properties(RawClient.scram(scram.first()));
            connect.clientId().wrap("scram-c");
            alice.send(RawClient.encode(connect.encodedLength(), buffer -> connect.encode(buffer, 0)));
            assertThat(alice.finishScram(scram)).isZero();
            final PublishEncoder publish = new PublishEncoder().reset().version(MqttVersion.V5).qos(1).packetId(1)
                .retain(true).topic("alice/scram").payload("scram's".getBytes(StandardCharsets.UTF_8));
            alice.send(RawClient.encode(publish.encodedLength(), buffer -> publish.encode(buffer, 0)));
            assertThat(alice.readPacket(5_000)).isEqualTo(PacketType.PUBACK);
        }
        assertThat(retainedOnSubscribe("alice/#", "s1")).containsExactly("scram's");
        reload(READ_ONLY);
        assertThat(retainedOnSubscribe("alice/#", "s2")).isEmpty();
        assertThat(refused()).isEqualTo(1);
    }

    // ---------------------------------------------------------------- the check turned on later

    @Test
    @DisplayName("review: a message retained while --check-retain-source was false, after a restart with the check "
        + "on (the default) under rules that took its publisher's right away, is held back (Mosquitto keeps every "
        + "message's source whatever check_retain_source says)")
    void checkTurnedOnAfterARestart() throws Exception
    {
        launch(persistent(WRITABLE).auth(a -> a.checkRetainSource(false)));
        paho("a1", "alice").publish("alice/status", "alice's", 1, true);
        broker.close();

        launch(persistent(READ_ONLY));
        assertThat(retainedOnSubscribe("#", "s1")).as("alice may no longer write alice/status").isEmpty();
    }

    // ---------------------------------------------------------------- wills restored after a crash

    @Test
    @Timeout(120)
    @DisplayName("review: a will pending at a crash, of a session stored by a build before (no owner), goes out "
        + "unjudged as before; but its retained copy must not then be kept without a source for ever: it is held "
        + "back under rules that do not let its client write it")
    void pendingWillOfOwnerlessSessionAfterACrash() throws Exception
    {
        final Path passwords = directory.resolve("passwd");
        for (final String user : List.of("alice", "reader"))
        {
            assertThat(Main.run("passwd", passwords.toString(), user, "--password", "pw", "--iterations", "1000"))
                .isZero();
        }
        final Path acl = directory.resolve("acl");
        Files.writeString(acl, WRITABLE, StandardCharsets.UTF_8);
        final String[] options = {"--sys-interval", "0", "--persistence", "rocksdb", "--data-dir",
            directory.resolve("data").toString(), "--durability", "sync", "--password-file", passwords.toString(),
            "--acl-file", acl.toString()};
        ForkedBroker forked = ForkedBroker.start(directory, options);
        try
        {
            final MqttConnectOptions connect = Paho.options(false);
            connect.setUserName("alice");
            connect.setPassword("pw".toCharArray());
            connect.setWill("alice/will", "alice's will".getBytes(StandardCharsets.UTF_8), 1, true);
            final Paho alice = Paho.connect(forked.port(), "alice-c", connect);
            forked.kill(); // connected: the will is pending after the restart
            alice.close();
            SessionRecords.dropOwners(directory.resolve("data"));

            Files.writeString(acl, READ_ONLY, StandardCharsets.UTF_8);
            forked = ForkedBroker.start(directory, options);
            final ForkedBroker started = forked;
            TestBrokers.await("the will retained", () ->
            {
                try
                {
                    return started.counter(BrokerCounters.RETAINED_CURRENT) >= 1;
                }
                catch (final java.io.IOException ex)
                {
                    throw new java.io.UncheckedIOException(ex);
                }
            });
            final MqttConnectOptions readerOptions = Paho.options(true);
            readerOptions.setUserName("reader");
            readerOptions.setPassword("pw".toCharArray());
            final Paho reader = Paho.connect(forked.port(), "s1", readerOptions);
            try
            {
                reader.client.subscribe("marker/s1", 1);
                reader.client.subscribe("alice/#", 1);
                assertThat(reader.drainUntilMarker(reader, "marker/s1").stream().map(Paho.Received::payload))
                    .as("alice may not write alice/will now").isEmpty();
            }
            finally
            {
                reader.close();
            }
        }
        finally
        {
            forked.close();
        }
    }

    // ---------------------------------------------------------------- garbled records

    /**
     * Rewrites the retained record of {@code topic}: its message, then {@code trailer} in place of its source.
     */
    private static void rewriteSource(final Path dataDir, final String topic, final byte[] trailer)
    {
        try (RocksDbStore store = RocksDbStore.open(RocksDbSettings.defaults(dataDir)))
        {
            final List<byte[][]> records = new ArrayList<>();
            store.scan((key, keyLength, value, valueLength) ->
            {
                if (key.getByte(0) == Records.RETAINED &&
                    key.getStringWithoutLengthUtf8(1, keyLength - 1).equals(topic))
                {
                    final int messageEnd = 9 + Records.messageLength(value, 9);
                    final byte[] k = new byte[keyLength];
                    key.getBytes(0, k);
                    final byte[] v = new byte[messageEnd + trailer.length];
                    value.getBytes(0, v, 0, messageEnd);
                    System.arraycopy(trailer, 0, v, messageEnd, trailer.length);
                    records.add(new byte[][] {k, v});
                }
            });
            assertThat(records).as("the record of " + topic).hasSize(1);
            final StoreWriter writer = store.writer(false);
            writer.put(new UnsafeBuffer(records.get(0)[0]), 0, records.get(0)[0].length,
                new UnsafeBuffer(records.get(0)[1]), 0, records.get(0)[1].length);
            writer.commit();
        }
    }

    private static byte[] ints(final int... values)
    {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[values.length * 4]);
        for (int i = 0; i < values.length; i++)
        {
            buffer.putInt(i * 4, values[i]);
        }
        return buffer.byteArray();
    }

    @Test
    @DisplayName("review: garbled sources (a stub, a length past the record, no client id, a huge length) do not "
        + "stop recovery: each such record is counted unreadable and not sent; the others are restored")
    void garbledSourcesAtRecovery() throws Exception
    {
        launch(persistent(WRITABLE));
        final Paho alice = paho("a1", "alice");
        for (final String topic : List.of("alice/stub", "alice/past", "alice/noid", "alice/huge"))
        {
            alice.publish(topic, topic, 1, true);
        }
        paho("d7", null).publish("devices/d7/state", "d7's", 1, true);
        alice.close();
        broker.close();
        final Path data = directory.resolve("data");
        rewriteSource(data, "alice/stub", new byte[] {1, 2});
        rewriteSource(data, "alice/past", ints(5, 0x61616161));
        rewriteSource(data, "alice/noid", ints(-1, -1));
        rewriteSource(data, "alice/huge", ints(Integer.MAX_VALUE, 0));

        launch(persistent(WRITABLE));
        assertThat(broker.recovered()).contains("4 unreadable");
        assertThat(retainedOnSubscribe("#", "s1")).containsExactly("d7's");
    }

    @Test
    @DisplayName("review: a source of an anonymous publisher whose user length is some other negative number than "
        + "-1 reads as anonymous; a source with trailing bytes after its client id still reads")
    void oddButReadableSources() throws Exception
    {
        launch(persistent(WRITABLE));
        paho("d7", null).publish("devices/d7/state", "d7's", 1, true);
        paho("d8", null).publish("devices/d8/state", "d8's", 1, true);
        broker.close();
        final Path data = directory.resolve("data");
        final byte[] id = "d7".getBytes(StandardCharsets.UTF_8);
        final byte[] negative = new byte[8 + id.length];
        System.arraycopy(ints(-7, id.length), 0, negative, 0, 8);
        System.arraycopy(id, 0, negative, 8, id.length);
        rewriteSource(data, "devices/d7/state", negative);
        final byte[] id8 = "d8".getBytes(StandardCharsets.UTF_8);
        final byte[] trailing = new byte[8 + id8.length + 3];
        System.arraycopy(ints(-1, id8.length), 0, trailing, 0, 8);
        System.arraycopy(id8, 0, trailing, 8, id8.length);
        rewriteSource(data, "devices/d8/state", trailing);

        launch(persistent(READ_ONLY));
        assertThat(retainedOnSubscribe("devices/#", "s1")).containsExactlyInAnyOrder("d7's", "d8's");
    }
}
