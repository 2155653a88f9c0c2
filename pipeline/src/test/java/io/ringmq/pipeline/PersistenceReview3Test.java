package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.DurableStore;
import io.ringmq.pipeline.persistence.Records;
import io.ringmq.pipeline.persistence.StoreWriter;
import io.ringmq.protocol.MqttVersion;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishFlyweight;
import org.agrona.ExpandableDirectByteBuffer;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import static io.ringmq.pipeline.PersistenceReview2Test.publish;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Third review of persistence (what a client controls that reaches the store, and the restore path): each test shows
 * one defect (it fails on the code as reviewed). A "restart" is a new harness on the same store (a crash).
 */
@Timeout(60)
class PersistenceReview3Test
{
    private final PersistenceReview2Test.CheckingStore store = new PersistenceReview2Test.CheckingStore();
    private Supplier<BrokerContext> contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4));
    private PipelineHarness broker;

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

    private List<String> payloads(final long connectionId)
    {
        final List<String> out = new ArrayList<>();
        for (final byte[] packet : broker.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xFF) >>> 4 != PacketType.PUBLISH)
            {
                continue;
            }
            final PublishFlyweight publish = new PublishFlyweight();
            assertThat(publish.wrap(new UnsafeBuffer(packet), 0, packet.length, MqttVersion.V3_1_1)).isPositive();
            out.add(publish.payload().asString());
        }
        return out;
    }

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
        assertThat(payloads(3)).as("b's queued messages after a restart").containsExactly("m0", "m1", "m2");
    }

    @Test
    @DisplayName("[MQTT-4.8.2] a session matched twice (own and shared subscription) whose queue has room for one " +
        "copy only: the copy it queued survives a restart (dropping the second copy must not delete the record the " +
        "first one is stored under)")
    void droppedSecondCopyDoesNotDeleteTheQueuedFirstCopysRecord()
    {
        contexts = () -> new BrokerContext().limits(l -> l.maxInflight(4).maxQueued(1));
        broker = start(store);
        packet(1, connect("sub", false));
        packet(1, subscribe("t", 1));
        packet(1, subscribe("$share/g/t", 1));
        broker.outbound.takePackets(1);
        lost(1);
        packet(2, connect("pub", true));
        packet(2, publish("t", 1, 1, "x"));
        broker.settle(); // the second copy's drop is written

        // without a restart the session holds one copy: the baseline
        restart();
        packet(3, connect("sub", false));
        assertThat(payloads(3)).as("the copy the session had queued, after a restart").containsExactly("x");
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
        assertThat(payloads(1)).as("an expired retained message is not sent").isEmpty();
        broker.settle();
        assertThat(retainedRecords()).as("its record, after recovery").isZero();
    }
}
