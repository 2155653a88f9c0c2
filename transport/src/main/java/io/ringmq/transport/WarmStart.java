package io.ringmq.transport;

import io.ringmq.pipeline.BrokerContext;
import io.ringmq.pipeline.ListenerSettings;
import io.ringmq.pipeline.Pipeline;
import io.ringmq.pipeline.auth.Authenticator;
import io.ringmq.pipeline.status.BrokerCounters;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The broker's side of {@code --warmup}: the loopback listener a warm-up runs on, and the run itself ({@link Warmup}
 * drives the connections) with the wait for its sessions to be gone and the counters put back. It keeps nothing
 * between calls; the warm-up listener is the caller's until {@link #warmUp} closes it.
 * <p>
 * Runs on the thread that launches the broker: {@link #listeners} before anything is bound, {@link #warmUp} once the
 * agents run and before the real listeners are bound, so that a client that finds the port open meets a warm broker.
 */
final class WarmStart
{
    private static final System.Logger LOG = System.getLogger("io.ringmq");

    private WarmStart()
    {
    }

    /**
     * @return a plain listener on an ephemeral loopback port, anonymous clients allowed, for the warm-up; null when
     * there is no warm-up ({@code --warmup 0}, {@code invoker} threading: no thread would serve it) or no loopback
     * port to be had (the broker then starts cold).
     */
    static Listener[] listeners(final BrokerContext context)
    {
        if (context.threads().warmupConnections() <= 0 || context.threads()
            .threading() == BrokerContext.Threading.INVOKER)
        {
            return null;
        }
        try
        {
            return Listener.bindAll(List.of(new ListenerSettings(0, "127.0.0.1")
                .anonymous(Authenticator.AnonymousPolicy.ALL).conclude()), 128, null);
        }
        catch (final IOException | RuntimeException ex)
        {
            LOG.log(System.Logger.Level.DEBUG, "no warm-up: " + ex);
            return null;
        }
    }

    /**
     * Drives {@code --warmup} connections through the broker's own paths ({@link Warmup}) on the warm-up listener,
     * waits until their sessions are gone, closes that listener and puts every counter back as it was (so
     * {@code $SYS}, {@code ringmq stat} and the metrics show no trace of it). The real listeners are bound after it.
     *
     * @return what the warm-up did.
     */
    static Warmup.Result warmUp(final BrokerContext context, final BrokerCounters counters, final Pipeline pipeline,
        final Listener warmupListener, final AtomicInteger connectionCount)
    {
        final long[] before = new long[BrokerCounters.count()];
        for (int i = 0; i < before.length; i++)
        {
            before[i] = counters.get(i);
        }
        final int sessionsBefore = pipeline.routing().sessionCount();
        Warmup.Result result = null;
        try
        {
            // at most half of --max-connections (and of the per-address limit) at once: nothing refused, nothing logged
            final int parallel = Math.max(1, Math.min(Warmup.PARALLEL,
                Math.min(context.limits().maxConnections(), context.maxConnectionsPerAddress()) / 2));
            final java.util.Set<Integer> ownPorts = java.util.concurrent.ConcurrentHashMap.newKeySet();
            warmupListener.admitOnly(ownPorts::contains); // its anonymous listener takes its own sockets only
            result = Warmup.run(warmupListener.port, context.threads()
                .warmupConnections(), parallel, Warmup.DEADLINE_NS,
                ownPorts);
            // the last DISCONNECTs are still on their way through the stages: wait, a bounded while, until every
            // connection is closed, every session gone and every event published to the ring released
            final long settleEndNs = System.nanoTime() + Warmup.SETTLE_NS;
            while ((connectionCount.get() > 0 || pipeline.routing().sessionCount() > sessionsBefore ||
                counters.get(BrokerCounters.EVENTS_RELEASE) < pipeline.ring().getCursor() + 1) &&
                settleEndNs - System.nanoTime() > 0)
            {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
            }
        }
        finally
        {
            warmupListener.close();
            for (int i = 0; i < before.length; i++)
            {
                counters.set(i, before[i]);
            }
        }
        return result;
    }
}
