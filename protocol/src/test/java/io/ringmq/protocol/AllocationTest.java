package io.ringmq.protocol;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The PUBLISH path allocates nothing per message once warm, and no decoder allocates on the strength of a length
 * that a client claims. Measured with the JVM's per-thread allocation counter, which counts every byte this
 * thread allocates whatever the JIT does.
 */
class AllocationTest
{
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean)ManagementFactory.getThreadMXBean();

    private final PacketDecoder decoder = new PacketDecoder();
    private final PublishEncoder encoder = new PublishEncoder();
    private final UnsafeBuffer out = new UnsafeBuffer(new byte[256]);
    private final UnsafeBuffer topic = new UnsafeBuffer("sensors/room-1/temperature".getBytes());
    private final UnsafeBuffer payload = new UnsafeBuffer(new byte[64]);
    private final MqttProperties properties = new MqttProperties()
        .setInt(PropertyId.MESSAGE_EXPIRY_INTERVAL, 60)
        .setInt(PropertyId.SUBSCRIPTION_IDENTIFIER, 7);

    @Test
    @DisplayName("PUBLISH decode and encode allocate 0 bytes per message, in 3.1.1 and in 5.0")
    void publishPathAllocatesNothing()
    {
        properties.addUserProperty("k", "v");
        for (final int version : new int[]{MqttVersion.V3_1_1, MqttVersion.V5})
        {
            for (int i = 0; i < 20_000; i++)
            {
                roundTrip(version, i);
            }
            assertThat(THREADS.isThreadAllocatedMemorySupported()).isTrue();
            final long threadId = Thread.currentThread().getId();
            final long before = THREADS.getThreadAllocatedBytes(threadId);
            for (int i = 0; i < 100_000; i++)
            {
                roundTrip(version, i);
            }
            final long allocated = THREADS.getThreadAllocatedBytes(threadId) - before;
            // the allocation counter itself may cost a few dozen bytes; per message this must be 0
            assertThat(allocated).as("bytes allocated over 100,000 messages, version " + version).isLessThan(1024);
        }
    }

    @Test
    @DisplayName("a remaining length of 268,435,455 allocates nothing while the body is awaited")
    void hugeClaimedLengthAllocatesNothing()
    {
        final UnsafeBuffer hostile = Bytes.buffer("30 FF FF FF 7F 00 01 74");
        for (int i = 0; i < 10_000; i++)
        {
            decoder.decode(hostile, 0, 8, MqttVersion.V5, Integer.MAX_VALUE);
        }
        final long threadId = Thread.currentThread().getId();
        final long before = THREADS.getThreadAllocatedBytes(threadId);
        int needMore = 0;
        for (int i = 0; i < 100_000; i++)
        {
            needMore += decoder.decode(hostile, 0, 8, MqttVersion.V5, Integer.MAX_VALUE) == DecodeError.NEED_MORE ? 1 : 0;
        }
        final long allocated = THREADS.getThreadAllocatedBytes(threadId) - before;
        assertThat(needMore).isEqualTo(100_000);
        assertThat(allocated).isLessThan(1024);
    }

    private void roundTrip(final int version, final int i)
    {
        final int length = encoder.reset().version(version).qos(1).packetId(1 + (i & 0x7FFF))
            .topic(topic, 0, topic.capacity()).payload(payload, 0, payload.capacity())
            .properties(properties).encode(out, 0);
        final int decoded = decoder.decode(out, 0, length, version, 1 << 20);
        if (decoded != length || decoder.publish().payload().length() != 64)
        {
            throw new AssertionError("round trip failed: " + DecodeError.describe(decoded));
        }
    }
}
