package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ThreadingSettings;
import picocli.CommandLine.Option;

import java.util.List;

import static io.ringmq.transport.Main.DEFAULTS;

/**
 * The {@code ringmq} options that say how the broker's work is run (a picocli mixin of {@link Main}): the threading
 * mode, the I/O agents and routing shards, the idle strategy, core pinning, a stage's share of its thread per duty
 * cycle, and the warm-up that runs the connect and publish paths before the listeners accept.
 */
final class ThreadingOptions
{
    @Option(names = "--tls-threads", paramLabel = "N", description = "Threads that run TLS handshakes' key "
        + "exchanges and signatures, never an I/O thread (default: cores/4, 1..4).", order = 90)
    Integer tlsThreads;

    @Option(names = "--threading", paramLabel = "MODE",
        description = "shared (one thread), shared-network (I/O threads + one stage thread) or dedicated "
            + "(a thread per I/O agent and per stage); default by core count: <=2 shared, <=7 shared-network, "
            + "else dedicated.",
        order = 230)
    String threading;

    @Option(names = "--io-threads", paramLabel = "N", description = "I/O agents (default: half the cores up to 4, "
        + "then a quarter of them, 1..16).", order = 240)
    Integer ioThreads;

    @Option(names = "--route-shards", paramLabel = "N", description = "Routing stages that share the PUBLISHes by " +
        "topic, each with a replica of the sessions and subscriptions (default 1; for many cores with --threading " +
        "dedicated: one thread each, --pin route=A-B).", order = 250)
    Integer routeShards;

    @Option(names = "--idle-strategy", paramLabel = "NAME",
        description = "wake (sleep until given work), busy-spin, yield or backoff (default: ${DEFAULT-VALUE}).",
        order = 260)
    String idleStrategy = "wake";

    @Option(names = "--pin", paramLabel = "SPEC",
        description = "Bind threads to cores, e.g. io=2-9,auth=10,route=11,deliver=12,pipeline=3.", order = 270)
    String pin;

    @Option(names = "--warmup", paramLabel = "N",
        description = "Loopback connections driven through the broker's own accept, CONNECT, SUBSCRIBE, PUBLISH and "
            + "DISCONNECT paths at start, before its listeners accept, so the first clients meet compiled code; they "
            + "leave no session, message or count behind. 0 turns it off (default: ${DEFAULT-VALUE}).", order = 460)
    int warmup = Warmup.DEFAULT_CONNECTIONS;

    @Option(names = "--stage-batch-limit", paramLabel = "N",
        description = "Events a stage handles per batch, each ended with its flush and commit; a stage's turn on " +
            "its thread is one batch, in shared threading up to four (at most the ring) (default: ${DEFAULT-VALUE}).",
        order = 510)
    int stageBatchLimit = DEFAULTS.threads().stageBatchLimit();

    /**
     * Copies these options into {@code context} and checks the threading mode and the idle strategy.
     */
    void applyTo(final BrokerContext context)
    {
        final ThreadingSettings threads = context.threads();
        if (null != tlsThreads)
        {
            threads.tlsThreads(tlsThreads); // checked 1..256 by conclude()
        }
        threads.idleStrategy(idleStrategy).pin(pin).warmupConnections(warmup).stageBatchLimit(stageBatchLimit);
        if (null != threading)
        {
            threads.threading(OptionValues.parseEnum(BrokerContext.Threading.class, threading, "--threading"));
            if (threads.threading() == BrokerContext.Threading.INVOKER)
            {
                throw new IllegalArgumentException("--threading invoker runs no thread: it is for embedding tests");
            }
        }
        if (null != ioThreads)
        {
            threads.ioThreads(ioThreads);
        }
        if (null != routeShards)
        {
            threads.routeShards(routeShards);
        }
        if (!List.of("wake", "busy-spin", "yield", "backoff").contains(idleStrategy))
        {
            throw new IllegalArgumentException("--idle-strategy must be wake, busy-spin, yield or backoff");
        }
    }
}
