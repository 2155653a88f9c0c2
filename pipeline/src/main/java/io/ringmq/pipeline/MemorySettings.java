package io.ringmq.pipeline;

import org.agrona.BitUtil;

import static io.ringmq.pipeline.SettingChecks.check;

/**
 * What the broker's structures may take of memory, a part of {@link BrokerContext} (the {@code --ring-size},
 * {@code --*-memory}, {@code --*-bytes} and {@code --memory-budget} flags): the rings and logs sized at start from
 * the packet size, and the bounds of what messages and sessions hold, {@link BrokerContext#AUTO} sizing each from the
 * JVM's heap.
 */
public final class MemorySettings extends LiveSettings<MemorySettings>
{
    /** The outbound ring's size when neither it nor a larger --max-packet-size says otherwise. */
    public static final int DEFAULT_OUTBOUND_RING_BYTES = 16 * 1024 * 1024;

    private int ringSize = 16_384;
    /** Bytes of a packet kept inside its ingress slot; larger packets go to the I/O agent's message log. */
    private int slotInlineBytes = 256;
    /** 0: sized from the maximum packet size (at least 16 MiB, room for two of the largest packets). */
    private int messageLogBytes = 0;
    /** 0: sized from the maximum packet size (at least 16 MiB); see {@link #outboundRingBytesFor(int)}. */
    private int outboundRingBytes = 0;
    /** QoS 1 and 2 messages held for subscribers, in flight or queued, every shard together. */
    private long maxMessageMemory = BrokerContext.AUTO;
    /** Client ids, user names, wills and filters the sessions hold, all together. */
    private long maxSessionMemory = BrokerContext.AUTO;
    /** What one session may hold of it in filters and QoS 2 packet ids awaiting PUBREL; AUTO: an eighth of it. */
    private long maxClientSessionMemory = BrokerContext.AUTO;
    private long memoryBudgetBytes = BrokerContext.AUTO;

    /**
     * Checks these settings and sizes the rings and logs left at 0 for packets of {@code maxPacketSize}.
     *
     * @throws IllegalArgumentException naming the flag whose value cannot work.
     */
    MemorySettings conclude(final int maxPacketSize)
    {
        check(ringSize >= 64 && Integer.bitCount(ringSize) == 1, "--ring-size must be a power of two >= 64");
        check(slotInlineBytes >= 64 && slotInlineBytes <= 64 * 1024, "--slot-inline-bytes must be 64..65536");
        check((long)ringSize * slotInlineBytes <= 256L * 1024 * 1024,
            "--ring-size x --slot-inline-bytes must stay within 256 MiB of heap");
        checkAuto(maxMessageMemory, 64 * 1024,
            "--max-message-memory must be at least 64 KiB (or 0 for a quarter of the heap)");
        checkAuto(maxSessionMemory, 64 * 1024,
            "--max-session-memory must be at least 64 KiB (or 0 for a quarter of the heap)");
        checkAuto(maxClientSessionMemory, 64 * 1024,
            "--max-client-session-memory must be at least 64 KiB (or 0 for an eighth of --max-session-memory)");
        checkAuto(memoryBudgetBytes, 1024 * 1024, "--memory-budget must be at least 1 MiB (or 0 for auto)");
        // the outbound ring carries whole packets, at most an eighth of its capacity each (Agrona's limit)
        final int leastOutbound = outboundRingBytesFor(maxPacketSize);
        if (0 == outboundRingBytes)
        {
            outboundRingBytes = Math.max(DEFAULT_OUTBOUND_RING_BYTES, leastOutbound);
        }
        check(Integer.bitCount(outboundRingBytes) == 1 && outboundRingBytes >= leastOutbound,
            "--outbound-ring-bytes must be a power of two of at least " + leastOutbound +
            " (8 x (--max-packet-size + 64): Agrona's ring takes a message of at most an eighth of it)");
        if (0 == messageLogBytes)
        {
            messageLogBytes = Math.max(16 * 1024 * 1024, BitUtil.findNextPositivePowerOfTwo(maxPacketSize) * 2);
        }
        check(Integer.bitCount(messageLogBytes) == 1 && messageLogBytes / 2 >= maxPacketSize,
            "--message-log-bytes must be a power of two holding two packets of --max-packet-size");
        return this;
    }

    private static void checkAuto(final long bytes, final long least, final String message)
    {
        check(bytes == BrokerContext.AUTO || bytes >= least, message);
    }

    /**
     * @return the smallest outbound ring that carries a packet of {@code maxPacketSize}: a message on an Agrona ring
     * is at most an eighth of it, and a packet the broker sends may pass the client's by a few bytes (64 allowed:
     * the frame's connection id, properties the broker adds), rounded up to a power of two.
     */
    public static int outboundRingBytesFor(final int maxPacketSize)
    {
        return BitUtil.findNextPositivePowerOfTwo((maxPacketSize + 64) * 8);
    }

    /**
     * @return whether a packet of this size fits the outbound rings and the message logs these settings sized.
     */
    boolean fitsRings(final int packetSize)
    {
        return (packetSize + 64L) * 8 <= outboundRingBytes && messageLogBytes / 2 >= packetSize;
    }

