package io.ringmq.pipeline;

import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.persistence.ShardJournal;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import org.agrona.DirectBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static io.ringmq.pipeline.PersistenceReview2Test.publish;
import static io.ringmq.pipeline.PersistenceReview2Test.publishes;
import static io.ringmq.pipeline.PipelineTest.ack;
import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A delivery shard whose store fails (a full disk) when it writes the ends of acknowledged messages still hands its
 * batch's packets to the I/O agents: the write comes last in the batch's end, as in the shard's duty cycle.
 */
class DeliveryStoreFailureTest
{
    /**
     * An outbound port as the I/O agents' is: what a shard sends goes out at the end of its batch (a flush, or the
     * agent's wake-up), not before.
     */
    static final class FlushedAtBatchEnd implements Outbound
    {
        private final PipelineTest.RecordingOutbound recording;
        private final List<Object[]> held = new ArrayList<>();

        FlushedAtBatchEnd(final PipelineTest.RecordingOutbound recording)
        {
            this.recording = recording;
        }

        public boolean send(final int agentIndex, final long connectionId, final DirectBuffer buffer,
            final int offset, final int length)
        {
            final byte[] bytes = new byte[length];
            buffer.getBytes(offset, bytes);
            held.add(new Object[]{agentIndex, connectionId, bytes});
            return true;
        }

        public boolean close(final int agentIndex, final long connectionId)
        {
            return recording.close(agentIndex, connectionId);
        }

        public void endOfBatch()
        {
            for (final Object[] entry : held)
            {
                final byte[] bytes = (byte[])entry[2];
                recording.send((int)entry[0], (long)entry[1], new org.agrona.concurrent.UnsafeBuffer(bytes), 0,
                    bytes.length);
            }
            held.clear();
        }
    }

    @Test
    @DisplayName("a failed write of acknowledged messages' ends does not hold back the packets of " +
        "that batch: a message sent in it reaches its subscriber while the disk is full")
    void aFailedJournalWriteStillFlushesTheBatch()
    {
        final int ends = ShardJournal.DEFER_RECORDS; // written in the batch that ends
        final FailingStore store = new FailingStore();
        final PipelineTest.RecordingOutbound recording = new PipelineTest.RecordingOutbound();
        final PipelineHarness broker = new PipelineHarness(new BrokerContext()
            .limits(l -> l.maxInflight(2 * ends)).threads(t -> t.stageBatchLimit(4 * ends)),
            new Authenticator(Authenticator.AnonymousPolicy.LOOPBACK, null, null, null),
            new FlushedAtBatchEnd(recording), recording, store);
        broker.packet(1, connect("sub", false)); // a persistent session: its QoS 1 messages are stored
        broker.packet(1, subscribe("t", 1));
        broker.outbound.takePackets(1);
        broker.packet(2, connect("pub", true));
        for (int i = 1; i <= ends; i++)
        {
            broker.packet(2, publish("t", 1, i, "m" + i));
        }
        final List<PersistenceReview2Test.Delivery> inFlight = publishes(broker, 1);
        assertThat(inFlight).hasSize(ends);
        final int stored = store.inner.size(); // the session, its subscription and its messages
        store.fail = true; // the disk fills

        // one batch: every PUBACK (the journal writes their ends at the batch's end, and that write fails) and a
        // QoS 0 message for the same subscriber
        for (final PersistenceReview2Test.Delivery delivery : inFlight)
        {
            put(broker, 1, ack(PacketType.PUBACK, delivery.packetId()));
        }
        put(broker, 2, publish("t", 0, 0, "after"));
        broker.step(); // and the duty cycles after it, where nothing else comes

        assertThat(publishes(broker, 1)).extracting(PersistenceReview2Test.Delivery::payload)
            .as("sent at the end of its batch, whatever the store said").containsExactly("after");
        assertThat(broker.counters.get(BrokerCounters.UNEXPECTED_ERRORS))
            .as("the failed write is recorded, once: the acknowledgements and the message were one batch")
            .isEqualTo(1);

        // the disk has room again: a second after the failure the shard's next look writes the ends it lost, so no
        // acknowledged message would be sent again after a restart
        store.fail = false;
        final long due = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ShardJournal.RETRY_AFTER_FAILURE_MS);
        while (System.nanoTime() - due < 0)
        {
            LockSupport.parkNanos(due - System.nanoTime()); // the retry is a matter of time
        }
        broker.step();
        assertThat(store.inner.size()).as("the acknowledged messages' records are gone").isEqualTo(stored - ends);
        assertThat(broker.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isEqualTo(1);
    }

    private static void put(final PipelineHarness broker, final long connectionId, final byte[] packet)
    {
        broker.put(0, connectionId, true, packet, IngressEvent.PACKET, io.ringmq.protocol.MqttVersion.V3_1_1, 0,
            IngressEvent.NONE);
    }
}
