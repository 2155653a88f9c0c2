package io.ringmq.pipeline.auth;

import io.ringmq.pipeline.status.BrokerCounters;
import io.ringmq.protocol.ReasonCode;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The credential workers: a bounded queue of CONNECT credentials and named threads
 * ({@code ringmq-auth-worker-N}) that verify them, so PBKDF2 never runs on an I/O or stage thread and other
 * clients' packets keep flowing while a CONNECT waits for its hash.
 * <pre>
 *   I/O agent --submit--> [queue, bounded] --> worker: back-off? -> Authenticator.verify -> back-off bookkeeping
 *      ^                                                                                          |
 *      +---------------------- VerdictSink (the agent's queue + its wake) <------------------------+
 * </pre>
 * A full queue refuses at once (server unavailable, counted). An address backing off after failures
 * ({@link AddressBackoff}) is refused without hashing (not authorized, counted). With 0 threads (the
 * {@code invoker} mode of tests, which runs no thread) a request is verified inline on the submitting thread.
 */
public final class CredentialWorkers implements AutoCloseable
{
    /** Where a verdict goes back to: the agent that holds the CONNECT. Called on a worker thread. */
    @FunctionalInterface
    public interface VerdictSink
    {
        void onVerdict(CredentialRequest request);
    }

    private static final System.Logger LOG = System.getLogger("io.ringmq.pipeline.auth");
    private final Authenticator authenticator;
    private final CredentialSettings settings;
    private final AddressBackoff backoff;
    private final BrokerCounters counters;
    private final ArrayBlockingQueue<CredentialRequest> queue;
    private final Thread[] threads;
    private volatile VerdictSink[] sinks = new VerdictSink[0];
    private volatile boolean closed;

    /**
     * @param threadCount worker threads: {@link CredentialSettings#threads()}, or 0 to verify inline on the
     *                    submitting thread (the {@code invoker} mode, which runs no thread).
     */
    public CredentialWorkers(final Authenticator authenticator, final CredentialSettings settings,
        final int threadCount, final BrokerCounters counters)
    {
        this.authenticator = authenticator;
        this.settings = settings;
        this.backoff = new AddressBackoff(settings);
        this.counters = counters;
        this.queue = new ArrayBlockingQueue<>(settings.queueLength());
        this.threads = new Thread[threadCount];
        authenticator.offloaded(true);
        for (int i = 0; i < threads.length; i++)
        {
            threads[i] = new Thread(this::run, "ringmq-auth-worker-" + i);
            threads[i].setDaemon(true);
            threads[i].start();
        }
    }

    /**
     * Where agent {@code agentIndex}'s verdicts go; set before the agents run.
     */
    public synchronized void sink(final int agentIndex, final VerdictSink sink)
    {
        final VerdictSink[] grown = java.util.Arrays.copyOf(sinks, Math.max(sinks.length, agentIndex + 1));
        grown[agentIndex] = sink;
        sinks = grown;
    }

    /**
     * Hands a CONNECT's credentials to a worker; any thread, never blocks.
     *
     * @return false when the queue is full (counted): the caller refuses the CONNECT with server unavailable.
     */
    public boolean submit(final CredentialRequest request)
    {
        if (0 == threads.length)
        {
            verify(request);
            return true;
        }
        if (closed || !queue.offer(request))
        {
            counters.increment(BrokerCounters.AUTH_QUEUE_FULL);
            return false;
        }
        return true;
    }

    /**
     * @return requests waiting for a worker now.
     */
    public int queued()
    {
        return queue.size();
    }

    /**
     * Whether an address is backing off after failed logins: an enhanced authentication (SCRAM) CONNECT from it is
     * refused before its exchange starts, as a password CONNECT is before its hash. Any thread (an I/O agent); once
     * per such CONNECT.
     */
    public boolean isBackingOff(final java.net.InetAddress address, final boolean loopback)
    {
        if (null == address || (loopback && settings.exemptLoopback()))
        {
            return false;
        }
        final boolean backingOff = backoff.isBackingOff(AddressKeys.of(address), System.currentTimeMillis());
        if (backingOff)
        {
            counters.increment(BrokerCounters.AUTH_RATE_LIMITED);
        }
        return backingOff;
    }

    /**
     * An enhanced authentication exchange from an address ended refused: it counts toward the address's back-off
     * as a wrong password does (the client, not the broker, pays for a SCRAM guess, so only this limits them).
     */
    public void failedExchange(final java.net.InetAddress address, final boolean loopback)
    {
        if (null == address || (loopback && settings.exemptLoopback()))
        {
            return;
        }
        if (backoff.failed(AddressKeys.of(address), System.currentTimeMillis(), null))
        {
            counters.increment(BrokerCounters.AUTH_BACKOFFS);
        }
        counters.add(BrokerCounters.AUTH_ADDRESSES_FORGOTTEN, backoff.takeEvicted());
    }

    /**
     * @return addresses whose failures are tracked now.
     */
    public int trackedAddresses()
    {
        return backoff.size();
    }

    private void run()
    {
        while (!closed)
        {
            final CredentialRequest request;
            try
            {
                request = queue.poll(100, TimeUnit.MILLISECONDS);
            }
            catch (final InterruptedException ex)
            {
                return;
            }
            if (null == request)
            {
                continue;
            }
            try
            {
                verify(request);
            }
            catch (final RuntimeException ex) // the agent is told it is a refusal, the worker goes on
            {
                counters.increment(BrokerCounters.UNEXPECTED_ERRORS);
                LOG.log(System.Logger.Level.WARNING, "credential worker: " + ex);
                request.verdict = Authenticator.verdictOf(ReasonCode.V3_SERVER_UNAVAILABLE);
                try
                {
                    deliver(request);
                }
                catch (final RuntimeException again)
                {
                    request.wipe(); // no verdict reaches the agent: its connect timeout refuses the client
                }
            }
        }
    }

    private void verify(final CredentialRequest request)
    {
        final boolean limited = null != request.address && (!request.loopback || !settings.exemptLoopback());
        final long key = limited ? AddressKeys.of(request.address) : 0;
        final long nowMs = System.currentTimeMillis();
        if (limited && backoff.isBackingOff(key, nowMs))
        {
            counters.increment(BrokerCounters.AUTH_RATE_LIMITED); // refused without hashing
            request.verdict = Authenticator.verdictOf(ReasonCode.V3_NOT_AUTHORIZED);
            deliver(request);
            return;
        }
        final long verdict = authenticator.verify(request.userName, request.password);
        if ((verdict & Authenticator.HASHED) != 0)
        {
            counters.increment(BrokerCounters.AUTH_HASHES);
        }
        else if ((verdict & Authenticator.CACHED) != 0)
        {
            counters.increment(BrokerCounters.AUTH_CACHE_HITS);
        }
        if (limited)
        {
            if (Authenticator.verdictCode(verdict) == ReasonCode.V3_CONNECTION_ACCEPTED)
            {
                backoff.succeeded(key, request.userName);
            }
            else if (backoff.failed(key, nowMs, request.userName))
            {
                counters.increment(BrokerCounters.AUTH_BACKOFFS);
            }
            counters.add(BrokerCounters.AUTH_ADDRESSES_FORGOTTEN, backoff.takeEvicted());
        }
        request.verdict = verdict;
        deliver(request);
    }

    private void deliver(final CredentialRequest request)
    {
        final VerdictSink[] current = sinks;
        if (request.agentIndex < current.length && null != current[request.agentIndex])
        {
            current[request.agentIndex].onVerdict(request);
        }
        else
        {
            request.wipe(); // nobody to tell: the connection is refused by its connect timeout
        }
    }

    /**
     * Stops the workers; requests still queued get no verdict (their connections are closing with the broker).
     */
    public void close()
    {
        closed = true;
        for (final Thread thread : threads)
        {
            thread.interrupt();
        }
        for (final Thread thread : threads)
        {
            try
            {
                thread.join(1_000);
            }
            catch (final InterruptedException ex)
            {
                Thread.currentThread().interrupt();
                return;
            }
        }
        CredentialRequest request;
        while (null != (request = queue.poll()))
        {
            request.wipe();
        }
    }
}