    /**
     * @return a quarter of the JVM's maximum heap, at least 1 MiB: what an {@link BrokerContext#AUTO} bound takes.
     */
    public static long quarterOfHeap()
    {
        return Math.max(1024 * 1024, Runtime.getRuntime().maxMemory() / 4);
    }

    public int ringSize()
    {
        return ringSize;
    }

    public MemorySettings ringSize(final int ringSize)
    {
        this.ringSize = ringSize;
        return this;
    }

    public int slotInlineBytes()
    {
        return slotInlineBytes;
    }

    public MemorySettings slotInlineBytes(final int slotInlineBytes)
    {
        this.slotInlineBytes = slotInlineBytes;
        return this;
    }

    public int messageLogBytes()
    {
        return messageLogBytes;
    }

    public MemorySettings messageLogBytes(final int messageLogBytes)
    {
        this.messageLogBytes = messageLogBytes;
        return this;
    }

    public int outboundRingBytes()
    {
        return outboundRingBytes;
    }

    /**
     * @param outboundRingBytes each I/O agent's outbound ring, a power of two of at least
     *                          {@link #outboundRingBytesFor(int)} of the maximum packet size; 0 sizes it from that.
     */
    public MemorySettings outboundRingBytes(final int outboundRingBytes)
    {
        this.outboundRingBytes = outboundRingBytes;
        return this;
    }

    /**
     * @return {@code --max-message-memory} as given: bytes, or {@link BrokerContext#AUTO}.
     */
    public long maxMessageMemory()
    {
        return maxMessageMemory;
    }

    public MemorySettings maxMessageMemory(final long maxMessageMemory)
    {
        this.maxMessageMemory = maxMessageMemory;
        return this;
    }

    /**
     * @return the bytes of QoS 1 and 2 messages the delivery shards may hold together (each copy once, in flight or
     * queued, with a small allowance per copy): {@code --max-message-memory}, or a quarter of the JVM's maximum heap,
     * where those copies live (16 MiB under {@code bin/ringmq}'s 256m).
     */
    public long messageMemoryBytes()
    {
        return maxMessageMemory == BrokerContext.AUTO ? quarterOfHeap() : maxMessageMemory;
    }

    /**
     * @return {@code --max-session-memory} as given: bytes, or {@link BrokerContext#AUTO}.
     */
    public long maxSessionMemory()
    {
        return maxSessionMemory;
    }

    public MemorySettings maxSessionMemory(final long maxSessionMemory)
    {
        this.maxSessionMemory = maxSessionMemory;
        return this;
    }

    /**
     * @return the bytes the routing stage's sessions may hold together in client ids, user names, wills and
     * subscription filters, each with an allowance: {@code --max-session-memory}, or a quarter of the JVM's maximum
     * heap (16 MiB under {@code bin/ringmq}'s 256m).
     */
    public long sessionMemoryBytes()
    {
        return maxSessionMemory == BrokerContext.AUTO ? quarterOfHeap() : maxSessionMemory;
    }

    /**
     * @return {@code --max-client-session-memory} as given: bytes, or {@link BrokerContext#AUTO}.
     */
    public long maxClientSessionMemory()
    {
        return maxClientSessionMemory;
    }

    public MemorySettings maxClientSessionMemory(final long maxClientSessionMemory)
    {
        this.maxClientSessionMemory = maxClientSessionMemory;
        return this;
    }

    /**
     * @return the bytes one session may hold of {@link #sessionMemoryBytes()} in subscription filters, and as much
     * again in inbound QoS 2 packet ids awaiting PUBREL (its client id, user name and will are bounded by the
     * CONNECT's size): {@code --max-client-session-memory}, or an eighth of the sessions' bound (2 MiB under
     * {@code bin/ringmq}'s 256m), so that one client cannot take what every other client's subscriptions need.
     */
    public long clientSessionMemoryBytes()
    {
        return maxClientSessionMemory == BrokerContext.AUTO ? Math.max(64 * 1024, sessionMemoryBytes() / 8) :
            maxClientSessionMemory;
    }

    /**
     * @return the memory in use past which new connections are refused and QoS 0 is shed, or
     * {@link BrokerContext#AUTO}: the transport sizes it from the JVM's limits.
     */
    public long memoryBudgetBytes()
    {
        return memoryBudgetBytes;
    }

    public MemorySettings memoryBudgetBytes(final long memoryBudgetBytes)
    {
        this.memoryBudgetBytes = memoryBudgetBytes;
        return this;
    }

    @Override
    public String toString()
    {
        return "ring-size=" + ringSize + " slot-inline-bytes=" + slotInlineBytes + " message-log-bytes=" +
            messageLogBytes + " outbound-ring-bytes=" + outboundRingBytes + " max-message-memory=" +
            auto(messageMemoryBytes(), maxMessageMemory) + " max-session-memory=" +
            auto(sessionMemoryBytes(), maxSessionMemory) + " max-client-session-memory=" +
            auto(clientSessionMemoryBytes(), maxClientSessionMemory) + " memory-budget=" +
            (memoryBudgetBytes == BrokerContext.AUTO ? "auto" : String.valueOf(memoryBudgetBytes));
    }

    private static String auto(final long inForce, final long given)
    {
        return inForce + (given == BrokerContext.AUTO ? "(auto)" : "");
    }
}
