package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.MemoryStore;
import io.ringmq.pipeline.persistence.RecordVisitor;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.RecoveryReport;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.DirectBuffer;
import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Second review of the durable persistence change: each test shows one defect (it fails on the change as reviewed)
 * unless its name says it holds. A "restart" is a new harness on the same store, with no clean-stop record (a crash)
 * unless the test says so.
 */
@Timeout(60)
class PersistenceReview2Test
{
    /**
     * A store that checks the contract of {@link StoreWriter#deleteOnce}: a key it deletes was put at most once since
     * it was last deleted (else RocksDB's SingleDelete is undefined). Committed batches go to a retaining
     * {@link MemoryStore}.
     */
    static final class CheckingStore implements DurableStore
    {
        final MemoryStore inner = MemoryStore.retaining();
        final Map<String, Integer> puts = new HashMap<>();
        final List<String> violations = new ArrayList<>();
        /** SingleDeletes committed (each checked against the puts before it). */
        int singleDeletes;
        /** The most bytes (keys and values) one commit of the persistence stage wrote. */
        long largestCommit;

        public synchronized StoreWriter writer(final boolean groupCommit)
        {
            final StoreWriter writer = inner.writer(groupCommit);
            return new StoreWriter()
            {
                private final List<Runnable> checks = new ArrayList<>();
                private long bytes;

                public void put(final DirectBuffer key, final int keyOffset, final int keyLength,
                    final DirectBuffer value, final int valueOffset, final int valueLength)
                {
                    final String k = hex(key, keyOffset, keyLength);
                    checks.add(() -> puts.merge(k, 1, Integer::sum));
                    bytes += keyLength + valueLength;
                    writer.put(key, keyOffset, keyLength, value, valueOffset, valueLength);
                }

                public void delete(final DirectBuffer key, final int keyOffset, final int keyLength)
                {
                    final String k = hex(key, keyOffset, keyLength);
                    checks.add(() -> puts.remove(k));
                    writer.delete(key, keyOffset, keyLength);
                }

                public void deleteOnce(final DirectBuffer key, final int keyOffset, final int keyLength)
                {
                    final String k = hex(key, keyOffset, keyLength);
                    checks.add(() ->
                    {
                        singleDeletes++;
                        final Integer n = puts.remove(k);
                        if (null != n && n > 1)
                        {
                            violations.add("key " + k + " put " + n + " times, then SingleDeleted");
                        }
                    });
                    writer.delete(key, keyOffset, keyLength);
                }

                public void deleteRange(final DirectBuffer from, final int fromOffset, final int fromLength,
                    final DirectBuffer to, final int toOffset, final int toLength)
                {
                    final String f = hex(from, fromOffset, fromLength);
                    final String t = hex(to, toOffset, toLength);
                    checks.add(() -> puts.keySet().removeIf(k -> k.compareTo(f) >= 0 && k.compareTo(t) < 0));
                    writer.deleteRange(from, fromOffset, fromLength, to, toOffset, toLength);
                }

                public void commit()
                {
                    synchronized (CheckingStore.this)
                    {
                        checks.forEach(Runnable::run);
                        checks.clear();
                        largestCommit = Math.max(largestCommit, bytes);
                        bytes = 0;
                    }
                    writer.commit();
                }

                public boolean isEmpty()
                {
                    return writer.isEmpty();
                }
            };
        }

        public RecoveryReport scan(final RecordVisitor visitor)
        {
            return inner.scan(visitor);
        }

        public int visit(final byte[] from, final byte[] to, final int limit, final RecordVisitor visitor)
        {
            return inner.visit(from, to, limit, visitor);
        }

        public boolean isDurable()
        {
            return true;
        }

        public long writeStalls()
        {
            return 0;
        }

        public String describe()
        {
            return "checking";
        }

        public void close()
        {
        }

        private static String hex(final DirectBuffer buffer, final int offset, final int length)
        {
            final StringBuilder s = new StringBuilder();
            for (int i = 0; i < length; i++)
            {
                s.append(String.format("%02x", buffer.getByte(offset + i) & 0xFF));
            }
            return s.toString();
        }
    }

