package io.ringmq.pipeline;

import io.ringmq.pipeline.OwnershipReviewTest.MultiAgentHarness;
import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.PacketType;
import io.ringmq.protocol.PublishEncoder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;

import static io.ringmq.pipeline.PipelineTest.connect;
import static io.ringmq.pipeline.PipelineTest.subscribe;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Review of 1a5b944 (--max-message-memory, private copies for a moving session), by an adversarial reviewer: each
 * test failed on that commit. Two I/O agents, so two delivery shards, each with half the budget.
 */
class MessageMemoryReviewTest
{
    static final int BUDGET = 64 * 1024;
    /** A 4 KiB payload on topic "t": its copy's buffer (4,097 bytes) and the allowance per copy. */
    static final int COST = 4097 + 128;
    /** What each window or queue entry that holds a copy charges it ({@code SharedMessage.Pool.ENTRY_ALLOWANCE}). */
    static final int ENTRY = 32;

    static MultiAgentHarness twoShards()
    {
        return new MultiAgentHarness(new BrokerContext().threads(t -> t.threading(BrokerContext.Threading.DEDICATED)
            .ioThreads(2))
            .memory(m -> m.maxMessageMemory(BUDGET)));
    }

    @Test
    @DisplayName("sessions that share copies in one shard each take private copies when they move: the new shard "
        + "counts them against its share and drops the newest queued ones past it (it adopted them all, ten times "
        + "the budget)")
    void movingSessionsStayWithinTheBudget()
    {
        final MultiAgentHarness harness = twoShards();
        final int sessions = 10;
        for (int s = 0; s < sessions; s++)
        {
            harness.packet(0, 10 + s, connect("away-" + s, false));
            harness.packet(0, 10 + s, subscribe("t", 1));
            harness.end(0, 10 + s, IngressEvent.CONNECTION_LOST);
        }
        harness.packet(0, 1, connect("pub", true));
        for (int i = 0; i < 5; i++) // 5 x 4,225 bytes: within three quarters of shard 0's half, one copy for all ten
        {
            harness.packet(0, 1, MessageMemoryTest.publish(i + 1, i));
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).isZero();
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isEqualTo(5L * (COST + sessions * ENTRY));
        for (int s = 0; s < sessions; s++)
        {
            harness.packet(1, 100 + s, connect("away-" + s, false)); // resumes through agent 1: moves to shard 1
        }
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY))
            .as("bytes held in copies, with --max-message-memory %d", BUDGET).isLessThanOrEqualTo(BUDGET);
    }

    @Test
    @DisplayName("an OutOfMemoryError while the old shard makes the moving session's private copies leaves nothing "
        + "half done: its references on shard 0's copies are released and it moves empty (they were never released, "
        + "and shard 0's share stayed taken for good)")
    void aFailedCopyReleasesTheShardsShare() throws Exception
    {
        final MultiAgentHarness harness = twoShards();
        harness.packet(0, 10, connect("mover", false));
        harness.packet(0, 10, subscribe("t", 1));
        harness.end(0, 10, IngressEvent.CONNECTION_LOST);
        harness.packet(0, 1, connect("pub", true));
        harness.packet(0, 1, MessageMemoryTest.publish(1, 0)); // queued for the offline session in shard 0: one copy
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).isEqualTo(COST + ENTRY);
        failNextCopy(harness, 0);
        harness.packet(1, 20, connect("mover", false)); // moves 0 -> 1; copyFor throws OutOfMemoryError in shard 0
        assertThat(harness.counters.get(BrokerCounters.UNEXPECTED_ERRORS)).isPositive();
        harness.end(1, 20, IngressEvent.CONNECTION_LOST);
        harness.packet(1, 21, connect("mover", true)); // the client starts clean: its old session is discarded
        harness.end(1, 21, IngressEvent.CONNECTION_LOST);
        harness.packet(0, 1, MessageMemoryTest.publish(2, 1)); // a batch in shard 0 after all that: its gauge is brought up to date
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY))
            .as("no session holds any message: nothing should be counted").isZero();
    }

    /**
     * The next {@code SharedMessage.copyFor} of the message queued in shard {@code shard} throws OutOfMemoryError
     * where it reads the source bytes, as the copy's allocation does on a full heap; its length, and so its cost,
     * stay as they are.
     */
    static void failNextCopy(final MultiAgentHarness harness, final int shard) throws Exception
    {
        final List<Object> queued = queuedMessages(harness, shard);
        assertThat(queued).as("a queued message in shard %d", shard).isNotEmpty();
        final Object message = queued.get(0);
        final Field bytes = message.getClass().getDeclaredField("bytes");
        bytes.setAccessible(true);
        final org.agrona.ExpandableArrayBuffer original = (org.agrona.ExpandableArrayBuffer)bytes.get(message);
        final FailingOnce failing = new FailingOnce(original.capacity());
        failing.putBytes(0, original, 0, original.capacity());
        failing.armed = true;
        bytes.set(message, failing);
    }

    /**
     * @return every message queued by a session of shard {@code shard}, once per queue entry.
     */
    private static List<Object> queuedMessages(final MultiAgentHarness harness, final int shard) throws Exception
    {
        final List<Object> messages = new ArrayList<>();
        final Object sessions = field(deliveryShard(harness, shard), "sessions");
        for (final Object session : (Object[])field(sessions, "sessions"))
        {
            final Object queue = null == session ? null : field(session, "queue");
            if (null != queue)
            {
                for (final Object message : (Object[])field(queue, "messages"))
                {
                    if (null != message)
                    {
                        messages.add(message);
                    }
                }
            }
        }
        return messages;
    }

    /**
     * A buffer whose bytes cannot be read once, when armed.
     */
    static final class FailingOnce extends org.agrona.ExpandableArrayBuffer
    {
        boolean armed;

        FailingOnce(final int capacity)
        {
            super(capacity);
        }

        @Override
        public byte[] byteArray()
        {
            if (armed)
            {
                armed = false;
                throw new OutOfMemoryError("Java heap space (injected: the moving session's copy)");
            }
            return super.byteArray();
        }
    }

    @Test
    @DisplayName("--max-message-memory 64 KiB with two I/O agents: a 40 KiB QoS 1 message, more than a shard's share, "
        + "still reaches an online subscriber when its shard holds nothing (it was dropped, every time)")
    void aMessageLargerThanAShareGetsThroughAnEmptyShard()
    {
        final MultiAgentHarness harness = twoShards();
        harness.packet(0, 10, connect("sub", true));
        harness.packet(0, 10, subscribe("big", 1));
        harness.packet(0, 1, connect("pub", true));
        harness.outbound.sent.clear();
        final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(1).topic("big")
            .payload(new byte[40 * 1024]);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY)).as("nothing held before it").isZero();
        harness.packet(0, 1, buffer.byteArray());
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("dropped (max-message-memory)")
            .isZero();
        assertThat(publishes(harness, 10)).as("the subscriber gets the 40 KiB message (64 KiB allowed, none held)")
            .hasSize(1);
    }

    @Test
    @DisplayName("a copy counts the buffer it holds, not its message's length: small messages in pooled copies whose "
        + "buffers larger ones grew (2,916 bytes each) stay within --max-message-memory (counted as 130 bytes, they "
        + "held several times it)")
    void recycledBuffersAreCountedByCapacity() throws Exception
    {
        final int budget = 1024 * 1024;
        final MultiAgentHarness harness = new MultiAgentHarness(new BrokerContext()
            .threads(t -> t.threading(BrokerContext.Threading.DEDICATED).ioThreads(1))
            .memory(m -> m.maxMessageMemory(budget)));
        harness.packet(0, 1, connect("pub", true));
        harness.packet(0, 2, connect("small", false));
        harness.packet(0, 2, subscribe("b", 1));
        harness.end(0, 2, IngressEvent.CONNECTION_LOST); // offline: keeps what it is sent
        int packetId = 1;
        long connection = 100;
        for (int round = 0; round < 3; round++)
        {
            harness.packet(0, connection, connect("big", false));
            harness.packet(0, connection, subscribe("a", 1));
            harness.end(0, connection++, IngressEvent.CONNECTION_LOST);
            for (int i = 0; i < 300; i++) // 300 x (2,801 + 128): within the budget with what "small" holds
            {
                harness.packet(0, 1, publishOf("a", packetId++, 2_800));
            }
            harness.packet(0, connection, connect("big", true)); // clean start: its 300 copies go to the pool
            harness.end(0, connection++, IngressEvent.CONNECTION_LOST);
            for (int i = 0; i < 300; i++) // each takes a pooled copy and its 2,916-byte buffer
            {
                harness.packet(0, 1, publishOf("b", packetId++, 1));
            }
        }
        final long counted = harness.counters.get(BrokerCounters.MESSAGE_MEMORY);
        final long held = heldBufferBytes(harness, 0);
        assertThat(held).as("bytes of the buffers the kept copies hold (counted: %d, budget: %d)", counted, budget)
            .isLessThanOrEqualTo(budget).isLessThanOrEqualTo(counted);
        assertThat(harness.counters.get(BrokerCounters.MESSAGE_MEMORY_DROPPED)).as("so the small ones past it")
            .isPositive();
    }

    /**
     * @return the capacity of the buffers of every copy that a window or queue of shard {@code shard} holds.
     */
    private static long heldBufferBytes(final MultiAgentHarness harness, final int shard) throws Exception
    {
        final java.util.Set<Object> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        long bytes = 0;
        for (final Object message : queuedMessages(harness, shard))
        {
            if (seen.add(message))
            {
                bytes += ((org.agrona.MutableDirectBuffer)field(message, "bytes")).capacity();
            }
        }
        return bytes;
    }

    private static byte[] publishOf(final String topic, final int packetId, final int payloadLength)
    {
        final PublishEncoder encoder = new PublishEncoder().reset().qos(1).packetId(1 + packetId % 65_535)
            .topic(topic).payload(new byte[payloadLength]);
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[encoder.encodedLength()]);
        encoder.encode(buffer, 0);
        return buffer.byteArray();
    }

    static io.ringmq.pipeline.delivery.DeliveryShard deliveryShard(final MultiAgentHarness harness, final int shard)
        throws Exception
    {
        final Field shards = Pipeline.class.getDeclaredField("shards");
        shards.setAccessible(true);
        final Field stage = StageAgent.Step.class.getDeclaredField("stage");
        stage.setAccessible(true);
        return (io.ringmq.pipeline.delivery.DeliveryShard)stage.get(((StageAgent.Step[])shards.get(
            harness.pipeline))[shard]);
    }

    static Object field(final Object owner, final String name) throws Exception
    {
        Class<?> type = owner.getClass();
        while (null != type)
        {
            try
            {
                final Field field = type.getDeclaredField(name);
                field.setAccessible(true);
                return field.get(owner);
            }
            catch (final NoSuchFieldException ex)
            {
                type = type.getSuperclass();
            }
        }
        throw new NoSuchFieldException(name);
    }

    static List<byte[]> publishes(final MultiAgentHarness harness, final long connectionId)
    {
        final List<byte[]> publishes = new ArrayList<>();
        for (final byte[] packet : harness.outbound.takePackets(connectionId))
        {
            if ((packet[0] & 0xF0) >> 4 == PacketType.PUBLISH)
            {
                publishes.add(packet);
            }
        }
        return publishes;
    }
}
