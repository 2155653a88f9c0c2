package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import picocli.CommandLine.Option;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options that bound the broker's memory (a picocli mixin of {@link Main}): the ingress ring and
 * the off-heap logs and rings per I/O agent, the messages and sessions held for all clients together, and the
 * budget past which connections are refused and QoS 0 is shed.
 */
final class MemoryOptions
{
    @Option(names = "--ring-size", paramLabel = "N",
        description = "Ingress ring slots, a power of two (default: ${DEFAULT-VALUE}).", order = 280)
    int ringSize = DEFAULTS.memory().ringSize();

    @Option(names = "--max-message-memory", paramLabel = "BYTES",
        description = "QoS 1/2 messages held for subscribers, in flight or queued, all clients together (each copy "
            + "once); past it further ones are dropped and counted; 0 = a quarter of the max heap "
            + "(default: ${DEFAULT-VALUE}).", order = 370)
    long maxMessageMemory = BrokerContext.AUTO;

    @Option(names = "--max-session-memory", paramLabel = "BYTES",
        description = "Client ids, user names, wills and subscription filters the sessions hold, all clients "
            + "together; past it a CONNECT (0x97 / 3) or a filter (0x97 / 0x80) is refused and counted (filters fill "
            + "three quarters, the rest is kept for CONNECTs); 0 = a quarter of the max heap (default: "
            + "${DEFAULT-VALUE}).", order = 380)
    long maxSessionMemory = BrokerContext.AUTO;

    @Option(names = "--max-client-session-memory", paramLabel = "BYTES",
        description = "What one session may hold of --max-session-memory in subscription filters, and apart in QoS 2 "
            + "packet ids awaiting PUBREL; past it a filter (0x97 / 0x80) or a QoS 2 PUBLISH (PUBREC 0x97) is refused "
            + "and counted; 0 = an eighth of --max-session-memory (default: ${DEFAULT-VALUE}).", order = 390)
    long maxClientSessionMemory = BrokerContext.AUTO;

    @Option(names = "--slot-inline-bytes", paramLabel = "BYTES",
        description = "Packet bytes kept inside an ingress ring slot; larger packets go to the I/O agent's "
            + "message log (default: ${DEFAULT-VALUE}).", order = 480)
    int slotInlineBytes = DEFAULTS.memory().slotInlineBytes();

    @Option(names = "--message-log-bytes", paramLabel = "BYTES",
        description = "Off-heap message log per I/O agent, a power of two (default: 16 MiB, or room for two "
            + "packets of --max-packet-size).", order = 490)
    int messageLogBytes = DEFAULTS.memory().messageLogBytes();

    @Option(names = "--outbound-ring-bytes", paramLabel = "BYTES",
        description = "Off-heap outbound ring per I/O agent (the delivery shards' bytes for its sockets), a power of "
            + "two of at least 8 x (--max-packet-size + 64) (default: 16 MiB, or what --max-packet-size needs).",
        order = 500)
    int outboundRingBytes = DEFAULTS.memory().outboundRingBytes();

    @Option(names = "--memory-budget", paramLabel = "BYTES",
        description = "Memory in use (pooled buffers + JVM heap) past which new connections are refused and QoS 0 "
            + "to subscribers is shed; 0 = 3/4 of max heap + max direct memory (default: ${DEFAULT-VALUE}).",
        order = 580)
    long memoryBudget = BrokerContext.AUTO;

    /**
     * Copies these options into {@code context}.
     */
    void applyTo(final BrokerContext context)
    {
        context.memory().ringSize(ringSize)
            .maxMessageMemory(maxMessageMemory)
            .maxSessionMemory(maxSessionMemory)
            .maxClientSessionMemory(maxClientSessionMemory)
            .slotInlineBytes(slotInlineBytes)
            .messageLogBytes(messageLogBytes)
            .outboundRingBytes(outboundRingBytes)
            .memoryBudgetBytes(memoryBudget);
    }
}