    private final CheckingStore store = new CheckingStore();
    private Supplier<BrokerContext> contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4));
    private PipelineHarness broker = start(store);

    private PipelineHarness start(final DurableStore store)
    {
        return new PipelineHarness(contexts.get(),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null), store);
    }

    private void restart()
    {
        broker = start(store);
    }

    private void packet(final long connectionId, final byte[] packet)
    {
        broker.packet(connectionId, packet);
    }

    private void lost(final long connectionId)
    {
        broker.offer(connectionId, true, new byte[0], IngressEvent.CONNECTION_LOST);
    }

    /**
     * Session "sub", subscribed to "t" and to "$share/g/t" at QoS 1, goes away; "pub" then publishes "x" to "t" at
     * QoS 1: two copies for one session, the store keeps one record.
     */
    private void offlineSessionMatchedTwice()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        packet(1, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(1);
        lost(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, "x"));
    }

    static byte[] publish(final String topic, final int qos, final int packetId, final String payload)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(qos).packetId(packetId)
            .topic(topic).payload(payload.getBytes());
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    record Delivery(String payload, int qos, int packetId, boolean dup)
    {
    }

    private List<Delivery> publishes(final long connectionId)
    {
        return publishes(broker, connectionId);
    }

    /**
     * @return the 3.1.1 PUBLISHes the harness sent to a connection since the last look, taken out.
     */
    static List<Delivery> publishes(final PipelineHarness broker, final long connectionId)
    {
        final List<Delivery> out = new ArrayList<>();
        for (final byte[] packet : broker.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xFF) >>> 4 != PacketType.PUBLISH)
            {
                continue;
            }
            final PublishFlyweight publish = new PublishFlyweight();
            assertThat(publish.wrap(new UnsafeBuffer(packet), 0, packet.length, MqttVersion.V3_1_1)).isPositive();
            out.add(new Delivery(publish.payload().asString(), publish.qos(), publish.packetId(), publish.isDup()));
        }
        return out;
    }

    // =================================================================================================
    // 1. One session, two targets of one message (a shared and a non-shared subscription): a record each
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-4.8.2] a session with a shared and a non-shared subscription gets two copies of a QoS 1 message while it is offline; after a restart both are there (a record per copy)")
    void aSharedAndNonSharedMatchSurvivesARestartTwice()
    {
        offlineSessionMatchedTwice();

        // without a restart: two copies (the baseline the restart must keep)
        packet(3, connect("sub", false));
        final List<Delivery> live = publishes(3);
        assertThat(live).extracting(Delivery::payload).as("two matching subscriptions, one shared")
            .containsExactly("x", "x");
        lost(3);

        restart();
        packet(4, connect("sub", false));
        // each copy is stored under a number of its own (a key is never put twice)
        assertThat(publishes(4)).extracting(Delivery::payload).as("after a restart: both copies")
            .containsExactly("x", "x");
    }

    @Test
    @DisplayName("deleteOnce (SingleDelete) is never given a key put more than once since its last delete, nor twice: "
        + "a session that is two targets of one message, both acknowledged")
    void noKeyPutTwiceIsSingleDeleted()
    {
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        packet(1, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, "x"));
        final List<Delivery> sent = publishes(1);
        assertThat(sent).hasSize(2);
        for (final Delivery d : sent)
        {
            packet(1, ack(PacketType.PUBACK, d.packetId()));
        }
        broker.settle(); // the ends written: the store checks each SingleDelete as it is committed
        // each copy has a record of its own: each end deletes its own key, once
        assertThat(store.singleDeletes).as("each copy's end reached the store, once").isEqualTo(2);
        assertThat(store.violations).isEmpty();
    }

    // ---- from the third review (what a client controls that reaches the store, and the restore path)

    @Test
    @DisplayName("[MQTT-3.1.2-4] a store whose epoch is past 2^31 (its session keys are negative longs) restores its " +
        "sessions' queued messages, and leaves no records behind that no session owns")
    void sessionKeysOfAnEpochPast2To31AreRestored()
    {
        // an epoch record as the one an 8-byte subscription filter made (newestEpoch read from the filter's bytes)
        final StoreWriter writer = store.writer(true);
        final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(32);
        key.putLong(16, 0xE6B8A9E5L);
        writer.put(key, 0, Records.epochKey(key), key, 16, 8);
        writer.commit();

        broker = start(store);
        packet(1, connect("b", false));
        packet(1, subscribe("b/#", 1));
        broker.outbound.takePackets(1);
        lost(1);
        packet(2, connect("pub", true));
        for (int i = 0; i < 3; i++)
        {
            packet(2, publish("b/x", 1, i + 1, "m" + i));
        }
        broker.settle();

        restart();
        packet(3, connect("b", false));
        assertThat(publishes(3)).extracting(Delivery::payload).as("b's queued messages after a restart").containsExactly("m0", "m1", "m2");
    }

    @Test
    @DisplayName("[MQTT-4.8.2] a session matched twice (own and shared subscription) whose queue has room for one " +
        "copy only: the copy it queued survives a restart (dropping the second copy must not delete the record the " +
        "first one is stored under)")
    void droppedSecondCopyDoesNotDeleteTheQueuedFirstCopysRecord()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxQueued(1));
        broker = start(store);
        offlineSessionMatchedTwice();
        broker.settle(); // the second copy's drop is written

        // without a restart the session holds one copy: the baseline
        restart();
        packet(3, connect("sub", false));
        assertThat(publishes(3)).extracting(Delivery::payload).as("the copy the session had queued, after a restart").containsExactly("x");
    }

    private int retainedRecords()
    {
        final int[] count = {0};
        store.inner.scan((key, keyLength, value, valueLength) ->
        {
            if (key.getByte(0) == Records.RETAINED)
            {
                count[0]++;
            }
        });
        return count[0];
    }

    @Test
    @DisplayName("[MQTT-3.3.2-5] a retained message that expired while the broker was down is not restored, and its " +
        "record goes: restarts must not keep every expired retained message on disk (and scan it) forever, " +
        "outside --max-retained-messages")
    void retainedMessageExpiredWhileDownIsDeleted()
    {
        // as PersistedMessages.retained lays it out: qos | expires at | message; expired a minute ago
        final StoreWriter writer = store.writer(true);
        final ExpandableDirectByteBuffer key = new ExpandableDirectByteBuffer(64);
        final ExpandableDirectByteBuffer value = new ExpandableDirectByteBuffer(64);
        final UnsafeBuffer topic = new UnsafeBuffer("gone/t".getBytes());
        final UnsafeBuffer payload = new UnsafeBuffer("old".getBytes());
        final int keyLength = Records.retainedKey(key, topic, 0, topic.capacity());
        value.putByte(0, (byte)1);
        value.putLong(1, System.currentTimeMillis() - 60_000);
        final int end = Records.putMessage(value, 9, topic, 0, topic.capacity(), topic, 0, 0, payload, 0,
            payload.capacity());
        writer.put(key, 0, keyLength, value, 0, end);
        writer.commit();
        assertThat(retainedRecords()).isEqualTo(1);

        broker = start(store); // recovery skips it
        packet(1, connect("reader", true));
        packet(1, subscribe("gone/#", 1));
        assertThat(publishes(1)).as("an expired retained message is not sent").isEmpty();
        broker.settle();
        assertThat(retainedRecords()).as("its record, after recovery").isZero();
    }

    @Test
    @DisplayName("[MQTT-3.3.2-5] a retained message's record goes from the store once its Message Expiry Interval "
        + "has passed, while the broker runs: not only at the next start")
    void expiredRetainedRecordIsSweptWhileRunning()
    {
        packet5(1, connect5("pub", true, 0, "will/pub", 0, 0));
        packet5(1, PersistenceReviewTest.publish5("sweep/short", 1, 1, true, "short", 1));
        packet5(1, PersistenceReviewTest.publish5("sweep/kept", 1, 2, true, "kept", 0));
        packet5(1, PersistenceReviewTest.publish5("sweep/long", 1, 3, true, "long", 3600));
        broker.settle();
        assertThat(retainedRecords()).isEqualTo(3);
        final long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        while (retainedRecords() == 3 && System.nanoTime() - deadline < 0)
        {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000_000);
            broker.step(); // the persistence stage's duty cycle
        }
        assertThat(retainedRecords()).as("the expired one's record gone, the others kept").isEqualTo(2);
        broker = start(store);
        packet(2, connect("reader", true));
        packet(2, subscribe("sweep/#", 1));
        assertThat(publishes(2)).extracting(Delivery::payload).containsExactlyInAnyOrder("kept", "long");
    }

    private void packet5(final long connectionId, final byte[] packet)
    {
        broker.offer(0, connectionId, true, packet, IngressEvent.PACKET, MqttVersion.V5, 0, IngressEvent.NONE);
    }

    private static byte[] connect5(final String clientId, final boolean clean, final int sessionExpiry,
        final String willTopic, final int willQos, final int willDelay)
    {
        final io.ringmq.protocol.MqttProperties properties = new io.ringmq.protocol.MqttProperties();
        properties.setInt(io.ringmq.protocol.PropertyId.SESSION_EXPIRY_INTERVAL, sessionExpiry);
        final io.ringmq.protocol.ConnectEncoder encoder = new io.ringmq.protocol.ConnectEncoder().reset()
            .version(MqttVersion.V5).cleanStart(clean).keepAlive(60).properties(properties);
        encoder.will(willQos, false, new io.ringmq.protocol.MqttProperties()
            .setInt(io.ringmq.protocol.PropertyId.WILL_DELAY_INTERVAL, willDelay));
        encoder.willTopic().wrap(willTopic);
        encoder.willPayload().wrap("will");
        encoder.clientId().wrap(clientId);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    private void stepFor(final long millis) throws InterruptedException
    {
        final long until = System.currentTimeMillis() + millis;
        while (System.currentTimeMillis() < until)
        {
            broker.step();
            Thread.sleep(20);
        }
        broker.step();
    }

    // =================================================================================================
    // 2. A clean stop, a start, then a crash before anything is written: the stop's facts are gone
    // =================================================================================================

    @Test
    @DisplayName("[MQTT-3.1.3-9] a session connected at a clean stop publishes no will; a crash of the NEXT run (before its client returns) must not make the will due: the clean-stop marker is deleted at start but the session's state still says 'connected'")
    void cleanStopThenCrashBeforeAnyWriteDoesNotPublishTheWill() throws InterruptedException
    {
        packet(1, connect("watcher", false));
        packet(1, subscribe("will/w", 1));
        broker.outbound.takePackets(1);
        lost(1);
        packet5(2, connect5("w", false, 3600, "will/w", 1, 0));
        broker.outbound.takePackets(2);
        broker.pipeline.stopped(); // a clean stop: 'w' was connected, its will is not published
        restart();
        stepFor(100);
        packet(5, connect("watcher", false));
        assertThat(publishes(5)).as("after the clean stop: no will (holds)").isEmpty();
        lost(5);
        restart(); // this run crashed before 'w' came back
        stepFor(100);
        packet(3, connect("watcher", false));
        assertThat(publishes(3)).extracting(Delivery::payload)
            .as("the will of a client the broker disconnected at a clean stop").isEmpty();
    }

    // =================================================================================================
    // 3. A failed group commit that ended a session: its range delete is lost with the batch
    // =================================================================================================


    @Test
    @DisplayName("[MQTT-3.1.2-6] a persistent session discarded by a clean-session CONNECT whose group commit failed must not come back after a restart (its range delete went with the failed batch)")
    void sessionDiscardedInAFailedCommitDoesNotComeBackAfterRestart()
    {
        final FailingStore flaky = new FailingStore();
        broker = start(flaky);
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        broker.outbound.takePackets(1);
        lost(1);
        flaky.fail = true;
        packet(2, connect("sub", true)); // discards the persistent session: the commit fails, the socket closes
        flaky.fail = false;
        lost(2);
        packet(3, connect("sub", true)); // the client retries: a clean session, nothing to discard any more
        assertThat(broker.outbound.takePackets(3).get(0)[3]).as("CONNACK accepted").isEqualTo((byte)0);
        lost(3);
        broker = start(flaky); // restart
        packet(4, connect("sub", false));
        final byte[] connack = broker.outbound.takePackets(4).get(0);
        assertThat(connack[2]).as("session present: the old session was discarded [MQTT-3.1.2-6]")
            .isEqualTo((byte)0);
    }

    // =================================================================================================
    // 4. One large PUBLISH to many persistent sessions: a copy of the message per session in one write batch
    // =================================================================================================
}
